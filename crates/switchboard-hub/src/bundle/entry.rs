//! [`entry`]: an unpacked bundle and the user's answers made into the
//! command to run on this platform.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{MAIN_SEPARATOR_STR, Path, PathBuf};

use serde_json::Value;

use super::command::{Interp, bundle_rel, program_in_bundle, program_name};
use super::manifest::{Piece, UserConfig, invalid, pieces};
use super::{Bundle, BundleError, Manifest, shown};

/// What to run for a bundle on this platform. Its `Debug` shows the
/// secrets' keys, not their values.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct Entry {
    /// The program (a runtime's name, or an absolute path in the bundle).
    pub command: String,
    /// Its arguments; the script is an absolute path.
    pub args: Vec<String>,
    /// Its environment; sensitive values are `${secret:PREFIX.KEY}`.
    pub env: BTreeMap<String, String>,
    /// The sensitive answers, by key, for the caller to store.
    pub secrets: BTreeMap<String, String>,
    /// The bundle directory, where MCPB servers expect to start (their
    /// relative paths are relative to it).
    pub cwd: PathBuf,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// A setting's value for one run.
enum Val {
    One(String),
    Many(Vec<String>),
    Secret(String),
    Unset,
}

/// What [`entry`] substitutes with.
struct Subst<'a> {
    dir: &'a str,
    home: &'a Path,
    prefix: &'a str,
    values: BTreeMap<&'a str, Val>,
    secrets: BTreeMap<String, String>,
}

impl Subst<'_> {
    fn path_var(&self, var: &str) -> String {
        let under = |sub: &str| self.home.join(sub).to_string_lossy().into_owned();
        match var {
            "__dirname" => self.dir.to_owned(),
            "HOME" => self.home.to_string_lossy().into_owned(),
            "DESKTOP" => under("Desktop"),
            "DOCUMENTS" => under("Documents"),
            "DOWNLOADS" => under("Downloads"),
            // `pathSeparator` and `/`: the only others a manifest may
            // use (checked when it was read).
            _ => MAIN_SEPARATOR_STR.to_owned(),
        }
    }

    /// `t` expanded: several strings when it is exactly one `multiple`
    /// setting, none when it is exactly one unanswered optional setting.
    fn expand(&mut self, t: &str) -> Result<Vec<String>, BundleError> {
        let pieces = pieces(t).map_err(invalid)?;
        if let [Piece::Var(var)] = pieces.as_slice()
            && let Some(key) = var.strip_prefix("user_config.")
        {
            match self.values.get(key) {
                Some(Val::Many(all)) => return Ok(all.clone()),
                Some(Val::Unset) => return Ok(Vec::new()),
                _ => {}
            }
        }
        let mut out = String::new();
        for piece in &pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Var(var) => match var.strip_prefix("user_config.") {
                    None => out.push_str(&self.path_var(var)),
                    Some(key) => match self.values.get(key) {
                        Some(Val::One(v)) => out.push_str(v),
                        Some(Val::Many(all)) => out.push_str(&all.join(",")),
                        Some(Val::Secret(v)) => {
                            self.secrets.insert(key.to_owned(), v.clone());
                            out.push_str(&format!("${{secret:{}.{key}}}", self.prefix));
                        }
                        Some(Val::Unset) | None => {}
                    },
                },
            }
        }
        // A `$` of the manifest's text followed by an answer's `{…}` would
        // make a reference nobody wrote: only the secrets' may remain.
        let mut rest = out.clone();
        for key in self.secrets.keys() {
            rest = rest.replace(&format!("${{secret:{}.{key}}}", self.prefix), "");
        }
        if rest.contains("${") {
            return Err(BundleError::Refused(format!(
                "`{}` would contain a `${{` reference once expanded",
                shown(t)
            )));
        }
        Ok(vec![out])
    }
}

