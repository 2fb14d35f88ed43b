//! `manifest.json`: its types, and the rules its fields must pass (the
//! command line's are in `command.rs`).
//!
//! Without `mcp_config` (MCPB allows it for `uv`), the runtime's usual
//! command runs the entry point.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::command::check_run;
use super::{BundleError, safe_path, shown};

/// A bundle's manifest, validated. Text in it is the bundle author's:
/// escape it before showing it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Manifest {
    /// `manifest_version` (or the older `dxt_version`).
    pub manifest_version: String,
    /// The machine-readable name.
    pub name: String,
    /// The name for people, if given.
    pub display_name: Option<String>,
    /// The bundle's version.
    pub version: String,
    /// One-line description.
    pub description: Option<String>,
    /// The author's name.
    pub author: Option<String>,
    /// How to run the server.
    pub server: ServerSpec,
    /// The settings the user is asked for, by key.
    pub user_config: BTreeMap<String, UserConfig>,
    /// `compatibility.platforms` (`darwin`, `linux`, `win32`); empty: all.
    pub platforms: Vec<String>,
}

/// `server` and its `mcp_config`, as written (references unexpanded).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerSpec {
    /// `node`, `python`, `binary` or `uv`.
    pub kind: String,
    /// The main file, relative to the bundle directory.
    pub entry_point: String,
    /// The program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment.
    pub env: BTreeMap<String, String>,
    /// Per platform (`darwin`, `linux`, `win32`) replacements.
    pub platform_overrides: BTreeMap<String, PlatformOverride>,
}

/// What one platform changes in `mcp_config`.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct PlatformOverride {
    /// Replaces the command.
    pub command: Option<String>,
    /// Replaces the arguments.
    pub args: Option<Vec<String>>,
    /// Added to (and overriding) the environment.
    pub env: BTreeMap<String, String>,
}

/// One `user_config` setting.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UserConfig {
    /// `string`, `number`, `boolean`, `directory` or `file`.
    pub kind: String,
    /// Its label.
    pub title: Option<String>,
    /// Its help text.
    pub description: Option<String>,
    /// Whether it must have a value (an answer or the default).
    pub required: bool,
    /// A secret: kept out of the command, as a `${secret:…}` reference.
    pub sensitive: bool,
    /// The default (may use `${HOME}` and the other path variables).
    pub default: Option<Value>,
    /// Several paths (`directory`, `file`).
    pub multiple: bool,
    /// The smallest number allowed.
    pub min: Option<f64>,
    /// The largest number allowed.
    pub max: Option<f64>,
}
const KINDS: [&str; 4] = ["node", "python", "binary", "uv"];
const SETTING_KINDS: [&str; 5] = ["string", "number", "boolean", "directory", "file"];
const PATH_VARS: [&str; 7] = [
    "__dirname",
    "HOME",
    "DESKTOP",
    "DOCUMENTS",
    "DOWNLOADS",
    "pathSeparator",
    "/",
];
#[derive(Deserialize)]
struct Raw {
    manifest_version: Option<String>,
    dxt_version: Option<String>,
    name: String,
    display_name: Option<String>,
    version: String,
    description: Option<String>,
    #[serde(default)]
    author: Value,
    server: RawServer,
    #[serde(default)]
    user_config: BTreeMap<String, RawSetting>,
    #[serde(default)]
    compatibility: Option<RawCompatibility>,
}

#[derive(Deserialize)]
struct RawServer {
    #[serde(rename = "type")]
    kind: String,
    entry_point: String,
    mcp_config: Option<RawConfig>,
}

#[derive(Deserialize)]
struct RawConfig {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    platform_overrides: BTreeMap<String, RawOverride>,
}

#[derive(Deserialize)]
struct RawOverride {
    command: Option<String>,
    args: Option<Vec<String>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct RawSetting {
    #[serde(rename = "type")]
    kind: String,
    title: Option<String>,
    description: Option<String>,
    #[serde(default)]
    required: bool,
    default: Option<Value>,
    #[serde(default)]
    multiple: bool,
    #[serde(default)]
    sensitive: bool,
    min: Option<f64>,
    max: Option<f64>,
}

#[derive(Deserialize)]
struct RawCompatibility {
    #[serde(default)]
    platforms: Vec<String>,
}

pub(super) fn invalid(message: String) -> BundleError {
    BundleError::Manifest(message)
}

impl Manifest {
    /// Parses and validates `manifest.json`'s bytes.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, BundleError> {
        let raw: Raw = serde_json::from_slice(bytes)
            .map_err(|e| invalid(format!("manifest.json is not a valid manifest: {e}")))?;
        let version = raw.manifest_version.or(raw.dxt_version).ok_or_else(|| {
            invalid("manifest.json has no manifest_version (nor the older dxt_version)".into())
        })?;
        let known = version.strip_prefix("0.").is_some_and(|minor| {
            !minor.is_empty() && minor.len() < 4 && minor.bytes().all(|b| b.is_ascii_digit())
        });
        if !known {
            return Err(invalid(format!(
                "manifest_version `{}` is not one switchboard knows (0.x)",
                shown(&version)
            )));
        }
        for (field, text) in [("name", Some(&raw.name)), ("version", Some(&raw.version))]
            .into_iter()
            .chain([("display_name", raw.display_name.as_ref())])
        {
            let Some(text) = text else { continue };
            if text.trim().is_empty()
                || text.chars().count() > 200
                || text.chars().any(char::is_control)
            {
                return Err(invalid(format!(
                    "{field} `{}` must be 1 to 200 characters without control characters",
                    shown(text)
                )));
            }
        }
        let author = match raw.author {
            Value::String(name) => Some(name),
            Value::Object(mut fields) => match fields.remove("name") {
                Some(Value::String(name)) => Some(name),
                _ => None,
            },
            _ => None,
        };
        let mut user_config = BTreeMap::new();
        for (key, raw) in raw.user_config {
            user_config.insert(key.clone(), setting(&key, raw)?);
        }
        let server = server(raw.server, &user_config)?;
        Ok(Self {
            manifest_version: version,
            name: raw.name,
            display_name: raw.display_name,
            version: raw.version,
            description: raw.description,
            author,
            server,
            user_config,
            platforms: raw.compatibility.map(|c| c.platforms).unwrap_or_default(),
        })
    }
}

