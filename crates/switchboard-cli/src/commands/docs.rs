//! `completions` and `man`: the command line described for a shell and for
//! `man`.

use crate::cli::cli_command;
use crate::failure::Failure;

/// `completions SHELL`: the shell's registration of completions, which
/// asks `switchboard` for the candidates at each Tab (server and tool
/// names among them: `cli/complete.rs`).
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<u8, Failure> {
    let script = crate::cli::complete::registration(shell)
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot write the completion script: {e}")))?;
    // Written whole through print!, whose failure on a closed pipe ends
    // the command quietly (exit 141), as every output does.
    print!("{script}");
    Ok(0)
}

/// `man`: the manual page (roff).
pub(crate) fn man() -> Result<u8, Failure> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cli_command())
        .render(&mut page)
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot render the manual: {e}")))?;
    print!("{}", String::from_utf8_lossy(&page));
    Ok(0)
}

/// docs/cli.md: the command line's reference, rendered from the same
/// definition as `--help`, completions and the manual, and checked
/// against the file. Built without optional features (`otlp` adds
/// `--otlp-endpoint`), so only there.
#[cfg(all(test, not(feature = "otlp")))]
mod tests {
    use std::fmt::Write as _;
    use std::path::Path;

    use clap::{Arg, Command};

    use crate::cli::cli_command;

    /// Set to 1 to write docs/cli.md instead of checking it.
    const UPDATE: &str = "SWITCHBOARD_UPDATE_DOCS";

    /// Text outside code spans with what Markdown would take as markup
    /// (`<URL>` as HTML, `*KEY*` as emphasis) escaped.
    fn escape(text: &str) -> String {
        let mut out = String::new();
        for (i, part) in text.split('`').enumerate() {
            if i > 0 {
                out.push('`');
            }
            if i % 2 == 1 {
                out.push_str(part);
                continue;
            }
            for c in part.chars() {
                if matches!(c, '<' | '>' | '*') {
                    out.push('\\');
                }
                out.push(c);
            }
        }
        out
    }

    fn value_names(arg: &Arg) -> String {
        let names: Vec<String> = match arg.get_value_names() {
            Some(names) => names.iter().map(|n| n.to_string()).collect(),
            None => vec![arg.get_id().as_str().to_uppercase()],
        };
        let many = arg
            .get_num_args()
            .is_some_and(|range| range.max_values() > 1)
            || matches!(arg.get_action(), clap::ArgAction::Append);
        let mut out = names
            .iter()
            .map(|n| format!("<{n}>"))
            .collect::<Vec<_>>()
            .join(" ");
        if many {
            out.push_str("...");
        }
        out
    }

    /// `-s, --scope <SCOPE>`, or `<NAME>` for a positional.
    fn signature(arg: &Arg) -> String {
        if arg.is_positional() {
            let names = value_names(arg);
            return if arg.is_required_set() {
                names
            } else {
                format!("[{names}]")
            };
        }
        let mut forms = Vec::new();
        if let Some(short) = arg.get_short() {
            forms.push(format!("-{short}"));
        }
        if let Some(long) = arg.get_long() {
            forms.push(format!("--{long}"));
        }
        for alias in arg.get_visible_aliases().unwrap_or_default() {
            forms.push(format!("--{alias}"));
        }
        let mut out = forms.join(", ");
        if arg.get_action().takes_values() {
            out.push(' ');
            out.push_str(&value_names(arg));
        }
        out
    }

