//! The routes' processes: the fast HTTP backend, nginx with a generated
//! config, `switchboard serve` (over HTTP and over stdio) in a throwaway
//! HOME, and the third-party bridges (supergateway, mcp-proxy, mcp-remote)
//! from the bench's cache; plus the `/proc` readings (CPU time per process,
//! a process's descendants).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::fail;

/// Versions the bench installs when the bridges are missing.
const SUPERGATEWAY: &str = "supergateway@4.0.0";
const MCP_REMOTE: &str = "mcp-remote@0.15.1";
const MCP_PROXY: &str = "mcp-proxy==0.13.0";

/// A process this bench started; killed (and reaped) on drop.
pub(crate) struct Owned(pub(crate) Child);

impl Owned {
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Owned {
    /// SIGTERM first (nginx's master then stops its workers, which a
    /// SIGKILL would orphan), SIGKILL after 3 s.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A temporary directory, removed on drop.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> Result<TempDir, String> {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-gateway-bench-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(fail)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// This bench binary: also the fast server (`--fast-server stdio|http`).
pub(crate) fn own_exe() -> PathBuf {
    std::env::current_exe().expect("own path")
}

/// A free loopback port (bound, then released for the proxy to take).
pub(crate) fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(fail)?;
    Ok(l.local_addr().map_err(fail)?.port())
}

/// Waits until `127.0.0.1:port` accepts a connection, or `child` exits.
pub(crate) fn wait_for_port(port: u16, child: &mut Child, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{what} exited before listening: {status}"));
        }
        if Instant::now() > deadline {
            return Err(format!("{what} did not listen on port {port} within 20 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fast server over HTTP, in its own process; its URL.
pub(crate) fn start_http_backend() -> Result<(String, Owned), String> {
    let mut child = Command::new(own_exe())
        .args(["--fast-server", "http"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(fail)?;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?)
        .read_line(&mut line)
        .map_err(fail)?;
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("the fast server printed {line:?}"))?;
    Ok((format!("{addr}/mcp"), Owned(child)))
}

/// `host:port` of an `http://host:port/…` URL.
fn authority(url: &str) -> &str {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    rest.split('/').next().unwrap_or(rest)
}

/// nginx, if installed: its path.
pub(crate) fn nginx_path() -> Option<PathBuf> {
    switchboard_testkit::nginx::path()
}

/// nginx as a plain reverse proxy in front of `backend_url`, one worker,
/// kept-alive upstream connections, nothing buffered (an SSE answer streams
/// through), no access log; its URL and master process.
pub(crate) fn start_nginx(
    nginx: &Path,
    backend_url: &str,
    dir: &Path,
) -> Result<(String, Owned), String> {
    let port = free_port()?;
    let d = dir.display();
    let config = format!(
        r#"worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    # The bench's connections live for a whole phase (the default closes
    # one after 1,000 requests).
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    upstream backend {{
        server {backend};
        keepalive 64;
        keepalive_requests 100000000;
        keepalive_timeout 600s;
    }}
    server {{
        listen 127.0.0.1:{port};
        tcp_nodelay on;
        location / {{
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_cache off;
            proxy_read_timeout 3600s;
        }}
    }}
}}
"#,
        backend = authority(backend_url),
    );
    let child = switchboard_testkit::nginx::run(nginx, dir, &config, port)?;
    Ok((format!("http://127.0.0.1:{port}/mcp"), Owned(child)))
}

/// The switchboard CLI: `SWITCHBOARD_BIN`, else (`cargo bench`) built here
/// with this bench's profile, else (`cargo test`) the one beside this
/// binary if there is one.
pub(crate) fn switchboard_bin(build: bool) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("SWITCHBOARD_BIN") {
        return Ok(PathBuf::from(p));
    }
    // target/PROFILE/deps/gateway-HASH
    let exe = own_exe();
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("no profile dir")?;
    let bin = profile_dir.join("switchboard");
    if build {
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("release") => "bench".to_owned(),
            Some("debug") => "dev".to_owned(),
            Some(other) => other.to_owned(),
            None => "bench".to_owned(),
        };
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        eprintln!(
            "gateway bench: building the CLI (cargo build --profile {profile} -p switchboard-cli)"
        );
        let status = Command::new(cargo)
            .args([
                "build",
                "-q",
                "--profile",
                &profile,
                "-p",
                "switchboard-cli",
            ])
            .args(["--bin", "switchboard"])
            .status()
            .map_err(fail)?;
        if !status.success() {
            return Err(format!("building the CLI failed: {status}"));
        }
    }
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!("no switchboard binary at {}", bin.display()))
    }
}

