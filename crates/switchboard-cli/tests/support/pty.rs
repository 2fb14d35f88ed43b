//! The CLI under a real pty: what it writes, read on a thread, and what is
//! typed — for terminal behaviour (questions, escaping).
// Not every test binary that shares `support` drives a terminal.
#![allow(dead_code)]

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::{BIN, SCRUBBED};

pub(crate) struct Terminal {
    output: mpsc::Receiver<Vec<u8>>,
    pub(crate) seen: String,
    writer: Box<dyn std::io::Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Terminal {
    /// `switchboard ARGS` in `cwd` with HOME `home` (and `env`), on a
    /// 250×50 terminal.
    pub(crate) fn start(args: &[&str], cwd: &Path, home: &Path, env: &[(&str, &str)]) -> Self {
        Self::start_sized(args, cwd, home, env, 250)
    }

    /// [`Terminal::start`] on a terminal `cols` wide.
    pub(crate) fn start_sized(
        args: &[&str],
        cwd: &Path,
        home: &Path,
        env: &[(&str, &str)],
        cols: u16,
    ) -> Self {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 50,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut command = CommandBuilder::new(BIN);
        command.args(args);
        command.cwd(cwd);
        command.env("HOME", home);
        command.env("TERM", "xterm-256color");
        for var in SCRUBBED {
            command.env_remove(var);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let child = pty.slave.spawn_command(command).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let _master = pty.master;
            let mut buf = [0u8; 4096];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Self {
            output,
            seen: String::new(),
            writer,
            child,
        }
    }

    /// Waits until the terminal shows `what` (a generous deadline only
    /// keeps a broken build from hanging the suite).
    pub(crate) fn expect(&mut self, what: &str) {
        while !self.seen.contains(what) {
            match self.output.recv_timeout(Duration::from_secs(60)) {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => panic!(
                    "the terminal never showed {what:?}; it shows:\n{}",
                    self.seen
                ),
            }
        }
    }

    /// Waits until `what` has been shown `times` times in all (for a
    /// prompt that comes back after each command).
    #[allow(dead_code)] // not every test binary uses it
    pub(crate) fn expect_times(&mut self, what: &str, times: usize) {
        while self.seen.matches(what).count() < times {
            match self.output.recv_timeout(Duration::from_secs(60)) {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => panic!(
                    "the terminal never showed {what:?} {times} times; it shows:\n{}",
                    self.seen
                ),
            }
        }
    }

    pub(crate) fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the process to exit; its exit code and everything shown.
    pub(crate) fn finish(mut self) -> (u32, String) {
        let status = self.child.wait().unwrap();
        while let Ok(bytes) = self.output.recv_timeout(Duration::from_secs(5)) {
            self.seen.push_str(&String::from_utf8_lossy(&bytes));
        }
        (status.exit_code(), self.seen)
    }
}
