//! Help text: each subcommand's examples, and the hint for a server
//! command typed without its `--`.

use crate::term::sanitize;

use super::Cli;

/// Each subcommand's examples, shown at the end of its `--help` (and in
/// the manual). A test checks that every subcommand has some.
pub(crate) const EXAMPLES: &[(&str, &str)] = &[
    (
        "demo",
        "switchboard demo\nswitchboard demo --json | jq '.servers[].era'",
    ),
    (
        "info",
        "switchboard info -- npx -y @modelcontextprotocol/server-everything\nswitchboard info --url https://mcp.example.com/mcp\nswitchboard info github            # a configured server, with its state",
    ),
    (
        "complete",
        "switchboard complete everything/complex-prompt temperature=0\nswitchboard complete --resource 'file:///{path}' path=src/ -- my-server",
    ),
    (
        "tools",
        "switchboard tools                          # every configured server's\nswitchboard tools --server github --json\nswitchboard tools --for anthropic > tools.json\nswitchboard tools -- uvx mcp-server-time",
    ),
    (
        "resources",
        "switchboard resources\nswitchboard resources --server docs --json",
    ),
    (
        "prompts",
        "switchboard prompts\nswitchboard prompts --server everything",
    ),
    (
        "skills",
        "switchboard skills                         # every configured server's\nswitchboard skills --server docs --json\nswitchboard skills -- switchboard __testserver --skills",
    ),
    (
        "skill",
        "switchboard skill pdf-processing           # the one server that has it\nswitchboard skill docs/pdf-processing --file references/FORMS.md\nswitchboard skill code-review --json -- switchboard __testserver --skills",
    ),
    (
        "call",
        "switchboard call everything/echo '{\"message\": \"hi\"}'\nswitchboard call everything__get-sum --arg a=1 --arg b=2\nswitchboard call echo '{\"message\": \"hi\"}'     # the one server that has it\nswitchboard call get_current_time '{\"timezone\": \"UTC\"}' -- uvx mcp-server-time",
    ),
    (
        "read",
        "switchboard read 'file:///README.md' --server docs\nswitchboard read demo://resource/static/document/architecture.md -- npx -y @modelcontextprotocol/server-everything\nswitchboard read ui://weather/dashboard --server weather -o dashboard.html   # an MCP App's HTML",
    ),
    (
        "prompt",
        "switchboard prompt everything/simple-prompt\nswitchboard prompt review --server github --arg pr=42",
    ),
    (
        "login",
        "switchboard login notion                   # a configured server\nswitchboard login https://mcp.example.com/mcp",
    ),
    ("logout", "switchboard logout notion"),
    (
        "auth",
        "switchboard auth status\nswitchboard auth status --json",
    ),
    (
        "policy",
        "switchboard policy list\nswitchboard policy revoke github/delete_repo\nswitchboard policy revoke github/*   # every tool of a server",
    ),
    (
        "auth status",
        "switchboard auth status --json | jq '.[].server'",
    ),
    (
        "list",
        "switchboard list\nswitchboard list --json --timeout 10",
    ),
    (
        "add",
        "switchboard add everything -- npx -y @modelcontextprotocol/server-everything\nswitchboard add docs https://mcp.example.com/mcp\nswitchboard add -t http -s user api https://api.example.com/mcp -H 'Authorization: Bearer ${API_TOKEN}'\nswitchboard add -e API_KEY='${API_KEY}' search -- uvx search-mcp\nswitchboard add io.github.modelcontextprotocol/server-filesystem --from-registry -s user\nswitchboard add --link 'cursor://anysphere.cursor-deeplink/mcp/install?name=postgres&config=…'",
    ),
    (
        "add-json",
        "switchboard add-json time '{\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}'\nswitchboard add-json -s user docs '{\"type\": \"http\", \"url\": \"https://mcp.example.com/mcp\"}'",
    ),
    (
        "import",
        "switchboard import --from claude-desktop\nswitchboard import --from cursor -s project",
    ),
    (
        "remove",
        "switchboard remove docs\nswitchboard remove docs -s user",
    ),
    ("enable", "switchboard enable github"),
    ("disable", "switchboard disable github"),
    (
        "get",
        "switchboard get github\nswitchboard get github --json",
    ),
    (
        "approve",
        "switchboard approve db                      # after reading what it runs\nswitchboard approve --all",
    ),
    ("trust", "switchboard trust\nswitchboard trust --all --json"),
    (
        "untrust",
        "switchboard untrust db\nswitchboard untrust --all",
    ),
    (
        "serve",
        "switchboard serve                                   # for a host that starts it\nswitchboard serve --http 127.0.0.1:8080 --audit ~/switchboard-audit.jsonl\nclaude mcp add switchboard -- switchboard serve",
    ),
    (
        "shell",
        "switchboard shell\nswitchboard shell everything\n  switchboard> call everything__echo message=hi\n  switchboard> call everything/get-sum        # asks for a and b",
    ),
    (
        "console",
        "switchboard console                 # opens your browser on the servers\nswitchboard console --no-open --port 8766\n  switchboard console: http://127.0.0.1:8766/?token=…   (open it yourself)",
    ),
    (
        "completions",
        "switchboard completions fish > ~/.config/fish/completions/switchboard.fish\necho 'source <(switchboard completions bash)' >> ~/.bashrc\necho 'source <(switchboard completions zsh)' >> ~/.zshrc\n# Tab then completes configured servers' names and their tools (as the\n# last run that started them recorded them)",
    ),
    (
        "man",
        "switchboard man > ~/.local/share/man/man1/switchboard.1 && man switchboard",
    ),
    (
        "doctor",
        "switchboard doctor\nswitchboard doctor --check                  # and start every server\nswitchboard doctor --json | jq '.findings[] | select(.severity == \"error\")'",
    ),
    (
        "up",
        "switchboard up                              # stops after 30 idle minutes\nswitchboard up --idle 8h\nswitchboard call everything/echo '{\"message\": \"hi\"}'   # through the session",
    ),
    ("down", "switchboard down"),
    (
        "audit",
        "switchboard audit verify ~/switchboard-audit.jsonl",
    ),
    ("audit verify", "switchboard audit verify audit.jsonl"),
    (
        "agent",
        "switchboard agent \"Which issues mention the login bug?\"      # the provider whose key is set\nswitchboard agent \"Summarise today's calendar\" --provider gemini --json\nswitchboard agent \"List my repos\" --provider openai-chat --base-url http://127.0.0.1:11434/v1 --model qwen3",
    ),
    (
        "search",
        "switchboard search filesystem\nswitchboard search github --json | jq '.servers[].server.name'\nswitchboard search --registry https://registry.example.com weather",
    ),
    (
        "install",
        "switchboard install ./pdf-tools.mcpb\nswitchboard install ./pdf-tools.mcpb --set root=$HOME/Documents --set api_key=env:PDF_API_KEY --yes",
    ),
    (
        "show",
        "switchboard show io.github.modelcontextprotocol/server-filesystem\nswitchboard show io.github.modelcontextprotocol/server-everything --version 2025.9.25 --json",
    ),
    (
        "team",
        "switchboard team push servers.toml --state 'postgres:///switchboard?host=/run/postgresql' --state-key-file state.key\nswitchboard team show --state URL --state-key-file state.key",
    ),
];

