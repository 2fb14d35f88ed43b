//! The stdio floor: a hand-written NDJSON client of a spawned MCP server
//! (no SDK). One writer behind a lock, one reader task routing each answer
//! to its caller through a pending map; a request from the server is
//! answered at once (`ping` with `{}`, anything else with -32601), a
//! notification is dropped. Drives `switchboard serve` and `mcp-remote`
//! (both stdio servers in front of an HTTP backend) and the fast server
//! itself, so the three are read by the same code.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, oneshot};

use super::fail;

type Pending = Arc<StdMutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;
type Writer = Arc<Mutex<BufWriter<ChildStdin>>>;

pub(crate) struct StdioClient {
    child: Child,
    writer: Writer,
    pending: Pending,
    next_id: AtomicU64,
    reader: tokio::task::JoinHandle<()>,
}

impl StdioClient {
    /// Spawns `command` (stdin and stdout piped, stderr dropped) and opens
    /// the session: `initialize` (2025-11-25), `notifications/initialized`.
    pub(crate) async fn connect(mut command: Command) -> Result<StdioClient, String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(fail)?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let writer: Writer = Arc::new(Mutex::new(BufWriter::with_capacity(64 * 1024, stdin)));
        let pending: Pending = Arc::default();
        let reader = tokio::spawn(read_loop(
            BufReader::with_capacity(64 * 1024, stdout),
            Arc::clone(&pending),
            Arc::clone(&writer),
        ));
        let client = StdioClient {
            child,
            writer,
            pending,
            next_id: AtomicU64::new(1),
            reader,
        };
        client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "gateway-bench-stdio", "version": "0.0.0"},
                }),
            )
            .await?;
        client
            .send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await?;
        Ok(client)
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    async fn send(&self, line: &[u8]) -> Result<(), String> {
        let mut w = self.writer.lock().await;
        w.write_all(line).await.map_err(fail)?;
        w.write_all(b"\n").await.map_err(fail)?;
        w.flush().await.map_err(fail)
    }

    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .map_err(fail)?;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        if let Err(e) = self.send(&line).await {
            self.pending.lock().unwrap().remove(&id);
            return Err(e);
        }
        rx.await
            .map_err(|_| "the server closed its stdout".to_owned())?
    }

    pub(crate) async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<usize, String> {
        let result = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await?;
        result["content"][0]["text"]
            .as_str()
            .map(str::len)
            .ok_or_else(|| format!("unexpected result: {result}"))
    }

    /// Closes stdin (the MCP way to end a stdio session), then kills what
    /// is left.
    pub(crate) async fn close(mut self) {
        {
            let mut w = self.writer.lock().await;
            let _ = w.shutdown().await;
        }
        let exited =
            tokio::time::timeout(std::time::Duration::from_secs(2), self.child.wait()).await;
        if exited.is_err() {
            let _ = self.child.kill().await;
        }
        self.reader.abort();
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_loop(
    mut input: BufReader<tokio::process::ChildStdout>,
    pending: Pending,
    writer: Writer,
) {
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(mut msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        match (msg.get("id").cloned(), method) {
            // A request from the server.
            (Some(id), Some(method)) => {
                let answer = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": -32601, "message": "Method not found"}})
                };
                let mut w = writer.lock().await;
                let _ = w.write_all(format!("{answer}\n").as_bytes()).await;
                let _ = w.flush().await;
            }
            // A response.
            (Some(id), None) => {
                let Some(tx) = id
                    .as_u64()
                    .and_then(|id| pending.lock().unwrap().remove(&id))
                else {
                    continue;
                };
                let outcome = match msg.get("error") {
                    Some(err) => Err(format!("JSON-RPC error: {err}")),
                    None => Ok(msg
                        .get_mut("result")
                        .map(Value::take)
                        .unwrap_or(Value::Null)),
                };
                let _ = tx.send(outcome);
            }
            // A notification.
            _ => {}
        }
    }
    // Whoever still waits learns the server is gone (their sender drops).
    pending.lock().unwrap().clear();
}
