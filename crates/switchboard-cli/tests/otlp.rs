//! Feature `otlp`: `switchboard --otlp-endpoint URL …` sends its spans to
//! the collector there (OTLP over HTTP/protobuf, `POST /v1/traces`); a tiny
//! loopback listener stands in for the collector.
#![cfg(feature = "otlp")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// What the collector received: request line, content type, body.
type Received = (String, String, Vec<u8>);

/// A collector on a loopback port that answers every request with 200 and
/// reports it on the channel.
fn collector() -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let (mut length, mut content_type) = (0, String::new());
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    match name.to_ascii_lowercase().as_str() {
                        "content-length" => length = value.trim().parse().unwrap(),
                        "content-type" => content_type = value.trim().to_owned(),
                        _ => {}
                    }
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .unwrap();
            if tx
                .send((request_line.trim_end().to_owned(), content_type, body))
                .is_err()
            {
                break;
            }
        }
    });
    (url, rx)
}

/// A configured server of the 2026-07-28 revision, called through the hub
/// (`call SERVER/TOOL`): the `traceparent` it receives belongs to the trace
/// the collector got.
#[test]
fn a_configured_call_sends_the_exported_trace_to_the_server() {
    let root = std::env::temp_dir().join(format!("switchboard-cli-otlp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::create_dir_all(root.join("work/.git")).unwrap();
    let record = root.join("record.jsonl");
    let servers = root.join("servers.json");
    let config = serde_json::json!({"mcpServers": {"s": {"command": BIN,
        "args": ["__testserver", "--era", "modern", "--record", record.to_str().unwrap()]}}});
    std::fs::write(&servers, config.to_string()).unwrap();

    let (url, received) = collector();
    let mut command = Command::new(BIN);
    command
        .current_dir(root.join("work"))
        .env("HOME", root.join("home"))
        .env("SWITCHBOARD_CREDENTIALS", root.join("credentials.json"))
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("CODEX_HOME")
        .env_remove("GOOSE_CONFIG_DIR");
    for var in [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ] {
        command.env_remove(var);
    }
    let output = command
        .args(["--otlp-endpoint", &url, "--config"])
        .arg(&servers)
        .args(["call", "s/echo", "--arg", "text=traced"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let call = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|message| message["method"] == "tools/call")
        .expect("the server got the call");
    let traceparent = call["params"]["_meta"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent in {call}"));
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert!(
        parts.len() == 4 && parts[0] == "00" && parts[1].len() == 32 && parts[2].len() == 16,
        "{traceparent}"
    );
    // OTLP carries trace ids as 16 raw bytes.
    let trace_id: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&parts[1][2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let (_, _, body) = received
        .recv_timeout(Duration::from_secs(5))
        .expect("the collector got the traces");
    assert!(
        body.windows(16).any(|w| w == trace_id.as_slice()),
        "the exported spans are of the trace the server was given"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_call_exports_its_spans_to_the_collector() {
    let (url, received) = collector();
    let output = Command::new(BIN)
        .args(["--otlp-endpoint", &url])
        .args(["call", "echo", "--arg", "text=traced", "--"])
        .args([BIN, "__testserver"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("traced"));
    // The spans were flushed before the process ended.
    let (request_line, content_type, body) = received
        .recv_timeout(Duration::from_secs(5))
        .expect("the collector got the traces");
    assert_eq!(request_line, "POST /v1/traces HTTP/1.1");
    assert_eq!(content_type, "application/x-protobuf");
    // The protobuf names the service and the command's root span.
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("switchboard"), "{body:?}");

    // The same through the environment variable.
    let (url, received) = collector();
    let output = Command::new(BIN)
        .args(["call", "echo", "--arg", "text=env", "--"])
        .args([BIN, "__testserver"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .output()
        .unwrap();
    assert!(output.status.success());
    let (request_line, _, _) = received
        .recv_timeout(Duration::from_secs(5))
        .expect("the collector got the traces");
    assert_eq!(request_line, "POST /v1/traces HTTP/1.1");
}
