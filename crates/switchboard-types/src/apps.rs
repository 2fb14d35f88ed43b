//! The MCP Apps extension (`io.modelcontextprotocol/ui`, 2026-01-26): a
//! tool names an interactive HTML view, a `ui://` resource of MIME type
//! `text/html;profile=mcp-app`, in its `_meta.ui`; the resource's contents
//! carry the view's sandbox settings (CSP domains, permissions) in theirs.
//!
//! Nothing here changes how a message is stored: `_meta` stays the object
//! the server sent, so it round-trips as before, and the typed views
//! ([`Tool::ui`], [`ResourceContents::ui`]) are parsed from it when asked.
//! They are lenient: a member of the wrong type reads as absent, so one
//! odd `_meta.ui` never fails a `tools/list` page. For the sandbox
//! settings absent is the restrictive default (no external domain, no
//! permission), so a malformed member can only make a view's sandbox
//! tighter, never looser.
//!
//! ```
//! use switchboard_types::Tool;
//! use switchboard_types::apps::Visibility;
//!
//! let tool: Tool = serde_json::from_str(
//!     r#"{"name": "refresh", "inputSchema": {"type": "object"},
//!         "_meta": {"ui": {"resourceUri": "ui://weather/dashboard", "visibility": ["app"]}}}"#,
//! )?;
//! let ui = tool.ui().expect("an app's tool");
//! assert_eq!(ui.resource_uri.as_deref(), Some("ui://weather/dashboard"));
//! assert_eq!(ui.visibility(), [Visibility::App]);
//! assert!(tool.is_app_only());
//! assert!(!tool.visible_to_model());
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::JsonObject;
use crate::resources::{BlobResourceContents, Resource, ResourceContents, TextResourceContents};
use crate::tools::Tool;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an app's HTML (the only one the extension defines).
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The scheme of UI resource URIs.
pub const UI_SCHEME: &str = "ui://";
/// The `_meta` key of the extension's settings on tools and resource contents.
pub const META_UI: &str = "ui";
/// The deprecated flat `_meta` key for a tool's resource URI, read when
/// `_meta.ui.resourceUri` is absent.
pub const META_UI_RESOURCE_URI: &str = "ui/resourceUri";

string_enum! {
    /// Who may see and call a tool (`_meta.ui.visibility`).
    pub enum Visibility {
        /// The model: the tool is in the agent's tool list.
        Model => "model",
        /// The app: its view may call the tool (from the same server).
        App => "app",
    }
}

/// What a tool's `visibility` is when it does not say.
const DEFAULT_VISIBILITY: [Visibility; 2] = [Visibility::Model, Visibility::App];

/// Whether `uri` is a UI resource's (`ui://…`, scheme case-insensitive).
#[must_use]
pub fn is_ui_uri(uri: &str) -> bool {
    uri.get(..UI_SCHEME.len())
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case(UI_SCHEME))
}

/// Whether `mime_type` is an app's: `text/html` with `profile=mcp-app`,
/// read as MIME types are (case-insensitive type and parameter name,
/// whitespace around `;`, a quoted value).
#[must_use]
pub fn is_app_mime_type(mime_type: &str) -> bool {
    let mut parts = mime_type.split(';');
    let essence = parts.next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("text/html")
        && parts.any(|parameter| {
            parameter.split_once('=').is_some_and(|(name, value)| {
                let value = value.trim();
                let value = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(value);
                name.trim().eq_ignore_ascii_case("profile") && value == "mcp-app"
            })
        })
}

/// A tool's `_meta.ui`: the view that renders its results, and who may see
/// and call it. Read with [`Tool::ui`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUi {
    /// The view's `ui://` URI: `_meta.ui.resourceUri`, else the deprecated
    /// `_meta["ui/resourceUri"]`. `None` for a tool with no view (one that
    /// only sets its visibility).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// `visibility` as the server sent it (entries that are not strings
    /// left out); `None` when absent or not a list, which means both
    /// model and app ([`ToolUi::visibility`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<Visibility>>,
}