/// A throwaway HOME whose user config holds `[servers.x]` = `server`.
pub(crate) struct Sandbox {
    dir: TempDir,
}

impl Sandbox {
    pub(crate) fn new(name: &str, server: &str) -> Result<Sandbox, String> {
        let dir = TempDir::new(name)?;
        let config = dir.0.join("home/.config/switchboard/config.toml");
        std::fs::create_dir_all(config.parent().ok_or("no parent")?).map_err(fail)?;
        std::fs::create_dir_all(dir.0.join("work/.git")).map_err(fail)?;
        std::fs::create_dir_all(dir.0.join("run")).map_err(fail)?;
        std::fs::write(&config, format!("[servers.x]\n{server}\n")).map_err(fail)?;
        Ok(Sandbox { dir })
    }

    /// `[servers.x]` reached at `url`.
    pub(crate) fn http(name: &str, url: &str) -> Result<Sandbox, String> {
        Sandbox::new(name, &format!("url = {url:?}"))
    }

    /// `[servers.x]`: the fast server over stdio.
    pub(crate) fn stdio(name: &str) -> Result<Sandbox, String> {
        let exe = own_exe();
        Sandbox::new(
            name,
            &format!(
                "command = {:?}\nargs = [\"--fast-server\", \"stdio\"]",
                exe.display().to_string()
            ),
        )
    }

    /// `program` with HOME and everything else of switchboard's in here.
    pub(crate) fn command(&self, program: &Path) -> Command {
        let root = &self.dir.0;
        let mut c = Command::new(program);
        c.current_dir(root.join("work"))
            .env("HOME", root.join("home"))
            .env("XDG_CONFIG_HOME", root.join("home/.config"))
            .env("XDG_RUNTIME_DIR", root.join("run"))
            .env("SWITCHBOARD_CREDENTIALS", root.join("credentials.json"))
            .env_remove("SWITCHBOARD_TOKEN");
        c
    }
}

/// `switchboard serve --http 127.0.0.1:0 --no-auth EXTRA…` in `sandbox`;
/// its URL.
pub(crate) fn start_http_gateway(
    bin: &Path,
    sandbox: &Sandbox,
    extra: &[&str],
) -> Result<(String, Owned), String> {
    let mut child = sandbox
        .command(bin)
        .args(["serve", "--http", "127.0.0.1:0", "--no-auth"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(fail)?;
    let mut stderr = std::io::BufReader::new(child.stderr.take().ok_or("no stderr")?);
    let mut line = String::new();
    let owned = Owned(child);
    let url = loop {
        line.clear();
        if stderr.read_line(&mut line).map_err(fail)? == 0 {
            return Err("switchboard serve --http printed no address".into());
        }
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            break url.to_owned();
        }
    };
    // Keep draining stderr so the gateway never blocks on it.
    std::thread::spawn(move || for _ in stderr.lines() {});
    Ok((url, owned))
}

// ---------------------------------------------------------------------------
// The third-party bridges.
// ---------------------------------------------------------------------------

/// Where the bridges live: `SWITCHBOARD_BRIDGES`, else
/// `$SWITCHBOARD_CACHE/bridges`, else `~/.cache/switchboard-ci/bridges`.
pub(crate) fn bridges_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SWITCHBOARD_BRIDGES") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("SWITCHBOARD_CACHE") {
        return PathBuf::from(d).join("bridges");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache/switchboard-ci/bridges")
}

