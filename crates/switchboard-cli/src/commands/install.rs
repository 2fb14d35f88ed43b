//! Servers from elsewhere, written only after they are shown: `add --link
//! URL` (a Cursor or VS Code install link) and `install BUNDLE.mcpb`; and
//! what they share with `add --from-registry` — the entry shown whole,
//! and the question asked.

use anyhow::anyhow;
use switchboard_hub::config::{ServerConfig, TransportConfig, parse_link};

use crate::cli::{AddArgs, ScopeArg};
use crate::configure::Context;
use crate::failure::Failure;
use crate::term::{output, sanitize};

/// A variable an entry refers to, as shown before writing it.
pub(crate) struct Need<'a> {
    pub(crate) name: &'a str,
    pub(crate) description: Option<&'a str>,
    pub(crate) secret: bool,
    pub(crate) required: bool,
}

/// `transport` in lines: what runs (or which URL), its variables and
/// headers, then what the user is to set. Every piece sanitised.
pub(crate) fn describe(transport: &TransportConfig, needs: &[Need<'_>]) -> String {
    let line = |text: &str| sanitize::line(text).into_owned();
    let mut shown = String::new();
    match transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            shown.push_str(&format!(
                "\n  runs: {} {}",
                line(command),
                args.iter().map(|a| line(a)).collect::<Vec<_>>().join(" ")
            ));
            if let Some(cwd) = cwd {
                shown.push_str(&format!("\n  in: {}", line(&cwd.to_string_lossy())));
            }
            for (name, value) in env {
                shown.push_str(&format!("\n  env {}={}", line(name), line(value)));
            }
        }
        TransportConfig::Http { url, headers, .. }
        | TransportConfig::WebSocket { url, headers } => {
            shown.push_str(&format!("\n  url: {}", line(url)));
            for (name, value) in headers {
                shown.push_str(&format!("\n  header {}: {}", line(name), line(value)));
            }
        }
        _ => shown.push_str("\n  (a transport this version cannot show)"),
    }
    for need in needs {
        shown.push_str(&format!(
            "\n  set ${}{}{}",
            line(need.name),
            match (need.secret, need.required) {
                (true, true) => " (a secret, required)",
                (true, false) => " (a secret)",
                (false, true) => " (required)",
                (false, false) => "",
            },
            need.description
                .map(|d| format!(": {}", output::short(d, 80)))
                .unwrap_or_default()
        ));
    }
    shown
}

/// Asks `question` on the terminal unless `yes`; `Err` says why nothing is
/// written (`unasked` when there is no terminal to ask on).
pub(crate) async fn confirm(question: String, yes: bool, unasked: &str) -> Result<(), Failure> {
    if yes {
        return Ok(());
    }
    let approved = tokio::task::spawn_blocking(move || {
        if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            return Err(());
        }
        inquire::Confirm::new(&question)
            .with_default(false)
            .prompt()
            .map_err(|_| ())
    })
    .await
    .unwrap_or(Err(()));
    match approved {
        Ok(true) => Ok(()),
        Ok(false) => Err(Failure::usage(anyhow!("not written: you said no"))),
        Err(()) => Err(Failure::usage(anyhow!(
            "not written: {unasked} (pass --yes after reading the above)"
        ))),
    }
}

/// `add [NAME] --link URL`: the entry the link describes, read as
/// `add-json` reads it, shown, and written only on a yes.
pub(crate) async fn add_link(context: &Context, args: AddArgs) -> Result<u8, Failure> {
    let text = args.link.as_deref().unwrap_or_default();
    let link = parse_link(text)
        .map_err(|why| Failure::usage(anyhow!("cannot use the link: {}", sanitize::line(&why))))?;
    let name = match (&args.name, &link.name) {
        (Some(name), _) => name.clone(),
        (None, Some(name)) => name.clone(),
        (None, None) => {
            return Err(Failure::usage(anyhow!(
                "the link does not name the server; give it a name: `switchboard add NAME --link URL`"
            )));
        }
    };
    crate::configure::check_name(&name).map_err(|e| {
        Failure::usage(anyhow!(
            "{} (give the entry a name: `switchboard add NAME --link URL`)",
            sanitize::line(&e.to_string())
        ))
    })?;
    let mut server: ServerConfig =
        crate::configure::json_entry(context, &name, &link.entry.to_string())?;
    let target = context.target(args.scope.unwrap_or(ScopeArg::Local));
    server.origin = crate::configure::origin(&target);
    let needs: Vec<Need<'_>> = link
        .needs
        .iter()
        .map(|n| Need {
            name: &n.name,
            description: n.description.as_deref(),
            secret: n.secret,
            required: true,
        })
        .collect();
    let mut shown = format!(
        "`{}` from a {} install link:",
        sanitize::line(&name),
        match link.kind {
            switchboard_hub::config::LinkKind::Cursor => "Cursor",
            _ => "VS Code",
        }
    );
    for warning in &link.warnings {
        shown.push_str(&format!("\n  warning: {}", sanitize::line(warning)));
    }
    shown.push_str(&describe(&server.transport, &needs));
    eprintln!("{shown}");
    confirm(
        format!("Write `{name}` into {}?", target.0.file.display()),
        args.yes,
        "an install link's entry is written only when you say yes",
    )
    .await?;
    crate::configure::write_new(context, &target.0, server, args.json)
}

