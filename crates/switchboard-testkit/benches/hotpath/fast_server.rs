//! The fast server: an SDK-less echo server that answers in a few µs, so the
//! benchmark measures clients, not the server. The bench binary runs it as
//! `hotpath --fast-server stdio|http [--tools N] [--desc BYTES] [--page N]`.
//!
//! It speaks the session era: `initialize` (2025-11-25, 2025-06-18 or
//! 2025-03-26, whichever the client asks for; else 2025-11-25), answers
//! `server/discover` with -32601 so switchboard's auto mode falls back to
//! `initialize` at once, and serves `tools/list` (`echo`, `blob`, or `--tools
//! N` generated tools with `--desc BYTES` descriptions, `--page N` per page),
//! `tools/call echo` (the `text` argument back), `tools/call blob` (`size`
//! bytes of text) and `ping`.
//!
//! stdio: one blocking loop (read a line, answer, flush). HTTP: a
//! hand-written HTTP/1.1 server on a current-thread tokio runtime: `POST /mcp`
//! answered with `application/json` and `Content-Length` (`Mcp-Session-Id` on
//! `initialize`, 202 for notifications and responses), `GET` → 405, `DELETE` →
//! 200. Sessions are not checked: the server is a floor, not a conformance
//! peer.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The server's settings (from the command line).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastOptions {
    /// Generated tools in `tools/list` (0: just `echo` and `blob`).
    pub(crate) tools: usize,
    /// Description length of each generated tool.
    pub(crate) desc: usize,
    /// Tools per `tools/list` page.
    pub(crate) page: usize,
}

const SESSION_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

const BASIC_TOOLS: &str = r#"[{"name":"echo","description":"Echoes its text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},{"name":"blob","description":"Returns size bytes of text","inputSchema":{"type":"object","properties":{"size":{"type":"integer"}},"required":["size"]}}]"#;

/// One page of generated tools (`tools` in all, `desc` bytes of description
/// each), as the `tools/list` result's JSON; `None` cursor = first page.
pub(crate) fn tools_page(opts: &FastOptions, page: usize) -> String {
    let per = opts.page.max(1);
    let start = page * per;
    let end = (start + per).min(opts.tools);
    let desc = "d".repeat(opts.desc);
    let mut out = String::with_capacity((end - start) * (opts.desc + 100) + 64);
    out.push_str(r#"{"tools":["#);
    for i in start..end {
        if i > start {
            out.push(',');
        }
        out.push_str(&format!(
            r#"{{"name":"tool_{i}","description":"{desc}","inputSchema":{{"type":"object","properties":{{"x":{{"type":"string"}}}}}}}}"#
        ));
    }
    out.push(']');
    if end < opts.tools {
        out.push_str(&format!(r#","nextCursor":"{}""#, page + 1));
    }
    out.push('}');
    out
}

/// The total JSON size of every `tools/list` result page.
pub(crate) fn tools_json_size(opts: &FastOptions) -> usize {
    let pages = opts.tools.div_ceil(opts.page.max(1));
    (0..pages).map(|p| tools_page(opts, p).len()).sum()
}

#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InitParams<'a> {
    #[serde(borrow, rename = "protocolVersion")]
    protocol_version: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Option<CallArgs<'a>>,
}

#[derive(Deserialize)]
struct CallArgs<'a> {
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    size: Option<usize>,
}

#[derive(Deserialize)]
struct ListParams<'a> {
    #[serde(borrow)]
    cursor: Option<Cow<'a, str>>,
}

/// An answer in pieces, so a large text is written from the shared buffer
/// and never copied per call.
pub(crate) struct Reply {
    pub(crate) head: Vec<u8>,
    pub(crate) body: Option<Arc<str>>,
    pub(crate) tail: &'static [u8],
    /// `initialize`: the HTTP answer carries a session id.
    pub(crate) initialize: bool,
}

