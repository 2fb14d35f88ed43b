//! Another local user (uid 65534, nobody) reaching a Unix socket the tests
//! opened up on purpose, so that only the listener's own peer check
//! stands between them. Needs root to become that user.
#![allow(dead_code)] // only the tests of Unix sockets use it

/// Whether the tests run as root (able to become another user).
pub(crate) fn can_switch_user() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

/// As uid 65534: connects to `socket`, sends `line` (and a newline), and
/// gives what came back within 20 s: `answer:b''` when the listener
/// closed without a word, `answer:reset` when it dropped the connection
/// first, else the bytes.
pub(crate) fn send_as_nobody(socket: &std::path::Path, line: &str) -> String {
    let probe = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
# The listener may drop the connection before the line is even sent.
try:
    s.sendall(sys.argv[2].encode() + b'\n')
    s.settimeout(20)
    print("answer:" + repr(s.recv(4096)))
except (ConnectionResetError, BrokenPipeError):
    print("answer:reset")
"#;
    use std::os::unix::process::CommandExt as _;
    let output = std::process::Command::new("python3")
        .args(["-c", probe])
        .arg(socket)
        .arg(line)
        .uid(65534)
        .gid(65534)
        .output()
        .expect("python3 runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
