//! `switchboard shell` under a real pty: Tab completion, a form for a
//! required argument, progress printed as it comes, skills listed and
//! loaded.

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use std::path::PathBuf;

use support::BIN;
use support::pty::Terminal;

#[test]
fn the_shell_completes_asks_for_arguments_and_shows_progress() {
    let root = std::env::temp_dir().join(format!("switchboard-shell-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let home: PathBuf = root.join("home");
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let config = home.join(".config/switchboard/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        format!("[servers.t]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--skills\"]\n"),
    )
    .unwrap();
    let mut terminal = Terminal::start(
        &["shell", "t"],
        &work,
        &home,
        &[("SWITCHBOARD_NO_SESSION", "1")],
    );
    terminal.expect("switchboard> ");

    // Tab completes the tool's name.
    terminal.send("call t__ec\t");
    terminal.expect("t__echo");
    // No arguments: the required `text` is asked for.
    terminal.send("\r");
    terminal.expect("text");
    terminal.send("typed into the form\r");
    // The call's result: the text, then how it went.
    terminal.expect("(ok, ");
    let answer = terminal.seen.rfind("typed into the form").unwrap();
    let asked = terminal.seen.find("text").unwrap();
    assert!(asked < answer, "{}", terminal.seen);
    terminal.expect("switchboard> ");

    // Progress, printed as it comes.
    terminal.send("call t__progress steps=3 delay_ms=20\r");
    terminal.expect("progress 3/3");
    terminal.expect("switchboard> ");

    // Skills: listed, then one completed from that list and loaded.
    terminal.send("skills\r");
    terminal.expect("2 skills");
    terminal.expect("switchboard> ");
    terminal.send("skill t/code\t");
    terminal.expect("t/code-review");
    terminal.send("\r");
    terminal.expect("Read the diff twice.");
    terminal.expect("switchboard> ");
    terminal.send("skill pdf-processing references/FORMS.md\r");
    terminal.expect("Fill every field");
    terminal.expect("switchboard> ");

    terminal.send("exit\r");
    let (code, seen) = terminal.finish();
    assert_eq!(code, 0, "{seen}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Waits (polling a file the server writes, with a deadline) until it
/// holds `what`.
fn wait_for(file: &std::path::Path, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(file).is_ok_and(|text| text.contains(what)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never held {what:?}",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_cancels_the_running_call_and_the_prompt_comes_back() {
    let root = std::env::temp_dir().join(format!("switchboard-shell-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let home: PathBuf = root.join("home");
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let record = root.join("record.jsonl");
    let config = home.join(".config/switchboard/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        format!(
            "[servers.t]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--record\", {:?}]\n",
            record.display().to_string()
        ),
    )
    .unwrap();
    let mut terminal = Terminal::start(
        &["shell", "t"],
        &work,
        &home,
        &[("SWITCHBOARD_NO_SESSION", "1")],
    );
    terminal.expect("switchboard> ");
    terminal.send("call t__slow ms=60000\r");
    // The call reached the server; then Ctrl-C.
    wait_for(&record, "\"tools/call\"");
    terminal.send("\x03");
    terminal.expect("cancelled");
    terminal.expect_times("switchboard> ", 2);
    // The server was told.
    wait_for(&record, "notifications/cancelled");
    // The shell goes on: another call answers.
    terminal.send("call t__echo text=after\r");
    terminal.expect("(ok, ");
    terminal.send("exit\r");
    let (code, seen) = terminal.finish();
    assert_eq!(code, 0, "{seen}");
    let _ = std::fs::remove_dir_all(&root);
}