/// The command line with each subcommand's examples.
pub(crate) fn cli_command() -> clap::Command {
    use clap::CommandFactory as _;
    let mut command = Cli::command();
    for (path, examples) in EXAMPLES {
        let text = format!(
            "Examples:\n{}",
            examples
                .lines()
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        command = match path.split_once(' ') {
            Some((parent, child)) => {
                command.mut_subcommand(parent, |c| c.mut_subcommand(child, |c| c.after_help(text)))
            }
            None => command.mut_subcommand(path, |c| c.after_help(text)),
        };
    }
    // Options where they do nothing are not shown there (they still
    // parse, so a shared alias keeps working): sampling answers a server's
    // `sampling/createMessage` during a call or a prompt, not a listing.
    for listing in [
        "tools",
        "resources",
        "prompts",
        "skills",
        "skill",
        "info",
        "complete",
        "read",
    ] {
        command = command.mut_subcommand(listing, |mut c| {
            for id in [
                "sampling_url",
                "sampling_model",
                "sampling_key_env",
                "sampling_max_calls",
            ] {
                c = c.mut_arg(id, |a| a.hide(true));
            }
            c
        });
    }
    command
}
/// The subcommands that take a server command after `--`.
pub(crate) const TAKE_A_COMMAND: [&str; 9] = [
    "info",
    "tools",
    "resources",
    "prompts",
    "call",
    "read",
    "prompt",
    "complete",
    "add",
];

/// When a parse error comes from a server command typed without the `--`
/// before it (`switchboard tools npx -y server`), the command line with
/// When a parse error comes from a server command typed without the `--`
/// before it (`switchboard tools npx -y server`), the command line with
/// it, as a hint.
pub(crate) fn forgotten_dashes(error: &clap::Error, argv: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(error.kind(), ErrorKind::UnknownArgument) || argv.iter().any(|a| a == "--") {
        return None;
    }
    let subcommand = argv
        .iter()
        .skip(1)
        .position(|a| TAKE_A_COMMAND.contains(&a.as_str()))?
        + 1;
    let Some(ContextValue::String(invalid)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    // Where the server command starts: the first word past the
    // subcommand's own positionals (`call TOOL`, `add NAME`, `complete
    // PROMPT ARG=`), flags aside; else the word clap could not place.
    let own = match argv[subcommand].as_str() {
        "call" | "read" | "prompt" | "add" => 1,
        "complete" => 2,
        _ => 0,
    };
    let words: Vec<usize> = (subcommand + 1..argv.len())
        .filter(|&i| !argv[i].starts_with('-'))
        .collect();
    let start = match words.get(own) {
        Some(&i) => i,
        None => {
            argv.iter()
                .skip(subcommand + 1)
                .position(|a| a == invalid)?
                + subcommand
                + 1
        }
    };
    // `add NAME CMD …` keeps the name before the `--`; `call TOOL CMD …`
    // its tool.
    let mut fixed: Vec<String> = vec!["switchboard".to_owned()];
    fixed.extend(argv[1..start].iter().cloned());
    fixed.push("--".to_owned());
    fixed.extend(argv[start..].iter().cloned());
    let command = argv[start..].join(" ");
    Some(format!(
        "hint: if `{}` is the server's command, put `--` before it:\n  {}",
        sanitize::line(&command),
        sanitize::line(&fixed.join(" "))
    ))
}
