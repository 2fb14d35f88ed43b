//! One raw HTTP/1.1 exchange on a fresh connection: for what a listener
//! answers to requests no client library would send (no token, a foreign
//! `Host`, another user's session).

#![allow(dead_code)] // the listener and users tests use it

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// What came back: the status, the head (status line and headers) and the
/// body.
pub(crate) struct Raw {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: String,
}

impl Raw {
    /// A header's value (the first of that name, any case).
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    /// The whole response as text.
    pub(crate) fn text(&self) -> String {
        format!("{}\r\n\r\n{}", self.head, self.body)
    }
}

/// Sends `request_line`, `head` (whole header lines) and `body` (with its
/// `content-length` and `connection: close`) to `address` (`IP:PORT`), and
/// reads the answer to its end; `None` when nothing listens there.
pub(crate) fn exchange(
    address: &str,
    request_line: &str,
    head: &[&str],
    body: &str,
) -> Option<Raw> {
    let addr: SocketAddr = address.parse().unwrap();
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!("{request_line}\r\n");
    for line in head {
        request.push_str(line);
        request.push_str("\r\n");
    }
    request.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Some(Raw {
        status: head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        head: head.to_owned(),
        body: body.to_owned(),
    })
}
