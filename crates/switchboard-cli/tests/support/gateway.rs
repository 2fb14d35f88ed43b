//! `switchboard serve` in a throwaway HOME whose user config has two
//! backends, both the bundled test server: `old` (session era only) and
//! `new` (2026-07-28 only).

use std::path::PathBuf;
use std::process::Command;

use super::BIN;

/// The HOME, project directory and credentials file of one test.
pub(crate) struct Sandbox {
    root: PathBuf,
}

#[allow(dead_code)] // each test binary uses some of it
impl Sandbox {
    pub(crate) fn new(name: &str) -> Self {
        Self::with_config(name, "")
    }

    /// A sandbox whose user config has `extra` (TOML) after the two
    /// backends.
    pub(crate) fn with_config(name: &str, extra: &str) -> Self {
        let root =
            std::env::temp_dir().join(format!("switchboard-serve-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("work/.git")).unwrap();
        let config = root.join("home/.config/switchboard/config.toml");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(
            &config,
            format!(
                "[servers.old]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--era\", \"legacy\"]\n\n\
                 [servers.new]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--era\", \"modern\"]\n\n{extra}"
            ),
        )
        .unwrap();
        Self { root }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    pub(crate) fn credentials(&self) -> PathBuf {
        self.root.join("credentials.json")
    }

    /// `program` (a host) in the sandbox, with HOME and the credentials
    /// file pointing into it and nothing of the runner's configuration
    /// (the host passes its environment on to `switchboard serve`).
    pub(crate) fn host(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.work())
            .env("HOME", self.home())
            .env("SWITCHBOARD_CREDENTIALS", self.credentials());
        for var in super::SCRUBBED {
            command.env_remove(var);
        }
        command
    }
}

/// The bearer token [`Sandbox::http_gateway`] gives its gateway (through
/// `SWITCHBOARD_TOKEN`, never on its command line).
#[allow(dead_code)] // each test binary uses some of it
pub(crate) const TOKEN: &str = "test-token-0123456789abcdefghijklmnopqrstuv";

/// `url` as a host of the gateway reaches it: with [`TOKEN`].
#[allow(dead_code)] // each test binary uses some of it
pub(crate) fn authed(url: &str) -> switchboard::transport::http::HttpConfig {
    switchboard::transport::http::HttpConfig::new(url)
        .header("Authorization", format!("Bearer {TOKEN}"))
}

#[allow(dead_code)] // each test binary uses some of it
impl Sandbox {
    /// The runtime directory (`XDG_RUNTIME_DIR`) of the gateways started
    /// here: a generated token is written under it.
    pub(crate) fn runtime(&self) -> PathBuf {
        self.root.join("run")
    }

    /// `switchboard serve --http 127.0.0.1:0 [extra…]` here, requiring
    /// [`TOKEN`] (unless `extra` says otherwise); its URL (read from the
    /// line it prints on stderr) and the process, which the caller kills
    /// and waits for.
    pub(crate) fn http_gateway(&self, extra: &[&str]) -> (String, std::process::Child) {
        self.http_gateway_on("127.0.0.1:0", extra)
    }

    /// [`Sandbox::http_gateway`] listening on `addr`.
    pub(crate) fn http_gateway_on(
        &self,
        addr: &str,
        extra: &[&str],
    ) -> (String, std::process::Child) {
        let mut command = self.host(BIN);
        command.env("SWITCHBOARD_TOKEN", TOKEN);
        self.start_http(command, addr, extra)
    }

    /// [`Sandbox::http_gateway_on`] with no static token: hosts as users
    /// (`extra` names the issuer).
    pub(crate) fn http_users_gateway_on(
        &self,
        addr: &str,
        extra: &[&str],
    ) -> (String, std::process::Child) {
        let mut command = self.host(BIN);
        command.env_remove("SWITCHBOARD_TOKEN");
        self.start_http(command, addr, extra)
    }

    #[allow(clippy::zombie_processes)] // returned: the caller waits
    fn start_http(
        &self,
        mut command: Command,
        addr: &str,
        extra: &[&str],
    ) -> (String, std::process::Child) {
        use std::io::BufRead as _;
        let mut child = command
            .args(["serve", "--http", addr])
            .args(extra)
            .env("XDG_RUNTIME_DIR", self.runtime())
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "no address printed"
            );
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                let url = url.to_owned();
                // Keep draining stderr so the gateway never blocks on it.
                std::thread::spawn(move || for _ in stderr.lines() {});
                return (url, child);
            }
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
