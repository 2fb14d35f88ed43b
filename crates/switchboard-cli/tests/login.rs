//! `switchboard login --no-browser`, `auth status` and `logout` end to end:
//! the real binary against the bundled test server's authorization server
//! (switchboard-testkit's HTTP server with `--auth`, run in the test process),
//! the test playing the user's browser.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

#[allow(dead_code)] // only the HTTP test server and the URL opener are used here
mod support;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");
const WAIT: Duration = Duration::from_secs(60);

/// The bundled test server over HTTP with `--auth` (in this test process,
/// see [`support::HttpServer`]); stopped when dropped.
struct AuthServer {
    _server: support::HttpServer,
    base: String,
    issuer: String,
}

impl AuthServer {
    fn start() -> Self {
        let server = support::HttpServer::start(&["--auth"]);
        let base = server.1.clone();
        let issuer = server.issuer().to_owned();
        Self {
            _server: server,
            base,
            issuer,
        }
    }
}

/// A scratch directory holding the credentials; also the config home, so
/// nothing reaches the user's own store.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("switchboard-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn credentials(&self) -> PathBuf {
        self.0.join("credentials.json")
    }

    fn command(&self) -> Command {
        let mut command = Command::new(BIN);
        command
            .env("SWITCHBOARD_CREDENTIALS", self.credentials())
            .env("XDG_CONFIG_HOME", self.0.join("config"))
            .env("HOME", self.0.join("home"));
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("runs switchboard")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Plays the browser: GETs the authorization URL from the test
/// authorization server (which approves at once) and returns where it
/// redirects to.
fn approve(authorization_url: &str) -> String {
    let answer = get(authorization_url);
    assert!(answer.starts_with("HTTP/1.1 302"), "{answer}");
    answer
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(name, _)| name.eq_ignore_ascii_case("location"))
                .map(|(_, value)| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no Location in {answer}"))
}

/// Every token and client secret in the credentials file.
fn secrets(credentials: &Path) -> Vec<String> {
    let file: Value = serde_json::from_slice(&std::fs::read(credentials).unwrap()).unwrap();
    let mut found = Vec::new();
    for entry in file["entries"].as_object().unwrap().values() {
        for field in ["access_token", "refresh_token", "client_secret"] {
            if let Some(secret) = entry[field].as_str() {
                found.push(secret.to_owned());
            }
        }
    }
    found
}

fn wait_for(child: &mut Child) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > WAIT {
            let _ = child.kill();
            panic!("switchboard login did not finish within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn login_without_a_browser_then_call_status_and_logout() {
    let server = AuthServer::start();
    let mcp = format!("{}/mcp", server.base);
    let scratch = Scratch::new("login");

    // Not logged in: exit 3, and the command to run.
    let refused = scratch.run(&["tools", "--url", &mcp]);
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains(&format!("run: switchboard login {mcp}")),
        "{}",
        text(&refused.stderr)
    );

    // Log in: the URL is printed, the browser's redirect pasted on stdin.
    let mut login = scratch
        .command()
        .args(["login", "--no-browser", &mcp])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let stderr = login.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = lines_tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let authorization_url = loop {
        let line = lines
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no authorization URL printed; stderr so far: {seen:#?}"));
        let trimmed = line.trim().to_owned();
        seen.push(line);
        if trimmed.starts_with("http") && trimmed.contains("response_type=code") {
            break trimmed;
        }
    };
    let issuer = url::Url::parse(&server.issuer).unwrap();
    assert!(
        authorization_url.starts_with(&format!("{}authorize", issuer.as_str())),
        "{authorization_url}"
    );
    // The host is named as the browser will parse the URL.
    let host = issuer.host_str().unwrap();
    assert!(
        seen.iter()
            .any(|l| l.contains(&format!("open this page on {host}:"))),
        "{seen:#?}"
    );
    let redirect = approve(&authorization_url);
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.contains("/callback?"),
        "{redirect}"
    );
    assert!(redirect.contains("code="), "{redirect}");

    let mut stdin = login.stdin.take().unwrap();
    // A response from another attempt is refused, and the login waits on.
    let state = url::Url::parse(&redirect)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    writeln!(stdin, "{}", redirect.replace(&state, "another-attempt")).unwrap();
    writeln!(stdin, "  {redirect}  ").unwrap();
    stdin.flush().unwrap();
    let status = wait_for(&mut login);
    drop(stdin);
    reader.join().unwrap();
    let rest: Vec<String> = lines.try_iter().collect();
    let mut out = String::new();
    login
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(status.success(), "login failed: {seen:#?} {rest:#?}");
    assert!(
        rest.iter().any(|l| l.contains("another login")),
        "the stale paste was not refused: {rest:#?}"
    );
    assert!(out.contains("Logged in to"), "{out}");
    // The index of logins names servers: the user's alone, 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let credentials = scratch.credentials();
        let stem = credentials.file_stem().unwrap().to_string_lossy();
        let index = credentials.with_file_name(format!("{stem}.logins.json"));
        let mode = std::fs::metadata(&index).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", index.display());
    }

    // The stored token is sent: the server that refused now answers.
    let call = scratch.run(&["call", "echo", "--arg", "text=hi", "--url", &mcp]);
    assert!(call.status.success(), "{}", text(&call.stderr));
    assert_eq!(text(&call.stdout).trim(), "hi");

    // auth status shows the login, never a secret.
    let secrets = secrets(&scratch.credentials());
    assert!(
        secrets.len() >= 2,
        "an access and a refresh token are stored"
    );
    let status = scratch.run(&["auth", "status", "--json"]);
    assert!(status.status.success(), "{}", text(&status.stderr));
    let listed: Value = serde_json::from_slice(&status.stdout).unwrap();
    let entries = listed["credentials"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{listed}");
    assert_eq!(entries[0]["server"], mcp.as_str());
    assert_eq!(entries[0]["resource"], mcp.as_str());
    assert_eq!(entries[0]["issuer"], server.issuer.as_str());
    assert!(!entries[0]["clientId"].as_str().unwrap().is_empty());
    assert!(
        entries[0]["expiresInSecs"].as_i64().unwrap() > 0,
        "{listed}"
    );
    let table = scratch.run(&["auth", "status"]);
    assert!(table.status.success(), "{}", text(&table.stderr));
    assert!(
        text(&table.stdout).contains(&mcp),
        "{}",
        text(&table.stdout)
    );
    for output in [&status, &table] {
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        for secret in &secrets {
            assert!(!all.contains(secret.as_str()), "a secret is shown:\n{all}");
        }
    }

    // logout removes the credentials: the server refuses again.
    let logout = scratch.run(&["logout", &mcp]);
    assert!(logout.status.success(), "{}", text(&logout.stderr));
    assert!(
        secrets_left(&scratch.credentials()).is_empty(),
        "logout left credentials behind"
    );
    let refused = scratch.run(&["call", "echo", "--arg", "text=hi", "--url", &mcp]);
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains(&format!("run: switchboard login {mcp}")),
        "{}",
        text(&refused.stderr)
    );
    let listed = scratch.run(&["auth", "status", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["credentials"], Value::Array(Vec::new()));
    // A second logout has nothing to remove and says so.
    let again = scratch.run(&["logout", &mcp]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("not logged in"),
        "{}",
        text(&again.stderr)
    );
}

fn secrets_left(credentials: &Path) -> Vec<String> {
    if !credentials.exists() {
        return Vec::new();
    }
    secrets(credentials)
}

#[test]
fn login_gives_up_after_its_timeout() {
    let server = AuthServer::start();
    let scratch = Scratch::new("timeout");
    let output = scratch.run(&[
        "login",
        "--no-browser",
        "--timeout",
        "1",
        &format!("{}/mcp", server.base),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("response_type=code"),
        "the URL is printed: {stderr}"
    );
    assert!(stderr.contains("within 1 s"), "{stderr}");
    assert!(
        secrets_left(&scratch.credentials()).is_empty(),
        "nothing is stored"
    );
}

/// `curl` on `PATH`, to play a browser that follows redirects.
fn curl() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("curl"))
        .find(|path| path.is_file())
}

