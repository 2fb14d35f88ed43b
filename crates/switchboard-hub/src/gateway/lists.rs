//! The gateway's list answers (`tools/list`, `resources/list`,
//! `resources/templates/list`, `prompts/list`), each entry under its
//! gateway name or URI, serialized into one buffer of the answer's exact
//! size. The tools are written straight from the route table's shared
//! list (never copied); resources, templates and prompts from the
//! backends' own text (`Client::list_raw`), each entry parsed only as it
//! is written. No list of renamed copies, no `Value` tree: a backend's
//! page of thousands of entries costs the gateway the page and the
//! answer's text, and for tools the list the hub keeps
//! (`tests/gateway_list_memory.rs` measures it).

use std::sync::{Arc, RwLockReadGuard};

use serde::de::DeserializeOwned;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use switchboard::RawList;
use switchboard::types::{JsonObject, Prompt, Resource, ResourceTemplate, Tool};

use super::{ORIGIN_META, resource_template_uri, resource_uri, skill_uri};
use crate::hub::routes::{Route, Routes};
use crate::hub::supervisor::Slot;
use crate::hub::{Hub, HubError};

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
        switchboard::server::exact_json(&ListResult {
            first,
            shown: self,
            last,
        })
    }

    fn each(&self) -> impl Iterator<Item = &Route> {
        self.routes
            .iter()
            .zip(&self.shown)
            .filter(|(_, shown)| **shown)
            .map(|(route, _)| route)
    }
}

impl Hub {
    /// The gateway's `resources/list` result: every resource of every
    /// ready server under its gateway URI ([`resource_uri`], a skill
    /// file's [`skill_uri`]).
    ///
    /// # Errors
    /// When an entry does not serialize.
    pub(crate) async fn resources_json(&self) -> Result<Box<RawValue>, serde_json::Error> {
        let listing = self.resources_raw().await;
        not_listed(&listing.failed, "resources");
        switchboard::server::exact_json(&Field(
            "resources",
            Entries(&listing.lists, |_, server, resource| GatewayResource {
                server,
                resource,
            }),
        ))
    }

    /// The gateway's `resources/templates/list` result: every template
    /// under its gateway template ([`resource_template_uri`]).
    ///
    /// # Errors
    /// When an entry does not serialize.
    pub(crate) async fn resource_templates_json(&self) -> Result<Box<RawValue>, serde_json::Error> {
        let listing = self.resource_templates_raw().await;
        not_listed(&listing.failed, "resource templates");
        switchboard::server::exact_json(&Field(
            "resourceTemplates",
            Entries(&listing.lists, |_, server, template| GatewayTemplate {
                server,
                template,
            }),
        ))
    }

    /// The gateway's `prompts/list` result: every prompt under its
    /// hub-wide name ([`HubPrompt::name`](crate::hub::HubPrompt::name)).
    ///
    /// # Errors
    /// When an entry does not serialize.
    pub(crate) async fn prompts_json(&self) -> Result<Box<RawValue>, serde_json::Error> {
        let (listing, names) = self.prompts_raw().await;
        not_listed(&listing.failed, "prompts");
        switchboard::server::exact_json(&Field(
            "prompts",
            Entries(&listing.lists, |at, _, prompt| GatewayPrompt {
                name: names.get(at).map_or("", String::as_str),
                prompt,
            }),
        ))
    }
}

/// Says which servers' lists are missing from an answer.
fn not_listed(failed: &[HubError], what: &str) {
    for error in failed {
        tracing::warn!(%error, "a server's {what} are not listed");
    }
}

/// `{NAME: VALUE}`.
struct Field<T>(&'static str, T);

impl<T: Serialize> Serialize for Field<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.0, &self.1)?;
        map.end()
    }
}

/// Every entry of every server's list, in order, each parsed from the
/// server's text only when it is written (one at a time), as `show`
/// makes it of its place in the whole, its server and itself.
struct Entries<'a, T, F>(&'a [(String, RawList<T>)], F);

impl<'a, T, F, E> Serialize for Entries<'a, T, F>
where
    T: DeserializeOwned,
    F: Fn(usize, &'a str, T) -> E,
    E: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let mut at = 0;
        for (server, list) in self.0 {
            for entry in list.items() {
                // Each was checked to parse when the list was read.
                let entry = serde_json::from_str(entry).map_err(serde::ser::Error::custom)?;
                seq.serialize_element(&(self.1)(at, server, entry))?;
                at += 1;
            }
        }
        seq.end()
    }
}

/// `key: value` unless `value` is `None` (the types' own
/// `skip_serializing_if`).
fn some<M: SerializeMap, T: Serialize>(
    map: &mut M,
    key: &'static str,
    value: &Option<T>,
) -> Result<(), M::Error> {
    match value {
        Some(value) => map.serialize_entry(key, value),
        None => Ok(()),
    }
}

/// A backend's resource as the gateway lists it: under its gateway URI.
struct GatewayResource<'a> {
    server: &'a str,
    resource: Resource,
}