    fn arg_item(arg: &Arg) -> String {
        let help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let mut line = format!("- `{}`", signature(arg));
        if !help.trim().is_empty() {
            line.push_str(": ");
            line.push_str(&escape(
                &help.split_whitespace().collect::<Vec<_>>().join(" "),
            ));
        }
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        if !values.is_empty() && arg.get_action().takes_values() {
            let _ = write!(line, " (one of {})", values.join(", "));
        }
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| format!("`{}`", v.to_string_lossy()))
            .collect();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            let _ = write!(line, " (default {})", defaults.join(", "));
        }
        line.push('\n');
        line
    }

    /// One command's section, then its subcommands'. `globals` are the
    /// top level's global options, listed once there.
    fn section(out: &mut String, command: &Command, path: &str, depth: usize, globals: &[String]) {
        let hashes = "#".repeat(depth + 2);
        let _ = writeln!(out, "{hashes} `{path}`\n");
        let about = command
            .get_long_about()
            .or(command.get_about())
            .map(|a| a.to_string())
            .unwrap_or_default();
        if !about.trim().is_empty() {
            let _ = writeln!(out, "{}\n", escape(about.trim()));
        }
        let usage = command.clone().render_usage().to_string();
        let usage = usage.trim().trim_start_matches("Usage:").trim();
        let _ = writeln!(out, "```text\n{usage}\n```\n");

        let shown = |arg: &&Arg| {
            !arg.is_hide_set()
                && !matches!(arg.get_id().as_str(), "help" | "version")
                && (depth == 0 || !globals.iter().any(|g| g == arg.get_id().as_str()))
        };
        let positionals: Vec<&Arg> = command.get_positionals().filter(shown).collect();
        if !positionals.is_empty() {
            out.push_str("Arguments:\n\n");
            for arg in positionals {
                out.push_str(&arg_item(arg));
            }
            out.push('\n');
        }
        let options: Vec<&Arg> = command
            .get_arguments()
            .filter(|a| !a.is_positional())
            .filter(shown)
            .collect();
        if !options.is_empty() {
            out.push_str(if depth == 0 {
                "Options (of every command):\n\n"
            } else {
                "Options:\n\n"
            });
            for arg in options {
                out.push_str(&arg_item(arg));
            }
            out.push('\n');
        }
        if let Some(after) = command.get_after_help().map(|a| a.to_string()) {
            match after.strip_prefix("Examples:\n") {
                Some(examples) => {
                    let lines: Vec<&str> = examples
                        .lines()
                        .map(|l| l.strip_prefix("  ").unwrap_or(l))
                        .collect();
                    let _ = writeln!(out, "Examples:\n\n```sh\n{}\n```\n", lines.join("\n"));
                }
                None => {
                    let _ = writeln!(out, "{}\n", escape(after.trim()));
                }
            }
        }
        for sub in shown_subcommands(command) {
            let path = format!("{path} {}", sub.get_name());
            section(out, sub, &path, depth + 1, globals);
        }
    }

    /// A command's subcommands as `--help` lists them: in its order,
    /// without the hidden ones and `help`.
    fn shown_subcommands(command: &Command) -> Vec<&Command> {
        let mut subs: Vec<&Command> = command
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
            .collect();
        subs.sort_by_key(|sub| sub.get_display_order());
        subs
    }

    /// The whole reference, as docs/cli.md holds it.
    fn reference_markdown() -> String {
        let mut command = cli_command();
        command.build();
        let globals: Vec<String> = command
            .get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| a.get_id().as_str().to_owned())
            .collect();
        let mut out = String::from(
            "# Command-line reference\n\n\
             <!-- Generated from the command's clap definition by the test in \
             crates/switchboard-cli/src/commands/docs.rs; do not edit by hand. -->\n\n\
             Every subcommand of `switchboard`, as its `--help` gives it: usage, \
             arguments, options and examples. Generated from the command's own \
             definition (`SWITCHBOARD_UPDATE_DOCS=1 cargo test -p switchboard-cli \
             --bin switchboard cli_reference` rewrites it). Every command also takes \
             `-h`/`--help`; built with `--features otlp`, every command takes \
             `--otlp-endpoint URL` too. How the commands behave: [usage.md](usage.md).\n\n",
        );
        out.push_str("Commands:\n\n");
        for sub in shown_subcommands(&command) {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let _ = writeln!(
                out,
                "- [`{name}`](#switchboard-{name}): {}",
                escape(about.trim()),
                name = sub.get_name()
            );
        }
        out.push('\n');
        section(&mut out, &command, "switchboard", 0, &globals);
        while out.ends_with("\n\n") {
            out.pop();
        }
        out
    }

    #[test]
    fn cli_reference_matches_docs_cli_md() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md");
        let rendered = reference_markdown();
        if std::env::var(UPDATE).is_ok_and(|v| v == "1") {
            std::fs::write(&path, &rendered).expect("docs/cli.md written");
            return;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != rendered {
            let line = current
                .lines()
                .zip(rendered.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| current.lines().count().min(rendered.lines().count()));
            panic!(
                "docs/cli.md is not the reference the command line renders (first \
                 difference at line {}: the file has {:?}, the command line {:?}). \
                 Run `{UPDATE}=1 cargo test -p switchboard-cli --bin switchboard \
                 cli_reference` and commit docs/cli.md.",
                line + 1,
                current.lines().nth(line).unwrap_or(""),
                rendered.lines().nth(line).unwrap_or(""),
            );
        }
    }
}