#[test]
fn login_with_a_browser_comes_back_on_the_loopback() {
    // webbrowser honours BROWSER on Linux; elsewhere a real browser would open.
    if !cfg!(target_os = "linux") {
        eprintln!("SKIP: login_with_a_browser_comes_back_on_the_loopback: Linux only");
        return;
    }
    let Some(curl) = curl() else {
        eprintln!("SKIP: login_with_a_browser_comes_back_on_the_loopback: no curl on PATH");
        return;
    };
    let server = AuthServer::start();
    let mcp = format!("{}/mcp", server.base);
    let scratch = Scratch::new("browser");
    // The "browser" follows the authorization server's redirect to the
    // loopback callback, as a real one does, and runs until answered there:
    // the loopback must be served while the browser command runs.
    let output = scratch
        .command()
        .args(["login", "--timeout", "30", &mcp])
        .env(
            "BROWSER",
            format!("{} -sL -m 20 -o /dev/null %s", curl.display()),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("response_type=code"),
        "the URL is printed even when a browser opens: {}",
        text(&output.stderr)
    );
    let call = scratch.run(&["call", "echo", "--arg", "text=hi", "--url", &mcp]);
    assert!(call.status.success(), "{}", text(&call.stderr));
    assert_eq!(text(&call.stdout).trim(), "hi");
}