/// Why `value` is not a valid value of `setting`, if it is not.
fn check_value(setting: &UserConfig, value: &str) -> Result<(), String> {
    if value.contains("${") {
        return Err("contains `${`, which would be read as a reference".into());
    }
    if value.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    match setting.kind.as_str() {
        "number" => {
            let n = value.parse::<f64>().ok().filter(|n| n.is_finite());
            let n = n.ok_or_else(|| format!("`{}` is not a number", shown(value)))?;
            if let Some(min) = setting.min.filter(|&min| n < min) {
                return Err(format!("{n} is below the minimum, {min}"));
            }
            if let Some(max) = setting.max.filter(|&max| n > max) {
                return Err(format!("{n} is above the maximum, {max}"));
            }
        }
        "boolean" if value != "true" && value != "false" => {
            return Err(format!("`{}` is not `true` or `false`", shown(value)));
        }
        "directory" | "file" if !Path::new(value).is_absolute() => {
            return Err(format!("`{}` is not an absolute path", shown(value)));
        }
        _ => {}
    }
    Ok(())
}

/// Each setting's value: the answer, else the default (its path variables
/// expanded), else unset; checked against its type.
fn values<'a>(
    manifest: &'a Manifest,
    subst: &Subst<'_>,
    answers: &BTreeMap<String, String>,
) -> Result<BTreeMap<&'a str, Val>, BundleError> {
    if let Some(key) = answers
        .keys()
        .find(|k| !manifest.user_config.contains_key(*k))
    {
        let known: Vec<&str> = manifest.user_config.keys().map(String::as_str).collect();
        return Err(BundleError::Answer {
            key: shown(key),
            reason: format!(
                "is not a setting of this bundle (its settings: {})",
                shown(&known.join(", "))
            ),
        });
    }
    let mut values = BTreeMap::new();
    for (key, setting) in &manifest.user_config {
        let answer_error = |reason: String| BundleError::Answer {
            key: shown(key),
            reason,
        };
        let paths = matches!(setting.kind.as_str(), "directory" | "file") && setting.multiple;
        let list = match (answers.get(key), &setting.default) {
            // Several paths in one answer: the platform's list separator.
            (Some(answer), _) if paths => std::env::split_paths(answer)
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
            (Some(answer), _) => vec![answer.clone()],
            (None, Some(default)) => {
                let items = match default {
                    Value::Array(items) => items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    Value::String(s) => vec![s.clone()],
                    other => vec![other.to_string()],
                };
                let mut expanded = Vec::new();
                for item in items {
                    let mut text = String::new();
                    for piece in pieces(&item).map_err(invalid)? {
                        match piece {
                            Piece::Text(t) => text.push_str(t),
                            Piece::Var(var) => text.push_str(&subst.path_var(var)),
                        }
                    }
                    check_value(setting, &text).map_err(|why| {
                        invalid(format!(
                            "user_config `{}` has a default that {why}",
                            shown(key)
                        ))
                    })?;
                    expanded.push(text);
                }
                values.insert(key.as_str(), value_of(setting, expanded));
                continue;
            }
            (None, None) if setting.required => {
                return Err(answer_error(
                    "is required and has no default: give it an answer".into(),
                ));
            }
            (None, None) => {
                values.insert(key.as_str(), Val::Unset);
                continue;
            }
        };
        if list.is_empty() && setting.required {
            return Err(answer_error("is required, and the answer is empty".into()));
        }
        for value in &list {
            check_value(setting, value).map_err(answer_error)?;
        }
        values.insert(key.as_str(), value_of(setting, list));
    }
    Ok(values)
}

fn value_of(setting: &UserConfig, mut list: Vec<String>) -> Val {
    match list.len() {
        _ if setting.sensitive => Val::Secret(list.join(",")),
        1 if !setting.multiple => Val::One(list.remove(0)),
        0 => Val::Unset,
        _ => Val::Many(list),
    }
}

/// The platform's name in MCPB (Node.js's `process.platform`).
fn platform() -> Option<&'static str> {
    if cfg!(target_os = "linux") {
        Some("linux")
    } else if cfg!(target_os = "macos") {
        Some("darwin")
    } else if cfg!(windows) {
        Some("win32")
    } else {
        None
    }
}

