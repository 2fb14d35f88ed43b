//! A web application's login across processes (feature `oauth`): one
//! process begins it ([`Hub::connect`] answers with the authorization URL)
//! and exits; the test plays the user's browser at the test authorization
//! server; a second process finishes it ([`Hub::finish_login`]) from the
//! pending login kept in a `FilePendingStore`, and its hub's server is
//! ready. The two processes are this test binary run again, the role chosen
//! by an environment variable.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use switchboard_auth::pending::{FilePendingStore, PendingStore as _};
use switchboard_auth::store::FileStore;
use switchboard_hub::hub::{Connect, OAuthLogins};
use switchboard_hub::{Dialect, Hub, Origin, Scope, ServerConfig, ServerState, TransportConfig};
use tokio_util::task::AbortOnDropHandle;

const ROLE: &str = "SWITCHBOARD_TEST_LOGIN_ROLE";
const WAIT: Duration = Duration::from_secs(60);

/// The test server with its authorization server, on a loopback port of
/// this process; stopped when the handle drops.
async fn auth_server() -> (AbortOnDropHandle<std::io::Result<()>>, String) {
    let (task, url) = switchboard_testkit::spawn_http(&["--auth"]).await;
    (AbortOnDropHandle::new(task), url)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-hub-login-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn build_hub(url: &str, dir: &Path) -> Hub {
    let origin = Origin {
        file: dir.join("switchboard.toml"),
        dialect: Dialect::Switchboard,
        scope: Scope::User,
    };
    let server = ServerConfig::new(
        "remote",
        TransportConfig::Http {
            url: url.into(),
            headers: Default::default(),
            kind: Default::default(),
        },
        origin,
    );
    let logins = OAuthLogins::new(
        "switchboard-test",
        "http://127.0.0.1:9/callback",
        Arc::new(FileStore::new(dir.join("credentials.json"))),
    )
    .pending_store(Arc::new(FilePendingStore::new(dir.join("pending.json"))))
    .allow_http_loopback(true);
    Hub::builder()
        .server(server)
        .persist(false)
        .startup_timeout(WAIT)
        .oauth(logins)
        .build()
        .unwrap()
}

/// The child's part: `begin` prints the authorization URL; `finish`
/// finishes the login given in the environment and checks the server is
/// ready. Does nothing when run as an ordinary test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap();
    let dir = PathBuf::from(var("SWITCHBOARD_TEST_DIR"));
    let hub = build_hub(&var("SWITCHBOARD_TEST_URL"), &dir);
    match role.as_str() {
        "begin" => match hub.connect("remote").await.unwrap() {
            Connect::NeedsAuth {
                authorization_url, ..
            } => println!("\nAUTHORIZE {authorization_url}"),
            other => panic!("expected a login, got {other:?}"),
        },
        "finish" => {
            let report = hub.start().await.unwrap();
            assert!(
                matches!(report.not_ready[..], [(_, ServerState::NeedsAuth { .. })]),
                "no tokens yet: {report:?}"
            );
            let iss = std::env::var("SWITCHBOARD_TEST_ISS").ok();
            let (server, state) = hub
                .finish_login(
                    &var("SWITCHBOARD_TEST_STATE"),
                    &var("SWITCHBOARD_TEST_CODE"),
                    iss.as_deref(),
                )
                .await
                .unwrap();
            assert_eq!(server, "remote");
            assert_eq!(state, ServerState::Ready);
            let args = serde_json::json!({"text": "hi"}).as_object().cloned();
            let result = hub.call_tool("remote__echo", args).await.unwrap();
            println!("\nECHO {}", serde_json::to_string(&result.content).unwrap());
        }
        other => panic!("unknown role {other}"),
    }
    hub.shutdown().await;
}

