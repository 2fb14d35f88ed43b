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

use super::ORIGIN_META;
use super::uris::{Listed, UriClaims, Uris};
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

    /// Shows only the tools `keep` accepts.
    pub(crate) fn retain_tools(&mut self, keep: impl Fn(&Tool) -> bool) {
        for (shown, route) in self.shown.iter_mut().zip(self.routes.iter()) {
            *shown = *shown && keep(route.tool());
        }
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
        uris: &Uris,
        first: &[Tool],
        last: &[Tool],
    ) -> Result<Box<RawValue>, serde_json::Error> {
        switchboard::server::exact_json(&ListResult {
            uris,
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

/// Which field of a list's entries [`fields_of`] reads.
#[derive(Clone, Copy)]
enum EntryField {
    Uri,
    UriTemplate,
    Name,
}

/// Every entry's `field` (its URI, template or name) of every server's
/// list, read from its text (nothing else of the entry is kept): one per
/// entry, empty where it has none.
fn fields_of<T: DeserializeOwned>(
    lists: &[(String, RawList<T>)],
    field: EntryField,
) -> impl Iterator<Item = (&str, Vec<String>)> {
    #[derive(serde::Deserialize)]
    struct Fields<'a> {
        #[serde(default, borrow)]
        uri: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow, rename = "uriTemplate")]
        uri_template: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    lists.iter().map(move |(server, list)| {
        let values = list
            .items()
            .map(|text| {
                let Ok(fields) = serde_json::from_str::<Fields<'_>>(text) else {
                    return String::new();
                };
                let value = match field {
                    EntryField::Uri => fields.uri,
                    EntryField::UriTemplate => fields.uri_template,
                    EntryField::Name => fields.name,
                };
                value.map(std::borrow::Cow::into_owned).unwrap_or_default()
            })
            .collect();
        (server.as_str(), values)
    })
}

impl Hub {
    /// Reads every server's list of `kind` into `claims`.
    pub(crate) async fn claim_uris(&self, claims: &UriClaims, kind: Listed) {
        match kind {
            Listed::Resources => {
                let listing = self.resources_raw().await;
                claims.listed(kind, fields_of(&listing.lists, EntryField::Uri));
            }
            Listed::Templates => {
                let listing = self.resource_templates_raw().await;
                claims.listed(kind, fields_of(&listing.lists, EntryField::UriTemplate));
            }
        }
    }

    /// The gateway's `resources/list` result: every resource of every
    /// ready server under the URI the gateway serves it as
    /// ([`Uris::serve`]); what each server lists is claimed first.
    ///
    /// # Errors
    /// When an entry does not serialize.
    pub(crate) async fn resources_json(
        &self,
        claims: &UriClaims,
    ) -> Result<Box<RawValue>, serde_json::Error> {
        let listing = self.resources_raw().await;
        not_listed(&listing.failed, "resources");
        let uris = self
            .claim_listed(claims, Listed::Resources, &listing.lists, EntryField::Uri)
            .await;
        switchboard::server::exact_json(&Field(
            "resources",
            Entries(&listing.lists, |_, server, resource| GatewayResource {
                uris: &uris,
                server,
                resource,
            }),
        ))
    }

    /// The gateway's `resources/templates/list` result: every template
    /// as the gateway serves it ([`Uris::serve_template`]).
    ///
    /// # Errors
    /// When an entry does not serialize.
    pub(crate) async fn resource_templates_json(
        &self,
        claims: &UriClaims,
    ) -> Result<Box<RawValue>, serde_json::Error> {
        let listing = self.resource_templates_raw().await;
        not_listed(&listing.failed, "resource templates");
        let uris = self
            .claim_listed(
                claims,
                Listed::Templates,
                &listing.lists,
                EntryField::UriTemplate,
            )
            .await;
        let names = self.served_names(
            fields_of(&listing.lists, EntryField::Name)
                .flat_map(|(server, names)| names.into_iter().map(move |n| (server, n)))
                .collect::<Vec<_>>()
                .iter()
                .map(|(server, name)| (*server, name.as_str())),
        );
        switchboard::server::exact_json(&Field(
            "resourceTemplates",
            Entries(&listing.lists, |at, server, template| GatewayTemplate {
                uris: &uris,
                server,
                name: names.get(at).map(String::as_str),
                template,
            }),
        ))
    }

