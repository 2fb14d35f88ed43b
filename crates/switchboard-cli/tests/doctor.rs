//! `switchboard doctor`: config problems found without starting anything,
//! each with its location, and a non-zero exit.

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use std::process::Output;

use support::BIN;
use support::home::Home;

/// A HOME whose user config is `toml`.
struct Sandbox(Home);

impl Sandbox {
    fn new(name: &str, toml: &str) -> Self {
        Self(Home::new(&format!("doctor-{name}"), toml))
    }

    fn config(&self) -> String {
        self.0.config().display().to_string()
    }

    fn doctor(&self, args: &[&str]) -> Output {
        self.0
            .command()
            .env_remove("SWITCHBOARD_DOCTOR_UNSET")
            .arg("doctor")
            .args(args)
            .output()
            .expect("switchboard runs")
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_healthy_config_passes() {
    let sandbox = Sandbox::new(
        "healthy",
        &format!("[servers.t]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n"),
    );
    let output = sandbox.doctor(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("no problems found"),
        "{}",
        stdout(&output)
    );
    // --check starts it too.
    let output = sandbox.doctor(&["--check"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).contains("ready"), "{}", stdout(&output));
}

#[test]
fn check_fails_when_a_server_does_not_start() {
    let sandbox = Sandbox::new(
        "check",
        "[servers.dies]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 3\"]\n",
    );
    // Nothing wrong in the file…
    let output = sandbox.doctor(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    // …but it does not start.
    let output = sandbox.doctor(&["--check"]);
    assert_eq!(output.status.code(), Some(4), "{}", stdout(&output));
    assert!(stdout(&output).contains("failed"), "{}", stdout(&output));
}

#[test]
fn a_broken_file_is_reported_at_its_line_and_column() {
    let sandbox = Sandbox::new("broken", "[servers.t]\ncommand = \"x\"\nargs = [\"a\"\n");
    let output = sandbox.doctor(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let text = stdout(&output);
    let line = text
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line:\n{text}"));
    assert!(
        line.contains(&format!("{}:", sandbox.config())) && line.contains("not valid TOML"),
        "{text}"
    );
    // FILE:LINE:COL
    let location = line
        .strip_prefix(&format!("error: {}:", sandbox.config()))
        .unwrap();
    let mut parts = location.split(':');
    assert!(parts.next().unwrap().parse::<usize>().is_ok(), "{line}");
    assert!(parts.next().unwrap().parse::<usize>().is_ok(), "{line}");
}

#[test]
fn an_unset_variable_and_a_missing_command_are_reported_where_they_are_written() {
    let sandbox = Sandbox::new(
        "problems",
        "[servers.gone]\ncommand = \"no-such-command-for-doctor\"\n\n\
         [servers.secret]\ncommand = \"sh\"\nargs = [\"-c\", \"true\"]\n\
         env = { TOKEN = \"${SWITCHBOARD_DOCTOR_UNSET}\" }\n",
    );
    let output = sandbox.doctor(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let text = stdout(&output);
    let config = sandbox.config();
    assert!(
        text.contains(&format!(
            "error: {config}:2:12: server `gone`: the command `no-such-command-for-doctor` is not found on PATH"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "warning: {config}:7:18: server `secret`: key `env.TOKEN`: `${{SWITCHBOARD_DOCTOR_UNSET}}`"
        )),
        "{text}"
    );
    assert!(text.contains("2 problems found"), "{text}");
    // The same as JSON, for tools.
    let output = sandbox.doctor(&["--json"]);
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["ok"], false);
    let findings = json["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["server"] == "gone"
        && f["severity"] == "error"
        && f["line"] == 2
        && f["column"] == 12));
}