/// Runs this test binary's [`child_role`] as `role`.
async fn child(role: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(ROLE, role);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "the {role} process failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Plays the browser: GETs the authorization URL (the test authorization
/// server approves at once) and returns where it redirects to.
fn approve(authorization_url: &str) -> url::Url {
    let url = url::Url::parse(authorization_url).unwrap();
    let host = url.host_str().unwrap();
    let port = url.port().unwrap();
    let mut stream = TcpStream::connect((host, port)).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let target = format!("{}?{}", url.path(), url.query().unwrap_or(""));
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 302"), "{answer}");
    let location = answer
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(name, _)| name.eq_ignore_ascii_case("location"))
                .map(|(_, value)| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no Location in {answer}"));
    url::Url::parse(&location).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_begun_in_one_process_is_finished_in_another() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let (_server, mcp) = auth_server().await;
    let dir = scratch("web");
    let dir_text = dir.display().to_string();
    let base = [
        ("SWITCHBOARD_TEST_URL", mcp.as_str()),
        ("SWITCHBOARD_TEST_DIR", dir_text.as_str()),
    ];

    let begun = child("begin", &base).await;
    let stdout = String::from_utf8_lossy(&begun.stdout).into_owned();
    let authorization_url = stdout
        .lines()
        .find_map(|l| l.split_once("AUTHORIZE ").map(|(_, url)| url))
        .unwrap_or_else(|| panic!("no authorization URL: {stdout}"))
        .to_owned();
    // The begin process is gone; the login waits in the file.
    let pending = FilePendingStore::new(dir.join("pending.json"));
    assert_eq!(pending.count().unwrap(), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.join("pending.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    let redirect = tokio::task::spawn_blocking(move || approve(&authorization_url))
        .await
        .unwrap();
    let query = |name: &str| {
        redirect
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let (code, state) = (query("code").unwrap(), query("state").unwrap());
    let mut env = base.to_vec();
    env.push(("SWITCHBOARD_TEST_CODE", &code));
    env.push(("SWITCHBOARD_TEST_STATE", &state));
    let iss = query("iss");
    if let Some(iss) = &iss {
        env.push(("SWITCHBOARD_TEST_ISS", iss));
    }
    let finished = child("finish", &env).await;
    let stdout = String::from_utf8_lossy(&finished.stdout);
    assert!(
        stdout.contains(r#"ECHO [{"type":"text","text":"hi"}]"#),
        "{stdout}"
    );

    // Used up, and the tokens are stored for the next process.
    assert_eq!(pending.count().unwrap(), 0);
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("credentials.json")).unwrap()).unwrap();
    let entry = stored["entries"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(entry["resource"], mcp.as_str());
    assert!(entry["access_token"].is_string(), "{stored}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interactive_login_connects_a_server_that_needs_auth() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let (_server, mcp) = auth_server().await;
    let dir = scratch("interactive");
    let hub = build_hub(&mcp, &dir);
    let report = hub.start().await.unwrap();
    assert!(
        matches!(report.not_ready[..], [(_, ServerState::NeedsAuth { .. })]),
        "{report:?}"
    );
    // The authorization server approves at once: the agent plays the user.
    let agent = switchboard_auth::flow::RedirectAgent::new().unwrap();
    let state = hub.login("remote", &agent).await.unwrap();
    assert_eq!(state, ServerState::Ready);
    assert!(matches!(
        hub.connect("remote").await.unwrap(),
        Connect::Ready
    ));
    assert!(hub.tools().iter().any(|t| t.name == "remote__echo"));
    // Nothing was left pending by the interactive login.
    let pending = FilePendingStore::new(dir.join("pending.json"));
    assert_eq!(pending.count().unwrap(), 0);
    hub.shutdown().await;

    // A second hub (a restart) uses the stored tokens at once.
    let again = build_hub(&mcp, &dir);
    let report = again.start().await.unwrap();
    assert_eq!(report.ready, ["remote"], "{report:?}");
    again.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two hubs sharing one credential store, as two replicas do: a login
/// made through one lets the other's next call in, before any news of it
/// (a watch, a notification) reached that hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_another_replica_right_after_a_login_finds_the_tools() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let (_server, mcp) = auth_server().await;
    let dir = scratch("replicas");
    let (first, second) = (build_hub(&mcp, &dir), build_hub(&mcp, &dir));
    for hub in [&first, &second] {
        let report = hub.start().await.unwrap();
        assert!(
            matches!(report.not_ready[..], [(_, ServerState::NeedsAuth { .. })]),
            "{report:?}"
        );
    }
    let agent = switchboard_auth::flow::RedirectAgent::new().unwrap();
    assert_eq!(
        first.login("remote", &agent).await.unwrap(),
        ServerState::Ready
    );
    // The second hub has heard nothing: it still waits for a login.
    assert!(matches!(
        second.status("remote").unwrap().state,
        ServerState::NeedsAuth { .. }
    ));
    let args = serde_json::json!({"text": "hi"}).as_object().cloned();
    let result = second.call_tool("remote__echo", args).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    // A name no server lists is still refused as such.
    let error = second.call_tool("remote__nope", None).await.unwrap_err();
    assert!(
        matches!(error, switchboard_hub::HubError::UnknownTool { .. }),
        "{error}"
    );
    first.shutdown().await;
    second.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_or_unknown_state_is_refused() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let (_server, mcp) = auth_server().await;
    let dir = scratch("forged");
    let hub = build_hub(&mcp, &dir);
    let Connect::NeedsAuth { .. } = hub.connect("remote").await.unwrap() else {
        panic!("no tokens yet, so a login");
    };
    let error = hub
        .finish_login("not-the-state", "code", None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, switchboard_hub::HubError::Login { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("login failed"), "{error}");
    // The real login is still pending: a forged state uses up nothing.
    let pending = FilePendingStore::new(dir.join("pending.json"));
    assert_eq!(pending.count().unwrap(), 1);
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
