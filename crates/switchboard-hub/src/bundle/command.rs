//! The rules for the command line a manifest asks to run: it must run
//! the bundle's own code. `mcp_config.command` is the runtime of
//! `server.type` (`node`; `python`/`python3`; `uv`) or a program inside the
//! bundle (`${__dirname}/…`, or a relative path), never a shell; an
//! interpreter's options may not carry inline code (`-e`, `--eval`, `-p`,
//! `-c`, `-m`, stdin, `--import data:…`, `--run`), and the first argument
//! that is not an option must be a file in the bundle. The same holds for
//! every platform override, and `NODE_OPTIONS` may carry no inline code
//! either. Every `${…}` must be one MCPB defines (and a
//! `${user_config.KEY}` a declared key), so that no reference the config
//! expander knows (`${env:…}`, `${secret:…}`) can ride in.

use std::collections::BTreeMap;

use super::manifest::{ServerSpec, UserConfig, check_template, invalid};
use super::{BundleError, safe_path, shown};

const SHELLS: [&str; 16] = [
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "ash",
    "busybox",
    "cmd",
    "powershell",
    "pwsh",
    "nu",
    "elvish",
];
/// Node options whose value is the next argument.
const NODE_VALUE: &[&str] = &[
    "-C",
    "--conditions",
    "--input-type",
    "--title",
    "--env-file",
    "--env-file-if-exists",
    "--inspect-port",
    "--debug-port",
    "--redirect-warnings",
    "--diagnostic-dir",
    "--report-dir",
    "--report-directory",
    "--report-filename",
    "--report-signal",
    "--heapsnapshot-signal",
    "--icu-data-dir",
    "--openssl-config",
    "--secure-heap",
    "--secure-heap-min",
    "--disable-warning",
    "--watch-path",
    "--cpu-prof-dir",
    "--cpu-prof-name",
    "--heap-prof-dir",
    "--heap-prof-name",
    "--trace-event-categories",
    "--trace-event-file-pattern",
    "--unhandled-rejections",
    "--dns-result-order",
    "--max-http-header-size",
    "--tls-keylog",
    "--tls-cipher-list",
    "--localstorage-file",
    "--experimental-default-type",
    "--experimental-config-file",
    "--snapshot-blob",
    "--stack-size",
    "--max-old-space-size",
    "--max-semi-space-size",
];
/// uv options (global or of `uv run`) whose value is the next argument.
const UV_VALUE: &[&str] = &[
    "--directory",
    "--project",
    "--with",
    "--with-editable",
    "--with-requirements",
    "--python",
    "-p",
    "--env-file",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--extra",
    "--group",
    "--only-group",
    "--no-group",
    "--package",
    "--cache-dir",
    "--config-file",
    "--color",
    "--index-strategy",
    "--keyring-provider",
    "--resolution",
    "--prerelease",
    "--exclude-newer",
    "--exclude-newer-package",
    "--link-mode",
    "--python-platform",
    "--refresh-package",
    "--reinstall-package",
    "--upgrade-package",
    "-P",
    "--no-binary-package",
    "--no-build-package",
    "--config-setting",
    "-C",
    "--allow-insecure-host",
    "--fork-strategy",
    "--no-extra",
    "--python-preference",
    "--no-sources-package",
    "--preview-features",
    "--only-dev",
    "--no-editable-package",
];