impl ToolUi {
    /// Reads a tool's `_meta`: `None` when it has neither a `ui` object
    /// nor the deprecated `ui/resourceUri` string.
    #[must_use]
    pub fn from_meta(meta: &JsonObject) -> Option<Self> {
        let ui = meta.get(META_UI).and_then(Value::as_object);
        let legacy = meta.get(META_UI_RESOURCE_URI).and_then(Value::as_str);
        if ui.is_none() && legacy.is_none() {
            return None;
        }
        let resource_uri = ui
            .and_then(|ui| ui.get("resourceUri"))
            .and_then(Value::as_str)
            .or(legacy)
            .map(str::to_owned);
        let visibility = ui
            .and_then(|ui| ui.get("visibility"))
            .and_then(Value::as_array)
            .map(|entries| {
                entries
                    .iter()
                    .filter_map(Value::as_str)
                    .map(Visibility::from)
                    .collect()
            });
        Some(Self {
            resource_uri,
            visibility,
        })
    }

    /// Who may see and call the tool: as sent, or model and app when the
    /// tool does not say.
    #[must_use]
    pub fn visibility(&self) -> &[Visibility] {
        self.visibility.as_deref().unwrap_or(&DEFAULT_VISIBILITY)
    }

    /// The model may see and call the tool (a host lists it to the agent).
    #[must_use]
    pub fn visible_to_model(&self) -> bool {
        self.visibility().contains(&Visibility::Model)
    }

    /// The tool's app may call it.
    #[must_use]
    pub fn visible_to_app(&self) -> bool {
        self.visibility().contains(&Visibility::App)
    }

    /// Only apps may call the tool: a host must keep it from the model.
    #[must_use]
    pub fn is_app_only(&self) -> bool {
        !self.visible_to_model() && self.visible_to_app()
    }

    /// This as the value of a tool's `_meta.ui`.
    #[must_use]
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(JsonObject::new()))
    }
}

impl Tool {
    /// The tool's `_meta.ui` (MCP Apps), parsed from `_meta` on each call;
    /// `None` for a tool that has none.
    #[must_use]
    pub fn ui(&self) -> Option<ToolUi> {
        ToolUi::from_meta(self.meta.as_ref()?)
    }

    /// The `ui://` URI of the tool's app, if it has one.
    #[must_use]
    pub fn app_uri(&self) -> Option<String> {
        self.ui()?.resource_uri
    }

    /// The model may see and call the tool: true unless its `_meta.ui`
    /// visibility leaves the model out.
    #[must_use]
    pub fn visible_to_model(&self) -> bool {
        self.ui().is_none_or(|ui| ui.visible_to_model())
    }

    /// Only the tool's app may call it (`visibility: ["app"]`): a host
    /// keeps it out of the agent's tool list.
    #[must_use]
    pub fn is_app_only(&self) -> bool {
        self.ui().is_some_and(|ui| ui.is_app_only())
    }
}

/// The origins an app's view may reach (`_meta.ui.csp`); a list that is
/// absent allows none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiCsp {
    /// Origins for fetch, XHR and WebSocket (`connect-src`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_domains: Option<Vec<String>>,
    /// Origins for scripts, images, styles, fonts and media.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_domains: Option<Vec<String>>,
    /// Origins for nested frames (`frame-src`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_domains: Option<Vec<String>>,
    /// Allowed base URIs (`base-uri`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_uri_domains: Option<Vec<String>>,
}

