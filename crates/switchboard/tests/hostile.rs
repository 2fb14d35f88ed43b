//! Hostile and broken servers (issue 15): a reply that arrived is never
//! reported as "did not answer", and no server outlives its client.
//!
//! The stdio servers and the killed client are this test binary itself,
//! started again with an environment variable that says what to play
//! ([`ROLE`]); the HTTP server is a few lines of raw HTTP/1.1 on loopback.
#![cfg(all(target_os = "linux", feature = "stdio", feature = "http"))]

use std::io::{BufRead as _, Write as _};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::transport::Connector;
use switchboard::transport::http::HttpConfig;
use switchboard::transport::stdio::StdioConfig;
use switchboard::{Client, EraMode, Error};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// What "at once" means for a reply that cannot be used.
const AT_ONCE: Duration = Duration::from_secs(1);
/// Bound for waits that must end, so a regression fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(10);
/// Tells a copy of this binary which part to play.
const ROLE: &str = "SWITCHBOARD_HOSTILE_ROLE";

const INIT_RESULT: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}"#;

/// A copy of this binary, running only [`role_main`] as `role`.
fn this_binary(role: &str) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "role_main",
            "--nocapture",
            "--quiet",
            "--test-threads=1",
        ])
        .env(ROLE, role);
    command
}

fn stdio_server(mode: &str) -> StdioConfig {
    StdioConfig::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "role_main",
            "--nocapture",
            "--quiet",
            "--test-threads=1",
        ])
        .env(ROLE, format!("server:{mode}"))
}

/// Not a test: the entry point of the copies [`this_binary`] starts.
#[test]
fn role_main() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    match role.split_once(':') {
        Some(("server", mode)) => serve_stdio(mode),
        Some(("client", dir)) => killed_client(dir),
        _ => panic!("unknown role {role}"),
    }
    std::process::exit(0);
}

/// A line server: answers `initialize`, then every other request as
/// `mode` says.
fn serve_stdio(mode: &str) {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    // Ends whatever the test harness printed on the line.
    out.write_all(b"\n").unwrap();
    let mut held = Vec::new();
    for line in stdin.lock().lines() {
        let Ok(message) = serde_json::from_str::<Value>(&line.unwrap()) else {
            continue;
        };
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            continue;
        };
        let id = id.clone();
        let mut write = |bytes: &[u8]| {
            out.write_all(bytes).unwrap();
            out.write_all(b"\n").unwrap();
            out.flush().unwrap();
        };
        if method == "initialize" {
            write(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{INIT_RESULT}}}"#).as_bytes());
            continue;
        }
        match mode {
            "both" => write(
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}},"error":{{"code":1,"message":"x"}}}}"#)
                    .as_bytes(),
            ),
            "neither" => write(format!(r#"{{"jsonrpc":"2.0","id":{id}}}"#).as_bytes()),
            "utf8" => {
                let mut line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"text":""#).into_bytes();
                line.extend_from_slice(b"\xff\xfe");
                line.extend_from_slice(b"\"}}");
                write(&line);
            }
            "string-id" => {
                // The id as a string first, then the real answer.
                write(format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"fake":true}}}}"#).as_bytes());
                write(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"real":true}}}}"#).as_bytes());
            }
            "null-id" => write(
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            ),
            "null-id-several" => {
                // Wait for two requests, then: a null-id error, then both answers.
                held.push(id);
                if held.len() == 2 {
                    write(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
                    for id in held.drain(..) {
                        write(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"ok":true}}}}"#).as_bytes());
                    }
                }
            }
            other => panic!("unknown mode {other}"),
        }
    }
}

async fn connect(connector: impl Connector) -> Client {
    tokio::time::timeout(
        PATIENCE,
        Client::builder()
            .era_mode(EraMode::Legacy)
            .connect(connector),
    )
    .await
    .expect("connect timed out")
    .expect("connect")
}

/// Calls `tools/list` raw and returns the error, asserting it came at once.
async fn fails_at_once(client: &Client) -> Error {
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        PATIENCE,
        client.request_raw("tools/list", None, Default::default()),
    )
    .await
    .expect("the call waited for its timeout");
    let elapsed = started.elapsed();
    let error = outcome.expect_err("an unusable reply must fail the call");
    assert!(elapsed < AT_ONCE, "took {elapsed:?}: {error}");
    error
}

fn assert_violation(error: &Error, naming: &str) {
    assert!(
        matches!(error, Error::ProtocolViolation { .. }),
        "not a protocol violation: {error:?}"
    );
    assert!(error.is_protocol_violation() && !error.is_unreachable() && !error.is_timeout());
    let message = error.to_string();
    assert!(
        message.contains(naming),
        "{message:?} should name {naming:?}"
    );
    assert!(message.contains("tools/list"), "{message}");
}

