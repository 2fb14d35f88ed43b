//! The HTTP floor: a hand-written session-era Streamable HTTP client,
//! HTTP/1.1 keep-alive over plain tokio `TcpStream`s (no reqwest, no hyper).
//! One POST per request on an idle pooled connection (a new one when none is
//! idle, so 64 requests in flight use up to 64 connections, as a pooled
//! HTTP/1.1 client does); the answer is read by `Content-Length` or chunked,
//! as the server sends it, and parsed into a `Value`.

use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::fast_server::head_end;
use super::{fail, parse_answer};

/// One keep-alive connection and its read buffer.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A response: status, `content-type`, `mcp-session-id`, body.
struct Response {
    status: u16,
    content_type: String,
    session: Option<String>,
    body: Vec<u8>,
}

pub(crate) struct RawTcpClient {
    addr: String,
    path: String,
    pub(crate) protocol_version: String,
    session: Option<String>,
    next_id: AtomicU64,
    idle: StdMutex<Vec<Conn>>,
}

impl RawTcpClient {
    /// `url`: `http://HOST:PORT/PATH`.
    pub(crate) async fn connect(url: &str) -> Result<RawTcpClient, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("not an http:// URL: {url}"))?;
        let (addr, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let mut client = RawTcpClient {
            addr: addr.to_owned(),
            path: path.to_owned(),
            protocol_version: String::new(),
            session: None,
            next_id: AtomicU64::new(1),
            idle: StdMutex::new(Vec::new()),
        };
        let id = client.next_id.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "hotpath-raw-tcp", "version": "0.0.0"},
            },
        }))
        .map_err(fail)?;
        let resp = client.post(&body).await?;
        client.session = resp.session.clone();
        let init = answer(resp, id)?;
        client.protocol_version = init["protocolVersion"].as_str().unwrap_or("?").to_owned();
        let body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let resp = client.post(body).await?;
        if resp.status != 202 {
            return Err(format!("notifications/initialized: HTTP {}", resp.status));
        }
        Ok(client)
    }

    async fn post(&self, body: &[u8]) -> Result<Response, String> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nhost: {}\r\naccept: application/json, text/event-stream\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n",
            self.path,
            self.addr,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str("mcp-session-id: ");
            head.push_str(session);
            head.push_str("\r\nmcp-protocol-version: ");
            head.push_str(&self.protocol_version);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        let mut msg = head.into_bytes();
        msg.extend_from_slice(body);
        let idle = self.idle.lock().unwrap().pop();
        let mut conn = match idle {
            Some(c) => c,
            None => {
                let stream = TcpStream::connect(&self.addr).await.map_err(fail)?;
                stream.set_nodelay(true).map_err(fail)?;
                Conn {
                    stream,
                    buf: Vec::with_capacity(16 * 1024),
                }
            }
        };
        conn.stream.write_all(&msg).await.map_err(fail)?;
        let resp = read_response(&mut conn).await?;
        self.idle.lock().unwrap().push(conn);
        Ok(resp)
    }

    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .map_err(fail)?;
        let resp = self.post(&body).await?;
        answer(resp, id)
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

    /// Ends the session (`DELETE`).
    pub(crate) async fn close(&self) {
        let Some(session) = &self.session else {
            return;
        };
        let head = format!(
            "DELETE {} HTTP/1.1\r\nhost: {}\r\nmcp-session-id: {session}\r\n\
             mcp-protocol-version: {}\r\ncontent-length: 0\r\n\r\n",
            self.path, self.addr, self.protocol_version
        );
        let idle = self.idle.lock().unwrap().pop();
        if let Some(mut conn) = idle
            && conn.stream.write_all(head.as_bytes()).await.is_ok()
        {
            let _ = read_response(&mut conn).await;
        }
        self.idle.lock().unwrap().clear();
    }
}

fn answer(resp: Response, id: u64) -> Result<Value, String> {
    if !(200..300).contains(&resp.status) {
        return Err(format!("HTTP {}", resp.status));
    }
    parse_answer(
        resp.content_type.starts_with("text/event-stream"),
        &resp.body,
        id,
    )
}

async fn fill(conn: &mut Conn) -> Result<(), String> {
    conn.buf.reserve(16 * 1024);
    match conn.stream.read_buf(&mut conn.buf).await {
        Ok(0) => Err("connection closed".into()),
        Ok(_) => Ok(()),
        Err(e) => Err(fail(e)),
    }
}

async fn read_response(conn: &mut Conn) -> Result<Response, String> {
    let mut scanned: usize = 0;
    let end = loop {
        let from = scanned.saturating_sub(3);
        if let Some(end) = head_end(&conn.buf[from..]) {
            break from + end;
        }
        scanned = conn.buf.len();
        if scanned > 64 * 1024 {
            return Err("response head over 64 KiB".into());
        }
        fill(conn).await?;
    };
    let head = std::str::from_utf8(&conn.buf[..end]).map_err(fail)?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("bad status line")?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut content_type = String::new();
    let mut session = None;
    for l in lines {
        let Some((name, value)) = l.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("content-type") {
            content_type = value.to_owned();
        } else if name.eq_ignore_ascii_case("mcp-session-id") {
            session = Some(value.to_owned());
        }
    }
    conn.buf.drain(..end);
    let body = if chunked {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = conn.buf.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                fill(conn).await?;
            };
            let size_text = std::str::from_utf8(&conn.buf[..line_end]).map_err(fail)?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(fail)?;
            conn.buf.drain(..line_end + 2);
            // The chunk and its CRLF (the last chunk: just the CRLF, no trailers).
            while conn.buf.len() < size + 2 {
                fill(conn).await?;
            }
            body.extend_from_slice(&conn.buf[..size]);
            conn.buf.drain(..size + 2);
            if size == 0 {
                break body;
            }
        }
    } else {
        let n = length.unwrap_or(0);
        if conn.buf.len() >= n {
            let body = conn.buf[..n].to_vec();
            conn.buf.drain(..n);
            body
        } else {
            // A large body: read it straight into its own buffer.
            let mut body = Vec::with_capacity(n);
            body.append(&mut conn.buf);
            // Into spare capacity (no zero-fill), never past this body.
            while body.len() < n {
                let want = (n - body.len()) as u64;
                let got = (&mut conn.stream)
                    .take(want)
                    .read_buf(&mut body)
                    .await
                    .map_err(fail)?;
                if got == 0 {
                    return Err("connection closed in the body".into());
                }
            }
            body
        }
    };
    Ok(Response {
        status,
        content_type,
        session,
        body,
    })
}