impl UiCsp {
    fn from_object(csp: &JsonObject) -> Self {
        let list = |key: &str| {
            csp.get(key).and_then(Value::as_array).map(|entries| {
                entries
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
        };
        Self {
            connect_domains: list("connectDomains"),
            resource_domains: list("resourceDomains"),
            frame_domains: list("frameDomains"),
            base_uri_domains: list("baseUriDomains"),
        }
    }
}

string_enum! {
    /// A browser capability an app's view asks for (`_meta.ui.permissions`).
    pub enum UiPermission {
        /// The camera.
        Camera => "camera",
        /// The microphone.
        Microphone => "microphone",
        /// The device's location.
        Geolocation => "geolocation",
        /// Writing to the clipboard.
        ClipboardWrite => "clipboardWrite",
    }
}

/// A UI resource's contents' `_meta.ui`: how the host should sandbox and
/// frame the view. Read with [`ResourceContents::ui`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceUi {
    /// The origins the view may reach; `None`: the restrictive default.
    pub csp: Option<UiCsp>,
    /// The permissions the view asks for, in the order sent (a host may
    /// refuse any). Each is an object on the wire; only its name is kept.
    pub permissions: Vec<UiPermission>,
    /// A dedicated origin for the view (host-specific format).
    pub domain: Option<String>,
    /// Whether the view wants a border and background from the host.
    pub prefers_border: Option<bool>,
}

impl ResourceUi {
    /// Reads a resource's (or its contents') `_meta`: `None` without a
    /// `ui` object.
    #[must_use]
    pub fn from_meta(meta: &JsonObject) -> Option<Self> {
        let ui = meta.get(META_UI)?.as_object()?;
        Some(Self {
            csp: ui
                .get("csp")
                .and_then(Value::as_object)
                .map(UiCsp::from_object),
            permissions: ui
                .get("permissions")
                .and_then(Value::as_object)
                .map(|asked| {
                    asked
                        .iter()
                        .filter(|(_, settings)| settings.is_object())
                        .map(|(name, _)| UiPermission::from(name.as_str()))
                        .collect()
                })
                .unwrap_or_default(),
            domain: ui.get("domain").and_then(Value::as_str).map(str::to_owned),
            prefers_border: ui.get("prefersBorder").and_then(Value::as_bool),
        })
    }

    /// Whether the view asks for `permission`.
    #[must_use]
    pub fn asks_for(&self, permission: &UiPermission) -> bool {
        self.permissions.contains(permission)
    }
}

impl Serialize for ResourceUi {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(csp) = &self.csp {
            map.serialize_entry("csp", csp)?;
        }
        if !self.permissions.is_empty() {
            let asked: JsonObject = self
                .permissions
                .iter()
                .map(|p| (p.as_str().to_owned(), Value::Object(JsonObject::new())))
                .collect();
            map.serialize_entry("permissions", &asked)?;
        }
        if let Some(domain) = &self.domain {
            map.serialize_entry("domain", domain)?;
        }
        if let Some(prefers_border) = self.prefers_border {
            map.serialize_entry("prefersBorder", &prefers_border)?;
        }
        map.end()
    }
}

impl TextResourceContents {
    /// The contents' `_meta.ui` (MCP Apps), parsed on each call.
    #[must_use]
    pub fn ui(&self) -> Option<ResourceUi> {
        ResourceUi::from_meta(self.meta.as_ref()?)
    }
}

impl BlobResourceContents {
    /// The contents' `_meta.ui` (MCP Apps), parsed on each call.
    #[must_use]
    pub fn ui(&self) -> Option<ResourceUi> {
        ResourceUi::from_meta(self.meta.as_ref()?)
    }
}

impl ResourceContents {
    /// The contents' `_meta.ui` (MCP Apps), parsed on each call.
    #[must_use]
    pub fn ui(&self) -> Option<ResourceUi> {
        match self {
            ResourceContents::Text(c) => c.ui(),
            ResourceContents::Blob(c) => c.ui(),
        }
    }

    /// Whether these are an app's HTML: a `ui://` URI or the app MIME type.
    #[must_use]
    pub fn is_app(&self) -> bool {
        is_ui_uri(self.uri()) || self.mime_type().is_some_and(is_app_mime_type)
    }
}

impl Resource {
    /// The resource's `_meta.ui` (MCP Apps), parsed on each call (the
    /// contents a read returns carry it too, and those are the ones a host
    /// applies).
    #[must_use]
    pub fn ui(&self) -> Option<ResourceUi> {
        ResourceUi::from_meta(self.meta.as_ref()?)
    }

    /// Whether the resource is an app's HTML: a `ui://` URI or the app MIME
    /// type.
    #[must_use]
    pub fn is_app(&self) -> bool {
        is_ui_uri(&self.uri) || self.mime_type.as_deref().is_some_and(is_app_mime_type)
    }
}

/// The settings a host declares for the extension, under
/// `capabilities.extensions["io.modelcontextprotocol/ui"]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiCapability {
    /// The view MIME types the host renders.
    pub mime_types: Vec<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl Default for UiCapability {
    /// A host that renders [`APP_MIME_TYPE`].
    fn default() -> Self {
        Self {
            mime_types: vec![APP_MIME_TYPE.to_owned()],
            extra: crate::Extra::new(),
        }
    }
}