#[tokio::test]
async fn stdio_response_with_both_result_and_error_fails_at_once() {
    let client = connect(stdio_server("both")).await;
    assert_violation(&fails_at_once(&client).await, "both result and error");
}

#[tokio::test]
async fn stdio_response_with_neither_result_nor_error_fails_at_once() {
    let client = connect(stdio_server("neither")).await;
    assert_violation(&fails_at_once(&client).await, "neither");
}

#[tokio::test]
async fn stdio_response_with_invalid_utf8_fails_at_once() {
    let client = connect(stdio_server("utf8")).await;
    assert_violation(&fails_at_once(&client).await, "UTF-8");
}

#[tokio::test]
async fn a_string_id_does_not_answer_a_numeric_request() {
    let client = connect(stdio_server("string-id")).await;
    let result = tokio::time::timeout(
        PATIENCE,
        client.request_raw("tools/list", None, Default::default()),
    )
    .await
    .expect("timed out")
    .expect("the real answer");
    let result: Value = serde_json::from_str(result.get()).unwrap();
    assert_eq!(result, json!({"real": true}));
}

#[tokio::test]
async fn a_null_id_error_fails_the_one_pending_request() {
    let client = connect(stdio_server("null-id")).await;
    let error = fails_at_once(&client).await;
    assert!(error.is_server_error(), "{error:?}");
    assert_eq!(error.code(), Some(-32700));
}

#[tokio::test]
async fn a_null_id_error_fails_none_of_several_pending_requests() {
    let client = connect(stdio_server("null-id-several")).await;
    let call = || client.request_raw("tools/list", None, Default::default());
    let (a, b) = tokio::time::timeout(PATIENCE, async { tokio::join!(call(), call()) })
        .await
        .expect("timed out");
    a.expect("first answered");
    b.expect("second answered");
}

// ---------------------------------------------------------------- HTTP

