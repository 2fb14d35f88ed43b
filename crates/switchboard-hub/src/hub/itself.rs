//! A gateway serving this very hub over HTTP, configured as one of its
//! servers (`claude mcp add --transport http switchboard
//! http://127.0.0.1:8765/mcp` while `serve --http` reads Claude Code's
//! file): connecting would serve every tool twice, through itself. Before
//! a served hub connects to a plain `http://` loopback URL, it asks that
//! address's `GET /healthz` for its instance id; its own id means itself.

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// How long the question may take: a loopback answer comes at once.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// The most of the answer read: a status line and a few headers.
const MOST_READ: usize = 8 * 1024;

/// Why a server is not connected when it is the hub's own gateway.
pub(crate) const ITSELF: &str = "this is switchboard's own gateway (its /healthz answers this gateway's instance id); skipped so it does not serve every server twice";

/// A fresh instance id: 128 random bits in hex.
///
/// From the OS (`/dev/urandom`), not `aws_lc_rs::rand`: the id only has to
/// be unique, and AWS-LC's first draw seeds its generator with CPU jitter
/// entropy, ~60 ms of CPU that every command building a hub paid before
/// starting a server (`perf` of `switchboard list`: 80 % of its CPU in
/// `tree_jitter_initialize_once`).
pub(crate) fn new_instance() -> String {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        // std's hasher keys are random per process (and per call here):
        // still this process's own.
        use std::hash::{BuildHasher as _, Hasher as _};
        for half in bytes.chunks_mut(8) {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u32(std::process::id());
            half.copy_from_slice(&hasher.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the loopback server at `url` answers `instance` on `/healthz`
/// (false for any other URL, and when it does not answer in time).
pub(crate) async fn is_itself(url: &str, instance: &str) -> bool {
    let Some((host, port)) = crate::config::itself::loopback(url) else {
        return false;
    };
    tokio::time::timeout(PROBE_TIMEOUT, healthz_instance(&host, port))
        .await
        .ok()
        .flatten()
        .is_some_and(|id| id == instance)
}

/// The `switchboard-instance` header of `GET /healthz` at `host:port`.
async fn healthz_instance(host: &str, port: u16) -> Option<String> {
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut stream = tokio::net::TcpStream::connect(&authority).await.ok()?;
    let request =
        format!("GET /healthz HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while answer.len() < MOST_READ && !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&answer);
    let mut lines = head.split("\r\n");
    if !lines.next()?.starts_with("HTTP/1.1 200") {
        return None;
    }
    let header = switchboard::server::http::INSTANCE_HEADER;
    lines.take_while(|l| !l.is_empty()).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case(header)
            .then(|| value.trim().to_owned())
    })
}
