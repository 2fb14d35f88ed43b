//! Issue 30 (item 3): the `server/discover` probe against servers that are
//! slow to start. A late answer or an `initialize` refused with -32022 means
//! a modern server, and the probe's wait runs from the server's first output.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use super::*;
use crate::transport::memory::{self, MemoryEnd};
use crate::transport::{BoxFuture, Connection, StderrBuffer, TransportError};

async fn recv(peer: &mut MemoryEnd) -> Value {
    serde_json::from_slice(&peer.recv().await.expect("client hung up")).unwrap()
}

/// The next message that is not a `notifications/cancelled`.
async fn recv_skipping_cancels(peer: &mut MemoryEnd) -> Value {
    loop {
        let message = recv(peer).await;
        if message["method"] != "notifications/cancelled" {
            return message;
        }
    }
}

async fn reply(peer: &MemoryEnd, request: &Value, outcome: Value) {
    let mut message = json!({"jsonrpc": "2.0", "id": request["id"]});
    let key = if outcome.get("code").is_some() {
        "error"
    } else {
        "result"
    };
    message[key] = outcome;
    peer.send(message.to_string()).await.unwrap();
}

fn discover_result() -> Value {
    json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "slow", "version": "2"}}})
}

/// What Python SDK 2.x answers an `initialize` that follows a
/// `server/discover` on one connection.
fn committed_to_modern() -> Value {
    json!({"code": -32022,
        "message": "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted",
        "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}})
}

fn legacy_result() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "serverInfo": {"name": "old", "version": "1"}})
}

