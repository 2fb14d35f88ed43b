//! Running the gateway: the hub's first start in the background, the
//! tasks it owns, and the HTTP endpoint with its graceful stop. The CLI's
//! `serve` is these calls over a hub it built from the config files.

use std::future::Future;
#[cfg(feature = "http-server")]
use std::net::SocketAddr;
#[cfg(feature = "http-server")]
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "http-server")]
use switchboard::server::http::{HttpServeOptions, HttpServer, Metrics, serve_http};
#[cfg(feature = "http-server")]
use tokio::net::TcpListener;

use super::HubServer;

impl HubServer {
    /// Starts the hub's servers in the background, on a task the gateway
    /// owns, and makes each request wait (at most `at_most`) until that
    /// first start is over ([`HubServer::wait_for_start`]).
    #[must_use]
    pub fn start_hub(self, at_most: Duration) -> Self {
        let (started, first_start) = tokio::sync::watch::channel(false);
        let hub = self.hub.clone();
        self.tasks.spawn(async move {
            let _ = hub.start().await;
            let _ = started.send(true);
        });
        self.wait_for_start(first_start, at_most)
    }

    /// Runs `task` as one of the gateway's own (tracked with the tasks it
    /// starts itself).
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(task);
    }

    /// Serves the gateway over Streamable HTTP on `listener` (with
    /// `options`' token, host allow-list, connection cap and limits), its
    /// `/metrics` answered from [`HubServer::metrics_text`], until the
    /// answer's [`HttpGateway::shutdown`] or drop.
    ///
    /// # Errors
    /// What [`serve_http`] refuses (an unreadable address, a short token).
    #[cfg(feature = "http-server")]
    pub fn serve_http(
        self,
        listener: TcpListener,
        options: HttpServeOptions,
    ) -> std::io::Result<HttpGateway> {
        let measured = self.clone();
        let mut options = options.metrics(Metrics::new(move || measured.metrics_text()));
        // What tells the hub its own URL among its servers.
        options
            .instance
            .get_or_insert_with(|| self.hub.instance_id().to_owned());
        let server = serve_http(Arc::new(self), listener, options)?;
        Ok(HttpGateway { server })
    }
}

/// The gateway serving HTTP (feature `http-server`); dropping it stops at
/// once, and [`HttpGateway::shutdown`] stops gracefully.
#[cfg(feature = "http-server")]
#[derive(Debug)]
pub struct HttpGateway {
    server: HttpServer,
}

#[cfg(feature = "http-server")]
impl HttpGateway {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Drains, then stops: no new connection is taken and no further
    /// request read, every call in progress runs to its answer (event
    /// streams with nothing behind them close), for at most `grace`;
    /// whatever still runs then is dropped. Resolves when all that is
    /// done. The gateway's own tasks (list-change forwarders, tasks a
    /// host would have polled) are not waited for: no host can reach them
    /// any more, and they end with the runtime.
    pub async fn shutdown(self, grace: Duration) {
        self.server.shutdown(grace).await;
    }
}