/// The command that runs `bundle` on this platform (its
/// `platform_overrides` applied), with `${__dirname}` as the bundle
/// directory, `${HOME}`, `${DESKTOP}`, `${DOCUMENTS}` and `${DOWNLOADS}`
/// under `home`, and each `${user_config.KEY}` as the answer in `answers`
/// (else the default): a sensitive one as the reference
/// `${secret:SECRET_PREFIX.KEY}`, its value in [`Entry::secrets`]. A
/// `multiple` setting that is a whole argument gives one argument per
/// value (several paths in one answer are separated as in `PATH`); one that
/// is unset gives none (and drops an environment variable that is only it).
///
/// # Errors
/// [`BundleError::Answer`] for an answer to no setting, a required setting
/// without a value, or a value that is not of its type (a number within
/// min and max, `true`/`false`, an absolute path) or holds `${`;
/// [`BundleError::Refused`] for a bundle of another platform or an odd
/// `secret_prefix`; [`BundleError::Manifest`] when the entry point or the
/// program is not a file in the unpacked directory.
pub fn entry(
    bundle: &Bundle,
    home: &Path,
    secret_prefix: &str,
    answers: &BTreeMap<String, String>,
) -> Result<Entry, BundleError> {
    let manifest = &bundle.manifest;
    let os = platform();
    if !manifest.platforms.is_empty()
        && !os.is_some_and(|os| manifest.platforms.iter().any(|p| p == os))
    {
        return Err(BundleError::Refused(format!(
            "`{}` runs only on {}, not on {}",
            shown(&manifest.name),
            shown(&manifest.platforms.join(", ")),
            os.unwrap_or(std::env::consts::OS)
        )));
    }
    if secret_prefix.is_empty()
        || secret_prefix.contains(['$', '{', '}'])
        || secret_prefix
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(BundleError::Refused(format!(
            "secret prefix `{}` is not usable in a reference",
            shown(secret_prefix)
        )));
    }
    let dir = std::path::absolute(&bundle.dir).map_err(BundleError::io(format!(
        "resolving {}",
        bundle.dir.display()
    )))?;
    let dir_text = dir.to_str().filter(|d| !d.contains("${"));
    let home_text = home
        .to_str()
        .filter(|h| !h.contains("${") && home.is_absolute());
    let (Some(dir_text), Some(_)) = (dir_text, home_text) else {
        return Err(BundleError::Refused(format!(
            "the bundle directory {} or home {} is not absolute text without `${{`",
            dir.display(),
            home.display()
        )));
    };
    let file = |rel: &str, program: bool| {
        let mut path = dir.join(rel);
        // MCPB: a binary's `.exe` is implied on Windows.
        if cfg!(windows)
            && program
            && manifest.server.kind == "binary"
            && path.extension().is_none()
        {
            path.set_extension("exe");
        }
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(path.to_string_lossy().into_owned()),
            _ => Err(invalid(format!(
                "`{}` is not a file in the unpacked bundle",
                shown(rel)
            ))),
        }
    };
    file(&manifest.server.entry_point, false)?;
    let mut subst = Subst {
        dir: dir_text,
        home,
        prefix: secret_prefix,
        values: BTreeMap::new(),
        secrets: BTreeMap::new(),
    };
    subst.values = values(manifest, &subst, answers)?;
    let (command, args, env_templates) = manifest.server.for_platform(os);
    let command = match program_in_bundle(command) {
        Some(rel) => file(&rel, true)?,
        _ => subst.expand(command)?.join(","),
    };
    let script =
        Interp::of(&program_name(&command)).and_then(|interp| interp.script(args).ok().flatten());
    let mut out = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        match bundle_rel(arg).filter(|_| Some(i) == script) {
            Some(rel) => out.push(file(&rel, false)?),
            None => out.extend(subst.expand(arg)?),
        }
    }
    let mut env = BTreeMap::new();
    for (name, template) in &env_templates {
        let value = subst.expand(template)?;
        if let Some(first) = value.first() {
            env.insert(
                name.clone(),
                if value.len() == 1 {
                    first.clone()
                } else {
                    value.join(",")
                },
            );
        }
    }
    Ok(Entry {
        command,
        args: out,
        env,
        secrets: subst.secrets,
        cwd: dir,
    })
}
