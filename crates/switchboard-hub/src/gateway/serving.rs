//! Running the gateway: the hub's first start in the background, the
//! tasks it owns, and the HTTP endpoint with its graceful stop. The CLI's
//! `serve` is these calls over a hub it built from the config files.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use switchboard::server::http::{HttpServeOptions, HttpServer, Metrics, serve_http};
use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;

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

    /// Runs `task` as one of the gateway's own: a graceful stop
    /// ([`HttpGateway::shutdown`]) waits for it within its grace.
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
    pub fn serve_http(
        self,
        listener: TcpListener,
        options: HttpServeOptions,
    ) -> std::io::Result<HttpGateway> {
        let measured = self.clone();
        let options = options.metrics(Metrics::new(move || measured.metrics_text()));
        let tasks = self.tasks.clone();
        let server = serve_http(Arc::new(self), listener, options)?;
        Ok(HttpGateway { server, tasks })
    }
}

/// The gateway serving HTTP; dropping it stops at once, and
/// [`HttpGateway::shutdown`] stops gracefully.
#[derive(Debug)]
pub struct HttpGateway {
    server: HttpServer,
    tasks: TaskTracker,
}

impl HttpGateway {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Drains, then stops: no new connection is taken and no further
    /// request read, every call in progress runs to its answer (event
    /// streams with nothing behind them close), then the gateway's own
    /// tasks get what is left of `grace`. Whatever still runs then is
    /// dropped. Resolves when all that is done.
    pub async fn shutdown(self, grace: Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        self.server.shutdown(grace).await;
        self.tasks.close();
        let _ = tokio::time::timeout_at(deadline, self.tasks.wait()).await;
    }
}
