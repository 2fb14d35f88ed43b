//! `switchboard skills` and `switchboard skill NAME` (the skills
//! extension): configured servers and a server given after `--`, both
//! eras, a skill served other than as listed, and nothing a server wrote
//! reaching the terminal unescaped.

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use std::process::Output;

use serde_json::Value;
use support::BIN;
use support::home::Home;

/// A HOME whose user config has `docs` (skills, stateless era), `old`
/// (skills, session era), `evil` (its pdf-processing SKILL.md is not the
/// one listed) and `plain` (no skills).
fn sandbox(name: &str) -> Home {
    Home::new(
        &format!("skills-{name}"),
        &format!(
            "[servers.docs]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--skills\", \"--era\", \"modern\"]\n\n\
             [servers.old]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--skills\", \"--era\", \"legacy\"]\n\n\
             [servers.evil]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--skills-tamper\", \"digest\"]\n\n\
             [servers.plain]\ncommand = {BIN:?}\nargs = [\"__testserver\"]\n"
        ),
    )
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn skills_lists_every_configured_servers_skills_with_their_server() {
    let sandbox = sandbox("list");
    let output = sandbox.run(&["skills"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().take(2).collect())
        .collect();
    for expected in [
        ["docs", "pdf-processing"],
        ["docs", "code-review"],
        ["old", "pdf-processing"],
        ["evil", "code-review"],
    ] {
        assert!(
            rows.iter().any(|r| r[..] == expected),
            "{expected:?} in:\n{out}"
        );
    }
    assert!(
        !out.contains("plain"),
        "a server without skills lists none:\n{out}"
    );
    assert!(out.contains("6 skills"), "{out}");

    let output = sandbox.run(&["skills", "--server", "old", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let skills = doc["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 2);
    assert_eq!(skills[0]["server"], "old");
    assert_eq!(skills[0]["uri"], "skill://pdf-processing/SKILL.md");
    assert_eq!(skills[0]["resources"][0]["size"], 269);
}

#[test]
fn skill_loads_one_by_any_of_its_names_and_shows_it_verified() {
    let sandbox = sandbox("one");
    // Two servers have code-review besides `evil`: the bare name is
    // ambiguous, and the error lists the choices.
    let output = sandbox.run(&["skill", "code-review"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("`docs/code-review`")
            && stderr(&output).contains("`old/code-review`"),
        "{}",
        stderr(&output)
    );
    for args in [
        &["skill", "old/pdf-processing"][..],
        &["skill", "pdf-processing", "--server", "docs"],
        &["skill", "docs__pdf-processing"],
    ] {
        let output = sandbox.run(args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        let out = stdout(&output);
        assert!(out.contains("size, sha256 and frontmatter match"), "{out}");
        assert!(out.contains("references/FORMS.md (54 bytes)"), "{out}");
        assert!(out.contains("# PDF processing"), "{args:?}: {out}");
    }
    let output = sandbox.run(&[
        "skill",
        "old/pdf-processing",
        "--file",
        "references/FORMS.md",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("# Forms"),
        "{}",
        stdout(&output)
    );

    let output = sandbox.run(&["skill", "docs/pdf-processing", "--json"]);
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["server"], "docs");
    assert_eq!(doc["skill"]["frontmatter"]["license"], "Apache-2.0");
    assert!(
        doc["instructions"]
            .as_str()
            .unwrap()
            .contains("# PDF processing")
    );

    let output = sandbox.run(&["skill", "docs/pdf"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("did you mean `pdf-processing`"),
        "a prefix: {}",
        stderr(&output)
    );
    let output = sandbox.run(&["skill", "docs/pdf-procesing"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("did you mean `pdf-processing`"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_skill_served_other_than_as_listed_is_refused_with_exit_6_and_not_shown() {
    let sandbox = sandbox("evil");
    let output = sandbox.run(&["skill", "evil/pdf-processing"]);
    assert_eq!(output.status.code(), Some(6), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(err.contains("server `evil`"), "{err}");
    assert!(err.contains("has digest sha256:"), "{err}");
    assert!(
        stdout(&output).is_empty(),
        "nothing of it shown: {}",
        stdout(&output)
    );
    // Through a server given after `--` as well.
    let output = sandbox.run(&[
        "skill",
        "pdf-processing",
        "--",
        BIN,
        "__testserver",
        "--skills-tamper",
        "size",
    ]);
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("bytes, the listing says"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_server_given_after_dashes_in_either_era() {
    let sandbox = sandbox("direct");
    for era in ["legacy", "modern"] {
        let server = [BIN, "__testserver", "--skills", "--era", era];
        let mut args = vec!["skills", "--"];
        args.extend(server);
        let output = sandbox.run(&args);
        assert_eq!(output.status.code(), Some(0), "{era}: {}", stderr(&output));
        assert!(
            stdout(&output).contains("code-review"),
            "{}",
            stdout(&output)
        );

        let mut args = vec!["skill", "code-review", "--"];
        args.extend(server);
        let output = sandbox.run(&args);
        assert_eq!(output.status.code(), Some(0), "{era}: {}", stderr(&output));
        assert!(
            stdout(&output).contains("Read the diff twice."),
            "{}",
            stdout(&output)
        );
    }
    // No extension: says so, names the extension.
    let output = sandbox.run(&["skills", "--", BIN, "__testserver"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("io.modelcontextprotocol/skills"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_dynamic_skill_shows_the_files_its_directory_lists() {
    let sandbox = sandbox("dynamic");
    let output = sandbox.run(&[
        "skill",
        "live-notes",
        "--",
        BIN,
        "__testserver",
        "--skills-directories",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(out.contains("files are dynamic: no digests"), "{out}");
    assert!(
        out.contains("notes/today.md, notes/archive/monday.md"),
        "{out}"
    );
    let output = sandbox.run(&[
        "skill",
        "live-notes",
        "--json",
        "--file",
        "notes/today.md",
        "--",
        BIN,
        "__testserver",
        "--skills-directories",
    ]);
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        doc["files"][1],
        "skill://live-notes/notes/archive/monday.md"
    );
    assert_eq!(doc["file"]["verified"], false);
    assert!(doc["file"]["text"].as_str().unwrap().starts_with("# Today"));
}
