//! A remote server's headers helper (`hub/headers_helper.rs`) against the
//! test server on loopback HTTP, run by this very binary (`headers_helper
//! __testserver --http …`, see `support/mod.rs`), with
//! `--require-header`: a POST without the header is answered 401, so a
//! server that gets ready proves the helper's header reached it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use switchboard_hub::hub::Hub;
use switchboard_hub::{
    Dialect, HeadersHelper, HttpKind, Origin, Scope, ServerConfig, ServerState, TransportConfig,
};

mod support;

use macro_rules_attribute::apply;
use support::{alive, process_test};

fn main() {
    support::main();
}

/// The test server on loopback HTTP; killed when dropped.
struct HttpServer {
    child: std::process::Child,
    base: String,
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl HttpServer {
    fn start(flags: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["__testserver", "--http", "127.0.0.1:0"])
            .args(flags)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_owned();
        Self {
            child,
            base,
            _stdout: stdout,
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh, empty directory for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-headers-helper-{test}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `name` at `url`, with the written `headers` and the helper `command`.
fn remote(
    name: &str,
    url: &str,
    headers: &[(&str, &str)],
    helper: Option<HeadersHelper>,
) -> ServerConfig {
    let mut config = ServerConfig::new(
        name,
        TransportConfig::Http {
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            kind: HttpKind::Auto,
        },
        Origin {
            file: PathBuf::from("/tests/helpers.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    );
    config.headers_helper = helper;
    config
}

fn failure(hub: &Hub, server: &str) -> String {
    let status = hub.status(server).unwrap();
    match &status.state {
        ServerState::Failed(failure) => failure.message.clone(),
        other => panic!("{server} is {other:?}, not failed"),
    }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// The helper's headers reach the server (over a written header of the
/// same name, which alone is refused); it is told the server's name and
/// URL; it runs again on the next connection attempt.
#[apply(process_test!)]
async fn a_helpers_headers_reach_the_server_on_each_attempt() {
    let server = HttpServer::start(&["--require-header", "X-Helper: from-helper"]);
    let url = format!("{}/mcp", server.base);
    let dir = scratch("reach");
    let runs = dir.join("runs");
    // The first run fails (no marker yet); the next ones print the header,
    // built from what the helper is told.
    let script = format!(
        "echo \"$SWITCHBOARD_MCP_SERVER_URL\" >> '{runs}'; \
         if [ ! -e '{marker}' ]; then touch '{marker}'; echo 'not yet' >&2; exit 1; fi; \
         printf '{{\"x-helper\": \"from-%s\"}}' \"$SWITCHBOARD_MCP_SERVER_NAME\"",
        runs = runs.display(),
        marker = dir.join("marker").display()
    );
    let with_helper = remote(
        "helper",
        &url,
        &[("X-Helper", "written")],
        Some(HeadersHelper::new(script)),
    );
    let without = remote("written", &url, &[("X-Helper", "written")], None);
    let hub = Hub::builder()
        .servers([with_helper, without])
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let message = failure(&hub, "helper");
    assert!(
        message.contains("headers helper")
            && message.contains("exit code 1")
            && !message.contains("not yet"),
        "{message}"
    );
    assert_eq!(lines(&runs), 1);
    // The written header alone is refused: the header is what the
    // server checks.
    let status = hub.status("written").unwrap();
    assert!(
        matches!(status.state, ServerState::NeedsAuth { .. }),
        "{status:?}"
    );

    let state = hub.restart("helper").await.unwrap();
    assert!(state.is_ready(), "{state:?}");
    assert_eq!(lines(&runs), 2, "the helper runs on each attempt");
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap().lines().last(),
        Some(url.as_str())
    );
    let result = hub
        .call(
            "helper",
            "echo",
            serde_json::json!({"text": "hi"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert_eq!(result.is_error, None);
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// A helper that fails, or prints something else than headers, fails the
/// server with a message naming the helper, its file and what to do —
/// never a header's value.
#[apply(process_test!)]
async fn a_failing_helper_fails_the_server_saying_why() {
    let server = HttpServer::start(&[]);
    let url = format!("{}/mcp", server.base);
    let hub = Hub::builder()
        .servers([
            remote(
                "exits",
                &url,
                &[],
                Some(HeadersHelper::new(
                    "echo 'no token: run vault login' >&2; echo 'Bearer SECRET-0' >&2; exit 3",
                )),
            ),
            remote(
                "injects",
                &url,
                &[],
                Some(HeadersHelper::new(
                    r#"printf '%s' '{"Authorization": "Bearer SECRET-1\r\nX-Evil: 1"}'"#,
                )),
            ),
            remote(
                "prose",
                &url,
                &[],
                Some(HeadersHelper::new("echo Bearer SECRET-2")),
            ),
            remote(
                "floods",
                &url,
                &[],
                Some(HeadersHelper::new("head -c 100000 /dev/zero | tr '\\0' a").max_output(1000)),
            ),
        ])
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let exits = failure(&hub, "exits");
    for part in [
        "the headers helper of server `exits`",
        "exit code 3",
        "its stderr is not shown",
        "/tests/helpers.toml",
        "run it by hand",
    ] {
        assert!(exits.contains(part), "{part:?} not in: {exits}");
    }
    // What it printed on stderr may hold a token (issue 28): never shown.
    assert!(!exits.contains("SECRET"), "its stderr leaked: {exits}");
    let injects = failure(&hub, "injects");
    assert!(injects.contains("control characters"), "{injects}");
    let prose = failure(&hub, "prose");
    assert!(prose.contains("no JSON object"), "{prose}");
    for message in [&exits, &injects, &prose] {
        assert!(!message.contains("SECRET"), "a value leaked: {message}");
    }
    let floods = failure(&hub, "floods");
    assert!(floods.contains("more than 1000 bytes"), "{floods}");
    hub.shutdown().await;
}

/// A helper that hangs is stopped at its time limit, with what it
/// started: the server fails saying so, long before the startup timeout.
#[apply(process_test!)]
async fn a_hanging_helper_times_out_and_is_killed() {
    let server = HttpServer::start(&[]);
    let url = format!("{}/mcp", server.base);
    let dir = scratch("hang");
    let pid_file = dir.join("pid");
    let script = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
    let hub = Hub::builder()
        .server(remote(
            "hangs",
            &url,
            &[],
            Some(HeadersHelper::new(script).timeout(Duration::from_millis(500))),
        ))
        .startup_timeout(Duration::from_secs(30))
        .persist(false)
        .build()
        .unwrap();
    let started = Instant::now();
    hub.start().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let message = failure(&hub, "hangs");
    assert!(message.contains("did not finish within 500ms"), "{message}");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The helper's own child is killed with it (its group).
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "the helper's sleep {pid} outlived it"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}
