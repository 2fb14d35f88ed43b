//! Expansion: the runnable copy of a loaded [`ServerConfig`].
//!
//! A loaded config keeps references as written, so listings show
//! `${GITHUB_TOKEN}`, never its value. [`Expander::expand`] replaces, in
//! `command`, `args`, `env` values, `cwd`, `url`, header values and the
//! OAuth client id and secret:
//!
//! | reference | value |
//! |---|---|
//! | `${VAR}`, `${env:VAR}` | the environment variable |
//! | `${VAR:-default}` | the variable, or `default` when it is unset or empty |
//! | `${userHome}` | the home directory |
//! | `${workspaceFolder}` | the project root |
//! | `${input:ID}` | VS Code: asked once through the prompt callback (the file's `inputs` entry gives the prompt) |
//! | `${secret:SERVER.KEY}` | a stored secret ([`super::secrets`]): only `SERVER`'s own, and only in the user's own files (user, managed, `--config`) |
//!
//! An unset variable is a warning naming the file, server and key, and the
//! reference stays as written (never an empty string); a `${input:…}` with
//! no prompt callback (non-interactive) is an [`ExpandError`]. Every form
//! is taken in every dialect; Gemini CLI's files also expand `$VAR`
//! without braces, as Gemini does.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::diag::Diagnostic;
use super::dialect::InputSpec;
use super::locations::Locations;
use super::model::{Dialect, ServerConfig, TransportConfig};

/// Why a server could not be made runnable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// `${input:ID}` needs an answer and there is no one to ask.
    #[error(
        "server `{server}` ({file}), key `{key}`: `${{input:{id}}}` must be asked of the user, and this run is not interactive; run interactively or replace the reference in the file"
    )]
    InputNeeded {
        /// The server.
        server: String,
        /// Its file.
        file: PathBuf,
        /// The key that names the input.
        key: String,
        /// The input's id.
        id: String,
    },
    /// The server comes from a project file the user has not approved:
    /// nothing of it is expanded.
    #[error(
        "server `{server}` ({file}) comes from a project file and is not approved: nothing of it is expanded or run until it is (`switchboard approve {server}` approves it)"
    )]
    NotApproved {
        /// The server.
        server: String,
        /// Its file.
        file: PathBuf,
    },
    /// A `${secret:…}` reference that is not given.
    #[error("server `{server}` ({file}), key `{key}`: `${{secret:{name}}}` {reason}")]
    Secret {
        /// The server.
        server: String,
        /// Its file.
        file: PathBuf,
        /// The key that names it.
        key: String,
        /// The secret's name.
        name: String,
        /// Why it is not given.
        reason: String,
    },
    /// The prompt callback gave no answer.
    #[error("server `{server}`: the value for `${{input:{id}}}` was not given ({reason})")]
    InputRefused {
        /// The server.
        server: String,
        /// The input's id.
        id: String,
        /// What the callback said.
        reason: String,
    },
}

/// A runnable config and the warnings made on the way.
#[derive(Debug)]
#[non_exhaustive]
pub struct Expanded {
    /// The config with references replaced.
    pub config: ServerConfig,
    /// Unset variables, each naming file, server and key.
    pub warnings: Vec<Diagnostic>,
}

type Prompt<'a> = Box<dyn FnMut(&InputSpec) -> Result<String, String> + 'a>;

/// Expands loaded configs; answers to `${input:ID}` are asked once and
/// remembered for the expander's life.
pub struct Expander<'a> {
    locations: &'a Locations,
    inputs: BTreeMap<String, InputSpec>,
    prompt: Option<Prompt<'a>>,
    answers: BTreeMap<String, String>,
    /// Read on the first `${secret:…}`.
    secrets: Option<Result<super::secrets::Secrets, String>>,
}

