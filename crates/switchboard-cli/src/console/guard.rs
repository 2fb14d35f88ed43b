//! Who may use the console, checked on every request before anything
//! else: the console listens on 127.0.0.1 only, and any local process —
//! another user's, or a page in the user's own browser from any site —
//! can reach a loopback port (CVE-2025-49596 was the MCP Inspector's
//! unauthenticated one, which started processes).
//!
//! - `Host` must be the console's own address (`127.0.0.1:PORT` or
//!   `localhost:PORT`): a DNS-rebinding page's requests carry its own name.
//! - `Origin`, when sent, must be the console's own: a page of another
//!   site gets 403 whatever else it sends.
//! - A secret token, made at launch: given once in the URL the command
//!   opens (`/?token=…`), it becomes an `HttpOnly; SameSite=Strict` cookie;
//!   every other request needs that cookie (or `Authorization: Bearer`),
//!   else 401. Tokens are compared in constant time.
//! - Nothing changes on `GET`; a request that changes something is a
//!   `POST` of `application/json`, which no HTML form can send.

use std::net::SocketAddr;

/// The cookie that carries the token after the first page, with the
/// console's port after it: cookies are kept per host, not per port, so
/// two consoles at once (the session's and another) each keep their own.
pub(crate) const COOKIE: &str = "switchboard_console";

/// Why a request is refused, with its HTTP status.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 403: another host name (DNS rebinding) or another site's page.
    Forbidden(&'static str),
    /// 401: no token, or a wrong one.
    Unauthorized,
    /// 415: a request that changes something, not sent as JSON.
    NotJson,
    /// 405: a method the console does not take.
    Method,
}

impl Refusal {
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::Forbidden(_) => 403,
            Self::Unauthorized => 401,
            Self::NotJson => 415,
            Self::Method => 405,
        }
    }

    pub(crate) fn text(&self) -> &'static str {
        match self {
            Self::Forbidden(why) => why,
            Self::Unauthorized => {
                "no console token: open the address `switchboard console` printed"
            }
            Self::NotJson => "a request that changes something must be a POST of application/json",
            Self::Method => "method not allowed",
        }
    }
}

/// The console's secret and address.
pub(crate) struct Guard {
    token: String,
    addr: SocketAddr,
}

/// What a request shows the guard.
pub(crate) struct Seen<'a> {
    pub(crate) method: &'a str,
    pub(crate) host: Option<&'a str>,
    pub(crate) origin: Option<&'a str>,
    pub(crate) cookie: Option<&'a str>,
    pub(crate) authorization: Option<&'a str>,
    pub(crate) content_type: Option<&'a str>,
    /// `token` in the query string.
    pub(crate) query_token: Option<&'a str>,
}

/// What the guard lets through.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// The request, with the token (cookie or header).
    Authorized,
    /// The first page, with the token in its URL: set the cookie.
    SignIn,
}

impl Guard {
    /// A guard with a fresh token for the console at `addr`.
    pub(crate) fn new(addr: SocketAddr) -> std::io::Result<Self> {
        let mut bytes = [0u8; 32];
        use std::io::Read as _;
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        let token = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Self { token, addr })
    }

    #[cfg(test)]
    fn with_token(addr: SocketAddr, token: &str) -> Self {
        Self {
            token: token.to_owned(),
            addr,
        }
    }

    /// The console's port.
    pub(crate) fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The address to open: the first page, with the token.
    pub(crate) fn sign_in_url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
    }

    /// The `Set-Cookie` value that signs a browser in.
    pub(crate) fn cookie(&self) -> String {
        format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_name(),
            self.token
        )
    }

    /// This console's cookie's name.
    fn cookie_name(&self) -> String {
        format!("{COOKIE}_{}", self.addr.port())
    }

    /// Checks a request: its host, origin, token and method.
    pub(crate) fn check(&self, seen: &Seen<'_>) -> Result<Pass, Refusal> {
        let port = self.addr.port();
        let own_host =
            |host: &str| host == format!("127.0.0.1:{port}") || host == format!("localhost:{port}");
        if !seen.host.is_some_and(own_host) {
            return Err(Refusal::Forbidden(
                "this is switchboard's console: address it as 127.0.0.1 or localhost with its port",
            ));
        }
        if let Some(origin) = seen.origin {
            let own = origin.strip_prefix("http://").is_some_and(own_host);
            if !own {
                return Err(Refusal::Forbidden(
                    "a page of another site may not use switchboard's console",
                ));
            }
        }
        let changes = match seen.method {
            "GET" | "HEAD" => false,
            "POST" => true,
            _ => return Err(Refusal::Method),
        };
        let given = seen
            .cookie
            .and_then(|cookies| {
                cookies.split(';').find_map(|pair| {
                    let (name, value) = pair.trim().split_once('=')?;
                    (name == self.cookie_name()).then_some(value)
                })
            })
            .or_else(|| seen.authorization?.strip_prefix("Bearer "));
        let pass = match (given, seen.query_token) {
            (Some(token), _) if same(token, &self.token) => Pass::Authorized,
            (_, Some(token)) if !changes && same(token, &self.token) => Pass::SignIn,
            _ => return Err(Refusal::Unauthorized),
        };
        if changes {
            let json = seen
                .content_type
                .and_then(|t| t.split(';').next())
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
            if !json {
                return Err(Refusal::NotJson);
            }
        }
        Ok(pass)
    }
}