impl Serialize for GatewayResource<'_> {
    /// [`Resource`]'s own fields in its order, all named (a field added
    /// to it does not compile here until it is written).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Resource {
            uri,
            name,
            title,
            description,
            mime_type,
            size,
            annotations,
            icons,
            meta,
            extra,
        } = &self.resource;
        let mut map = serializer.serialize_map(None)?;
        // A skill file keeps a skill URI (see `skill_uri`).
        let uri = skill_uri(self.server, uri).unwrap_or_else(|| resource_uri(self.server, uri));
        map.serialize_entry("uri", &uri)?;
        map.serialize_entry("name", name)?;
        some(&mut map, "title", title)?;
        some(&mut map, "description", description)?;
        some(&mut map, "mimeType", mime_type)?;
        some(&mut map, "size", size)?;
        some(&mut map, "annotations", annotations)?;
        some(&mut map, "icons", icons)?;
        some(&mut map, "_meta", meta)?;
        for (key, value) in extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A backend's resource template as the gateway lists it.
struct GatewayTemplate<'a> {
    server: &'a str,
    template: ResourceTemplate,
}

impl Serialize for GatewayTemplate<'_> {
    /// As [`GatewayResource`]'s, for [`ResourceTemplate`].
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ResourceTemplate {
            uri_template,
            name,
            title,
            description,
            mime_type,
            annotations,
            icons,
            meta,
            extra,
        } = &self.template;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(
            "uriTemplate",
            &resource_template_uri(self.server, uri_template),
        )?;
        map.serialize_entry("name", name)?;
        some(&mut map, "title", title)?;
        some(&mut map, "description", description)?;
        some(&mut map, "mimeType", mime_type)?;
        some(&mut map, "annotations", annotations)?;
        some(&mut map, "icons", icons)?;
        some(&mut map, "_meta", meta)?;
        for (key, value) in extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A backend's prompt as the gateway lists it: under its hub-wide name.
struct GatewayPrompt<'a> {
    name: &'a str,
    prompt: Prompt,
}

impl Serialize for GatewayPrompt<'_> {
    /// As [`GatewayResource`]'s, for [`Prompt`].
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Prompt {
            name: _,
            title,
            description,
            arguments,
            icons,
            meta,
            extra,
        } = &self.prompt;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", self.name)?;
        some(&mut map, "title", title)?;
        some(&mut map, "description", description)?;
        some(&mut map, "arguments", arguments)?;
        some(&mut map, "icons", icons)?;
        some(&mut map, "_meta", meta)?;
        for (key, value) in extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
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
        some(&mut map, "title", title)?;
        some(&mut map, "description", description)?;
        map.serialize_entry("inputSchema", input_schema)?;
        some(&mut map, "outputSchema", output_schema)?;
        some(&mut map, "annotations", annotations)?;
        some(&mut map, "execution", execution)?;
        some(&mut map, "icons", icons)?;
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

    /// Resources, templates and prompts as the gateway listed them before
    /// it wrote them itself: each entry copied, its URI or name changed,
    /// serialized whole.
    #[test]
    fn resources_templates_and_prompts_are_written_as_before() {
        let resource: Resource = serde_json::from_value(serde_json::json!({
            "uri": "file:///a b.txt", "name": "a", "title": "A", "description": "d",
            "mimeType": "text/plain", "size": 3, "annotations": {"priority": 0.5},
            "icons": [{"src": "https://x.example/i.png"}], "_meta": {"k": 1}, "x": [1],
        }))
        .unwrap();
        let skill: Resource = serde_json::from_value(serde_json::json!({
            "uri": "skill://pdf/SKILL.md", "name": "s",
        }))
        .unwrap();
        for resource in [&resource, &skill, &Resource::default()] {
            let mut before = resource.clone();
            before.uri =
                skill_uri("srv", &before.uri).unwrap_or_else(|| resource_uri("srv", &before.uri));
            assert_eq!(
                serde_json::to_string(&GatewayResource {
                    server: "srv",
                    resource: resource.clone()
                })
                .unwrap(),
                serde_json::to_string(&serde_json::to_value(&before).unwrap()).unwrap()
            );
        }
        let template: ResourceTemplate = serde_json::from_value(serde_json::json!({
            "uriTemplate": "file:///{path}", "name": "t", "title": "T", "description": "d",
            "mimeType": "text/plain", "annotations": {"audience": ["user"]},
            "icons": [{"src": "https://x.example/i.png"}], "_meta": {"k": 1}, "y": null,
        }))
        .unwrap();
        for template in [&template, &ResourceTemplate::default()] {
            let mut before = template.clone();
            before.uri_template = resource_template_uri("srv", &before.uri_template);
            assert_eq!(
                serde_json::to_string(&GatewayTemplate {
                    server: "srv",
                    template: template.clone()
                })
                .unwrap(),
                serde_json::to_string(&serde_json::to_value(&before).unwrap()).unwrap()
            );
        }
        let prompt: Prompt = serde_json::from_value(serde_json::json!({
            "name": "p", "title": "P", "description": "d",
            "arguments": [{"name": "a", "required": true}],
            "icons": [{"src": "https://x.example/i.png"}], "_meta": {"k": 1}, "z": {},
        }))
        .unwrap();
        for prompt in [&prompt, &Prompt::default()] {
            let mut before = prompt.clone();
            before.name = "srv__p".to_owned();
            assert_eq!(
                serde_json::to_string(&GatewayPrompt {
                    name: "srv__p",
                    prompt: prompt.clone()
                })
                .unwrap(),
                serde_json::to_string(&serde_json::to_value(&before).unwrap()).unwrap()
            );
        }
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
