//! The gateway's `tools/list` answer, written straight from what the hub
//! keeps: each backend's list as its client read it (shared, never
//! copied: the route table holds it by `Arc`), each tool under its
//! hub-wide name with its origin in `_meta`, serialized into one buffer of
//! the answer's exact size. No list of renamed copies, no `Value` tree:
//! a backend's page of thousands of tools costs the gateway its kept list
//! and the answer's text (`tests/gateway_list_memory.rs` measures it).

use std::io;
use std::sync::{Arc, RwLockReadGuard};

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use switchboard::types::{JsonObject, Tool};

use super::Hub;
use super::routes::{Route, Routes};
use super::serve::ORIGIN_META;
use super::supervisor::Slot;

/// The tools the gateway shows now, read under the route table's lock
/// (held until this is dropped, so the table cannot change meanwhile):
/// those of ready servers whose list is fresh, not denied by the tool
/// policy, in route order.
pub(crate) struct ServedTools<'a> {
    routes: RwLockReadGuard<'a, Routes>,
    shown: Vec<bool>,
}

impl Hub {
    /// The tools the gateway shows now (see [`ServedTools`]).
    pub(crate) fn served_tools(&self) -> ServedTools<'_> {
        let shared = &self.inner.shared;
        let policy = shared.policy.current();
        let routes = shared.routes.read().unwrap_or_else(|e| e.into_inner());
        // Routes of one server follow each other: its view is read once.
        let mut last: Option<(&Arc<Slot>, bool)> = None;
        let shown = routes
            .iter()
            .map(|route| {
                let live = match last {
                    Some((slot, live)) if Arc::ptr_eq(slot, &route.slot) => live,
                    _ => {
                        let view = route.slot.view.borrow();
                        let live = view.state.is_ready() && !view.stale;
                        last = Some((&route.slot, live));
                        live
                    }
                };
                live && !self.tool_denied(&policy, &route.slot.config.name, &route.tool().name)
            })
            .collect();
        ServedTools { routes, shown }
    }
}

impl ServedTools<'_> {
    /// How many tools are shown.
    pub(crate) fn len(&self) -> usize {
        self.shown.iter().filter(|s| **s).count()
    }

    /// Shows only the tools whose hub-wide name `keep` accepts.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        for (shown, route) in self.shown.iter_mut().zip(self.routes.iter()) {
            *shown = *shown && keep(&route.name);
        }
    }

    /// The `tools/list` result: `first`, the tools shown, then `last`.
    ///
    /// # Errors
    /// When a tool does not serialize (a map with a non-string key in an
    /// unknown field, say).
    pub(crate) fn to_json(
        &self,
        first: &[Tool],
        last: &[Tool],
    ) -> Result<Box<RawValue>, serde_json::Error> {
        let result = ListResult {
            first,
            shown: self,
            last,
        };
        // Measured first: the text goes into a buffer of its exact size.
        let mut count = Count(0);
        serde_json::to_writer(&mut count, &result)?;
        let mut text = Vec::with_capacity(count.0);
        serde_json::to_writer(&mut text, &result)?;
        let text = String::from_utf8(text).map_err(serde::ser::Error::custom)?;
        RawValue::from_string(text)
    }

    fn each(&self) -> impl Iterator<Item = &Route> {
        self.routes
            .iter()
            .zip(&self.shown)
            .filter(|(_, shown)| **shown)
            .map(|(route, _)| route)
    }
}

/// Counts what is written, keeping nothing.
struct Count(usize);

impl io::Write for Count {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0 += data.len();
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `{"tools": [first…, shown…, last…]}`.
struct ListResult<'a> {
    first: &'a [Tool],
    shown: &'a ServedTools<'a>,
    last: &'a [Tool],
}

impl Serialize for ListResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Tools<'a>(&'a ListResult<'a>);
        impl Serialize for Tools<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let ListResult { first, shown, last } = self.0;
                let mut seq = serializer.serialize_seq(None)?;
                for tool in *first {
                    seq.serialize_element(tool)?;
                }
                for route in shown.each() {
                    seq.serialize_element(&Shown {
                        name: &route.name,
                        server: &route.slot.config.name,
                        tool: route.tool(),
                    })?;
                }
                for tool in *last {
                    seq.serialize_element(tool)?;
                }
                seq.end()
            }
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("tools", &Tools(self))?;
        map.end()
    }
}