/// `switchboard login --no-browser ARGS…` with the user played by the
/// test: the printed URL approved at the authorization server, the
/// redirect pasted on stdin. Returns the command's output.
fn login_pasting(scratch: &Scratch, args: &[&str]) -> Output {
    let mut login = scratch
        .command()
        .arg("login")
        .arg("--no-browser")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let stderr = login.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = lines_tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let authorization_url = loop {
        let line = lines
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no authorization URL printed; stderr so far: {seen:#?}"));
        let trimmed = line.trim().to_owned();
        seen.push(line);
        if trimmed.starts_with("http") && trimmed.contains("response_type=code") {
            break trimmed;
        }
    };
    let redirect = approve(&authorization_url);
    let mut stdin = login.stdin.take().unwrap();
    writeln!(stdin, "{redirect}").unwrap();
    stdin.flush().unwrap();
    let status = wait_for(&mut login);
    drop(stdin);
    reader.join().unwrap();
    let mut stdout = Vec::new();
    login
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    seen.extend(lines.try_iter());
    Output {
        status,
        stdout,
        stderr: seen.join("\n").into_bytes(),
    }
}

/// A switchboard TOML file in the scratch directory.
fn config_file(scratch: &Scratch, text: &str) -> PathBuf {
    let file = scratch.0.join("servers.toml");
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn a_needs_auth_server_in_a_running_hub_connects_after_login_by_name_in_another_process() {
    use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
    use switchboard_auth::provider::OAuthProvider;
    use switchboard_auth::store::{CredentialKey, FileStore};
    use switchboard_hub::{
        Dialect, Hub, HubEvent, Origin, Scope, ServerConfig, ServerState, TransportConfig,
    };

    let server = AuthServer::start();
    let mcp = format!("{}/mcp", server.base);
    let scratch = Scratch::new("hub-login");
    let config = config_file(
        &scratch,
        &format!(
            "[servers.remote]\nurl = \"{mcp}\"\noauth = {{ scopes = [\"mcp:read\", \"mcp:admin\"] }}\n"
        ),
    );

    // The running hub: the server's stored tokens (none yet) as its
    // credentials, the credentials file watched for logins.
    let credentials = scratch.credentials();
    let store = Arc::new(FileStore::new(&credentials));
    let key = CredentialKey::new(mcp.clone(), server.issuer.clone());
    let remote = ServerConfig::new(
        "remote",
        TransportConfig::Http {
            url: mcp.clone(),
            headers: Default::default(),
            kind: Default::default(),
        },
        Origin {
            file: config.clone(),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let hub = Hub::builder()
        .server(remote)
        .persist(false)
        .auth(move |_| {
            let config = OAuthConfig::new("test", "http://127.0.0.1/callback", store.clone())
                .allow_http_loopback(true);
            let flow = OAuthFlow::new(config).ok()?;
            Some(Arc::new(OAuthProvider::new(flow, key.clone())) as _)
        })
        .watch_credentials(&credentials, Duration::from_millis(20))
        .build()
        .unwrap();
    let report = runtime.block_on(hub.start()).unwrap();
    assert!(
        matches!(report.not_ready[..], [(_, ServerState::NeedsAuth { .. })]),
        "{report:?}"
    );
    let mut events = hub.events();

    // Another process logs in to the server by its name.
    let config_text = config.display().to_string();
    let output = login_pasting(&scratch, &["--config", &config_text, "remote"]);
    assert!(
        output.status.success(),
        "login failed: {}",
        text(&output.stderr)
    );
    assert!(
        text(&output.stdout).contains("Scopes: mcp:read mcp:admin"),
        "the oauth block's scopes were asked for: {}",
        text(&output.stdout)
    );

    // The hub notices and connects it, without a restart.
    runtime.block_on(async {
        tokio::time::timeout(WAIT, async {
            while let Some(event) = events.next().await {
                if let HubEvent::StateChanged { server, state } = event {
                    assert_eq!(server, "remote");
                    if state == ServerState::Ready {
                        return;
                    }
                    assert!(!state.is_settled(), "settled as {state:?}, not ready");
                }
            }
            panic!("the hub's events ended");
        })
        .await
        .expect("the server became ready after the login")
    });
    let args = serde_json::json!({"text": "hi"}).as_object().cloned();
    let result = runtime
        .block_on(hub.call_tool("remote__echo", args))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&result.content).unwrap(),
        serde_json::json!([{"type": "text", "text": "hi"}])
    );
    runtime.block_on(hub.shutdown());
}

#[test]
fn login_by_name_refuses_an_unknown_name_and_a_local_server() {
    let scratch = Scratch::new("login-name");
    let config = config_file(
        &scratch,
        "[servers.local]\ncommand = \"true\"\n\n[servers.sock]\nurl = \"ws://127.0.0.1:1/mcp\"\ntransport = \"websocket\"\n",
    );
    let config = config.display().to_string();
    let unknown = scratch.run(&["--config", &config, "login", "nosuch"]);
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown.stderr));
    assert!(
        text(&unknown.stderr).contains("no server named `nosuch` is configured"),
        "{}",
        text(&unknown.stderr)
    );
    let local = scratch.run(&["--config", &config, "login", "local"]);
    assert_eq!(local.status.code(), Some(1), "{}", text(&local.stderr));
    assert!(
        text(&local.stderr).contains("server `local` runs a local command (stdio)"),
        "{}",
        text(&local.stderr)
    );
    let socket = scratch.run(&["--config", &config, "login", "sock"]);
    assert_eq!(socket.status.code(), Some(1), "{}", text(&socket.stderr));
    assert!(
        text(&socket.stderr).contains("only HTTP servers log in"),
        "{}",
        text(&socket.stderr)
    );
}