/// A bridge's program, installed into the cache when missing and `install`
/// is set; `Err` says why it is not there.
pub(crate) fn bridge(name: &str, install: bool) -> Result<PathBuf, String> {
    let dir = bridges_dir();
    let (bin, how) = match name {
        "supergateway" | "mcp-remote" => (
            dir.join("npm/node_modules/.bin").join(name),
            "npm (node 18+)",
        ),
        "mcp-proxy" => (dir.join("venv/bin/mcp-proxy"), "python3 -m venv + pip"),
        _ => return Err(format!("unknown bridge {name}")),
    };
    if bin.exists() {
        return Ok(bin);
    }
    if !install {
        return Err(format!("not installed at {}", bin.display()));
    }
    eprintln!(
        "gateway bench: installing {name} into {} ({how})",
        dir.display()
    );
    let ok = match name {
        "mcp-proxy" => {
            let venv = dir.join("venv");
            run_quiet(Command::new("python3").arg("-m").arg("venv").arg(&venv)).and_then(|()| {
                run_quiet(Command::new(venv.join("bin/pip")).args(["install", "-q", MCP_PROXY]))
            })
        }
        _ => {
            let npm = dir.join("npm");
            std::fs::create_dir_all(&npm).map_err(fail)?;
            run_quiet(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--prefix"])
                    .arg(&npm)
                    .args([SUPERGATEWAY, MCP_REMOTE]),
            )
        }
    };
    match ok {
        Ok(()) if bin.exists() => Ok(bin),
        Ok(()) => Err(format!("installed, but no {}", bin.display())),
        Err(e) => Err(format!("did not install: {e}")),
    }
}

fn run_quiet(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(fail)?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("").trim().to_owned();
        Err(format!("{}: {last}", out.status))
    }
}

/// `supergateway --stdio "FAST stdio" --outputTransport streamableHttp
/// --stateful`: one child per session (its stateless mode starts a child
/// per request); its URL.
pub(crate) fn start_supergateway(bin: &Path) -> Result<(String, Owned), String> {
    let port = free_port()?;
    let exe = own_exe();
    let mut child = Command::new(bin)
        .arg("--stdio")
        .arg(format!("{} --fast-server stdio", exe.display()))
        .args(["--outputTransport", "streamableHttp", "--stateful"])
        .args(["--port", &port.to_string(), "--logLevel", "none"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(fail)?;
    wait_for_port(port, &mut child, "supergateway").inspect_err(|_| {
        let _ = child.kill();
        let _ = child.wait();
    })?;
    Ok((format!("http://127.0.0.1:{port}/mcp"), Owned(child)))
}

/// `mcp-proxy --port P -- FAST --fast-server stdio` (stateful Streamable
/// HTTP at `/mcp`); its URL.
pub(crate) fn start_mcp_proxy(bin: &Path) -> Result<(String, Owned), String> {
    let port = free_port()?;
    let mut child = Command::new(bin)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--log-level", "WARNING", "--"])
        .arg(own_exe())
        .args(["--fast-server", "stdio"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(fail)?;
    wait_for_port(port, &mut child, "mcp-proxy").inspect_err(|_| {
        let _ = child.kill();
        let _ = child.wait();
    })?;
    Ok((format!("http://127.0.0.1:{port}/mcp"), Owned(child)))
}

// ---------------------------------------------------------------------------
// /proc
// ---------------------------------------------------------------------------

/// Clock ticks per second of `/proc/PID/stat` (USER_HZ: 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// utime + stime of a process (all its threads), in µs; 0 if it is gone.
pub(crate) fn cpu_us(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name's closing parenthesis: state is 3rd,
    // utime the 14th and stime the 15th of the whole line.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / TICKS_PER_SEC * 1e6
}

/// Every live descendant of `pid` (children, their children, …).
pub(crate) fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parents.push((p, ppid));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(p, pp) in &parents {
            if pp == parent {
                out.push(p);
                frontier.push(p);
            }
        }
    }
    out
}