/// How `install` (or `add --from-registry` of a bundle) was asked to
/// install.
pub(crate) struct Settings {
    pub(crate) as_name: Option<String>,
    pub(crate) set: Vec<String>,
    pub(crate) yes: bool,
    pub(crate) json: bool,
}

/// `install BUNDLE.mcpb`.
pub(crate) async fn install_file(
    context: &Context,
    path: &std::path::Path,
    settings: Settings,
) -> Result<u8, Failure> {
    let limits = switchboard_hub::bundle::Limits::default();
    let cannot = |why: String| {
        Failure::usage(anyhow!(
            "cannot install {}: {}",
            sanitize::line(&path.display().to_string()),
            sanitize::line(&why)
        ))
    };
    let size = std::fs::metadata(path)
        .map_err(|e| cannot(e.to_string()))?
        .len();
    if size > limits.archive_bytes {
        return Err(cannot(format!(
            "it is {size} bytes; bundles over {} are not read",
            limits.archive_bytes
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| cannot(e.to_string()))?;
    install_bytes(context, &bytes, &path.display().to_string(), settings).await
}

/// Installs the bundle `bytes` from `source`: shown, confirmed, its
/// settings asked, unpacked under the data directory, its secrets stored,
/// its entry written into the user's file. Nothing is left behind when a
/// step fails.
pub(crate) async fn install_bytes(
    context: &Context,
    bytes: &[u8],
    source: &str,
    settings: Settings,
) -> Result<u8, Failure> {
    use switchboard_hub::bundle;
    use switchboard_hub::config::{Scope, Secrets};

    let line = |text: &str| sanitize::line(text).into_owned();
    let limits = bundle::Limits::default();
    let manifest = bundle::read_manifest(bytes, &limits).map_err(|e| {
        Failure::usage(anyhow!(
            "cannot install {}: {}",
            line(source),
            line(&e.to_string())
        ))
    })?;
    let name = settings
        .as_name
        .clone()
        .unwrap_or_else(|| manifest.name.clone());
    crate::configure::check_name(&name).map_err(|e| {
        Failure::usage(anyhow!(
            "{} (name the entry with --as NAME)",
            line(&e.to_string())
        ))
    })?;
    let target = context.target(ScopeArg::User);
    let existing = switchboard_hub::config::load_file(
        &context.locations,
        &target.0.file,
        target.0.dialect,
        target.1,
    );
    if existing.servers.iter().any(|s| s.name == name) {
        return Err(Failure::usage(anyhow!(
            "`{name}` is already in {}; remove it first (`switchboard remove {name} -s user`) or name this one with --as NAME",
            target.0.file.display()
        )));
    }

    // What is about to be installed, whole.
    let mut shown = format!(
        "`{}` {}{} from {}:",
        line(&name),
        line(&manifest.version),
        manifest
            .author
            .as_deref()
            .map(|a| format!(" by {}", line(a)))
            .unwrap_or_default(),
        line(source)
    );
    if let Some(description) = &manifest.description {
        shown.push_str(&format!("\n  {}", output::short(description, 100)));
    }
    shown.push_str(&format!(
        "\n  a {} server; runs: {} {}",
        line(&manifest.server.kind),
        line(&manifest.server.command),
        manifest
            .server
            .args
            .iter()
            .map(|a| line(a))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    for (key, value) in &manifest.server.env {
        shown.push_str(&format!("\n  env {}={}", line(key), line(value)));
    }
    for (key, setting) in &manifest.user_config {
        shown.push_str(&format!(
            "\n  asks {}{}{}{}",
            line(key),
            match (setting.sensitive, setting.required) {
                (true, true) => " (a secret, required)",
                (true, false) => " (a secret)",
                (false, true) => " (required)",
                (false, false) => "",
            },
            setting
                .title
                .as_deref()
                .map(|t| format!(": {}", output::short(t, 60)))
                .unwrap_or_default(),
            setting
                .description
                .as_deref()
                .map(|d| format!(" — {}", output::short(d, 80)))
                .unwrap_or_default()
        ));
    }
    eprintln!("{shown}");
    confirm(
        format!(
            "Install `{name}` and write it into {}?",
            target.0.file.display()
        ),
        settings.yes,
        "a bundle is installed only when you say yes",
    )
    .await?;

    let answers = answers(&manifest, &settings.set).await?;
    let dir = context.locations.data_dir().join("bundles").join(&name);
    if dir.exists() {
        // Left by an install whose entry is gone: replaced.
        std::fs::remove_dir_all(&dir)
            .map_err(|e| Failure::usage(anyhow!("cannot replace {}: {e}", dir.display())))?;
    }
    if let Some(parent) = dir.parent() {
        switchboard_hub::private_file::create_private_dir(parent)
            .map_err(|e| Failure::usage(anyhow!("cannot make {}: {e}", parent.display())))?;
    }
    let undo = |dir: &std::path::Path| {
        let _ = std::fs::remove_dir_all(dir);
    };
    let unpacked = bundle::unpack(bytes, &dir, &limits).map_err(|e| {
        Failure::usage(anyhow!(
            "cannot install {}: {}",
            line(source),
            line(&e.to_string())
        ))
    })?;
    let entry = match bundle::entry(&unpacked, context.locations.home(), &name, &answers) {
        Ok(entry) => entry,
        Err(e) => {
            undo(&dir);
            return Err(Failure::usage(anyhow!(
                "cannot install `{name}`: {}",
                line(&e.to_string())
            )));
        }
    };
    if !entry.secrets.is_empty() {
        let stored = Secrets::load(&context.locations).and_then(|mut secrets| {
            secrets.set_server(&name, &entry.secrets);
            secrets.save()
        });
        if let Err(e) = stored {
            undo(&dir);
            return Err(Failure::usage(anyhow!(
                "cannot install `{name}`: its secrets cannot be stored: {e}"
            )));
        }
    }
    let server = ServerConfig::new(
        &name,
        TransportConfig::Stdio {
            command: entry.command,
            args: entry.args,
            env: entry.env,
            cwd: Some(entry.cwd),
        },
        crate::configure::origin(&target),
    );
    debug_assert!(matches!(target.1, Scope::User | Scope::Explicit));
    let written = crate::configure::write_new(context, &target.0, server, settings.json);
    if written.is_err() {
        undo(&dir);
        if let Ok(mut secrets) = Secrets::load(&context.locations)
            && secrets.remove_server(&name) > 0
        {
            let _ = secrets.save();
        }
    }
    written
}

/// The answers to a bundle's settings: `--set KEY=VALUE` (a secret only as
/// `env:VAR`), else asked on the terminal (secrets hidden), else none (the
/// default, or an error naming a required one).
async fn answers(
    manifest: &switchboard_hub::bundle::Manifest,
    set: &[String],
) -> Result<std::collections::BTreeMap<String, String>, Failure> {
    let mut given = std::collections::BTreeMap::new();
    for pair in set {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Failure::usage(anyhow!(
                "--set takes KEY=VALUE, not `{}`",
                sanitize::line(pair)
            )));
        };
        let Some(setting) = manifest.user_config.get(key) else {
            return Err(Failure::usage(anyhow!(
                "the bundle has no setting `{}` (it has: {})",
                sanitize::line(key),
                manifest
                    .user_config
                    .keys()
                    .map(|k| sanitize::line(k).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let value = match value.strip_prefix("env:") {
            Some(var) => std::env::var(var)
                .map_err(|_| Failure::usage(anyhow!("--set {key}=env:{var}: {var} is not set")))?,
            None if setting.sensitive => {
                return Err(Failure::usage(anyhow!(
                    "`{key}` is a secret: give it as --set {key}=env:VAR (a command line is visible to other users), or answer it when asked"
                )));
            }
            None => value.to_owned(),
        };
        given.insert(key.to_owned(), value);
    }
    let unasked: Vec<(String, switchboard_hub::bundle::UserConfig)> = manifest
        .user_config
        .iter()
        .filter(|(k, _)| !given.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if unasked.is_empty() || !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Ok(given);
    }
    let asked = tokio::task::spawn_blocking(move || {
        let mut asked = std::collections::BTreeMap::new();
        for (key, setting) in unasked {
            let label = sanitize::line(setting.title.as_deref().unwrap_or(&key)).into_owned();
            let help = setting
                .description
                .as_deref()
                .map(|d| sanitize::line(d).into_owned());
            let answer = if setting.sensitive {
                let mut prompt = inquire::Password::new(&label)
                    .without_confirmation()
                    .with_display_mode(inquire::PasswordDisplayMode::Hidden);
                if let Some(help) = &help {
                    prompt = prompt.with_help_message(help);
                }
                prompt.prompt()
            } else {
                let default = setting.default.as_ref().map(|d| match d {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                let mut prompt = inquire::Text::new(&label);
                if let Some(help) = &help {
                    prompt = prompt.with_help_message(help);
                }
                if let Some(default) = &default {
                    prompt = prompt.with_default(default);
                }
                // The default taken as it is: the bundle's own (its
                // `${HOME}` expanded by the entry, not by the answer).
                prompt.prompt().map(|v| {
                    if Some(&v) == default.as_ref() {
                        String::new()
                    } else {
                        v
                    }
                })
            };
            match answer {
                Ok(value) if value.is_empty() => {}
                Ok(value) => {
                    asked.insert(key, value);
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(asked)
    })
    .await
    .map_err(|e| Failure::usage(anyhow!("{e}")))?
    .map_err(|e| Failure::usage(anyhow!("not installed: {e}")))?;
    given.extend(asked);
    Ok(given)
}
