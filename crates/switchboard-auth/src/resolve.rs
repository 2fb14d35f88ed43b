//! The SSRF guard at connect time: a DNS resolver for the auth code's HTTP
//! client that hands reqwest only addresses [`UrlGuard::check_resolved`]
//! allowed.
//!
//! [`UrlGuard::check`] judges a URL by its text, so a public-looking name
//! such as `auth.evil.example` that resolves to `127.0.0.1` or `10.0.0.5`
//! would pass it. The resolver closes that gap: reqwest connects only to
//! the addresses it returns, and it returns only addresses it has checked,
//! so there is no second lookup an attacker's DNS could answer differently.
//! An answer with any refused address is refused whole (a name that mixes
//! public and private addresses is not trusted with either).
//!
//! Two ways around it remain, and both are outside this resolver: an IP
//! literal in a URL is never resolved (the URL check covers those), and a
//! proxy configured in the environment resolves names itself.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::ssrf::UrlGuard;

/// A [`reqwest::dns::Resolve`] that filters another resolver's answers
/// through a [`UrlGuard`]. Cheap to clone.
#[derive(Clone)]
pub struct GuardedResolver {
    guard: UrlGuard,
    inner: Option<Arc<dyn Resolve>>,
}

impl fmt::Debug for GuardedResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedResolver")
            .field("guard", &self.guard)
            .field("custom_inner", &self.inner.is_some())
            .finish()
    }
}

impl GuardedResolver {
    /// Resolves with the system resolver (`getaddrinfo`) and lets through
    /// only what `guard` allows.
    pub fn new(guard: UrlGuard) -> Self {
        Self { guard, inner: None }
    }

    /// Resolves with `inner` instead of the system resolver; its answers
    /// pass the guard all the same.
    pub fn with_inner(guard: UrlGuard, inner: Arc<dyn Resolve>) -> Self {
        Self {
            guard,
            inner: Some(inner),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.guard.clone();
        let inner = self.inner.clone();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = match inner {
                Some(inner) => inner.resolve(name).await?.collect(),
                None => tokio::net::lookup_host((name.as_str(), 0)).await?.collect(),
            };
            for addr in &addrs {
                guard.check_resolved(addr.ip())?;
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::error::Error as _;
    use std::net::{IpAddr, Ipv4Addr};

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    use super::*;
    use crate::ssrf::SsrfError;

    /// A resolver that knows a few names, like a hostile DNS server would.
    struct Fixed(HashMap<&'static str, IpAddr>);

    impl Resolve for Fixed {
        fn resolve(&self, name: Name) -> Resolving {
            let found = self.0.get(name.as_str()).copied();
            Box::pin(async move {
                let ip = found.ok_or("unknown name")?;
                let addrs: Addrs = Box::new(std::iter::once(SocketAddr::new(ip, 0)));
                Ok(addrs)
            })
        }
    }

    fn evil_is_loopback() -> Arc<dyn Resolve> {
        Arc::new(Fixed(HashMap::from([(
            "evil.test",
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        )])))
    }

    /// The guard's `SsrfError` somewhere in `error`'s chain.
    fn ssrf_cause(error: &reqwest::Error) -> Option<SsrfError> {
        let mut cause = error.source();
        while let Some(e) = cause {
            if let Some(found) = e.downcast_ref::<SsrfError>() {
                return Some(found.clone());
            }
            cause = e.source();
        }
        None
    }

    /// A loopback listener that answers every connection with 200 and
    /// counts the connections it accepted.
    async fn listener() -> (
        u16,
        Arc<std::sync::atomic::AtomicUsize>,
        tokio_util::task::AbortOnDropHandle<()>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    )
                    .await;
            }
        });
        (
            port,
            accepted,
            tokio_util::task::AbortOnDropHandle::new(task),
        )
    }

    fn client(guard: UrlGuard) -> reqwest::Client {
        crate::grant::http_client_resolving(&guard, Some(evil_is_loopback())).unwrap()
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_unless_loopback_is_allowed() {
        let (port, accepted, _server) = listener().await;
        let url = format!("http://evil.test:{port}/");

        let error = client(UrlGuard::default())
            .get(&url)
            .send()
            .await
            .unwrap_err();
        assert!(error.is_connect(), "{error:?}");
        assert!(
            matches!(
                ssrf_cause(&error),
                Some(SsrfError::ResolvedAddress { addr, .. }) if addr == IpAddr::V4(Ipv4Addr::LOCALHOST)
            ),
            "{error:?}"
        );

        let allowed = UrlGuard::builder()
            .allow_http_loopback(true)
            .build()
            .unwrap();
        let response = client(allowed).get(&url).send().await.unwrap();
        assert_eq!(response.status(), 200);
        // The refused request never reached the listener: the one
        // connection it accepted is the allowed request's.
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_answer_with_any_refused_address_is_refused_whole() {
        struct Mixed;
        impl Resolve for Mixed {
            fn resolve(&self, _name: Name) -> Resolving {
                Box::pin(async {
                    let addrs: Addrs = Box::new(
                        [
                            SocketAddr::from(([93, 184, 216, 34], 0)),
                            SocketAddr::from(([10, 0, 0, 1], 0)),
                        ]
                        .into_iter(),
                    );
                    Ok(addrs)
                })
            }
        }
        let resolver = GuardedResolver::with_inner(UrlGuard::default(), Arc::new(Mixed));
        let error = match resolver.resolve("mixed.test".parse().unwrap()).await {
            Ok(_) => panic!("a mixed answer was accepted"),
            Err(error) => error,
        };
        assert!(
            matches!(
                error.downcast_ref::<SsrfError>(),
                Some(SsrfError::ResolvedAddress { addr, .. }) if *addr == IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))
            ),
            "{error:?}"
        );
    }
}