/// The rules of the module docs for one platform's command line.
pub(super) fn check_run(
    spec: &ServerSpec,
    os: Option<&str>,
    settings: &BTreeMap<String, UserConfig>,
) -> Result<(), BundleError> {
    let (command, args, env) = spec.for_platform(os);
    let place = os.map_or("mcp_config".into(), |os| {
        format!("mcp_config.platform_overrides.{}", shown(os))
    });
    let refuse = |why: String| BundleError::Refused(format!("{place}: {why}"));
    for t in std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .chain(env.values().map(String::as_str))
    {
        check_template(t, Some(settings)).map_err(|why| invalid(format!("{place}: {why}")))?;
    }
    if let Some(key) = env.keys().find(|k| k.is_empty() || k.contains(['=', '\0'])) {
        return Err(invalid(format!(
            "{place}: env name `{}` is not valid",
            shown(key)
        )));
    }
    let base = program_name(command);
    if SHELLS.contains(&base.as_str()) {
        return Err(refuse(format!(
            "command `{}` runs a shell, not the bundle's entry point",
            shown(command)
        )));
    }
    let runtimes: &[&str] = match spec.kind.as_str() {
        "node" => &["node"],
        "python" => &["python", "python3"],
        "uv" => &["uv"],
        _ => &[],
    };
    let is_runtime = !command.contains(['/', '\\'])
        && (runtimes.contains(&base.as_str()) || (spec.kind == "python" && is_python(&base)));
    if !is_runtime && program_in_bundle(command).is_none() {
        let expected = match runtimes {
            [] => String::new(),
            names => format!(
                "`{}` (the runtime of a {} server) or ",
                names.join("` or `"),
                spec.kind
            ),
        };
        return Err(refuse(format!(
            "command `{}` is not {expected}a program inside the bundle",
            shown(command)
        )));
    }
    if let Some(interp) = Interp::of(&base) {
        match interp
            .script(args)
            .map_err(|why| refuse(format!("`{}` {why}", shown(command))))?
        {
            Some(i) if bundle_rel(&args[i]).is_some() => {}
            Some(i) => {
                return Err(refuse(format!(
                    "`{}` runs `{}`, which is not a file in the bundle",
                    shown(command),
                    shown(&args[i])
                )));
            }
            None => {
                return Err(refuse(format!(
                    "`{}` is given no file of the bundle to run",
                    shown(command)
                )));
            }
        }
    }
    if let Some(options) = env.get("NODE_OPTIONS") {
        let options: Vec<String> = options.split_whitespace().map(String::from).collect();
        if Interp::Node
            .script(&options)
            .map_err(|why| refuse(format!("NODE_OPTIONS {why}")))?
            .is_some()
        {
            return Err(refuse("NODE_OPTIONS names a program to run".into()));
        }
    }
    Ok(())
}

/// The path inside the bundle of a program run as `command` (`${__dirname}/…`
/// or a relative path with a `/`; a bare name is looked up in `PATH`).
pub(super) fn program_in_bundle(command: &str) -> Option<String> {
    bundle_rel(command).filter(|_| command.starts_with("${__dirname}") || command.contains('/'))
}

/// The files of the bundle that the command lines of every platform run:
/// the program when it is the bundle's, and an interpreter's script.
pub(super) fn run_targets(spec: &ServerSpec) -> Vec<String> {
    let platforms = spec.platform_overrides.keys().map(|os| Some(os.as_str()));
    let mut targets = Vec::new();
    for os in std::iter::once(None).chain(platforms) {
        let (command, args, _) = spec.for_platform(os);
        targets.extend(program_in_bundle(command));
        if let Some(interp) = Interp::of(&program_name(command))
            && let Ok(Some(i)) = interp.script(args)
        {
            targets.extend(bundle_rel(&args[i]));
        }
    }
    targets
}

/// A program's name without directory, `.exe` or case.
pub(super) fn program_name(command: &str) -> String {
    let base = command
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(command)
        .to_lowercase();
    base.strip_suffix(".exe").map(str::to_owned).unwrap_or(base)
}

fn is_python(base: &str) -> bool {
    base == "python"
        || base == "python3"
        || base
            .strip_prefix("python3.")
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
}