fn setting(key: &str, raw: RawSetting) -> Result<UserConfig, BundleError> {
    let bad = |why: &str| invalid(format!("user_config `{}` {why}", shown(key)));
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(bad("is not a valid key (letters, digits, `_` and `-`)"));
    }
    if !SETTING_KINDS.contains(&raw.kind.as_str()) {
        return Err(bad(&format!(
            "has type `{}`, not one of {}",
            shown(&raw.kind),
            SETTING_KINDS.join(", ")
        )));
    }
    if let (Some(min), Some(max)) = (raw.min, raw.max)
        && min > max
    {
        return Err(bad("has min above max"));
    }
    let fits = match (&raw.default, raw.kind.as_str()) {
        (None, _) => true,
        (Some(Value::Number(_)), "number") | (Some(Value::Bool(_)), "boolean") => true,
        (Some(Value::String(_)), _) => true,
        (Some(Value::Array(items)), "directory" | "file" | "string") => {
            raw.multiple && items.iter().all(Value::is_string)
        }
        _ => false,
    };
    if !fits {
        return Err(bad(&format!("has a default that is not a {}", raw.kind)));
    }
    let texts = match &raw.default {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for text in texts {
        check_template(text, None).map_err(|why| bad(&format!("default: {why}")))?;
    }
    Ok(UserConfig {
        kind: raw.kind,
        title: raw.title,
        description: raw.description,
        required: raw.required,
        sensitive: raw.sensitive,
        default: raw.default,
        multiple: raw.multiple,
        min: raw.min,
        max: raw.max,
    })
}

fn server(
    raw: RawServer,
    settings: &BTreeMap<String, UserConfig>,
) -> Result<ServerSpec, BundleError> {
    let kind = raw.kind;
    if !KINDS.contains(&kind.as_str()) {
        return Err(invalid(format!(
            "server.type `{}` is not one of {}",
            shown(&kind),
            KINDS.join(", ")
        )));
    }
    let entry_point = safe_path(&raw.entry_point).map_err(|why| {
        invalid(format!(
            "server.entry_point `{}` {why}",
            shown(&raw.entry_point)
        ))
    })?;
    let script = format!("${{__dirname}}/{entry_point}");
    let config = raw.mcp_config.unwrap_or_else(|| {
        let (command, args) = match kind.as_str() {
            "node" => ("node", vec![script]),
            "python" if cfg!(windows) => ("python", vec![script]),
            "python" => ("python3", vec![script]),
            "uv" => (
                "uv",
                vec![
                    "run".into(),
                    "--directory".into(),
                    "${__dirname}".into(),
                    script,
                ],
            ),
            _ => (script.as_str(), Vec::new()),
        };
        RawConfig {
            command: command.into(),
            args,
            env: BTreeMap::new(),
            platform_overrides: BTreeMap::new(),
        }
    });
    let spec = ServerSpec {
        kind,
        entry_point,
        command: config.command,
        args: config.args,
        env: config.env,
        platform_overrides: config
            .platform_overrides
            .into_iter()
            .map(|(os, o)| {
                (
                    os,
                    PlatformOverride {
                        command: o.command,
                        args: o.args,
                        env: o.env,
                    },
                )
            })
            .collect(),
    };
    check_run(&spec, None, settings)?;
    for os in spec.platform_overrides.keys() {
        check_run(&spec, Some(os), settings)?;
    }
    Ok(spec)
}

impl ServerSpec {
    /// Command, arguments and environment with `os`'s override applied.
    pub(super) fn for_platform(
        &self,
        os: Option<&str>,
    ) -> (&str, &[String], BTreeMap<String, String>) {
        let o = os.and_then(|os| self.platform_overrides.get(os));
        let mut env = self.env.clone();
        env.extend(o.map(|o| o.env.clone()).unwrap_or_default());
        (
            o.and_then(|o| o.command.as_deref())
                .unwrap_or(&self.command),
            o.and_then(|o| o.args.as_deref()).unwrap_or(&self.args),
            env,
        )
    }
}

pub(super) enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// `t` split into text and `${…}` variables.
pub(super) fn pieces(t: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            out.push(Piece::Text(&rest[..start]));
        }
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`{}` has a `${{` that is not closed", shown(t)))?;
        out.push(Piece::Var(&after[..end]));
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// Every variable of `t` is a path variable, or (with `settings`) a
/// declared `user_config` key.
pub(super) fn check_template(
    t: &str,
    settings: Option<&BTreeMap<String, UserConfig>>,
) -> Result<(), String> {
    for piece in pieces(t)? {
        let Piece::Var(var) = piece else { continue };
        let declared = var
            .strip_prefix("user_config.")
            .is_some_and(|key| settings.is_some_and(|s| s.contains_key(key)));
        if !declared && !PATH_VARS.contains(&var) {
            return Err(format!(
                "`${{{}}}` is not a variable this bundle may use",
                shown(var)
            ));
        }
    }
    Ok(())
}