/// Lists tools on a modern connection and checks the request was modern.
async fn lists_tools_modern(client: &Client, server: &mut MemoryEnd) {
    let script = async {
        let request = recv_skipping_cancels(server).await;
        assert_eq!(request["method"], "tools/list");
        assert_eq!(
            request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let tool = json!({"name": "echo", "inputSchema": {"type": "object"}});
        reply(server, &request, json!({"tools": [tool]})).await;
    };
    let (tools, ()) = tokio::join!(client.list_tools(), script);
    let tools = tools.expect("tools/list on the modern connection");
    assert_eq!(tools.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_discover_answer_after_the_probe_wait_makes_the_connection_modern() {
    let (client_end, mut server) = memory::pair();
    let connect = Client::builder()
        .name("slow")
        .connect(client_end.into_connector());
    let script = async {
        // The server reads nothing for its first 4 s (past the 3 s wait),
        // then answers in order, as Python SDK 2.x does: the probe, then the
        // `initialize` sent in the meantime, refused: the connection is
        // committed to 2026-07-28.
        tokio::time::sleep(Duration::from_secs(4)).await;
        let probe = recv(&mut server).await;
        assert_eq!(probe["method"], "server/discover");
        reply(&server, &probe, discover_result()).await;
        let init = recv_skipping_cancels(&mut server).await;
        assert_eq!(init["method"], "initialize");
        reply(&server, &init, committed_to_modern()).await;
    };
    let (client, ()) = tokio::join!(connect, script);
    let client = client.expect("a late answer to the probe still counts");
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version().as_str(), "2026-07-28");
    lists_tools_modern(&client, &mut server).await;
}

#[tokio::test(start_paused = true)]
async fn initialize_refused_with_32022_leads_to_the_modern_era() {
    let (client_end, mut server) = memory::pair();
    let connect = Client::builder()
        .name("slow")
        .connect(client_end.into_connector());
    let script = async {
        // The first probe is never answered (lost); the `initialize` that
        // follows it is refused as a modern server refuses it.
        let probe = recv(&mut server).await;
        assert_eq!(probe["method"], "server/discover");
        let init = recv_skipping_cancels(&mut server).await;
        assert_eq!(init["method"], "initialize");
        reply(&server, &init, committed_to_modern()).await;
        let again = recv_skipping_cancels(&mut server).await;
        assert_eq!(again["method"], "server/discover");
        assert_eq!(
            again["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        reply(&server, &again, discover_result()).await;
    };
    let (client, ()) = tokio::join!(connect, script);
    let client = client.expect("-32022 to initialize means a modern server");
    assert_eq!(client.era(), Era::Modern);
    lists_tools_modern(&client, &mut server).await;
}

/// An in-memory server with a stderr, as a process has.
struct ProcessLike {
    end: Mutex<Option<MemoryEnd>>,
    stderr: StderrBuffer,
}

impl Connector for ProcessLike {
    fn connect(&self) -> BoxFuture<'_, Result<Connection, TransportError>> {
        let end = self.end.lock().unwrap().take();
        let stderr = self.stderr.clone();
        Box::pin(async move {
            end.map(|end| end.into_connection().with_stderr(stderr))
                .ok_or(TransportError::AlreadyConnected)
        })
    }

    fn describe(&self) -> String {
        "process-like server".to_owned()
    }
}

fn process_like() -> (ProcessLike, MemoryEnd, StderrBuffer) {
    let (client_end, server) = memory::pair();
    let stderr = StderrBuffer::new(1024);
    let connector = ProcessLike {
        end: Mutex::new(Some(client_end)),
        stderr: stderr.clone(),
    };
    (connector, server, stderr)
}

/// A session-era server that ignores the probe: when `initialize` came,
/// counted from the probe.
async fn initialize_arrives_after(server: &mut MemoryEnd) -> Duration {
    let probe = recv(server).await;
    let probed = Instant::now();
    assert_eq!(probe["method"], "server/discover");
    let init = recv_skipping_cancels(server).await;
    let waited = probed.elapsed();
    assert_eq!(init["method"], "initialize");
    reply(server, &init, legacy_result()).await;
    assert_eq!(
        recv_skipping_cancels(server).await["method"],
        "notifications/initialized"
    );
    waited
}

#[tokio::test(start_paused = true)]
async fn the_probe_wait_starts_at_the_servers_first_output() {
    let (connector, mut server, stderr) = process_like();
    let connect = Client::builder().name("starting").connect(connector);
    let script = async {
        let probe = recv(&mut server).await;
        assert_eq!(probe["method"], "server/discover");
        let probed = Instant::now();
        // Starting for 8 s without a word: nothing but the probe is sent.
        let early =
            tokio::time::timeout(Duration::from_secs(8), recv_skipping_cancels(&mut server)).await;
        assert!(
            early.is_err(),
            "sent while the server was starting: {early:?}"
        );
        stderr.push(b"ready on stdio\n");
        // Up and ignoring the probe: `initialize` follows 3 s later.
        let init = recv_skipping_cancels(&mut server).await;
        let waited = probed.elapsed();
        assert_eq!(init["method"], "initialize");
        reply(&server, &init, legacy_result()).await;
        assert_eq!(
            recv_skipping_cancels(&mut server).await["method"],
            "notifications/initialized"
        );
        waited
    };
    let (client, waited) = tokio::join!(connect, script);
    assert_eq!(client.unwrap().era(), Era::Legacy);
    assert!(
        waited >= Duration::from_secs(11) && waited < Duration::from_millis(11_100),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_writes_gets_the_start_timeout() {
    let (connector, mut server, _stderr) = process_like();
    let (notices_tx, mut notices) = tokio::sync::mpsc::unbounded_channel();
    let connect = Client::builder()
        .name("quiet")
        .on_probe_wait(move |wait| {
            let _ = notices_tx.send(wait);
        })
        .connect(connector);
    let (client, waited) = tokio::join!(connect, initialize_arrives_after(&mut server));
    assert_eq!(client.unwrap().era(), Era::Legacy);
    assert!(
        waited >= DEFAULT_PROBE_START_TIMEOUT
            && waited < DEFAULT_PROBE_START_TIMEOUT + Duration::from_millis(100),
        "{waited:?}"
    );
    let wait = notices.try_recv().expect("the wait was announced");
    assert_eq!(wait.timeout, DEFAULT_PROBE_START_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_has_written_gets_the_probe_timeout() {
    let (connector, mut server, stderr) = process_like();
    // Output before the probe (a banner): the clock runs from the start.
    stderr.push(b"server v1\n");
    let connect = Client::builder().name("talkative").connect(connector);
    let (client, waited) = tokio::join!(connect, initialize_arrives_after(&mut server));
    assert_eq!(client.unwrap().era(), Era::Legacy);
    assert!(
        waited >= DEFAULT_PROBE_TIMEOUT
            && waited < DEFAULT_PROBE_TIMEOUT + Duration::from_millis(100),
        "{waited:?}"
    );
}
