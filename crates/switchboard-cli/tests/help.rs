//! Help with examples for every subcommand; completion scripts and the
//! manual.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

fn run(args: &[&str]) -> (bool, String) {
    let output = Command::new(BIN)
        .args(args)
        .output()
        .expect("switchboard runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// The subcommands `--help` lists (first word of each line of its
/// Commands section), but `help`.
fn subcommands(args: &[&str]) -> Vec<String> {
    let (_, help) = run(args);
    let section = help
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("\nOptions:").next())
        .expect("a Commands section");
    section
        .lines()
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_subcommand_s_help_has_examples() {
    let top = subcommands(&["--help"]);
    assert!(top.len() > 25, "{top:?}");
    let mut checked = 0;
    for name in &top {
        let mut paths = vec![vec![name.clone()]];
        if name == "auth" || name == "audit" {
            for child in subcommands(&[name, "--help"]) {
                paths.push(vec![name.clone(), child]);
            }
        }
        for path in paths {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push("--help");
            let (ok, help) = run(&args);
            assert!(ok, "{args:?}");
            assert!(
                help.contains("\nExamples:\n  switchboard "),
                "`switchboard {}` has no examples:\n{help}",
                path.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked > 30);
}

#[test]
fn completions_for_each_shell_and_the_manual() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let (ok, script) = run(&["completions", shell]);
        assert!(ok, "{shell}");
        assert!(script.contains("switchboard"), "{shell}: {script}");
        // It asks this executable for the candidates at each Tab (what it
        // offers, run by a real bash: tests/completion.rs).
        assert!(script.contains("SWITCHBOARD_COMPLETE"), "{shell}: {script}");
        let executable = std::fs::canonicalize(BIN).unwrap();
        assert!(
            script.contains(executable.to_str().unwrap()),
            "{shell}: {script}"
        );
    }
    let (ok, page) = run(&["man"]);
    assert!(ok);
    assert!(page.contains(".TH switchboard 1"), "{page}");
    assert!(page.contains("doctor"), "{page}");
}

#[test]
fn sampling_options_are_shown_only_where_a_server_can_sample() {
    for listing in ["tools", "resources", "prompts", "info", "read", "complete"] {
        let (ok, help) = run(&[listing, "--help"]);
        assert!(ok);
        assert!(
            !help.contains("--sampling-url <"),
            "`{listing} --help`:\n{help}"
        );
    }
    for working in ["call", "prompt"] {
        let (_, help) = run(&[working, "--help"]);
        assert!(
            help.contains("--sampling-url <"),
            "`{working} --help`:\n{help}"
        );
    }
}
