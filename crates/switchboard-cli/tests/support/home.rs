//! A throwaway HOME with a user config of the test's, and a project
//! directory (a git checkout) to run `switchboard` in.
#![allow(dead_code)] // each test binary uses some of it

use std::path::PathBuf;
use std::process::{Command, Output};

use super::isolated;

pub(crate) struct Home {
    pub(crate) root: PathBuf,
}

impl Home {
    /// `$TMP/switchboard-NAME-PID`, its user config `toml`.
    pub(crate) fn new(name: &str, toml: &str) -> Self {
        let root = std::env::temp_dir().join(format!("switchboard-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("work/.git")).unwrap();
        let home = Self { root };
        std::fs::create_dir_all(home.config().parent().unwrap()).unwrap();
        std::fs::write(home.config(), toml).unwrap();
        home
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// The user config file.
    pub(crate) fn config(&self) -> PathBuf {
        self.root.join("home/.config/switchboard/config.toml")
    }

    /// `switchboard` here, as [`isolated`] makes it (no session).
    pub(crate) fn command(&self) -> Command {
        isolated(
            &self.work(),
            &self.home(),
            &self.root.join("credentials.json"),
        )
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("switchboard runs")
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