impl Reply {
    fn whole(head: Vec<u8>) -> Reply {
        Reply {
            head,
            body: None,
            tail: b"",
            initialize: false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.head.len() + self.body.as_ref().map_or(0, |b| b.len()) + self.tail.len()
    }
}

/// The shared answers.
pub(crate) struct Answers {
    opts: FastOptions,
    blobs: Mutex<HashMap<usize, Arc<str>>>,
    pages: Mutex<HashMap<usize, Arc<str>>>,
}

impl Answers {
    pub(crate) fn new(opts: FastOptions) -> Answers {
        Answers {
            opts,
            blobs: Mutex::default(),
            pages: Mutex::default(),
        }
    }

    fn blob(&self, size: usize) -> Arc<str> {
        let mut blobs = self.blobs.lock().unwrap();
        Arc::clone(
            blobs
                .entry(size)
                .or_insert_with(|| Arc::from("x".repeat(size))),
        )
    }

    fn page(&self, page: usize) -> Arc<str> {
        let mut pages = self.pages.lock().unwrap();
        Arc::clone(
            pages
                .entry(page)
                .or_insert_with(|| Arc::from(tools_page(&self.opts, page))),
        )
    }

    /// The answer to one message; `None` for notifications, responses and
    /// anything unreadable.
    pub(crate) fn answer(&self, line: &[u8]) -> Option<Reply> {
        let msg: Msg<'_> = serde_json::from_slice(line).ok()?;
        let id = msg.id?.get();
        let method = msg.method?;
        let params = msg.params.map_or("{}", RawValue::get);
        let result =
            |body: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{body}}}"#).into_bytes();
        let reply = match &*method {
            "initialize" => {
                let asked = serde_json::from_str::<InitParams<'_>>(params)
                    .ok()
                    .and_then(|p| p.protocol_version);
                let version = asked
                    .as_deref()
                    .filter(|v| SESSION_VERSIONS.contains(v))
                    .unwrap_or(SESSION_VERSIONS[0]);
                let mut r = Reply::whole(result(&format!(
                    r#"{{"protocolVersion":"{version}","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"hotpath-fast-server","version":"0.0.0"}}}}"#
                )));
                r.initialize = true;
                r
            }
            "ping" => Reply::whole(result("{}")),
            "tools/list" => {
                if self.opts.tools == 0 {
                    Reply::whole(result(&format!(r#"{{"tools":{BASIC_TOOLS}}}"#)))
                } else {
                    let page = serde_json::from_str::<ListParams<'_>>(params)
                        .ok()
                        .and_then(|p| p.cursor)
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(0);
                    Reply {
                        head: format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).into_bytes(),
                        body: Some(self.page(page)),
                        tail: b"}",
                        initialize: false,
                    }
                }
            }
            "tools/call" => {
                let call: CallParams<'_> = serde_json::from_str(params).ok()?;
                match (&*call.name, call.arguments) {
                    ("echo", Some(CallArgs { text: Some(t), .. })) => Reply::whole(result(
                        &format!(r#"{{"content":[{{"type":"text","text":{}}}]}}"#, t.get()),
                    )),
                    ("blob", Some(CallArgs { size: Some(n), .. })) => Reply {
                        head: format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
                        )
                        .into_bytes(),
                        body: Some(self.blob(n)),
                        tail: b"\"}]}}",
                        initialize: false,
                    },
                    (name, _) => Reply::whole(
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"unknown tool or bad arguments: {}"}}}}"#,
                            name.escape_default()
                        )
                        .into_bytes(),
                    ),
                }
            }
            // server/discover and everything else: method not found.
            _ => Reply::whole(
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"Method not found"}}}}"#
                )
                .into_bytes(),
            ),
        };
        Some(reply)
    }
}

