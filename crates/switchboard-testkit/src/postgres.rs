//! A real PostgreSQL for tests, started by the test itself: `initdb` and
//! `pg_ctl` from the machine's installation (Debian's
//! `/usr/lib/postgresql/N/bin`, or `pg_config --bindir`), as the
//! `postgres` user when the tests run as root (PostgreSQL refuses root),
//! in a temporary directory, listening on a Unix socket there and on no
//! TCP port. Stopped and removed when dropped.
//!
//! Absent PostgreSQL, [`Postgres::start`] gives `None` and says why on
//! stderr, unless `SWITCHBOARD_REQUIRE_POSTGRES` (or
//! `SWITCHBOARD_REQUIRE_INTEROP`, as in CI) is set: then that is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One running PostgreSQL (see the module docs).
#[derive(Debug)]
pub struct Postgres {
    bin: PathBuf,
    dir: PathBuf,
    /// The `postgres` user's name when the tests run as root.
    run_as: Option<String>,
}

/// Databases started by this process so far (each its own directory).
static STARTED: AtomicUsize = AtomicUsize::new(0);

impl Postgres {
    /// A fresh cluster for `test`, or `None` (said) when the machine has
    /// no PostgreSQL and it is not required.
    ///
    /// # Panics
    /// When PostgreSQL is required and absent, or does not start.
    pub fn start(test: &str) -> Option<Self> {
        let bin = match bin_dir() {
            Some(bin) => bin,
            None => {
                let why = "no PostgreSQL (initdb, pg_ctl): apt-get install postgresql";
                let required = [
                    "SWITCHBOARD_REQUIRE_POSTGRES",
                    "SWITCHBOARD_REQUIRE_INTEROP",
                ]
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty() && v != "0"));
                assert!(!required, "{test}: {why} (it is required here)");
                eprintln!("skipped {test}: {why}");
                return None;
            }
        };
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        // Short: a Unix socket's path is at most ~100 bytes.
        let dir = std::env::temp_dir().join(format!("sbpg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory for PostgreSQL");
        let run_as = running_as_root().then(|| "postgres".to_owned());
        if run_as.is_some() {
            let (uid, gid) = user_ids("postgres").expect("a `postgres` user to run PostgreSQL as");
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .expect("the directory given to postgres");
        }
        let postgres = Self { bin, dir, run_as };
        let data = postgres.dir.join("data");
        postgres.run(
            "initdb",
            &[
                "-D",
                &data.to_string_lossy(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let options = format!(
            "-k {} -c listen_addresses='' -F -c max_connections=200",
            postgres.dir.display()
        );
        postgres.run(
            "pg_ctl",
            &[
                "-D",
                &data.to_string_lossy(),
                "-o",
                &options,
                "-l",
                &postgres.dir.join("log").to_string_lossy(),
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        Some(postgres)
    }

    /// The URL of database `postgres` on it (its socket directory as the
    /// `host`).
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@localhost/postgres?host={}",
            self.dir.display()
        )
    }

    /// The URL of a new, empty database `name` on it.
    ///
    /// # Panics
    /// When it cannot be made.
    pub fn database(&self, name: &str) -> String {
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "a plain database name"
        );
        self.run(
            "createdb",
            &["-h", &self.dir.to_string_lossy(), "-U", "postgres", name],
        );
        format!(
            "postgres://postgres@localhost/{name}?host={}",
            self.dir.display()
        )
    }

    /// Runs `sql` with `psql` on database `name` (as an administrator
    /// with write access would) and gives what it printed, unaligned.
    ///
    /// # Panics
    /// When `psql` fails.
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let output = self
            .command("psql")
            .args(["-h", &self.dir.to_string_lossy(), "-U", "postgres"])
            .args(["-v", "ON_ERROR_STOP=1", "-At", "-d", name, "-c", sql])
            .output()
            .unwrap_or_else(|e| panic!("psql does not run: {e}"));
        assert!(
            output.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The directory its socket is in.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// What the server logged so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(path);
                command
            }
            None => Command::new(path),
        };
        command.current_dir(&self.dir).stdin(Stdio::null());
        command
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program} does not run: {e}"));
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args([
                "-D",
                &self.dir.join("data").to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// PostgreSQL's programs: `pg_config --bindir`, else the newest of
/// Debian's `/usr/lib/postgresql/N/bin`.
fn bin_dir() -> Option<PathBuf> {
    let has = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if has(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, dir)| has(dir))
        .collect();
    versions.sort();
    versions.pop().map(|(_, dir)| dir)
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

/// `user`'s uid and gid, from /etc/passwd.
fn user_ids(user: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&user) && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    })
}