impl std::fmt::Debug for Expander<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expander")
            .field("inputs", &self.inputs.keys().collect::<Vec<_>>())
            .field("interactive", &self.prompt.is_some())
            .field("answered", &self.answers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<'a> Expander<'a> {
    /// A non-interactive expander over `locations`' environment.
    pub fn new(locations: &'a Locations) -> Self {
        Self {
            locations,
            inputs: BTreeMap::new(),
            prompt: None,
            answers: BTreeMap::new(),
            secrets: None,
        }
    }

    /// The `inputs` the loaded files declared (their prompts).
    #[must_use]
    pub fn with_inputs(mut self, inputs: impl IntoIterator<Item = InputSpec>) -> Self {
        for input in inputs {
            self.inputs.entry(input.id.clone()).or_insert(input);
        }
        self
    }

    /// Makes it interactive: `prompt` is called once per input id; an
    /// `Err` aborts that server's expansion with the reason.
    #[must_use]
    pub fn with_prompt(
        mut self,
        prompt: impl FnMut(&InputSpec) -> Result<String, String> + 'a,
    ) -> Self {
        self.prompt = Some(Box::new(prompt));
        self
    }

    /// The runnable copy of `server`.
    ///
    /// # Errors
    /// An [`ExpandError`] when a `${input:ID}` cannot be answered, or the
    /// server needs the user's approval first.
    pub fn expand(&mut self, server: &ServerConfig) -> Result<Expanded, ExpandError> {
        if !server.trust.allows_start() {
            return Err(ExpandError::NotApproved {
                server: server.name.clone(),
                file: server.origin.file.clone(),
            });
        }
        let mut out = server.clone();
        out.written_url = server.shown_url().map(str::to_owned);
        out.source_signature = Some(
            server
                .source_signature
                .clone()
                .unwrap_or_else(|| server.signature()),
        );
        let mut warnings = Vec::new();
        let mut run = Run {
            expander: self,
            server,
            warnings: &mut warnings,
        };
        match &mut out.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                *command = run.expand("command", command)?;
                for (i, arg) in args.iter_mut().enumerate() {
                    *arg = run.expand(&format!("args[{i}]"), arg)?;
                }
                for (k, v) in env.iter_mut() {
                    *v = run.expand(&format!("env.{k}"), v)?;
                }
                if let Some(dir) = cwd {
                    *dir = run.expand("cwd", &dir.to_string_lossy())?.into();
                }
            }
            TransportConfig::Http { url, headers, .. }
            | TransportConfig::WebSocket { url, headers } => {
                *url = run.expand("url", url)?;
                for (k, v) in headers.iter_mut() {
                    *v = run.expand(&format!("headers.{k}"), v)?;
                }
            }
        }
        if let Some(oauth) = &mut out.oauth {
            if let Some(id) = &mut oauth.client_id {
                *id = run.expand("oauth.client_id", id)?;
            }
            if let Some(secret) = &mut oauth.client_secret {
                *secret = run.expand("oauth.client_secret", secret)?;
            }
        }
        Ok(Expanded {
            config: out,
            warnings,
        })
    }
}

/// A piece of a config string: text as written, or a reference.
pub(crate) enum Piece<'t> {
    /// Text kept as is.
    Text(&'t str),
    /// `${inner}` (or, when bare names count, `$inner`); `whole` as written.
    Reference { inner: &'t str, whole: &'t str },
}

