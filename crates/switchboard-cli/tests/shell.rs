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