impl UiCapability {
    /// Whether the host renders apps' HTML ([`APP_MIME_TYPE`]).
    #[must_use]
    pub fn renders_html(&self) -> bool {
        self.mime_types.iter().any(|m| is_app_mime_type(m))
    }
}

impl crate::ClientCapabilities {
    /// The settings of extension `id`, if the client declares it.
    #[must_use]
    pub fn extension(&self, id: &str) -> Option<&Value> {
        self.extensions.as_ref()?.get(id)
    }

    /// Declares extension `id` with `settings` (replacing earlier ones).
    pub fn set_extension(&mut self, id: impl Into<String>, settings: Value) {
        self.extensions
            .get_or_insert_with(JsonObject::new)
            .insert(id.into(), settings);
    }

    /// The client's MCP Apps settings, if it declares the extension (and
    /// they parse).
    #[must_use]
    pub fn ui(&self) -> Option<UiCapability> {
        serde_json::from_value(self.extension(UI_EXTENSION)?.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ClientCapabilities;

    fn tool(meta: Value) -> Tool {
        serde_json::from_value(json!({
            "name": "t",
            "inputSchema": {"type": "object"},
            "_meta": meta,
        }))
        .unwrap()
    }

    #[test]
    fn a_tool_ui_reads_uri_and_visibility() {
        let both = tool(json!({"ui": {"resourceUri": "ui://s/view"}}));
        let ui = both.ui().unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://s/view"));
        assert_eq!(ui.visibility, None);
        assert_eq!(ui.visibility(), [Visibility::Model, Visibility::App]);
        assert!(both.visible_to_model());
        assert!(!both.is_app_only());
        assert_eq!(both.app_uri().as_deref(), Some("ui://s/view"));

        let app_only = tool(json!({"ui": {"resourceUri": "ui://s/view", "visibility": ["app"]}}));
        assert!(app_only.is_app_only());
        assert!(!app_only.visible_to_model());

        let model_only = tool(json!({"ui": {"visibility": ["model"]}}));
        let ui = model_only.ui().unwrap();
        assert_eq!(ui.resource_uri, None);
        assert!(ui.visible_to_model() && !ui.visible_to_app());
        assert!(!model_only.is_app_only());

        // Nobody: not app-only, and hidden from the model.
        let nobody = tool(json!({"ui": {"visibility": []}}));
        assert!(!nobody.is_app_only());
        assert!(!nobody.visible_to_model());

        // A later revision's audience is kept, not an error.
        let other = tool(json!({"ui": {"visibility": ["app", "user"]}}));
        assert_eq!(
            other.ui().unwrap().visibility(),
            [Visibility::App, Visibility::Other("user".into())]
        );
        assert!(other.is_app_only());
    }

    #[test]
    fn the_deprecated_flat_key_is_read_and_the_nested_one_wins() {
        let legacy = tool(json!({"ui/resourceUri": "ui://s/old"}));
        assert_eq!(legacy.app_uri().as_deref(), Some("ui://s/old"));
        assert!(legacy.visible_to_model());

        let both =
            tool(json!({"ui/resourceUri": "ui://s/old", "ui": {"resourceUri": "ui://s/new"}}));
        assert_eq!(both.app_uri().as_deref(), Some("ui://s/new"));

        // The nested one unusable: the flat one stands in.
        let odd = tool(json!({"ui/resourceUri": "ui://s/old", "ui": {"resourceUri": 7}}));
        assert_eq!(odd.app_uri().as_deref(), Some("ui://s/old"));
    }

    #[test]
    fn no_ui_is_none() {
        let plain = tool(json!({"other": 1}));
        assert_eq!(plain.ui(), None);
        assert!(plain.visible_to_model());
        assert!(!plain.is_app_only());
        let bare: Tool =
            serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}}))
                .unwrap();
        assert_eq!(bare.ui(), None);
    }

    #[test]
    fn a_malformed_tool_ui_reads_as_absent_members_and_the_tool_still_parses() {
        let text = r#"{"tools":[
            {"name":"a","inputSchema":{"type":"object"},"_meta":{"ui":"ui://s/view"}},
            {"name":"b","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":["ui://x"],"visibility":"app"}}},
            {"name":"c","inputSchema":{"type":"object"},"_meta":{"ui":{"visibility":["app",3,null]}}},
            {"name":"d","inputSchema":{"type":"object"},"_meta":{"ui/resourceUri":{"uri":"ui://x"}}},
            {"name":"e","inputSchema":{"type":"object"},"_meta":{"ui":null}}
        ]}"#;
        let page: crate::ListToolsResult = serde_json::from_str(text).unwrap();
        let [a, b, c, d, e] = &page.tools[..] else {
            panic!("five tools")
        };
        // `ui` not an object: no UI.
        assert_eq!(a.ui(), None);
        // Members of the wrong type: absent (visibility defaults).
        let ui = b.ui().unwrap();
        assert_eq!(ui.resource_uri, None);
        assert_eq!(ui.visibility, None);
        assert!(b.visible_to_model());
        // Entries that are not strings: left out.
        assert_eq!(c.ui().unwrap().visibility, Some(vec![Visibility::App]));
        assert!(c.is_app_only());
        assert_eq!(d.ui(), None);
        assert_eq!(e.ui(), None);
        // And the page is what the server sent, byte for byte.
        let again = serde_json::to_string(&page).unwrap();
        let compact: Value = serde_json::from_str(text).unwrap();
        assert_eq!(again, compact.to_string());
    }

    #[test]
    fn a_tool_ui_serializes_as_its_meta() {
        let ui = ToolUi {
            resource_uri: Some("ui://s/view".into()),
            visibility: Some(vec![Visibility::App]),
        };
        assert_eq!(
            ui.to_value(),
            json!({"resourceUri": "ui://s/view", "visibility": ["app"]})
        );
        let read = ToolUi::from_meta(&JsonObject::from_iter([("ui".into(), ui.to_value())]));
        assert_eq!(read, Some(ui));
        assert_eq!(ToolUi::default().to_value(), json!({}));
    }

    fn contents(meta: Value) -> ResourceContents {
        serde_json::from_value(json!({
            "uri": "ui://s/view",
            "mimeType": APP_MIME_TYPE,
            "text": "<!DOCTYPE html><html></html>",
            "_meta": meta,
        }))
        .unwrap()
    }

    #[test]
    fn resource_ui_reads_csp_permissions_domain_and_border() {
        let c = contents(json!({"ui": {
            "csp": {
                "connectDomains": ["https://api.example.com", "wss://rt.example.com"],
                "resourceDomains": ["https://cdn.example.com"],
                "frameDomains": ["https://www.youtube.com"],
                "baseUriDomains": ["https://cdn.example.com"],
            },
            "permissions": {"camera": {}, "clipboardWrite": {}, "usb": {}},
            "domain": "a904794854a047f6.example-content.com",
            "prefersBorder": true,
        }}));
        assert!(c.is_app());
        let ui = c.ui().unwrap();
        let csp = ui.csp.as_ref().unwrap();
        assert_eq!(
            csp.connect_domains.as_deref().unwrap(),
            ["https://api.example.com", "wss://rt.example.com"]
        );
        assert_eq!(
            csp.resource_domains.as_deref().unwrap(),
            ["https://cdn.example.com"]
        );
        assert_eq!(
            csp.frame_domains.as_deref().unwrap(),
            ["https://www.youtube.com"]
        );
        assert_eq!(
            csp.base_uri_domains.as_deref().unwrap(),
            ["https://cdn.example.com"]
        );
        assert_eq!(
            ui.permissions,
            [
                UiPermission::Camera,
                UiPermission::ClipboardWrite,
                UiPermission::Other("usb".into())
            ]
        );
        assert!(ui.asks_for(&UiPermission::Camera));
        assert!(!ui.asks_for(&UiPermission::Microphone));
        assert_eq!(
            ui.domain.as_deref(),
            Some("a904794854a047f6.example-content.com")
        );
        assert_eq!(ui.prefers_border, Some(true));
        assert_eq!(
            serde_json::to_value(&ui).unwrap(),
            json!({
                "csp": {
                    "connectDomains": ["https://api.example.com", "wss://rt.example.com"],
                    "resourceDomains": ["https://cdn.example.com"],
                    "frameDomains": ["https://www.youtube.com"],
                    "baseUriDomains": ["https://cdn.example.com"],
                },
                "permissions": {"camera": {}, "clipboardWrite": {}, "usb": {}},
                "domain": "a904794854a047f6.example-content.com",
                "prefersBorder": true,
            })
        );
    }

    #[test]
    fn a_malformed_resource_ui_only_ever_tightens() {
        let c = contents(json!({"ui": {
            "csp": {"connectDomains": "https://evil.example", "resourceDomains": ["https://ok.example", 5]},
            "permissions": ["camera"],
            "domain": 3,
            "prefersBorder": "yes",
        }}));
        let ui = c.ui().unwrap();
        let csp = ui.csp.unwrap();
        assert_eq!(csp.connect_domains, None);
        assert_eq!(csp.resource_domains.unwrap(), ["https://ok.example"]);
        assert!(ui.permissions.is_empty());
        assert_eq!(ui.domain, None);
        assert_eq!(ui.prefers_border, None);

        // A permission whose settings are not an object is not asked for.
        let c = contents(json!({"ui": {"permissions": {"camera": true, "microphone": {}}}}));
        assert_eq!(c.ui().unwrap().permissions, [UiPermission::Microphone]);

        assert_eq!(contents(json!({"ui": "x"})).ui(), None);
        assert_eq!(contents(json!({})).ui(), None);
        // Still the contents the server sent.
        let odd = json!({"uri": "ui://s/view", "text": "x", "_meta": {"ui": {"csp": 1}}});
        let parsed: ResourceContents = serde_json::from_value(odd.clone()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), odd);
        assert_eq!(parsed.ui().unwrap().csp, None);
    }

    #[test]
    fn blob_contents_and_resources_have_ui_too() {
        let blob: ResourceContents = serde_json::from_value(json!({
            "uri": "ui://s/view", "blob": "PGh0bWw+", "_meta": {"ui": {"prefersBorder": false}}
        }))
        .unwrap();
        assert!(blob.is_app());
        assert_eq!(blob.ui().unwrap().prefers_border, Some(false));

        let resource: Resource = serde_json::from_value(json!({
            "uri": "https://example.com/x", "name": "x", "mimeType": "text/html; profile=\"mcp-app\"",
            "_meta": {"ui": {"domain": "d.example"}}
        }))
        .unwrap();
        assert!(resource.is_app());
        assert_eq!(resource.ui().unwrap().domain.as_deref(), Some("d.example"));
    }

    #[test]
    fn uris_and_mime_types() {
        assert!(is_ui_uri("ui://server/view"));
        assert!(is_ui_uri("UI://server/view"));
        assert!(!is_ui_uri("uix://server/view"));
        assert!(!is_ui_uri("u"));
        assert!(!is_ui_uri("https://ui://"));
        assert!(is_app_mime_type(APP_MIME_TYPE));
        assert!(is_app_mime_type(
            "Text/HTML ; charset=utf-8; Profile=mcp-app"
        ));
        assert!(!is_app_mime_type("text/html"));
        assert!(!is_app_mime_type("text/html;profile=mcp-app-x"));
        assert!(!is_app_mime_type("text/plain;profile=mcp-app"));
        assert!(!is_app_mime_type(""));
    }

    #[test]
    fn clients_declare_the_extension() {
        let mut caps = ClientCapabilities::default();
        assert_eq!(caps.ui(), None);
        caps.set_extension(
            UI_EXTENSION,
            serde_json::to_value(UiCapability::default()).unwrap(),
        );
        assert_eq!(
            serde_json::to_value(&caps).unwrap(),
            json!({"extensions": {UI_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}})
        );
        assert!(caps.ui().unwrap().renders_html());
        let other: ClientCapabilities = serde_json::from_value(
            json!({"extensions": {UI_EXTENSION: {"mimeTypes": ["text/uri-list"], "features": ["x"]}}}),
        )
        .unwrap();
        let ui = other.ui().unwrap();
        assert!(!ui.renders_html());
        assert!(ui.extra.contains_key("features"));
        // Settings that do not parse: not declared usefully.
        let bad: ClientCapabilities =
            serde_json::from_value(json!({"extensions": {UI_EXTENSION: {"mimeTypes": "x"}}}))
                .unwrap();
        assert_eq!(bad.ui(), None);
        assert!(bad.extension(UI_EXTENSION).is_some());
    }
}