/// `text` split into text and references: `${…}` always, `$NAME` too when
/// `bare` (Gemini CLI's files). An unclosed `${` and a `$` naming nothing
/// are text.
pub(crate) fn pieces(text: &str, bare: bool) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('$') {
        if start > 0 {
            out.push(Piece::Text(&rest[..start]));
        }
        let after = &rest[start + 1..];
        if let Some(inner) = after.strip_prefix('{') {
            let Some(len) = inner.find('}') else {
                out.push(Piece::Text(&rest[start..]));
                return out;
            };
            out.push(Piece::Reference {
                inner: &inner[..len],
                whole: &rest[start..start + 3 + len],
            });
            rest = &rest[start + 3 + len..];
            continue;
        }
        let name_len = after
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
            .map_or(after.len(), |(i, _)| i);
        if bare && name_len > 0 {
            out.push(Piece::Reference {
                inner: &after[..name_len],
                whole: &rest[start..start + 1 + name_len],
            });
            rest = &after[name_len..];
        } else {
            out.push(Piece::Text("$"));
            rest = after;
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

struct Run<'e, 'a> {
    expander: &'e mut Expander<'a>,
    server: &'e ServerConfig,
    warnings: &'e mut Vec<Diagnostic>,
}

impl Run<'_, '_> {
    fn expand(&mut self, key: &str, text: &str) -> Result<String, ExpandError> {
        // Gemini CLI also expands `$VAR` without braces.
        let bare = self.server.origin.dialect == Dialect::Gemini;
        let mut out = String::with_capacity(text.len());
        for piece in pieces(text, bare) {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Reference { inner, whole } => {
                    out.push_str(&self.resolve(key, inner, whole)?);
                }
            }
        }
        Ok(out)
    }

    fn resolve(&mut self, key: &str, reference: &str, whole: &str) -> Result<String, ExpandError> {
        let locations = self.expander.locations;
        match reference {
            "userHome" => return Ok(locations.home().to_string_lossy().into_owned()),
            "workspaceFolder" => {
                return Ok(locations.project_root().to_string_lossy().into_owned());
            }
            _ => {}
        }
        if let Some(id) = reference.strip_prefix("input:") {
            return self.input(key, id);
        }
        if let Some(name) = reference.strip_prefix("secret:") {
            return self.secret(key, name);
        }
        let reference = reference.strip_prefix("env:").unwrap_or(reference);
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        match (locations.var(name), default) {
            (Some(""), Some(d)) => Ok(d.to_owned()),
            (Some(v), _) => Ok(v.to_owned()),
            (None, Some(d)) => Ok(d.to_owned()),
            (None, None) => {
                self.warnings.push(
                    Diagnostic::warning(format!(
                        "`{whole}`: the variable {name} is not set; set {name} or give a default (`${{{name}:-…}}`)"
                    ))
                    .in_file(&self.server.origin.file)
                    .server(&self.server.name)
                    .key(key),
                );
                Ok(whole.to_owned())
            }
        }
    }

    fn secret(&mut self, key: &str, name: &str) -> Result<String, ExpandError> {
        use super::model::Scope;
        let refused = |reason: String| ExpandError::Secret {
            server: self.server.name.clone(),
            file: self.server.origin.file.clone(),
            key: key.to_owned(),
            name: name.to_owned(),
            reason,
        };
        if !matches!(
            self.server.origin.scope,
            Scope::User | Scope::Managed | Scope::Explicit
        ) {
            return Err(refused(
                "is given only to servers of your own files (user, managed or --config), not a project's".to_owned(),
            ));
        }
        let own = name
            .strip_prefix(self.server.name.as_str())
            .is_some_and(|rest| rest.starts_with('.') && rest.len() > 1);
        if !own {
            return Err(refused(format!(
                "names a secret that is not this server's (its own are `${{secret:{}.KEY}}`)",
                self.server.name
            )));
        }
        let locations = self.expander.locations;
        let secrets = self.expander.secrets.get_or_insert_with(|| {
            super::secrets::Secrets::load(locations).map_err(|e| e.to_string())
        });
        match secrets {
            Ok(secrets) => secrets.get(name).map(str::to_owned).ok_or_else(|| {
                refused(format!(
                    "is not stored in {}; install the server again to give it",
                    super::secrets::Secrets::file(locations).display()
                ))
            }),
            Err(reason) => Err(refused(format!("cannot be read: {reason}"))),
        }
    }

    fn input(&mut self, key: &str, id: &str) -> Result<String, ExpandError> {
        if let Some(answer) = self.expander.answers.get(id) {
            return Ok(answer.clone());
        }
        let spec = self
            .expander
            .inputs
            .get(id)
            .cloned()
            .unwrap_or_else(|| InputSpec {
                id: id.to_owned(),
                description: id.to_owned(),
                password: true,
                default: None,
            });
        let Some(prompt) = self.expander.prompt.as_mut() else {
            return Err(ExpandError::InputNeeded {
                server: self.server.name.clone(),
                file: self.server.origin.file.clone(),
                key: key.to_owned(),
                id: id.to_owned(),
            });
        };
        let answer = prompt(&spec).map_err(|reason| ExpandError::InputRefused {
            server: self.server.name.clone(),
            id: id.to_owned(),
            reason,
        })?;
        self.expander.answers.insert(id.to_owned(), answer.clone());
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::config::model::{Dialect, HttpKind, Origin, Scope};

    fn locations() -> Locations {
        Locations::new("/home/u", "/work/p")
            .with_project_root("/work/p")
            .with_var("TOKEN", "sk-1")
            .with_var("EMPTY", "")
    }

    fn stdio(args: &[&str], env: &[(&str, &str)]) -> ServerConfig {
        ServerConfig::new(
            "files",
            TransportConfig::Stdio {
                command: "npx".into(),
                args: args.iter().map(|s| s.to_string()).collect(),
                env: env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                cwd: Some("${workspaceFolder}/sub".into()),
            },
            Origin {
                file: "/work/p/.mcp.json".into(),
                dialect: Dialect::ClaudeCode,
                scope: Scope::Project,
            },
        )
    }

    fn args_env(c: &ServerConfig) -> (Vec<String>, BTreeMap<String, String>, Option<PathBuf>) {
        match &c.transport {
            TransportConfig::Stdio { args, env, cwd, .. } => {
                (args.clone(), env.clone(), cwd.clone())
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn every_form_expands() {
        let l = locations();
        let server = stdio(
            &[
                "${TOKEN}",
                "${env:TOKEN}",
                "${MISSING:-fallback}",
                "${EMPTY:-used-when-empty}",
                "${userHome}/x",
                "a${TOKEN}b${TOKEN}c",
                "$TOKEN and ${unterminated",
            ],
            &[("KEY", "${TOKEN}")],
        );
        let e = Expander::new(&l).expand(&server).unwrap();
        let (args, env, cwd) = args_env(&e.config);
        assert_eq!(
            args,
            [
                "sk-1",
                "sk-1",
                "fallback",
                "used-when-empty",
                "/home/u/x",
                "ask-1bsk-1c",
                "$TOKEN and ${unterminated"
            ]
        );
        assert_eq!(env["KEY"], "sk-1");
        assert_eq!(cwd, Some("/work/p/sub".into()));
        assert!(e.warnings.is_empty(), "{:?}", e.warnings);
        // The loaded config is untouched: listings show the reference.
        assert_eq!(args_env(&server).1["KEY"], "${TOKEN}");
        // The state file knows the server by what was written.
        assert_ne!(e.config.signature(), server.signature());
        assert_eq!(e.config.state_signature(), server.state_signature());
        let again = Expander::new(&l).expand(&e.config).unwrap().config;
        assert_eq!(again.state_signature(), server.state_signature());
    }

    #[test]
    fn property_text_without_references_is_unchanged_and_set_variables_never_warn() {
        let l = locations();
        let pieces = [
            "a",
            "$",
            "{",
            "}",
            ":-",
            "${TOKEN}",
            "${EMPTY:-d}",
            "$TOKEN",
            " ",
            "é",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..2000 {
            let mut text = String::new();
            for _ in 0..8 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            let e = Expander::new(&l).expand(&stdio(&[&text], &[])).unwrap();
            let (args, _, _) = args_env(&e.config);
            if !text.contains("${") {
                assert_eq!(args[0], text);
            }
            // Only the unterminated `${…` or references of unset names
            // (made by adjacent pieces, such as `${${TOKEN}`) may warn,
            // and then the reference is kept as written.
            for w in &e.warnings {
                assert!(w.message.contains("is not set"), "{text}: {w}");
            }
            if e.warnings.is_empty() {
                assert!(!args[0].contains("${TOKEN}"), "{text} -> {}", args[0]);
            }
        }
    }

    #[test]
    fn bare_dollar_variables_expand_only_in_gemini_files() {
        let l = locations();
        let mut server = stdio(&["$TOKEN/x", "cost: $5", "$", "$NOPE"], &[]);
        let e = Expander::new(&l).expand(&server).unwrap();
        assert_eq!(
            args_env(&e.config).0,
            ["$TOKEN/x", "cost: $5", "$", "$NOPE"]
        );
        assert!(e.warnings.is_empty());
        server.origin.dialect = Dialect::Gemini;
        let e = Expander::new(&l).expand(&server).unwrap();
        assert_eq!(args_env(&e.config).0, ["sk-1/x", "cost: $5", "$", "$NOPE"]);
        assert_eq!(e.warnings.len(), 1);
        assert!(e.warnings[0].message.contains("`$NOPE`"));
    }

    #[test]
    fn an_unset_variable_warns_with_file_server_and_key_and_stays_as_written() {
        let l = locations();
        let e = Expander::new(&l)
            .expand(&stdio(&[], &[("API_KEY", "${NOPE}")]))
            .unwrap();
        assert_eq!(args_env(&e.config).1["API_KEY"], "${NOPE}");
        assert_eq!(e.warnings.len(), 1);
        let w = e.warnings[0].to_string();
        assert!(
            w.contains("/work/p/.mcp.json")
                && w.contains("server `files`")
                && w.contains("key `env.API_KEY`")
                && w.contains("NOPE is not set"),
            "{w}"
        );
    }

    #[test]
    fn inputs_are_asked_once_or_fail_when_not_interactive() {
        let l = locations();
        let remote = ServerConfig::new(
            "docs",
            TransportConfig::Http {
                url: "https://x.example/${input:tenant}".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer ${input:key}".into())]),
                kind: HttpKind::Auto,
            },
            Origin {
                file: "/work/p/.vscode/mcp.json".into(),
                dialect: Dialect::VsCode,
                scope: Scope::Project,
            },
        );
        let err = Expander::new(&l).expand(&remote).unwrap_err();
        assert!(
            matches!(&err, ExpandError::InputNeeded { id, key, .. } if id == "tenant" && key == "url"),
            "{err}"
        );
        assert!(err.to_string().contains("not interactive"));

        let asked = Cell::new(0);
        let spec = InputSpec {
            id: "key".into(),
            description: "API key".into(),
            password: true,
            default: None,
        };
        let mut expander = Expander::new(&l).with_inputs([spec]).with_prompt(|spec| {
            asked.set(asked.get() + 1);
            Ok(format!("<{}>", spec.description))
        });
        let first = expander.expand(&remote).unwrap().config;
        let second = expander.expand(&remote).unwrap().config;
        assert_eq!(first, second);
        match first.transport {
            TransportConfig::Http { url, headers, .. } => {
                assert_eq!(url, "https://x.example/<tenant>");
                assert_eq!(headers["Authorization"], "Bearer <API key>");
            }
            _ => unreachable!(),
        }
        assert_eq!(asked.get(), 2, "once per input id, not per server");

        let mut refusing = Expander::new(&l).with_prompt(|_| Err("cancelled".into()));
        assert!(matches!(
            refusing.expand(&remote),
            Err(ExpandError::InputRefused { .. })
        ));
    }

    #[test]
    fn a_secret_goes_only_to_its_own_server_from_the_users_own_files() {
        let home = std::env::temp_dir().join(format!("sb-expand-secret-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let l = Locations::new(&home, "/work/p").with_project_root("/work/p");
        let mut secrets = crate::config::Secrets::load(&l).unwrap();
        secrets.set_server(
            "files",
            &BTreeMap::from([("api_key".into(), "s3cret".into())]),
        );
        secrets.set_server(
            "other",
            &BTreeMap::from([("token".into(), "theirs".into())]),
        );
        secrets.save().unwrap();
        let with = |scope: Scope, arg: &str| {
            let mut server = stdio(&[arg], &[]);
            server.origin.scope = scope;
            if let TransportConfig::Stdio { cwd, .. } = &mut server.transport {
                *cwd = None;
            }
            Expander::new(&l).expand(&server)
        };
        let user = with(Scope::User, "--key=${secret:files.api_key}").unwrap();
        assert_eq!(args_env(&user.config).0, ["--key=s3cret"]);
        assert!(with(Scope::Explicit, "${secret:files.api_key}").is_ok());
        // A cloned repository's file cannot have it sent anywhere.
        for scope in [Scope::Project, Scope::Local] {
            let error = with(scope, "${secret:files.api_key}").unwrap_err();
            assert!(matches!(error, ExpandError::Secret { .. }), "{error}");
            assert!(error.to_string().contains("not a project's"), "{error}");
        }
        // Nor does one server get another's.
        for stolen in [
            "${secret:other.token}",
            "${secret:files}",
            "${secret:file.api_key}",
        ] {
            let error = with(Scope::User, stolen).unwrap_err();
            assert!(error.to_string().contains("not this server's"), "{error}");
            assert!(!error.to_string().contains("theirs"));
        }
        let error = with(Scope::User, "${secret:files.missing}").unwrap_err();
        assert!(error.to_string().contains("is not stored"), "{error}");
        let _ = std::fs::remove_dir_all(&home);
    }
}