/// `a == b`, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |diff, (x, y)| diff | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef";

    fn guard() -> Guard {
        Guard::with_token("127.0.0.1:4321".parse().unwrap(), TOKEN)
    }

    fn seen<'a>(method: &'a str) -> Seen<'a> {
        Seen {
            method,
            host: Some("127.0.0.1:4321"),
            origin: None,
            cookie: None,
            authorization: None,
            content_type: None,
            query_token: None,
        }
    }

    #[test]
    fn the_token_in_the_url_signs_in_and_the_cookie_authorizes() {
        let guard = guard();
        let first = Seen {
            query_token: Some(TOKEN),
            ..seen("GET")
        };
        assert_eq!(guard.check(&first), Ok(Pass::SignIn));
        let cookie = format!("a=b; {COOKIE}_4321={TOKEN}; {COOKIE}_9999=other");
        let later = Seen {
            cookie: Some(&cookie),
            ..seen("GET")
        };
        assert_eq!(guard.check(&later), Ok(Pass::Authorized));
        let bearer = format!("Bearer {TOKEN}");
        let header = Seen {
            authorization: Some(&bearer),
            host: Some("localhost:4321"),
            ..seen("GET")
        };
        assert_eq!(guard.check(&header), Ok(Pass::Authorized));
        assert!(guard.cookie().contains("HttpOnly; SameSite=Strict"));
    }

    #[test]
    fn no_token_a_wrong_one_or_a_prefix_of_it_is_401() {
        let guard = guard();
        assert_eq!(guard.check(&seen("GET")), Err(Refusal::Unauthorized));
        for wrong in ["0123456789abcdee", "0123456789abcde", ""] {
            let cookie = format!("{COOKIE}_4321={wrong}");
            let request = Seen {
                cookie: Some(&cookie),
                query_token: Some(wrong),
                ..seen("GET")
            };
            assert_eq!(guard.check(&request), Err(Refusal::Unauthorized), "{wrong}");
        }
    }

    #[test]
    fn another_host_or_origin_is_403_even_with_the_token() {
        let guard = guard();
        let cookie = format!("{COOKIE}_4321={TOKEN}");
        for host in [
            None,
            Some("evil.example:4321"),
            Some("127.0.0.1:9999"),
            Some("127.0.0.1"),
        ] {
            let request = Seen {
                host,
                cookie: Some(&cookie),
                ..seen("GET")
            };
            assert_eq!(guard.check(&request).unwrap_err().status(), 403, "{host:?}");
        }
        for origin in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:4321",
            "http://127.0.0.1:4321.evil.example",
        ] {
            let request = Seen {
                origin: Some(origin),
                cookie: Some(&cookie),
                content_type: Some("application/json"),
                ..seen("POST")
            };
            assert_eq!(guard.check(&request).unwrap_err().status(), 403, "{origin}");
        }
        let own = Seen {
            origin: Some("http://127.0.0.1:4321"),
            cookie: Some(&cookie),
            content_type: Some("application/json"),
            ..seen("POST")
        };
        assert_eq!(guard.check(&own), Ok(Pass::Authorized));
    }

    #[test]
    fn a_change_is_a_json_post_with_the_cookie_never_a_form_or_the_url_token() {
        let guard = guard();
        let cookie = format!("{COOKIE}_4321={TOKEN}");
        for content_type in [
            None,
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("text/plain"),
        ] {
            let request = Seen {
                cookie: Some(&cookie),
                content_type,
                ..seen("POST")
            };
            assert_eq!(
                guard.check(&request),
                Err(Refusal::NotJson),
                "{content_type:?}"
            );
        }
        let by_url = Seen {
            query_token: Some(TOKEN),
            content_type: Some("application/json"),
            ..seen("POST")
        };
        assert_eq!(guard.check(&by_url), Err(Refusal::Unauthorized));
        let put = Seen {
            cookie: Some(&cookie),
            ..seen("PUT")
        };
        assert_eq!(guard.check(&put), Err(Refusal::Method));
    }
}