/// The relative path inside the bundle that `t` names (`${__dirname}/…`,
/// or a relative path), or `None`.
pub(super) fn bundle_rel(t: &str) -> Option<String> {
    let t = t.replace("${/}", "/").replace("${pathSeparator}", "/");
    let rel = match t.strip_prefix("${__dirname}") {
        Some("") => return Some(String::new()),
        Some(rest) => rest.strip_prefix('/')?,
        None => t.strip_prefix("./").unwrap_or(&t),
    };
    (!rel.contains('$')).then(|| safe_path(rel).ok()).flatten()
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Interp {
    Node,
    Python,
    Uv,
}

enum Opt {
    Flag,
    Value,
    /// Loads code named by its value (node's `--require`, `--import`).
    Preload,
    Refused(&'static str),
}

impl Interp {
    pub(super) fn of(base: &str) -> Option<Self> {
        match base {
            "node" => Some(Self::Node),
            "uv" => Some(Self::Uv),
            b if is_python(b) => Some(Self::Python),
            _ => None,
        }
    }

    fn option(self, flag: &str) -> Opt {
        const INLINE: &str = "runs inline code instead of the bundle's entry point";
        match self {
            Self::Node => match flag {
                "-e" | "--eval" | "-p" | "--print" | "-i" | "--interactive" => Opt::Refused(INLINE),
                "--run" => Opt::Refused("runs a package.json script (through a shell)"),
                "-r" | "--require" | "--import" | "--loader" | "--experimental-loader" => {
                    Opt::Preload
                }
                f if NODE_VALUE.contains(&f) => Opt::Value,
                f if !f.starts_with("--") && f.len() > 2 && f.contains(['e', 'p', 'i']) => {
                    Opt::Refused(INLINE)
                }
                _ => Opt::Flag,
            },
            Self::Python if flag.starts_with("--") => match flag {
                "--check-hash-based-pycs" => Opt::Value,
                _ => Opt::Flag,
            },
            Self::Python => {
                for (i, c) in flag.char_indices().skip(1) {
                    match c {
                        'c' => return Opt::Refused(INLINE),
                        'm' => {
                            return Opt::Refused(
                                "runs a module by name instead of the bundle's entry point",
                            );
                        }
                        'W' | 'X' if i + 1 == flag.len() => return Opt::Value,
                        'W' | 'X' => return Opt::Flag,
                        _ => {}
                    }
                }
                Opt::Flag
            }
            Self::Uv => match flag {
                "-m" | "--module" => {
                    Opt::Refused("runs a module by name instead of the bundle's entry point")
                }
                "-c" | "--command" => Opt::Refused(INLINE),
                f if UV_VALUE.contains(&f) => Opt::Value,
                _ => Opt::Flag,
            },
        }
    }

    /// Walks the options before the script: the script's index (after
    /// `run` for uv), `None` when there is none, or why the options are
    /// refused.
    pub(super) fn script(self, args: &[String]) -> Result<Option<usize>, String> {
        let mut after_run = self != Self::Uv;
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            if arg == "--" {
                return Ok((i + 1 < args.len()).then_some(i + 1));
            }
            if arg == "-" {
                return Err("reads its program from standard input".into());
            }
            if !arg.starts_with('-') {
                if after_run {
                    return Ok(Some(i));
                }
                if arg != "run" {
                    return Err(format!(
                        "runs `{}`; only `uv run` of a file in the bundle is allowed",
                        shown(arg)
                    ));
                }
                after_run = true;
                i += 1;
                continue;
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if arg.starts_with("--") => (flag, Some(value)),
                _ => (arg.as_str(), None),
            };
            match self.option(flag) {
                Opt::Flag => {}
                Opt::Refused(why) => return Err(format!("`{}` {why}", shown(flag))),
                opt @ (Opt::Value | Opt::Preload) => {
                    let value = match inline {
                        Some(value) => value,
                        None => {
                            i += 1;
                            args.get(i).map(String::as_str).unwrap_or_default()
                        }
                    };
                    if matches!(opt, Opt::Preload)
                        && (value.contains(':') || value.starts_with('/') || value.contains('\\'))
                    {
                        return Err(format!(
                            "`{} {}` loads code from outside the bundle",
                            shown(flag),
                            shown(value)
                        ));
                    }
                }
            }
            i += 1;
        }
        Ok(None)
    }
}