/// A configured client secret goes only to the authorization server the
/// `oauth` block names: without `issuer`, `login NAME` refuses before
/// anything is sent to the one the MCP server names, and says which
/// setting to add.
#[test]
fn login_by_name_with_a_client_secret_needs_the_issuer_named() {
    let server = AuthServer::start();
    let mcp = format!("{}/mcp", server.base);
    let scratch = Scratch::new("login-secret");
    let config = config_file(
        &scratch,
        &format!(
            "[servers.remote]\nurl = \"{mcp}\"\noauth = {{ client_id = \"pre\", client_secret = \"S3CRET-VALUE\" }}\n"
        ),
    );
    let config = config.display().to_string();
    let output = scratch.run(&["--config", &config, "login", "remote", "--timeout", "5"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("issuer = "), "{stderr}");
    assert!(!stderr.contains("S3CRET-VALUE"), "{stderr}");
}

/// A browser's GET of `url` (http, on loopback): the whole response.
fn get(url: &str) -> String {
    let url = url::Url::parse(url).unwrap();
    let host = url.host_str().unwrap().to_owned();
    let port = url.port().unwrap();
    let mut stream = TcpStream::connect((host.as_str(), port)).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let target = format!("{}?{}", url.path(), url.query().unwrap_or(""));
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// Plays the host user's browser on the redirect: GETs the loopback URL
/// the authorization server sent the browser to; its status line.
fn follow(location: &str) -> String {
    get(location).lines().next().unwrap_or_default().to_owned()
}

/// The host's user: opens every login page it is asked to (the test
/// authorization server approves at once, the browser comes back to the
/// gateway's loopback).
fn browser(
    opened: Arc<std::sync::Mutex<Vec<String>>>,
) -> support::url_opener::UrlOpener<impl Fn(String) + Send + Sync + 'static> {
    support::url_opener::UrlOpener(move |url: String| {
        opened.lock().unwrap().push(url.clone());
        // Opened "in the browser": on a thread, while the answer goes back.
        std::thread::spawn(move || {
            let location = approve(&url);
            follow(&location);
        });
    })
}

/// `switchboard serve` in front of a server that needs a login: the host
/// sees `remote__authenticate`; calling it asks the host to open the login
/// page (a URL elicitation), the browser comes back to the gateway, and
/// the server's tools appear — in both eras.
#[test]
fn a_host_logs_in_to_a_backend_through_the_gateway() {
    use switchboard::transport::stdio::StdioConfig;
    use switchboard::{Client, EraMode};

    let server = AuthServer::start();
    let mcp = format!("{}/mcp", server.base);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let scratch = Scratch::new(&format!("gateway-login-{mode:?}"));
        let config = config_file(&scratch, &format!("[servers.remote]\nurl = \"{mcp}\"\n"));
        let work = scratch.0.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let opened = Arc::new(std::sync::Mutex::new(Vec::new()));
        let browser = browser(opened.clone());
        runtime.block_on(async {
            let host = Client::builder()
                .era_mode(mode)
                .elicitation(browser)
                .connect(
                    StdioConfig::new(BIN)
                        .args(["--config", config.to_str().unwrap(), "serve"])
                        .env("SWITCHBOARD_CREDENTIALS", scratch.credentials())
                        .env("XDG_CONFIG_HOME", scratch.0.join("config"))
                        .env("HOME", scratch.0.join("home"))
                        .cwd(&work),
                )
                .await
                .unwrap();
            let names = |host: Client| async move {
                host.list_tools()
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|t| t.name)
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                names(host.clone()).await,
                ["remote__authenticate"],
                "{mode:?}"
            );
            let result = host.call_tool("remote__authenticate", None).await.unwrap();
            let said = result.content[0].as_text().unwrap_or_default().to_owned();
            assert_ne!(result.is_error, Some(true), "{mode:?}: {said}");
            assert!(said.contains("Logged in to `remote`"), "{mode:?}: {said}");
            assert_eq!(opened.lock().unwrap().len(), 1, "{mode:?}");
            let listed = names(host.clone()).await;
            assert!(listed.iter().any(|n| n == "echo"), "{mode:?}: {listed:?}");
            assert!(
                !listed.iter().any(|n| n == "remote__authenticate"),
                "{mode:?}: {listed:?}"
            );
            let args = serde_json::json!({"text": "after login"})
                .as_object()
                .cloned();
            let echoed = host.call_tool("echo", args).await.unwrap();
            assert_eq!(
                echoed.content[0].as_text(),
                Some("after login"),
                "{mode:?}: {echoed:?}"
            );
            host.close().await;
        });
        // The login is kept: the tokens are in the credentials file.
        assert!(!secrets(&scratch.credentials()).is_empty(), "{mode:?}");
    }
}

