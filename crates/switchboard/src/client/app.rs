//! MCP Apps (`io.modelcontextprotocol/ui`), the client side: a tool's view
//! fetched and checked as the extension requires before a host renders it.
//!
//! A tool names its view in `_meta.ui.resourceUri` (or the deprecated
//! `_meta["ui/resourceUri"]`, see [`Tool::ui`]); [`Client::app_for`] reads
//! that resource and accepts it only when the URI is `ui://`, the read
//! returns exactly one contents entry, and its MIME type is the app profile
//! ([`APP_MIME_TYPE`]). Rendering is the host's business: [`App::ui`]
//! carries the sandbox settings (CSP domains, permissions) it must apply.
//! A client declares that it renders apps with
//! [`ClientBuilder::mcp_apps`](crate::ClientBuilder::mcp_apps).
//!
//! ```no_run
//! # async fn demo(client: &switchboard::Client) -> switchboard::Result<()> {
//! for tool in client.list_tools().await? {
//!     if tool.app_uri().is_some() {
//!         let app = client.app_for(&tool).await?;
//!         let csp = app.ui.as_ref().and_then(|ui| ui.csp.clone()).unwrap_or_default();
//!         println!("{}: {} bytes, connects to {:?}", app.uri, app.html.len(), csp.connect_domains);
//!     }
//! }
//! # Ok(()) }
//! ```

use std::fmt;

use base64::Engine as _;
use switchboard_types::apps::{APP_MIME_TYPE, is_app_mime_type, is_ui_uri};
use switchboard_types::{JsonObject, ResourceContents, ResourceUi, Tool, ToolUi, Visibility};

use super::Client;
use crate::error::{Error, Result};

/// A tool's app: the view's HTML and how to sandbox it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct App {
    /// The tool the app belongs to.
    pub tool: String,
    /// The view's `ui://` URI.
    pub uri: String,
    /// The view's HTML (a `blob` entry decoded).
    pub html: String,
    /// The MIME type as the server sent it (the app profile).
    pub mime_type: String,
    /// The contents' `_meta.ui`: CSP domains, permissions, domain, border.
    /// `None`: the extension's restrictive defaults apply.
    pub ui: Option<ResourceUi>,
    /// Who may see and call the tool (its `_meta.ui.visibility`).
    pub visibility: Vec<Visibility>,
    /// The contents' whole `_meta`, as sent.
    pub meta: Option<JsonObject>,
}

impl App {
    /// Only the app may call the tool: a host keeps it from the model.
    #[must_use]
    pub fn is_app_only(&self) -> bool {
        ToolUi {
            resource_uri: None,
            visibility: Some(self.visibility.clone()),
        }
        .is_app_only()
    }
}

/// Why a tool's app was not returned ([`Error::App`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppProblem {
    /// The tool names no view (no `_meta.ui.resourceUri`): not an app's tool.
    NoApp,
    /// The tool's view URI is not a `ui://` URI.
    NotUiUri,
    /// `resources/read` failed (the cause is [`Error::App`]'s source).
    Read,
    /// The read returned this many contents entries, not one.
    Contents(usize),
    /// The contents' MIME type is not the app profile.
    MimeType(Option<String>),
    /// The contents could not be taken as HTML text: a `blob` that is not
    /// base64, or bytes that are not UTF-8.
    Unreadable(String),
}

impl AppProblem {
    /// The server broke the extension's rules (not the caller's mistake,
    /// nor a failed read).
    pub(crate) fn is_protocol_violation(&self) -> bool {
        matches!(
            self,
            AppProblem::NotUiUri
                | AppProblem::Contents(_)
                | AppProblem::MimeType(_)
                | AppProblem::Unreadable(_)
        )
    }

    /// The whole message after the server's name.
    pub(crate) fn describe(&self, tool: &str, uri: &str) -> String {
        let app = format!("the app of tool `{tool}` ({uri})");
        match self {
            AppProblem::NoApp => {
                format!("tool `{tool}` has no app: its `_meta.ui` names no resourceUri")
            }
            AppProblem::NotUiUri => {
                format!("tool `{tool}` names its app {uri:?}, which is not a ui:// URI: not read")
            }
            AppProblem::Read => format!("{app} could not be read"),
            AppProblem::Contents(n) => {
                format!("{app} came as {n} contents entries; an app is exactly one")
            }
            AppProblem::MimeType(found) => format!(
                "{app} has MIME type {}, not {APP_MIME_TYPE}",
                found
                    .as_deref()
                    .map_or("(none)".to_owned(), |m| format!("{m:?}"))
            ),
            AppProblem::Unreadable(detail) => format!("{app}: {detail}"),
        }
    }
}