    /// Claims what `lists` (of `kind`) show, and the other kind too when
    /// it was never listed (a template of one server can make another's
    /// resource ambiguous); the map as it then stands.
    async fn claim_listed<T: DeserializeOwned>(
        &self,
        claims: &UriClaims,
        kind: Listed,
        lists: &[(String, RawList<T>)],
        field: EntryField,
    ) -> Uris {
        let names = self.server_names();
        if names.len() > 1 {
            claims.listed(kind, fields_of(lists, field));
            let other = match kind {
                Listed::Resources => Listed::Templates,
                Listed::Templates => Listed::Resources,
            };
            if claims.unlisted(other) {
                self.claim_uris(claims, other).await;
            }
        }
        claims.now(names)
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
    uris: &'a Uris,
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
        map.serialize_entry("uri", &self.uris.serve(self.server, uri))?;
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

/// A backend's resource template as the gateway lists it, named like a
/// prompt.
struct GatewayTemplate<'a> {
    uris: &'a Uris,
    server: &'a str,
    name: Option<&'a str>,
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
            &self.uris.serve_template(self.server, uri_template),
        )?;
        map.serialize_entry("name", self.name.unwrap_or(name))?;
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
    uris: &'a Uris,
    first: &'a [Tool],
    shown: &'a ServedTools<'a>,
    last: &'a [Tool],
}

impl Serialize for ListResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Tools<'a>(&'a ListResult<'a>);
        impl Serialize for Tools<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let ListResult {
                    uris,
                    first,
                    shown,
                    last,
                } = self.0;
                let mut seq = serializer.serialize_seq(None)?;
                for tool in *first {
                    seq.serialize_element(tool)?;
                }
                for route in shown.each() {
                    seq.serialize_element(&Shown {
                        uris,
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
    uris: &'a Uris,
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
        map.serialize_entry(
            "_meta",
            &Meta {
                meta,
                origin,
                uris: self.uris,
            },
        )?;
        for (key, value) in extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A tool's `_meta` with [`ORIGIN_META`] set: in its place when the
/// backend wrote one, else last; its MCP App's UI resource
/// (`ui.resourceUri`, and the older `ui/resourceUri`) as the gateway
/// serves that URI.
struct Meta<'a> {
    meta: &'a Option<JsonObject>,
    origin: Origin<'a>,
    uris: &'a Uris,
}

impl Meta<'_> {
    /// The entry `key: value` with the UI resource's URI as served, when
    /// it names one.
    fn app_uri(&self, key: &str, value: &serde_json::Value) -> Option<serde_json::Value> {
        use serde_json::Value;
        let server = self.origin.server;
        match (key, value) {
            (switchboard::types::apps::META_UI_RESOURCE_URI, Value::String(uri)) => {
                Some(Value::String(self.uris.serve(server, uri)))
            }
            (switchboard::types::apps::META_UI, Value::Object(ui)) => {
                let Some(Value::String(uri)) = ui.get("resourceUri") else {
                    return None;
                };
                let mut ui = ui.clone();
                ui.insert(
                    "resourceUri".to_owned(),
                    Value::String(self.uris.serve(server, uri)),
                );
                Some(Value::Object(ui))
            }
            _ => None,
        }
    }
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
            } else if let Some(served) = self.app_uri(key, value) {
                map.serialize_entry(key, &served)?;
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
    use crate::gateway::{resource_template_uri, resource_uri, skill_uri};

    /// Two servers that list nothing: every URI is mapped, as before
    /// the gateway served URIs as written.
    fn mapped() -> Uris {
        UriClaims::default().now(vec!["srv".into(), "other".into()])
    }

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
                    uris: &mapped(),
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
                    uris: &mapped(),
                    server: "srv",
                    name: None,
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

    /// An MCP App's tool points at its UI resource as the gateway serves
    /// that URI: mapped (`ui://` kept) beside another server, as written
    /// for the one server; in `_meta.ui` and the older flat key alike,
    /// the rest of `_meta.ui` untouched.
    #[test]
    fn an_apps_tool_points_at_its_resource_as_served() {
        let tool: Tool = serde_json::from_value(serde_json::json!({
            "name": "show", "inputSchema": {"type": "object"},
            "_meta": {
                "ui": {"resourceUri": "ui://weather/app.html", "visibility": ["model", "app"]},
                "ui/resourceUri": "ui://weather/app.html",
                "other": "ui://weather/app.html",
            },
        }))
        .unwrap();
        let written = |uris: &Uris| {
            let shown = Shown {
                uris,
                name: "show",
                server: "srv",
                tool: &tool,
            };
            serde_json::to_value(&shown).unwrap()
        };
        let two = written(&mapped());
        assert_eq!(
            two["_meta"]["ui"]["resourceUri"],
            "ui://srv+weather/app.html"
        );
        assert_eq!(
            two["_meta"]["ui"]["visibility"],
            serde_json::json!(["model", "app"])
        );
        assert_eq!(two["_meta"]["ui/resourceUri"], "ui://srv+weather/app.html");
        assert_eq!(two["_meta"]["other"], "ui://weather/app.html");
        let one = written(&UriClaims::default().now(vec!["srv".into()]));
        assert_eq!(one["_meta"]["ui"]["resourceUri"], "ui://weather/app.html");
        assert_eq!(one["_meta"]["ui/resourceUri"], "ui://weather/app.html");
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
                uris: &mapped(),
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
