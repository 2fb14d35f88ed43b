//! The roots the console offers each server (`roots/list`), set per
//! server in the page: none until the user gives some, so a server sees no
//! directory of the user's that the user did not name. Setting them tells
//! the server (`notifications/roots/list_changed`, session era; a
//! stateless-era server asks again when it needs them).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};
use switchboard::Roots;
use switchboard::types::roots::Root;

/// How many roots one server may be given.
const MAX_ROOTS: usize = 64;

/// Each server's roots, by name.
#[derive(Default)]
pub(super) struct RootsBook {
    servers: Mutex<BTreeMap<String, Roots>>,
}

impl RootsBook {
    /// `server`'s roots (empty until set), shared with its clients.
    pub(super) fn of(&self, server: &str) -> Roots {
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(server.to_owned())
            .or_insert_with(|| Roots::new(Vec::new()))
            .clone()
    }

    /// Every server's roots.
    pub(super) fn list(&self) -> Value {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        let roots: serde_json::Map<String, Value> = servers
            .iter()
            .map(|(name, roots)| {
                (
                    name.clone(),
                    serde_json::to_value(roots.get()).unwrap_or_default(),
                )
            })
            .collect();
        json!({ "roots": roots })
    }

    /// `{"server": "NAME", "roots": ["file:///…", …]}`: NAME's roots set
    /// (each a `file://` URI; its last path segment names it).
    pub(super) fn set(&self, body: &[u8]) -> Result<Value, (u16, String)> {
        let request = super::api::request(body)?;
        let server = super::api::text(&request, "server")?;
        let given = request
            .get("roots")
            .and_then(Value::as_array)
            .ok_or((400, "`roots` must be a list of file:// URIs".to_owned()))?;
        if given.len() > MAX_ROOTS {
            return Err((400, format!("at most {MAX_ROOTS} roots")));
        }
        let mut roots = Vec::new();
        for uri in given {
            let Some(uri) = uri.as_str().filter(|u| u.starts_with("file:///")) else {
                return Err((
                    400,
                    format!("{uri} is not a file:// URI (a root is a directory: file:///path)"),
                ));
            };
            if uri.chars().any(char::is_control) {
                return Err((400, "a root may not hold control characters".to_owned()));
            }
            let name = uri
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())
                .map(str::to_owned);
            roots.push(Root {
                uri: uri.to_owned(),
                name,
                ..Default::default()
            });
        }
        let count = roots.len();
        self.of(server).set(roots);
        Ok(json!({ "server": server, "roots": count }))
    }
}
