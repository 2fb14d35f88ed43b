//! Issue 29: a session-era host's roots reach the backends behind the
//! gateway over Streamable HTTP too, not only during its calls: a backend
//! that asks `roots/list` on its own (at its start, and on each
//! `notifications/roots/list_changed`, as npm server-filesystem does) gets
//! the roots of the one host connected over HTTP, and follows a change.
//!
//! The backend is this crate's own server over HTTP; the gateway serves
//! the hub over HTTP on loopback; the host is a `Client` with roots.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::server::http::{HttpServeOptions, serve_http};
use switchboard::server::{Peer, Reply, RequestContext, ServeOptions, ServerHandler};
use switchboard::transport::http::HttpConfig;
use switchboard::types::mrtr::RequestOutcome;
use switchboard::types::{
    CallToolRequestParams, CallToolResult, Implementation, ListRootsResult, ListToolsResult,
    PaginatedRequestParams, Root, ServerCapabilities,
};
use switchboard::{Client, EraMode, Roots};
use switchboard_hub::hub::BackendAsks;
use switchboard_hub::{
    Dialect, HttpKind, Hub, HubServer, Origin, Scope, ServerConfig, TransportConfig,
};

/// A backend that asks its client for roots on its own, never during a
/// call, and tells them on `known_roots`.
#[derive(Clone, Default)]
struct Backend {
    known: Arc<Mutex<Vec<String>>>,
}

impl ServerHandler for Backend {
    fn info(&self) -> Implementation {
        Implementation::new("roots-backend", "1.0.0")
    }

    fn capabilities(&self) -> ServerCapabilities {
        serde_json::from_value(json!({"tools": {}})).unwrap()
    }

    /// Asks for the roots once the client is initialized, and again on
    /// each `notifications/roots/list_changed`.
    fn connected(&self, peer: &Peer) {
        let known = self.known.clone();
        let peer = peer.clone();
        let mut notes = peer.notifications();
        tokio::spawn(async move {
            if !peer.session_initialized().await {
                return;
            }
            loop {
                if let Ok(value) = peer
                    .request("roots/list", json!({}), Duration::from_secs(30))
                    .await
                    && let Ok(list) = serde_json::from_value::<ListRootsResult>(value)
                {
                    *known.lock().unwrap() = list.roots.into_iter().map(|r| r.uri).collect();
                }
                loop {
                    match notes.recv().await {
                        Some(note) if note.method == "notifications/roots/list_changed" => break,
                        Some(_) => {}
                        None => return,
                    }
                }
            }
        });
    }

    fn list_tools(&self, _: PaginatedRequestParams, _: RequestContext) -> Reply<ListToolsResult> {
        Box::pin(async {
            Ok(serde_json::from_value(json!({"tools": [
                {"name": "known_roots", "inputSchema": {"type": "object"}}
            ]}))
            .unwrap())
        })
    }

    fn call_tool(
        &self,
        _: CallToolRequestParams,
        _: RequestContext,
    ) -> Reply<RequestOutcome<CallToolResult>> {
        let known = self.known.lock().unwrap().join(" ");
        Box::pin(async move { Ok(RequestOutcome::Complete(CallToolResult::text(known))) })
    }
}

fn root(uri: &str) -> Root {
    Root {
        uri: uri.to_owned(),
        name: None,
        ..Default::default()
    }
}

/// What the backend knows of the roots, once it is `want` (asked until
/// then, at most 30 s: the roots travel host → gateway → backend on their
/// own time); the last answer.
async fn known_roots(host: &Client, want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let result = host.call_tool("known_roots", None).await.unwrap();
        let known = result.content[0].as_text().unwrap_or_default().to_owned();
        if known == want || Instant::now() > deadline {
            return known;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_hosts_roots_reach_a_backend_that_asks_on_its_own() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    // Of the session era, as server-filesystem is (a 2026-07-28 backend
    // asks for roots only inside a call).
    let mut options = HttpServeOptions::default();
    options.serve = ServeOptions::default().modern_versions(Vec::new());
    let backend = serve_http(Arc::new(Backend::default()), listener, options).unwrap();
    let config = ServerConfig::new(
        "s",
        TransportConfig::Http {
            url: format!("http://{}/mcp", backend.local_addr()),
            headers: BTreeMap::new(),
            kind: HttpKind::Auto,
        },
        Origin {
            file: PathBuf::from("/tests/roots.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    );
    let asks = BackendAsks::new();
    let forwarding = asks.clone();
    let hub = Hub::builder()
        .server(config)
        .client(move |config, builder| forwarding.client(&config.name, builder))
        .default_prefix(switchboard_hub::hub::Prefix::Never)
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let gateway = HubServer::new(hub, Implementation::new("gateway", "1.0.0")).forward_asks(asks);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let served = serve_http(Arc::new(gateway), listener, HttpServeOptions::default()).unwrap();

    // A session-era host over HTTP, with `roots` or none.
    let url = format!("http://{}/mcp", served.local_addr());
    let connect = |roots: Option<Roots>| {
        let mut builder = Client::builder().era_mode(EraMode::Legacy);
        if let Some(roots) = roots {
            builder = builder.roots(roots);
        }
        builder.connect(HttpConfig::new(url.clone()))
    };
    let roots = Roots::new(vec![root("file:///work/a")]);
    let host = connect(Some(roots.clone())).await.unwrap();
    assert_eq!(known_roots(&host, "file:///work/a").await, "file:///work/a");
    roots.set(vec![root("file:///work/b")]);
    assert_eq!(known_roots(&host, "file:///work/b").await, "file:///work/b");
    // The host gone, its roots are no one's.
    host.close().await;
    let other = connect(None).await.unwrap();
    assert_eq!(known_roots(&other, "").await, "");
}