/// `SERVER__authenticate` follows `[policy.tools]` like any tool: denied,
/// it is not listed, and calling it opens no login page.
#[test]
fn the_gateways_authenticate_tool_follows_the_tool_policy() {
    use switchboard::transport::stdio::StdioConfig;
    use switchboard::{Client, EraMode};

    let server = AuthServer::start();
    let mcp = format!("{}/mcp", server.base);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let scratch = Scratch::new("gateway-login-denied");
    let config = config_file(
        &scratch,
        &format!(
            "[servers.remote]\nurl = \"{mcp}\"\n\n[policy.tools]\ndeny = [\"remote/authenticate\"]\n"
        ),
    );
    let work = scratch.0.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let opened = Arc::new(std::sync::Mutex::new(Vec::new()));
    let browser = browser(opened.clone());
    runtime.block_on(async {
        let host = Client::builder()
            .era_mode(EraMode::Legacy)
            .elicitation(browser)
            .connect(
                StdioConfig::new(BIN)
                    .args(["--config", config.to_str().unwrap(), "serve"])
                    .env("SWITCHBOARD_CREDENTIALS", scratch.credentials())
                    .env("XDG_CONFIG_HOME", scratch.0.join("config"))
                    .env("HOME", scratch.0.join("home"))
                    .cwd(&work),
            )
            .await
            .unwrap();
        let listed = host.list_tools().await.unwrap();
        assert!(listed.is_empty(), "{listed:?}");
        let result = host.call_tool("remote__authenticate", None).await.unwrap();
        let said = result.content[0].as_text().unwrap_or_default().to_owned();
        assert_eq!(result.is_error, Some(true), "{said}");
        assert!(
            said.contains("denied by the policy") && said.contains("remote/authenticate"),
            "{said}"
        );
        assert!(opened.lock().unwrap().is_empty(), "a login page was opened");
        host.close().await;
    });
}
