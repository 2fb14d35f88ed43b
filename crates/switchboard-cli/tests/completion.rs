//! Tab completion as a shell runs it: the registration `completions bash`
//! prints, sourced by a real bash, asks `switchboard` for the candidates —
//! subcommands, configured servers' names, and their tools as an earlier
//! run recorded them — and starts no server to find them.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::home::Home;
use support::{BIN, SCRUBBED};

/// A HOME whose one server, `t`, is the bundled test server, counting its
/// starts in `spawns`.
struct Sandbox {
    home: Home,
    script: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let name = format!("completion-{name}");
        let root = std::env::temp_dir().join(format!("switchboard-{name}-{}", std::process::id()));
        let home = Home::new(
            &name,
            &format!(
                "[servers.t]\ncommand = \"sh\"\nargs = [\"-c\", \"echo $$ >> '{}'; exec '{BIN}' \
                 __testserver\"]\n\n[servers.other-one]\ncommand = \"false\"\n",
                root.join("spawns").display()
            ),
        );
        let registration = home.run(&["completions", "bash"]);
        assert!(registration.status.success(), "{registration:?}");
        let script = home.root.join("registration.bash");
        std::fs::write(&script, &registration.stdout).unwrap();
        Self { home, script }
    }

    /// How many times the test server was started.
    fn starts(&self) -> usize {
        std::fs::read_to_string(self.home.root.join("spawns"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// What bash offers at a Tab after `words` (the last one is being
    /// typed), as its completion function computes it.
    fn tab(&self, words: &[&str]) -> Vec<String> {
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let line = words.join(" ");
        let current = words.last().copied().unwrap_or_default();
        let previous = words.len().checked_sub(2).map_or("", |i| words[i]);
        let program = format!(
            "source {script:?}\n\
             COMP_WORDS=({words})\n\
             COMP_CWORD={cword}\n\
             COMP_LINE={line:?}\n\
             COMP_POINT=${{#COMP_LINE}}\n\
             COMP_TYPE=9\n\
             _clap_complete_switchboard switchboard '{current}' '{previous}'\n\
             printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
            script = self.script,
            words = quoted.join(" "),
            cword = words.len() - 1,
        );
        let mut bash = Command::new("bash");
        bash.arg("-c")
            .arg(program)
            .current_dir(self.home.work())
            .env("HOME", self.home.home())
            .env("SWITCHBOARD_NO_SESSION", "1");
        for var in SCRUBBED {
            bash.env_remove(var);
        }
        let output = bash.output().expect("bash runs");
        assert!(output.status.success(), "{output:?}");
        assert!(output.stderr.is_empty(), "{output:?}");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

fn has(offered: &[String], word: &str) -> bool {
    offered.iter().any(|o| o == word)
}

#[test]
fn tab_offers_subcommands_servers_and_recorded_tools_and_starts_nothing() {
    let sandbox = Sandbox::new("names");
    assert!(Path::new(&sandbox.script).exists());

    let commands = sandbox.tab(&["switchboard", "do"]);
    assert!(has(&commands, "doctor"), "{commands:?}");
    assert!(has(&commands, "down"), "{commands:?}");

    // Servers: `--server`, `info NAME`, `get NAME`, `shell NAME`.
    for words in [
        &["switchboard", "tools", "--server", ""][..],
        &["switchboard", "info", ""],
        &["switchboard", "get", "o"],
        &["switchboard", "shell", ""],
    ] {
        let offered = sandbox.tab(words);
        let typed = words.last().unwrap();
        for server in ["t", "other-one"] {
            assert_eq!(
                has(&offered, server),
                server.starts_with(typed),
                "{words:?}: {offered:?}"
            );
        }
    }

    // No tool is known before a run has started the server: none offered,
    // and the Tab started none.
    let before = sandbox.tab(&["switchboard", "call", ""]);
    assert!(!before.iter().any(|o| o.starts_with("t/")), "{before:?}");
    assert_eq!(sandbox.starts(), 0);

    // A run that started it recorded its tools; Tab offers them as
    // `SERVER/TOOL`, still starting nothing.
    let listed = sandbox.home.run(&["tools", "--server", "t"]);
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(sandbox.starts(), 1);
    let tools = sandbox.tab(&["switchboard", "call", ""]);
    assert!(has(&tools, "t/echo"), "{tools:?}");
    let narrowed = sandbox.tab(&["switchboard", "call", "t/ec"]);
    assert_eq!(narrowed, ["t/echo"], "{narrowed:?}");
    assert_eq!(sandbox.starts(), 1, "a Tab started the server");
}

#[test]
fn a_hostile_name_is_offered_without_its_control_characters() {
    let home = Home::new(
        "completion-hostile",
        "[servers.\"evil\\u001b]0;PWNED\\u0007\"]\ncommand = \"false\"\n",
    );
    let registration = home.run(&["completions", "bash"]);
    let script = home.root.join("registration.bash");
    std::fs::write(&script, &registration.stdout).unwrap();
    let sandbox = Sandbox { home, script };
    let offered = sandbox.tab(&["switchboard", "get", "ev"]);
    assert_eq!(offered.len(), 1, "{offered:?}");
    for candidate in &offered {
        assert!(
            !candidate.chars().any(char::is_control),
            "{candidate:?} reaches the terminal with control characters"
        );
    }
}
