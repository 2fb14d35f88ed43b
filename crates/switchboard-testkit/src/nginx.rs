//! nginx for a test, started by the test as its own process (the machine's
//! `nginx`: Debian's package, or `NGINX=PATH`), with a config the test
//! gives, in a temporary directory; stopped (SIGTERM, then SIGKILL) when
//! dropped.
//!
//! Absent nginx, [`Nginx::start`] gives `None` and says why on stderr,
//! unless `SWITCHBOARD_REQUIRE_INTEROP` is set (as in CI): then that is a
//! failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The machine's nginx: `NGINX`, or the usual places.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NGINX") {
        return Some(PathBuf::from(p));
    }
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Runs `nginx` in the foreground with `config` (written to
/// `dir/nginx.conf`; its temporary paths should be under `dir/tmp`, made
/// here), and waits until `127.0.0.1:port` accepts a connection.
///
/// # Errors
/// nginx did not start or listen within 20 s (its error log is quoted).
pub fn run(nginx: &Path, dir: &Path, config: &str, port: u16) -> Result<Child, String> {
    let fail = |e: std::io::Error| e.to_string();
    for sub in ["body", "proxy", "fastcgi", "uwsgi", "scgi"] {
        std::fs::create_dir_all(dir.join("tmp").join(sub)).map_err(fail)?;
    }
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, config).map_err(fail)?;
    let mut child = Command::new(nginx)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&conf)
        .args(["-g", "daemon off;"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(fail)?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let failed = loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(child);
        }
        if let Ok(Some(status)) = child.try_wait() {
            break format!("nginx exited before listening: {status}");
        }
        if Instant::now() > deadline {
            break format!("nginx did not listen on port {port} within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    Err(format!("{failed}; error.log: {}", log.trim()))
}

/// One running nginx (see the module docs).
#[derive(Debug)]
pub struct Nginx {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Nginx {
    /// nginx for `test` on a free loopback port, its config made by
    /// `config(prefix, port)`; `None` (said) when the machine has none and
    /// it is not required.
    ///
    /// # Panics
    /// When nginx is required and absent, or does not start.
    pub fn start(test: &str, config: impl FnOnce(&Path, u16) -> String) -> Option<Self> {
        let Some(nginx) = path() else {
            let why = "no nginx: apt-get install nginx";
            let required = std::env::var_os("SWITCHBOARD_REQUIRE_INTEROP")
                .is_some_and(|v| !v.is_empty() && v != "0");
            assert!(!required, "{test}: {why} (it is required here)");
            eprintln!("skipped {test}: {why}");
            return None;
        };
        let dir = std::env::temp_dir().join(format!("sbnginx-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory for nginx");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let config = config(&dir, port);
        let child = run(&nginx, &dir, &config, port).unwrap_or_else(|e| panic!("{test}: {e}"));
        Some(Self { child, dir, port })
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its error log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    /// SIGTERM first (the master then stops its workers, which a SIGKILL
    /// would orphan), SIGKILL after 3 s.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_dir_all(&self.dir);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