/// A loopback HTTP server that answers `initialize`, takes notifications,
/// refuses GET, and answers every other request with `reply`.
async fn http_server(reply: Vec<u8>) -> (String, tokio_util::task::AbortOnDropHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let reply = reply.clone();
            connections.spawn(async move {
                let Some((method, body)) = read_request(&mut socket).await else {
                    return;
                };
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let answer: Vec<u8> = if method != "POST" {
                    b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_vec()
                } else if message["method"] == "initialize" {
                    let body =
                        format!(r#"{{"jsonrpc":"2.0","id":{},"result":{INIT_RESULT}}}"#, message["id"]);
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .into_bytes()
                } else if message.get("id").is_none() {
                    b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_vec()
                } else {
                    reply
                };
                let _ = socket.write_all(&answer).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (url, tokio_util::task::AbortOnDropHandle::new(task))
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let method = head.split(' ').next()?.to_ascii_uppercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    while buf.len() < head_end + length {
        let mut chunk = [0; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((method, buf[head_end..].to_vec()))
}

/// A `200` with this content type and body (`None`: the body ends when the
/// connection does, as an event stream would).
fn ok(content_type: &str, body: &[u8], length: bool) -> Vec<u8> {
    let mut reply =
        format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n");
    if length {
        reply.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    reply.push_str("\r\n");
    let mut reply = reply.into_bytes();
    reply.extend_from_slice(body);
    reply
}

async fn http_client(reply: Vec<u8>) -> (Client, tokio_util::task::AbortOnDropHandle<()>) {
    let (url, server) = http_server(reply).await;
    let client = connect(HttpConfig::new(url.as_str())).await;
    (client, server)
}

#[tokio::test]
async fn http_200_with_an_html_body_fails_at_once_showing_it() {
    let (client, _server) =
        http_client(ok("text/html", b"<html>\x1b[31mbusy</html>\n", true)).await;
    let error = fails_at_once(&client).await;
    assert_violation(&error, "200");
    let message = error.to_string();
    assert!(message.contains("text/html"), "{message}");
    assert!(message.contains("<html>"), "{message}");
    assert!(
        !message.contains('\x1b'),
        "the body must be escaped: {message:?}"
    );
}

#[tokio::test]
async fn http_200_claiming_json_that_is_not_fails_at_once() {
    let (client, _server) = http_client(ok("application/json", b"not json!!\n", true)).await;
    let error = fails_at_once(&client).await;
    assert_violation(&error, "application/json");
    assert!(error.to_string().contains("not json"), "{error}");
}

#[tokio::test]
async fn http_200_json_cut_short_fails_at_once() {
    // Looks like JSON to the transport (it judges the first byte only);
    // the engine's one parse finds it broken and fails the request the
    // body answered, whose id it cannot read.
    for body in [
        &br#"{"jsonrpc":"2.0","id":2,"result":{"tools":["#[..],
        b"{\"oops",
    ] {
        let (client, _server) = http_client(ok("application/json", body, true)).await;
        assert_violation(&fails_at_once(&client).await, "invalid JSON-RPC message");
    }
}

#[tokio::test]
async fn http_empty_200_fails_at_once() {
    let (client, _server) = http_client(ok("application/json", b"", true)).await;
    assert_violation(&fails_at_once(&client).await, "empty body");
}

#[tokio::test]
async fn http_event_stream_ending_without_the_response_fails_at_once() {
    let (client, _server) = http_client(ok("text/event-stream", b": hello\n\n", false)).await;
    let error = fails_at_once(&client).await;
    // Nothing unusable arrived: the answer is lost (the server may have
    // dropped the session; exit 4), said at once with what the stream held.
    assert!(matches!(error, Error::ResponseLost { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains("text/event-stream") && text.contains("hello"),
        "{text}"
    );
}

#[tokio::test]
async fn http_json_response_with_both_result_and_error_fails_at_once() {
    // The id is the client's second request (1 was `initialize`).
    let (client, _server) = http_client(ok(
        "application/json",
        br#"{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"x"}}"#,
        true,
    ))
    .await;
    assert_violation(&fails_at_once(&client).await, "both result and error");
}

// ------------------------------------------------- no server outlives its client

/// Whether `pid` is running (a zombie is as good as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
        !after_comm.starts_with('Z')
    })
}

fn wait_gone(pids: &[u32], within: Duration) {
    let deadline = Instant::now() + within;
    while pids.iter().any(|&pid| alive(pid)) {
        assert!(Instant::now() < deadline, "still running: {pids:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A server that records its pid and a grandchild's in `dir`, and does
/// not end when its input does.
fn recording_server(dir: &str) -> StdioConfig {
    StdioConfig::new("sh").arg("-c").arg(format!(
        "sleep 1000 & echo $! > '{dir}/grandchild'; echo $$ > '{dir}/server'; echo ready; exec sleep 1000"
    ))
}

/// The client that gets `SIGKILL`ed: starts a server, says so, and waits.
fn killed_client(dir: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut connection = recording_server(dir).connect().await.unwrap();
        connection.stream.recv().await.unwrap();
        println!("client-ready");
        std::future::pending::<()>().await;
    });
}

fn read_pid(dir: &std::path::Path, name: &str) -> u32 {
    std::fs::read_to_string(dir.join(name))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("switchboard-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_server_dies_when_its_client_is_killed() {
    let dir = scratch_dir("pdeathsig");
    let mut client = this_binary(&format!("client:{}", dir.display()))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(client.stdout.take().unwrap());
    assert!(
        stdout.lines().any(|l| l.unwrap().contains("client-ready")),
        "the client never started its server"
    );
    let server = read_pid(&dir, "server");
    let grandchild = read_pid(&dir, "grandchild");
    assert!(alive(server));
    client.kill().unwrap(); // SIGKILL: no destructor runs
    client.wait().unwrap();
    wait_gone(&[server], Duration::from_secs(5));
    // What the server started is beyond the parent-death signal's reach.
    kill_now(grandchild);
    let _ = std::fs::remove_dir_all(&dir);
}

fn kill_now(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}

#[test]
fn dropping_a_client_after_its_runtime_shut_down_kills_the_group_at_once() {
    let dir = scratch_dir("drop-no-runtime");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime.block_on(connect(recording_server_mcp(&dir)));
    let pids = [read_pid(&dir, "server"), read_pid(&dir, "grandchild")];
    drop(runtime);
    let dropped = Instant::now();
    drop(client);
    // Synchronously: by the time `drop` returns, SIGKILL was sent.
    wait_gone(&pids, Duration::from_secs(5));
    assert!(dropped.elapsed() < AT_ONCE, "{:?}", dropped.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

/// [`recording_server`] that also speaks enough MCP for a [`Client`]
/// (answers `initialize`, ignores the rest), and ignores its end of input
/// and `SIGTERM`, so only `SIGKILL` ends it.
fn recording_server_mcp(dir: &std::path::Path) -> StdioConfig {
    let dir = dir.display();
    StdioConfig::new("sh").arg("-c").arg(format!(
        r#"trap '' TERM; sleep 1000 & echo $! > '{dir}/grandchild'; echo $$ > '{dir}/server'
read -r line; id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
echo '{{"jsonrpc":"2.0","id":'"$id"',"result":{INIT_RESULT}}}'
while true; do sleep 1; done"#
    ))
}