impl fmt::Display for AppProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AppProblem::NoApp => "the tool has no app",
            AppProblem::NotUiUri => "not a ui:// URI",
            AppProblem::Read => "the read failed",
            AppProblem::Contents(_) => "not exactly one contents entry",
            AppProblem::MimeType(_) => "not the app MIME type",
            AppProblem::Unreadable(_) => "not readable as HTML",
        })
    }
}

impl Client {
    /// Fetches `tool`'s app: reads its `_meta.ui.resourceUri` (or the
    /// deprecated `_meta["ui/resourceUri"]`) with `resources/read` and
    /// checks it is an app — a `ui://` URI, one contents entry, MIME type
    /// [`APP_MIME_TYPE`] — before returning its HTML and sandbox settings.
    /// Nothing is sent for a tool without an app or with a URI that is not
    /// `ui://`.
    ///
    /// # Errors
    /// [`Error::App`], naming the tool and the URI: the tool has no app
    /// ([`AppProblem::NoApp`]); the read failed ([`AppProblem::Read`],
    /// the read's error as its source, which the predicates look through:
    /// a timeout is still [`Error::is_timeout`]); or the server broke the
    /// extension's rules ([`Error::is_protocol_violation`]).
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn app_for(&self, tool: &Tool) -> Result<App> {
        let ui = tool.ui().unwrap_or_default();
        let fail = |uri: &str, problem: AppProblem, cause: Option<Error>| Error::App {
            server: self.inner.engine.server().clone(),
            tool: tool.name.clone(),
            uri: uri.to_owned(),
            problem,
            cause: cause.map(Box::new),
        };
        let Some(uri) = ui.resource_uri.as_deref() else {
            return Err(fail("", AppProblem::NoApp, None));
        };
        if !is_ui_uri(uri) {
            return Err(fail(uri, AppProblem::NotUiUri, None));
        }
        let read = self
            .read_resource(uri)
            .await
            .map_err(|error| fail(uri, AppProblem::Read, Some(error)))?;
        let [contents] = <[ResourceContents; 1]>::try_from(read.contents)
            .map_err(|all| fail(uri, AppProblem::Contents(all.len()), None))?;
        let mime_type = contents.mime_type().map(str::to_owned);
        let Some(mime_type) = mime_type.filter(|m| is_app_mime_type(m)) else {
            return Err(fail(
                uri,
                AppProblem::MimeType(contents.mime_type().map(str::to_owned)),
                None,
            ));
        };
        let app_ui = contents.ui();
        let (html, meta) = match contents {
            ResourceContents::Text(text) => (text.text, text.meta),
            ResourceContents::Blob(blob) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(blob.blob.as_bytes())
                    .map_err(|e| {
                        fail(
                            uri,
                            AppProblem::Unreadable(format!("its blob is not base64: {e}")),
                            None,
                        )
                    })?;
                let html = String::from_utf8(bytes).map_err(|_| {
                    fail(
                        uri,
                        AppProblem::Unreadable("its blob is not UTF-8 text".into()),
                        None,
                    )
                })?;
                (html, blob.meta)
            }
        };
        Ok(App {
            tool: tool.name.clone(),
            uri: uri.to_owned(),
            html,
            mime_type,
            ui: app_ui,
            visibility: ui.visibility().to_vec(),
            meta,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use switchboard_types::apps::{UI_EXTENSION, UiPermission};

    use super::*;
    use crate::client::scripted_tests::{answer, modern_client_with};
    use crate::transport::memory;

    const URI: &str = "ui://weather/dashboard";
    const HTML: &str = "<!DOCTYPE html><html><body>hi</body></html>";

    fn tool(meta: Value) -> Tool {
        serde_json::from_value(json!({
            "name": "forecast", "inputSchema": {"type": "object"}, "_meta": meta
        }))
        .unwrap()
    }

    fn html(uri: &str, meta: Value) -> Value {
        json!({"contents": [{"uri": uri, "mimeType": APP_MIME_TYPE, "text": HTML, "_meta": meta}]})
    }

    #[tokio::test]
    async fn an_app_is_read_and_returned_with_its_sandbox_settings() {
        let (client, mut server) = modern_client_with(json!({"resources": {}})).await;
        let forecast = tool(json!({"ui": {"resourceUri": URI, "visibility": ["app"]}}));
        let meta = json!({"ui": {
            "csp": {"connectDomains": ["https://api.weather.example"]},
            "permissions": {"geolocation": {}},
            "prefersBorder": true,
        }});
        let (app, request) = tokio::join!(
            client.app_for(&forecast),
            answer(&mut server, html(URI, meta.clone()))
        );
        assert_eq!(request["method"], "resources/read");
        assert_eq!(request["params"]["uri"], URI);
        let app = app.unwrap();
        assert_eq!(app.tool, "forecast");
        assert_eq!(app.uri, URI);
        assert_eq!(app.html, HTML);
        assert_eq!(app.mime_type, APP_MIME_TYPE);
        assert_eq!(app.visibility, [Visibility::App]);
        assert!(app.is_app_only());
        let ui = app.ui.as_ref().unwrap();
        assert_eq!(
            ui.csp.as_ref().unwrap().connect_domains.as_deref().unwrap(),
            ["https://api.weather.example"]
        );
        assert!(ui.asks_for(&UiPermission::Geolocation));
        assert_eq!(ui.prefers_border, Some(true));
        assert_eq!(app.meta.map(Value::Object), Some(meta));

        // The deprecated key, and HTML as a base64 blob.
        let legacy = tool(json!({"ui/resourceUri": URI}));
        let blob = base64::engine::general_purpose::STANDARD.encode(HTML);
        let (app, request) = tokio::join!(
            client.app_for(&legacy),
            answer(
                &mut server,
                json!({"contents": [{"uri": URI, "mimeType": "text/html; profile=mcp-app", "blob": blob}]})
            )
        );
        assert_eq!(request["params"]["uri"], URI);
        let app = app.unwrap();
        assert_eq!(app.html, HTML);
        assert_eq!(app.ui, None);
        assert_eq!(app.visibility, [Visibility::Model, Visibility::App]);
        assert!(!app.is_app_only());
        client.close().await;
    }

    #[tokio::test]
    async fn what_is_not_an_app_is_refused_naming_the_tool_and_the_uri() {
        let (client, mut server) = modern_client_with(json!({"resources": {}})).await;

        // Refused before anything is sent: the next request the server
        // sees is the read below.
        for (meta, problem) in [
            (json!({}), AppProblem::NoApp),
            (json!({"ui": {"visibility": ["app"]}}), AppProblem::NoApp),
            (json!({"ui": {"resourceUri": 5}}), AppProblem::NoApp),
            (
                json!({"ui": {"resourceUri": "https://evil.example/app.html"}}),
                AppProblem::NotUiUri,
            ),
        ] {
            let error = client.app_for(&tool(meta.clone())).await.unwrap_err();
            let Error::App {
                problem: got, tool, ..
            } = &error
            else {
                panic!("{meta}: {error}")
            };
            assert_eq!(*got, problem, "{meta}");
            assert_eq!(tool, "forecast");
            let message = error.to_string();
            assert!(message.contains("`forecast`"), "{message}");
            assert!(message.contains("scripted"), "{message}");
            assert_eq!(
                error.is_protocol_violation(),
                problem == AppProblem::NotUiUri
            );
        }

        let forecast = tool(json!({"ui": {"resourceUri": URI}}));
        let two = json!({"contents": [
            {"uri": URI, "mimeType": APP_MIME_TYPE, "text": HTML},
            {"uri": URI, "mimeType": APP_MIME_TYPE, "text": HTML},
        ]});
        for (answer_with, problem) in [
            (json!({"contents": []}), AppProblem::Contents(0)),
            (two, AppProblem::Contents(2)),
            (
                json!({"contents": [{"uri": URI, "mimeType": "text/html", "text": HTML}]}),
                AppProblem::MimeType(Some("text/html".into())),
            ),
            (
                json!({"contents": [{"uri": URI, "text": HTML}]}),
                AppProblem::MimeType(None),
            ),
            (
                json!({"contents": [{"uri": URI, "mimeType": APP_MIME_TYPE, "blob": "not base64!"}]}),
                AppProblem::Unreadable("its blob is not base64".into()),
            ),
            (
                json!({"contents": [{"uri": URI, "mimeType": APP_MIME_TYPE, "blob": "/w=="}]}),
                AppProblem::Unreadable("its blob is not UTF-8 text".into()),
            ),
        ] {
            let (error, request) = tokio::join!(
                client.app_for(&forecast),
                answer(&mut server, answer_with.clone())
            );
            assert_eq!(request["params"]["uri"], URI, "{answer_with}");
            let error = error.unwrap_err();
            let Error::App { problem: got, .. } = &error else {
                panic!("{answer_with}: {error}")
            };
            match (got, &problem) {
                // The decoder's own words follow.
                (AppProblem::Unreadable(got), AppProblem::Unreadable(want)) => {
                    assert!(got.starts_with(want.as_str()), "{got}");
                }
                _ => assert_eq!(*got, problem, "{answer_with}"),
            }
            assert!(error.is_protocol_violation(), "{error}");
            let message = error.to_string();
            assert!(
                message.contains("`forecast`") && message.contains(URI),
                "{message}"
            );
        }
        let (error, _) = tokio::join!(
            client.app_for(&forecast),
            answer(
                &mut server,
                json!({"contents": [{"uri": URI, "mimeType": "text/plain", "text": "x"}]})
            )
        );
        assert!(
            error
                .unwrap_err()
                .to_string()
                .ends_with("has MIME type \"text/plain\", not text/html;profile=mcp-app"),
        );
        client.close().await;
    }

    #[tokio::test]
    async fn a_failed_read_is_the_source_and_the_predicates_look_through_it() {
        let (client, mut server) = modern_client_with(json!({"resources": {}})).await;
        let forecast = tool(json!({"ui": {"resourceUri": URI}}));
        let fetch = client.app_for(&forecast);
        let refuse = async {
            let request: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            server
                .send(
                    json!({"jsonrpc": "2.0", "id": request["id"],
                        "error": {"code": -32602, "message": "Resource not found", "data": {"uri": URI}}})
                    .to_string(),
                )
                .await
                .unwrap();
        };
        let (error, ()) = tokio::join!(fetch, refuse);
        let error = error.unwrap_err();
        assert!(
            matches!(
                &error,
                Error::App {
                    problem: AppProblem::Read,
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            format!("server `scripted`: the app of tool `forecast` ({URI}) could not be read")
        );
        let source = std::error::Error::source(&error).expect("the read's error");
        assert!(
            source.to_string().contains("Resource not found"),
            "{source}"
        );
        assert!(error.is_server_error());
        assert_eq!(error.code(), Some(-32602));
        assert!(!error.is_protocol_violation());
        assert_eq!(error.server(), Some("scripted"));

        // A server without resources: the read's capability error, no round trip.
        let (bare, _server) = modern_client_with(json!({"tools": {}})).await;
        let error = bare.app_for(&forecast).await.unwrap_err();
        let source = std::error::Error::source(&error).unwrap();
        assert!(
            matches!(
                source.downcast_ref::<Box<Error>>().map(|e| &**e),
                Some(Error::CapabilityMissing { .. })
            ),
            "{source}"
        );
        bare.close().await;
        client.close().await;
    }

    /// A client built with `mcp_apps()`, on a scripted server of either
    /// era: the capabilities it declared.
    async fn declared(legacy: bool) -> Value {
        let (client_end, mut server) = memory::pair();
        let builder = Client::builder().name("scripted").mcp_apps();
        let builder = if legacy {
            builder.era_mode(crate::EraMode::Legacy)
        } else {
            builder.era_mode(crate::EraMode::Modern)
        };
        let connect = builder.connect(client_end.into_connector());
        let serve = async {
            let first: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            let result = if legacy {
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "serverInfo": {"name": "s", "version": "1"}})
            } else {
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}})
            };
            server
                .send(json!({"jsonrpc": "2.0", "id": first["id"], "result": result}).to_string())
                .await
                .unwrap();
            first
        };
        let (client, first) = tokio::join!(connect, serve);
        client.unwrap().close().await;
        if legacy {
            assert_eq!(first["method"], "initialize");
            first["params"]["capabilities"].clone()
        } else {
            assert_eq!(first["method"], "server/discover");
            first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].clone()
        }
    }

    #[tokio::test]
    async fn a_client_declares_the_extension_in_either_era() {
        for legacy in [true, false] {
            let caps = declared(legacy).await;
            assert_eq!(
                caps["extensions"][UI_EXTENSION],
                json!({"mimeTypes": [APP_MIME_TYPE]}),
                "legacy {legacy}: {caps}"
            );
        }
    }
}
