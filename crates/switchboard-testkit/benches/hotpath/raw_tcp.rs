//! The HTTP floor: a hand-written session-era Streamable HTTP client,
//! HTTP/1.1 keep-alive over plain tokio `TcpStream`s (no reqwest, no hyper).
//! One POST per request on an idle pooled connection (a new one when none is
//! idle, so 64 requests in flight use up to 64 connections, as a pooled
//! HTTP/1.1 client does); the answer is read by `Content-Length` or chunked,
//! as the server sends it, and parsed into a `Value`.
//!
//! The HTTP/1.1 wire itself (the request bytes, the response head, a
//! chunked body, the answer in a body) is in pure functions at the bottom,
//! shared with the blocking floor (`blocking.rs`).

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

/// A response: its head and its body.
struct Response {
    head: Head,
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
        let (addr, path) = split_url(url)?;
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
        client.session = resp.head.session.clone();
        let init = answer(&resp.head, &resp.body, id)?;
        client.protocol_version = init["protocolVersion"].as_str().unwrap_or("?").to_owned();
        let body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let resp = client.post(body).await?;
        if resp.head.status != 202 {
            return Err(format!(
                "notifications/initialized: HTTP {}",
                resp.head.status
            ));
        }
        Ok(client)
    }

    async fn post(&self, body: &[u8]) -> Result<Response, String> {
        let msg = post_request(&self.path, &self.addr, self.session(), body);
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
        answer(&resp.head, &resp.body, id)
    }

    /// The session id and the negotiated version, once there is a session.
    fn session(&self) -> Option<(&str, &str)> {
        self.session
            .as_deref()
            .map(|s| (s, self.protocol_version.as_str()))
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
        let Some(session) = self.session() else {
            return;
        };
        let head = delete_request(&self.path, &self.addr, session);
        let idle = self.idle.lock().unwrap().pop();
        if let Some(mut conn) = idle
            && conn.stream.write_all(head.as_bytes()).await.is_ok()
        {
            let _ = read_response(&mut conn).await;
        }
        self.idle.lock().unwrap().clear();
    }
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
    let head = parse_head(&conn.buf[..end])?;
    conn.buf.drain(..end);
    let body = if head.chunked {
        let mut chunked = Chunked::default();
        loop {
            let used = chunked.feed(&conn.buf)?;
            conn.buf.drain(..used);
            if chunked.is_done() {
                break chunked.body;
            }
            fill(conn).await?;
        }
    } else {
        let n = head.length.unwrap_or(0);
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
    Ok(Response { head, body })
}

// ---------------------------------------------------------------------------
// The HTTP/1.1 wire, pure (no I/O): shared with the blocking floor.
// ---------------------------------------------------------------------------

/// `http://HOST:PORT/PATH` → (`HOST:PORT`, `/PATH`).
pub(crate) fn split_url(url: &str) -> Result<(&str, &str), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("not an http:// URL: {url}"))?;
    Ok(match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    })
}

/// A whole `POST` of a JSON body, head and body in one buffer (one write);
/// `session`: the `Mcp-Session-Id` and the negotiated `MCP-Protocol-Version`.
pub(crate) fn post_request(
    path: &str,
    addr: &str,
    session: Option<(&str, &str)>,
    body: &[u8],
) -> Vec<u8> {
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\naccept: application/json, text/event-stream\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some((session, version)) = session {
        head.push_str("mcp-session-id: ");
        head.push_str(session);
        head.push_str("\r\nmcp-protocol-version: ");
        head.push_str(version);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut msg = head.into_bytes();
    msg.extend_from_slice(body);
    msg
}

/// The `DELETE` that ends a session.
pub(crate) fn delete_request(path: &str, addr: &str, (session, version): (&str, &str)) -> String {
    format!(
        "DELETE {path} HTTP/1.1\r\nhost: {addr}\r\nmcp-session-id: {session}\r\n\
         mcp-protocol-version: {version}\r\ncontent-length: 0\r\n\r\n"
    )
}

/// What a client reads of a response head.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) length: Option<usize>,
    pub(crate) chunked: bool,
    pub(crate) content_type: String,
    pub(crate) session: Option<String>,
}

/// A response head, `\r\n\r\n` included (from `head_end`).
pub(crate) fn parse_head(head: &[u8]) -> Result<Head, String> {
    let head = std::str::from_utf8(head).map_err(fail)?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("bad status line")?;
    let mut out = Head {
        status,
        length: None,
        chunked: false,
        content_type: String::new(),
        session: None,
    };
    for l in lines {
        let Some((name, value)) = l.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            out.length = value.parse().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            out.chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("content-type") {
            out.content_type = value.to_owned();
        } else if name.eq_ignore_ascii_case("mcp-session-id") {
            out.session = Some(value.to_owned());
        }
    }
    Ok(out)
}

/// A chunked body, decoded as its bytes arrive (each byte looked at once).
#[derive(Debug, Default)]
pub(crate) struct Chunked {
    pub(crate) body: Vec<u8>,
    done: bool,
}

impl Chunked {
    /// Takes the complete chunks at the start of `buf` (the last chunk: its
    /// size line and CRLF, no trailers) and returns how many bytes it took.
    pub(crate) fn feed(&mut self, buf: &[u8]) -> Result<usize, String> {
        let mut at = 0;
        while !self.done {
            let rest = &buf[at..];
            let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") else {
                break;
            };
            let size_text = std::str::from_utf8(&rest[..line_end]).map_err(fail)?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(fail)?;
            let data = line_end + 2;
            // The chunk and its CRLF.
            if rest.len() < data + size + 2 {
                break;
            }
            self.body.extend_from_slice(&rest[data..data + size]);
            at += data + size + 2;
            self.done = size == 0;
        }
        Ok(at)
    }

    pub(crate) fn is_done(&self) -> bool {
        self.done
    }
}

/// The result of request `id` from a response.
pub(crate) fn answer(head: &Head, body: &[u8], id: u64) -> Result<Value, String> {
    if !(200..300).contains(&head.status) {
        return Err(format!("HTTP {}", head.status));
    }
    parse_answer(head.content_type.starts_with("text/event-stream"), body, id)
}