/// A backend's tool as the gateway lists it: its hub-wide `name`, and in
/// `_meta` beside the backend's own entries [`ORIGIN_META`], its server
/// and own name; everything else as the backend described it.
struct Shown<'a> {
    name: &'a str,
    server: &'a str,
    tool: &'a Tool,
}

impl Serialize for Shown<'_> {
    /// The fields of [`Tool`]'s own serialization, in its order, all named
    /// (a field added to `Tool` does not compile here until it is written).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Tool {
            name,
            title,
            description,
            input_schema,
            output_schema,
            annotations,
            execution,
            icons,
            meta,
            extra,
        } = self.tool;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", self.name)?;
        if let Some(title) = title {
            map.serialize_entry("title", title)?;
        }
        if let Some(description) = description {
            map.serialize_entry("description", description)?;
        }
        map.serialize_entry("inputSchema", input_schema)?;
        if let Some(schema) = output_schema {
            map.serialize_entry("outputSchema", schema)?;
        }
        if let Some(annotations) = annotations {
            map.serialize_entry("annotations", annotations)?;
        }
        if let Some(execution) = execution {
            map.serialize_entry("execution", execution)?;
        }
        if let Some(icons) = icons {
            map.serialize_entry("icons", icons)?;
        }
        let origin = Origin {
            server: self.server,
            tool: name,
        };
        map.serialize_entry("_meta", &Meta { meta, origin })?;
        for (key, value) in extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A tool's `_meta` with [`ORIGIN_META`] set: in its place when the
/// backend wrote one, else last.
struct Meta<'a> {
    meta: &'a Option<JsonObject>,
    origin: Origin<'a>,
}

#[derive(serde::Serialize)]
struct Origin<'a> {
    server: &'a str,
    tool: &'a str,
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let mut placed = false;
        for (key, value) in self.meta.iter().flatten() {
            if key == ORIGIN_META {
                map.serialize_entry(key, &self.origin)?;
                placed = true;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        if !placed {
            map.serialize_entry(ORIGIN_META, &self.origin)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the gateway listed before it wrote tools itself: the tool
    /// renamed, its origin inserted into its `_meta`, serialized whole.
    fn as_before(tool: &Tool, name: &str, server: &str) -> String {
        let mut tool = tool.clone();
        tool.meta.get_or_insert_with(Default::default).insert(
            ORIGIN_META.to_owned(),
            serde_json::json!({"server": server, "tool": tool.name}),
        );
        tool.name = name.to_owned();
        serde_json::to_string(&serde_json::to_value(&tool).unwrap()).unwrap()
    }

    #[test]
    fn a_shown_tool_is_the_tool_renamed_with_its_origin() {
        let full: Tool = serde_json::from_value(serde_json::json!({
            "name": "search",
            "title": "Search",
            "description": "Finds things",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "x-hint": 1},
            "execution": {"taskSupport": "optional"},
            "icons": [{"src": "https://x.example/i.png"}],
            "_meta": {"a": 1, "switchboard/origin": "forged", "z": [2]},
            "x-vendor": {"owner": "me"},
            "y": null,
        }))
        .unwrap();
        let bare: Tool = serde_json::from_value(serde_json::json!({
            "name": "bare", "inputSchema": {"type": "object"},
        }))
        .unwrap();
        let no_origin: Tool = serde_json::from_value(serde_json::json!({
            "name": "m", "inputSchema": {}, "_meta": {"k": "v"},
        }))
        .unwrap();
        for tool in [&full, &bare, &no_origin] {
            let shown = Shown {
                name: "srv__renamed",
                server: "srv",
                tool,
            };
            assert_eq!(
                serde_json::to_string(&shown).unwrap(),
                as_before(tool, "srv__renamed", "srv"),
                "{}",
                tool.name
            );
        }
    }
}
