//! Pages for a browser beside the endpoint: a `GET` on a path the server
//! gives [`Pages`] for (an OAuth callback, a page a URL elicitation sends
//! the user to) is answered by it, after the `Host` check, without the
//! endpoint's token — a browser has none. What it answers is sent with
//! headers that keep it to itself: no caching, no referrer (a callback's
//! URL holds a code), no script, no framing.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Response, StatusCode};

use super::body::ResponseBody;
use crate::transport::BoxFuture;

/// A browser's `GET` of a page.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PageRequest {
    /// The path (`/oauth/callback`).
    pub path: String,
    /// The query, without its `?`, as sent.
    pub query: Option<String>,
    /// The request's `Cookie` header, as sent.
    pub cookies: Option<String>,
}

impl PageRequest {
    /// The value of cookie `name`, if the browser sent it.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies.as_deref()?.split(';').find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value)
        })
    }

    /// The first value of query parameter `name`, decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.query.as_deref()?.as_bytes())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    }
}

/// What a page answers: plain text, or a redirect; with cookies to set.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Page {
    /// The status.
    pub status: u16,
    /// The text shown (`text/plain`: nothing in it runs).
    pub text: String,
    /// Where a redirect sends the browser.
    pub location: Option<String>,
    /// `Set-Cookie` values, each whole.
    pub set_cookies: Vec<String>,
}

impl Page {
    /// `text` with `status`.
    pub fn text(status: u16, text: impl Into<String>) -> Self {
        Self {
            status,
            text: text.into(),
            location: None,
            set_cookies: Vec::new(),
        }
    }

    /// A `302 Found` to `location`.
    pub fn redirect(location: impl Into<String>) -> Self {
        Self {
            location: Some(location.into()),
            ..Self::text(302, "")
        }
    }

    /// Also sets a cookie (`set_cookie` is the whole header value).
    #[must_use]
    pub fn set_cookie(mut self, set_cookie: impl Into<String>) -> Self {
        self.set_cookies.push(set_cookie.into());
        self
    }

    pub(super) fn into_response(self) -> Response<ResponseBody> {
        let mut response = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(
            self.text,
        ))));
        *response.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let headers = response.headers_mut();
        for (name, value) in [
            ("content-type", "text/plain; charset=utf-8"),
            ("cache-control", "no-store"),
            ("referrer-policy", "no-referrer"),
            ("x-content-type-options", "nosniff"),
            (
                "content-security-policy",
                "default-src 'none'; frame-ancestors 'none'",
            ),
        ] {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        if let Some(location) = self
            .location
            .as_deref()
            .and_then(|l| HeaderValue::from_str(l).ok())
        {
            headers.insert(hyper::header::LOCATION, location);
        }
        for cookie in self.set_cookies {
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                headers.append(hyper::header::SET_COOKIE, value);
            }
        }
        response
    }
}

/// The pages a server serves beside its endpoint: given a `GET`, the
/// page's answer, or `None` for a path it has no page at (404).
#[derive(Clone)]
pub struct Pages(Arc<dyn Fn(PageRequest) -> Option<BoxFuture<'static, Page>> + Send + Sync>);

impl Pages {
    /// Pages answered by `answer`.
    pub fn new(
        answer: impl Fn(PageRequest) -> Option<BoxFuture<'static, Page>> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(answer))
    }

    pub(super) fn answer(&self, request: PageRequest) -> Option<BoxFuture<'static, Page>> {
        (self.0)(request)
    }
}

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pages")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_request_finds_its_cookie_and_its_parameters() {
        let request = PageRequest {
            path: "/oauth/callback".into(),
            query: Some("code=a%2Bb&state=s&code=second".into()),
            cookies: Some("other=1; sb_login=v.alue=; x".into()),
        };
        assert_eq!(request.cookie("sb_login"), Some("v.alue="));
        assert_eq!(request.cookie("sb"), None);
        assert_eq!(request.param("code").as_deref(), Some("a+b"));
        assert_eq!(request.param("missing"), None);
    }

    #[test]
    fn a_page_is_plain_text_that_keeps_to_itself() {
        let response = Page::redirect("https://as.example/authorize?x=1")
            .set_cookie("a=b; HttpOnly")
            .set_cookie("bad\nvalue")
            .into_response();
        assert_eq!(response.status(), 302);
        let headers = response.headers();
        assert_eq!(headers["location"], "https://as.example/authorize?x=1");
        assert_eq!(headers.get_all("set-cookie").iter().count(), 1);
        assert_eq!(headers["referrer-policy"], "no-referrer");
        assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
        assert_eq!(headers["cache-control"], "no-store");
    }
}