/// Runs the server; never returns normally.
pub(crate) fn main(args: &[String]) -> ! {
    let mut mode = "stdio";
    let mut opts = FastOptions {
        tools: 0,
        desc: 0,
        page: 1_000,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = || -> usize { it.next().and_then(|s| s.parse().ok()).unwrap_or(0) };
        match a.as_str() {
            "stdio" | "http" => mode = if a == "http" { "http" } else { "stdio" },
            "--tools" => opts.tools = num(),
            "--desc" => opts.desc = num(),
            "--page" => opts.page = num(),
            other => {
                eprintln!("fast server: unknown argument {other:?}");
                std::process::exit(2)
            }
        }
    }
    let answers = Answers::new(opts);
    if mode == "stdio" {
        serve_stdio(&answers);
    } else {
        serve_http(Arc::new(answers));
    }
    std::process::exit(0)
}

fn serve_stdio(answers: &Answers) {
    let stdin = std::io::stdin();
    let mut input = std::io::BufReader::with_capacity(64 * 1024, stdin.lock());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Some(reply) = answers.answer(&line) else {
            continue;
        };
        let written = out
            .write_all(&reply.head)
            .and_then(|()| match &reply.body {
                Some(b) => out.write_all(b.as_bytes()),
                None => Ok(()),
            })
            .and_then(|()| out.write_all(reply.tail))
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if written.is_err() {
            return;
        }
    }
}

fn serve_http(answers: Arc<Answers>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        println!("listening on http://{addr}");
        let _ = std::io::stdout().flush();
        let sessions = Arc::new(std::sync::atomic::AtomicU64::new(1));
        let mut conns = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    conns.spawn(serve_conn(stream, Arc::clone(&answers), Arc::clone(&sessions)));
                }
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
    });
}

/// The end of the head (index after `\r\n\r\n`) in `buf`, if complete.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    memchr_find(buf, b"\r\n\r\n").map(|i| i + 4)
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn serve_conn(
    mut stream: tokio::net::TcpStream,
    answers: Arc<Answers>,
    sessions: Arc<std::sync::atomic::AtomicU64>,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut scanned: usize = 0;
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    loop {
        // The head.
        let end = loop {
            if let Some(end) = head_end(&buf[scanned.saturating_sub(3)..]) {
                break scanned.saturating_sub(3) + end;
            }
            scanned = buf.len();
            if buf.len() > 64 * 1024 {
                return;
            }
            buf.reserve(16 * 1024);
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        let head = match std::str::from_utf8(&buf[..end]) {
            Ok(h) => h,
            Err(_) => return,
        };
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or("");
        let method = request_line.split(' ').next().unwrap_or("").to_owned();
        let mut length = 0usize;
        for l in lines {
            if let Some((name, value)) = l.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        // The body.
        while buf.len() < end + length {
            buf.reserve(end + length - buf.len());
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        out.clear();
        let mut big: Option<Arc<str>> = None;
        let mut tail: &[u8] = b"";
        match method.as_str() {
            "POST" => match answers.answer(&buf[end..end + length]) {
                Some(reply) => {
                    let session = if reply.initialize {
                        format!(
                            "Mcp-Session-Id: s{}\r\n",
                            sessions.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        )
                    } else {
                        String::new()
                    };
                    out.extend_from_slice(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{session}content-length: {}\r\n\r\n",
                            reply.len()
                        )
                        .as_bytes(),
                    );
                    out.extend_from_slice(&reply.head);
                    big = reply.body;
                    tail = reply.tail;
                }
                None => out.extend_from_slice(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"),
            },
            "GET" => out.extend_from_slice(
                b"HTTP/1.1 405 Method Not Allowed\r\nallow: POST, DELETE\r\ncontent-length: 0\r\n\r\n",
            ),
            "DELETE" => out.extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"),
            _ => out.extend_from_slice(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"),
        }
        buf.drain(..end + length);
        scanned = 0;
        let written = async {
            match &big {
                Some(b) => {
                    stream.write_all(&out).await?;
                    stream.write_all(b.as_bytes()).await?;
                    stream.write_all(tail).await
                }
                None => stream.write_all(&out).await,
            }
        }
        .await;
        if written.is_err() {
            return;
        }
    }
}
