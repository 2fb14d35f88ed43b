//! `switchboard console` as an attacker meets it: another local process
//! or another site's page in the user's browser reaching its loopback
//! port. Raw HTTP/1.1 over a `TcpStream`, so every header is the test's
//! to forge. Then what the page shows: servers with their states, tools,
//! a call.
#![cfg(unix)]

#[allow(dead_code)] // the HTTP test server is not used here
mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Stdio};

use serde_json::json;
use support::BIN;
use support::home::Home;

/// A console over `t` (the bundled test server, noting every message in
/// `record`) and `crashy` (exits on start, saying why); stopped when
/// dropped.
struct Console {
    child: Child,
    /// Its stdout, kept open.
    _stdout: BufReader<std::process::ChildStdout>,
    home: Home,
    port: u16,
    token: String,
}

impl Console {
    fn start(name: &str) -> Self {
        Self::start_with(name, None, "")
    }

    /// [`Console::start`] with a project file `.mcp.json` in the project,
    /// and `more` in the user's config.
    fn start_with(name: &str, project: Option<&str>, more: &str) -> Self {
        Self::start_args(name, project, more, &[])
    }

    /// [`Console::start_with`], `args` given to `console` too.
    fn start_args(name: &str, project: Option<&str>, more: &str, args: &[&str]) -> Self {
        let name = format!("console-{name}");
        let root = std::env::temp_dir().join(format!("switchboard-{name}-{}", std::process::id()));
        let home = Home::new(
            &name,
            &format!(
                "[servers.t]\ncommand = \"{BIN}\"\nargs = [\"__testserver\", \"--record\", \"{}\"]\n\n\
                 [servers.crashy]\ncommand = \"sh\"\n\
                 args = [\"-c\", \"echo 'cannot open the database' >&2; exit 3\"]\n{more}",
                root.join("record").display()
            ),
        );
        assert_eq!(home.root, root);
        if let Some(project) = project {
            std::fs::write(home.work().join(".mcp.json"), project).unwrap();
        }
        let mut child = home
            .command()
            .args(["console", "--no-open"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut first).unwrap();
        let url = first
            .trim()
            .strip_prefix("switchboard console: ")
            .unwrap_or_else(|| panic!("no address: {first:?}"))
            .to_owned();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .expect("a loopback address");
        let (port, token) = rest.split_once("/?token=").unwrap();
        Self {
            child,
            _stdout: stdout,
            home,
            port: port.parse().unwrap(),
            token: token.to_owned(),
        }
    }

    /// Sends `request` (with `{port}` and `{token}` filled in) and gives
    /// the status, the headers and the body.
    fn send(&self, request: &str) -> (u16, String, String) {
        let request = request
            .replace("{port}", &self.port.to_string())
            .replace("{token}", &self.token);
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
        (status, head.to_ascii_lowercase(), body.to_owned())
    }

    fn get(&self, path: &str, headers: &str) -> (u16, String, String) {
        self.send(&format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{{port}}\r\n{headers}Connection: close\r\n\r\n"
        ))
    }

    fn post(&self, path: &str, headers: &str, body: &str) -> (u16, String, String) {
        self.send(&format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{{port}}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ))
    }

    /// Waits until no server is still starting (the console answers at
    /// once; its servers start in the background).
    fn settled(&self) -> &Self {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let (_, _, body) = self.get("/api/servers", &self.cookie());
            let starting = ["pending", "connecting", "reconnecting"]
                .iter()
                .any(|state| body.contains(&format!("\"state\":\"{state}\"")));
            if !starting && body.contains("\"servers\"") {
                return self;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "never settled: {body}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn cookie(&self) -> String {
        format!(
            "Cookie: switchboard_console_{}={}\r\n",
            self.port, self.token
        )
    }

    /// What `t` was sent.
    fn record(&self) -> String {
        std::fs::read_to_string(self.home.root.join("record")).unwrap_or_default()
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

#[test]
fn without_the_token_from_another_host_or_site_nothing_is_shown_or_done() {
    let console = Console::start("guard");
    console.settled();
    // No token: 401, on the page and the API alike.
    for path in ["/", "/api/servers", "/api/tools", "/console.js"] {
        let (status, _, body) = console.get(path, "");
        assert_eq!(status, 401, "{path}: {body}");
    }
    let (status, _, _) = console.get("/?token=0000", "");
    assert_eq!(status, 401);
    // The token in the address signs in: an HttpOnly, SameSite=Strict
    // cookie.
    let (status, head, _) = console.get("/?token={token}", "");
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains(&format!(
            "set-cookie: switchboard_console_{}=",
            console.port
        )) && head.contains("httponly; samesite=strict"),
        "{head}"
    );
    // Another host name (DNS rebinding) or another site's page: 403, even
    // with the cookie.
    let cookie = console.cookie();
    let (status, _, _) = console.send(&format!(
        "GET /api/servers HTTP/1.1\r\nHost: evil.example:{{port}}\r\n{cookie}Connection: close\r\n\r\n"
    ));
    assert_eq!(status, 403);
    let call = r#"{"name":"t__echo","arguments":{"text":"pwned"}}"#;
    let (status, _, _) = console.post(
        "/api/call",
        &format!("Origin: http://evil.example\r\nContent-Type: application/json\r\n{cookie}"),
        call,
    );
    assert_eq!(status, 403);
    // An app's view (a sandboxed frame: its origin is opaque, `null`)
    // cannot use the console's API, even were the cookie sent.
    let (status, _, _) = console.post(
        "/api/call",
        &format!("Origin: null\r\nContent-Type: application/json\r\n{cookie}"),
        call,
    );
    assert_eq!(status, 403);
    // What a view asks goes nowhere without a view the console opened.
    let (status, _, body) = console.post(
        "/api/app/request",
        &format!("Content-Type: application/json\r\n{cookie}"),
        r#"{"view":"0123","method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
    );
    assert_eq!(status, 404, "{body}");
    // A cross-site form POST (no cookie: SameSite; a form's content type).
    let (status, _, _) = console.post(
        "/api/call",
        "Origin: http://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\n",
        "name=t__echo",
    );
    assert_eq!(status, 403);
    // Even with the cookie, a form's content type changes nothing.
    let (status, _, _) = console.post(
        "/api/call",
        &format!("Content-Type: text/plain\r\n{cookie}"),
        call,
    );
    assert_eq!(status, 415);
    // The token in the URL does not authorize a change.
    let (status, _, _) = console.post(
        "/api/call?token={token}",
        "Content-Type: application/json\r\n",
        call,
    );
    assert_eq!(status, 401);
    // Nothing reached the server.
    assert!(
        !console.record().contains("tools/call"),
        "{}",
        console.record()
    );

    // The console's own call goes through.
    let (status, _, body) = console.post(
        "/api/call",
        &format!(
            "Origin: http://127.0.0.1:{}\r\nContent-Type: application/json\r\n{cookie}",
            console.port
        ),
        r#"{"name":"t__echo","arguments":{"text":"from the console"}}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("from the console"), "{body}");
    assert_eq!(console.record().matches("\"tools/call\"").count(), 1);
}

#[test]
fn the_listener_is_loopback_only_and_the_pages_are_locked_down() {
    let console = Console::start("page");
    console.settled();
    // Listening on 127.0.0.1 only (/proc/net/tcp: local 0100007F, LISTEN).
    let port = format!("{:04X}", console.port);
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let tcp6 = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    let listening: Vec<&str> = tcp
        .lines()
        .chain(tcp6.lines())
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = *fields.get(1)?;
            (local.ends_with(&format!(":{port}")) && fields.get(3) == Some(&"0A")).then_some(local)
        })
        .collect();
    assert_eq!(listening, [format!("0100007F:{port}")], "{listening:?}");

    // The page: its CSP lets it load only its own script and style, talk
    // only to itself, and be framed by no one.
    let cookie = console.cookie();
    let (status, head, body) = console.get("/", &cookie);
    assert_eq!(status, 200);
    assert!(body.contains("switchboard console"), "{body}");
    for needed in [
        "content-security-policy: default-src 'none'; script-src 'self'",
        "frame-ancestors 'none'",
        "x-content-type-options: nosniff",
        "referrer-policy: no-referrer",
    ] {
        assert!(head.contains(needed), "{needed:?} missing: {head}");
    }
    assert!(!body.contains("<script>"), "an inline script: {body}");

    // What the page shows: every server with its state, the failed one
    // with why; the tools of the one that runs.
    let (status, _, body) = console.get("/api/servers", &cookie);
    assert_eq!(status, 200, "{body}");
    let servers: serde_json::Value = serde_json::from_str(&body).unwrap();
    let state = |name: &str| {
        servers["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {servers}"))
            .clone()
    };
    assert_eq!(state("t")["state"], "ready", "{servers}");
    assert_eq!(state("crashy")["state"], "failed", "{servers}");
    assert!(
        state("crashy")["stderr"]
            .as_str()
            .is_some_and(|d| d.contains("cannot open the database")),
        "{servers}"
    );
    // Where each is configured, to the line (as `switchboard doctor`
    // says it).
    assert!(
        state("t")["source"]
            .as_str()
            .is_some_and(|s| s.ends_with("config.toml:1")),
        "{servers}"
    );
    assert!(
        state("crashy")["source"]
            .as_str()
            .is_some_and(|s| s.ends_with("config.toml:5")),
        "{servers}"
    );
    let (status, _, body) = console.get("/api/tools", &cookie);
    assert_eq!(status, 200, "{body}");
    let tools: serde_json::Value = serde_json::from_str(&body).unwrap();
    let echo = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "t__echo")
        .unwrap_or_else(|| panic!("{tools}"));
    assert_eq!(echo["server"], "t");
    assert_eq!(echo["tool"], "echo");
    assert!(
        echo["inputSchema"]["properties"]["text"].is_object(),
        "{echo}"
    );
}

/// The console in a real Chromium: the page is there while `late` still
/// starts, and shows it ready once it is; the servers page shows `t` ready,
/// `crashy` failed with its stderr, and the project's `proj` waiting for
/// approval, which the page approves and starts; on the tools page a search finds
/// `schema_rich`, its form (a nested object from a `$ref`, an enum, an
/// array) is filled in and the call's result is the arguments the server
/// got; a long call's progress moves and Cancel stops it on the server
/// (`notifications/cancelled` in its record); a server's form question
/// is answered in a modal and the answer reaches it, and a sampling
/// request is shown and answered by the user; a resource is read, a
/// template filled in and read, a prompt got with its argument; the call
/// shown as a command line a shell runs, and run again from the history.
/// A screenshot of each page is written (`CARGO_TARGET_TMPDIR`).
#[test]
fn connections_that_send_nothing_give_their_slots_up() {
    // Another local process opens as many connections as the console
    // serves at once (64) and sends nothing on them.
    let console = Console::start("slots");
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(("127.0.0.1", console.port)).unwrap())
        .collect();
    // The user's page is still answered once the idle ones are dropped,
    // after the header wait (5 s).
    let started = std::time::Instant::now();
    let (status, _, body) = console.get("/api/servers", &console.cookie());
    assert_eq!(status, 200, "{body}");
    // It waited for a slot (the cap holds), and not for ever.
    assert!(
        started.elapsed() > std::time::Duration::from_secs(4)
            && started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // And the idle ones were closed by the console.
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(matches!(first.read(&mut byte), Ok(0) | Err(_)));
}

#[test]
fn in_chromium_the_servers_show_and_a_tool_is_called_through_its_form() {
    let Some(browser) = support::browser::Browser::start(
        "in_chromium_the_servers_show_and_a_tool_is_called_through_its_form",
        1280,
        1150,
    ) else {
        return;
    };
    // `late` starts once the test says so (a file appears).
    let go = std::env::temp_dir().join(format!(
        "switchboard-console-chromium-go-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&go);
    // npm's server-everything too (an implementation no one here wrote).
    let everything = support::interop::cache()
        .join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let everything = if everything.is_file() {
        format!(
            "\n[servers.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\n",
            everything.display()
        )
    } else {
        support::interop::skip(
            "in_chromium_the_servers_show_and_a_tool_is_called_through_its_form (server-everything)",
            "no server-everything in the interop cache",
        );
        String::new()
    };
    let console = Console::start_with(
        "chromium",
        Some(&format!(
            r#"{{"mcpServers": {{"proj": {{"command": "{BIN}", "args": ["__testserver"]}}}}}}"#
        )),
        &format!(
            "\n[servers.late]\ncommand = \"sh\"\nargs = [\"-c\", \"while [ ! -e '{}' ]; do sleep 0.05; done; exec '{BIN}' __testserver --skills\"]\n\n\
             [servers.tampered]\ncommand = \"{BIN}\"\nargs = [\"__testserver\", \"--skills-tamper\", \"digest\", \"--name\", \"tampered\"]\n{everything}",
            go.display()
        ),
    );
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console");
    browser.goto(&format!(
        "http://127.0.0.1:{}/?token={}",
        console.port, console.token
    ));
    // The page is there while a server still starts, and follows it.
    browser.wait_text(r#"tr[data-server="late"] .state"#, "connecting");
    std::fs::write(&go, "").unwrap();
    browser.wait_text(r#"tr[data-server="late"] .state"#, "ready");
    browser.wait_text(r#"tr[data-server="t"] .state"#, "ready");
    browser.wait_text(r#"tr[data-server="crashy"] .state"#, "failed");
    browser.wait_text(r#"tr[data-server="crashy"]"#, "cannot open the database");
    // The project's server waits for approval, showing what it runs.
    browser.wait_text(r#"tr[data-server="proj"] .state"#, "needs-approval");
    browser.wait_text(r#"tr[data-server="proj"] pre.pending"#, "__testserver");
    browser.screenshot(&shots.join("servers.png"));
    // Approved in the page, it starts.
    browser.click(r#"button[data-approve="proj"]"#);
    browser.wait_text(r#"tr[data-server="proj"] .state"#, "ready");

    browser.click("#show-tools");
    // The tools of the server that came up late are listed too.
    browser.find(r#"li[data-tool="late__echo"]"#);
    browser.type_into("#tool-search", "schema_rich");
    browser.click(r#"li[data-tool="t__schema_rich"]"#);
    browser.type_into(r#"input[data-path="target.zone"]"#, "eu-west");
    browser.type_into(r#"input[data-path="target.id"]"#, "7");
    browser.script(
        "const s = document.querySelector('select[data-path=\"mode\"]');\
         s.value = [...s.options].find((o) => o.text === 'thorough').value;\
         s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    browser.type_into(r#"input[data-path="options.retries"]"#, "2");
    browser.click(r#"button[data-add="options.labels"]"#);
    browser.click(r#"button[data-add="options.labels"]"#);
    browser.type_into(r#"input[data-path="options.labels.0"]"#, "a");
    browser.type_into(r#"input[data-path="options.labels.1"]"#, "b");
    browser.click("#call");
    let shown = browser.wait_text("#result pre.text", "eu-west");
    browser.screenshot(&shots.join("tools.png"));
    let got: serde_json::Value = serde_json::from_str(&shown).unwrap_or_else(|_| panic!("{shown}"));
    assert_eq!(
        got,
        json!({
            "target": {"zone": "eu-west", "id": 7},
            "mode": "thorough",
            "options": {"retries": 2, "labels": ["a", "b"]},
        })
    );
    // The server got exactly that call.
    assert_eq!(console.record().matches("\"tools/call\"").count(), 1);
    assert!(console.record().contains("eu-west"), "{}", console.record());
    // In the history, and run again from there.
    browser.wait_text("#history", "t/schema_rich");
    browser.click(r#"button[data-rerun="0"]"#);
    browser.wait_text(r#"#history li[data-history="1"]"#, "t/schema_rich");
    assert_eq!(console.record().matches("\"tools/call\"").count(), 2);
    // The same call as a command line, which a shell runs as it is (its
    // own server, after the console's calls are counted).
    let command = browser.wait_text("#command", "switchboard call t/schema_rich '");
    let mut shell = std::process::Command::new("sh");
    shell
        .arg("-c")
        .arg(command.replacen("switchboard", BIN, 1))
        .current_dir(console.home.work())
        .env("HOME", console.home.home())
        .env("SWITCHBOARD_NO_SESSION", "1");
    for var in support::SCRUBBED {
        shell.env_remove(var);
    }
    let ran = shell.output().unwrap();
    let printed: serde_json::Value = serde_json::from_slice(&ran.stdout)
        .unwrap_or_else(|_| panic!("{command}: {}", String::from_utf8_lossy(&ran.stderr)));
    assert_eq!(printed, got, "{command}");

    // A long call: its progress moves, and Cancel stops it on the server.
    browser.script(
        "const s = document.getElementById('tool-search'); s.value = '';\
         s.dispatchEvent(new Event('input'));",
        json!([]),
    );
    browser.type_into("#tool-search", "progress");
    browser.click(r#"li[data-tool="t__progress"]"#);
    browser.type_into(r#"input[data-path="steps"]"#, "1000");
    browser.type_into(r#"input[data-path="interval_ms"]"#, "50");
    browser.click("#call");
    browser.wait_text("#progress-text", "3/1000");
    browser.click("#cancel");
    browser.wait_text("#result", "cancelled");
    let cancelled_by = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !console.record().contains("notifications/cancelled") {
        assert!(
            std::time::Instant::now() < cancelled_by,
            "the server was never told: {}",
            console.record()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // A server's question (a form, with its defaults) in a modal; the
    // answer reaches the server, which returns it.
    browser.retype("#tool-search", "ask");
    browser.click(r#"li[data-tool="t__ask"]"#);
    browser.click("#call");
    browser.wait_text(".modal[data-ask]", "Please tell us about yourself");
    browser.retype(r#".modal input[data-path="name"]"#, "Ada Lovelace");
    browser.retype(r#".modal input[data-path="age"]"#, "36");
    browser.screenshot(&shots.join("ask.png"));
    browser.click(r#".modal button[data-answer="accept"]"#);
    let answered = browser.wait_text("#result pre.text", "Ada Lovelace");
    assert!(answered.contains("accept"), "{answered}");
    assert!(answered.contains("36"), "{answered}");
    assert!(answered.contains("green"), "the default kept: {answered}");
    // Declined, the server hears that.
    browser.click("#call");
    browser.click(r#".modal button[data-answer="decline"]"#);
    browser.wait_text("#result pre.text", "decline");

    // A sampling request: the server's message shown, the user's answer
    // sent back as the model's.
    browser.retype("#tool-search", "sample");
    browser.click(r#"li[data-tool="t__sample"]"#);
    browser.type_into(r#"input[data-path="prompt"]"#, "Name a colour");
    browser.click("#call");
    browser.wait_text(".modal[data-ask]", "Name a colour");
    browser.type_into("#sampling-answer", "ultramarine, from a person");
    browser.click(r#".modal button[data-answer="accept"]"#);
    browser.wait_text("#result pre.text", "ultramarine, from a person");

    // structuredContent checked against the tool's outputSchema: shown
    // as matching, or the call's error says where it does not.
    browser.retype("#tool-search", "weather");
    browser.click(r#"li[data-tool="t__weather"]"#);
    browser.click("#call");
    browser.wait_text("#schema-checked", "matches the tool's outputSchema");
    browser.click(r#"li[data-tool="t__bad_weather"]"#);
    browser.click("#call");
    browser.wait_text("#result", "outputSchema");

    // A tool that runs as a task: seen in the Tasks tab while it runs,
    // cancelled from there; the call ends.
    browser.retype("#tool-search", "must_task");
    browser.click(r#"li[data-tool="t__must_task"]"#);
    browser.type_into(r#"input[data-path="ms"]"#, "60000");
    browser.click("#call");
    browser.click("#show-tasks");
    browser.wait_text(r#"tr[data-task^="t/"] .state"#, "working");
    browser.screenshot(&shots.join("tasks.png"));
    browser.click(r#"button[data-cancel-task^="t/"]"#);
    browser.wait_text(r#"tr[data-task^="t/"] .state"#, "cancelled");
    browser.click("#show-tools");
    browser.wait_text("#history", "t/must_task");

    if !everything.is_empty() {
        // server-everything: an image rendered; a long operation's
        // progress; its sampling request answered in the page.
        browser.retype("#tool-search", "everything");
        browser.click(r#"li[data-tool="everything__get-tiny-image"]"#);
        browser.click("#call");
        browser.find("#result img.content");
        browser.click(r#"li[data-tool="everything__trigger-long-running-operation"]"#);
        browser.retype(r#"input[data-path="duration"]"#, "2");
        browser.retype(r#"input[data-path="steps"]"#, "4");
        browser.click("#call");
        browser.wait_text("#progress-text", "/4");
        browser.wait_text("#result pre.text", "Long running operation completed");
        browser.click(r#"li[data-tool="everything__trigger-sampling-request"]"#);
        browser.type_into(r#"input[data-path="prompt"]"#, "Say a word");
        browser.click("#call");
        browser.wait_text(".modal[data-ask]", "Say a word");
        browser.type_into("#sampling-answer", "heliotrope");
        browser.click(r#".modal button[data-answer="accept"]"#);
        browser.wait_text("#result", "heliotrope");
    }

    // Resources: one read; a template filled in (RFC 6570) and read.
    browser.click("#show-resources");
    browser.click(r#"li[data-uri="test://static/hello"]"#);
    browser.wait_text("#read-result", "Hello, world!");
    // Nothing the server leaves out is shown as "null".
    let detail = browser.text("#resource-detail");
    assert!(
        !detail.lines().any(|line| line.trim() == "null"),
        "{detail}"
    );
    // Subscribed: its updates come to the Activity tab.
    let hello_server = detail
        .lines()
        .find_map(|line| line.strip_suffix(" · test://static/hello"))
        .unwrap_or_else(|| panic!("{detail}"))
        .to_owned();
    browser.click("#subscribe");
    browser.wait_text("#subscribe", "Unsubscribe");
    browser.click(r#"li[data-template="test://items/{id}"]"#);
    browser.type_into(r#"#template-form input[data-path="id"]"#, "42");
    browser.wait_text("#template-uri", "test://items/42");
    browser.click("#read");
    browser.wait_text("#read-result", "item 42");
    browser.screenshot(&shots.join("resources.png"));
    let (status, _, body) = console.post(
        "/api/call",
        &format!("Content-Type: application/json\r\n{}", console.cookie()),
        &format!(
            r#"{{"name":"{hello_server}__touch","arguments":{{"uri":"test://static/hello"}}}}"#
        ),
    );
    assert_eq!(status, 200, "{body}");
    browser.click("#show-activity");
    browser.wait_text(
        r#"#activity-list li[data-kind="resource-updated"]"#,
        "test://static/hello",
    );
    browser.wait_text(r#"#activity-list li[data-kind="state"]"#, "ready");
    browser.screenshot(&shots.join("activity.png"));
    // Prompts: an argument filled in, the messages shown.
    browser.click("#show-prompts");
    browser.click(r#"li[data-prompt="t/greeting"]"#);
    // The server's completions of the argument, offered as it is typed.
    browser.type_into(r#"#prompt-form input[data-path="name"]"#, "a");
    let offered = browser.script(
        "const list = document.querySelector('datalist[data-completes=\"p-name\"]');\
         return list && list.dataset.asked === 'a' ? [...list.options].map((o) => o.value) : null;",
        json!([]),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut offered = offered;
    while offered.is_null() {
        assert!(
            std::time::Instant::now() < deadline,
            "no completions offered"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        offered = browser.script(
            "const list = document.querySelector('datalist[data-completes=\"p-name\"]');\
             return list && list.dataset.asked === 'a' ? [...list.options].map((o) => o.value) : null;",
            json!([]),
        );
    }
    assert_eq!(offered, json!(["alice"]));
    browser.retype(r#"#prompt-form input[data-path="name"]"#, "Ada");
    browser.click("#get");
    browser.wait_text("#prompt-result", "Hello, Ada!");
    browser.screenshot(&shots.join("prompts.png"));
    // Skills: listed, loaded and checked, a file of one read.
    browser.click("#show-skills");
    browser.click(r#"li[data-skill="late/pdf-processing"]"#);
    browser.wait_text("#skill-verified", "matches what its server lists");
    browser.wait_text("#skill-text", "references/FORMS.md");
    browser.click(r#"button[data-skill-file="skill://pdf-processing/references/FORMS.md"]"#);
    browser.wait_text("#skill-file", "flatten");
    browser.screenshot(&shots.join("skills.png"));
    // A server whose SKILL.md is not what it lists: refused, and said.
    browser.click(r#"li[data-skill="tampered/pdf-processing"]"#);
    let refused = browser.wait_text("#skill-detail", "refused");
    assert!(refused.contains("the listing says sha256:"), "{refused}");
    assert!(
        !refused.contains("matches what its server lists"),
        "{refused}"
    );

    // A server stopped for this console (its tools leave the list), then
    // started again.
    browser.click("#show-servers");
    browser.click(r#"button[data-server-action="late"][data-action="stop"]"#);
    browser.wait_text(r#"tr[data-server="late"] .state"#, "disabled");
    assert!(
        !console
            .get("/api/tools", &console.cookie())
            .2
            .contains("late__echo")
    );
    browser.click(r#"button[data-server-action="late"][data-action="start"]"#);
    browser.wait_text(r#"tr[data-server="late"] .state"#, "ready");
    assert!(
        console
            .get("/api/tools", &console.cookie())
            .2
            .contains("late__echo")
    );
    let _ = std::fs::remove_file(&go);
}

#[test]
fn in_chromium_apps_render_on_their_own_origin_and_keep_to_their_rules() {
    let test = "in_chromium_apps_render_on_their_own_origin_and_keep_to_their_rules";
    // The official example app (its view built with the official App
    // SDK), when npm is there.
    let vanilla = support::servers::entry(test, "@modelcontextprotocol/server-basic-vanillajs");
    let Some(browser) = support::browser::Browser::start(test, 1280, 1300) else {
        return;
    };
    let vanilla_config = vanilla
        .as_ref()
        .map(|entry| {
            format!(
                "\n[servers.vanilla]\ncommand = \"node\"\nargs = [\"{}\", \"--stdio\"]\n",
                entry.display()
            )
        })
        .unwrap_or_default();
    let console = Console::start_with(
        "apps",
        None,
        &format!(
            "\n[servers.apps]\ncommand = \"{BIN}\"\nargs = [\"__testserver\", \"--probe-app\"]\n\n\
             [servers.weather]\ncommand = \"{BIN}\"\nargs = [\"__testserver\", \"--apps\"]\n{vanilla_config}"
        ),
    );
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console");
    browser.goto(&format!(
        "http://127.0.0.1:{}/?token={}",
        console.port, console.token
    ));
    browser.wait_text(r#"tr[data-server="apps"] .state"#, "ready");
    browser.wait_text(r#"tr[data-server="weather"] .state"#, "ready");
    if vanilla.is_some() {
        browser.wait_text(r#"tr[data-server="vanilla"] .state"#, "ready");
    }
    browser.click("#show-tools");

    if vanilla.is_some() {
        // Its tool called from the form: the view renders the result.
        browser.click(r#"li[data-tool="vanilla__get-time"]"#);
        browser.click("#call");
        browser.find(r#"iframe[data-app="vanilla__get-time"][data-initialized="true"]"#);
        browser.enter_frame(r#"iframe[data-app="vanilla__get-time"]"#);
        let first = browser.wait_text("#server-time", "T");
        assert!(!first.contains("Loading"), "{first}");
        // Its button calls the tool through the bridge; the view shows
        // the new time.
        std::thread::sleep(std::time::Duration::from_millis(5));
        browser.click("#get-time-btn");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let now = browser.text("#server-time");
            if now != first && now.contains('T') {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the time never changed: {now}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        browser.leave_frame();
        browser.wait_text("#app-log", "called get-time");
        browser.screenshot(&shots.join("app.png"));
        // At a phone's size, dark.
        browser.script(
            "const s = document.getElementById('app-size'); s.value = 'phone'; s.dispatchEvent(new Event('change'));\
             const t = document.getElementById('app-theme'); t.value = 'dark'; t.dispatchEvent(new Event('change'));",
            json!([]),
        );
        browser.screenshot(&shots.join("app-phone-dark.png"));
    }

    // The probe: an app that tries what it must not.
    let beacon = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let beacon_url = format!("http://{}/beacon", beacon.local_addr().unwrap());
    browser.retype("#tool-search", "probe");
    browser.click(r#"li[data-tool="apps__probe"]"#);
    browser.type_into(r#"input[data-path="beacon"]"#, &beacon_url);
    browser.type_into(r#"input[data-path="download"]"#, "../../etc/evil name.txt");
    for (i, name) in ["probe_refresh", "model_only", "dashboard_refresh"]
        .iter()
        .enumerate()
    {
        browser.click(r#"button[data-add="call"]"#);
        browser.type_into(&format!(r#"input[data-path="call.{i}"]"#), name);
    }
    browser.click("#call");
    // A file the view asks to save: named by the console, not the view
    // (no way out of the downloads folder), and only once the user says.
    browser.wait_text(".modal[data-app-confirm]", "wants to save a file");
    let name = browser.text(".modal[data-app-confirm] [data-download]");
    assert_eq!(name, "evil_name.txt");
    browser.click(r#".modal[data-app-confirm] button[data-confirm="yes"]"#);
    let log = browser.wait_text("#app-log", "probe done");
    assert!(log.contains("download: ok"), "{log}");
    let saved = browser.downloads().join("evil_name.txt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !saved.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing saved in {}: {:?}",
            browser.downloads().display(),
            std::fs::read_dir(browser.downloads())
                .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        "what the probe saved"
    );
    // The host's look, given to the view.
    assert!(
        log.contains("styles: 12 variables, text light-dark("),
        "{log}"
    );
    // The page that frames it is out of its reach.
    assert!(log.contains("top: blocked SecurityError"), "{log}");
    // An origin its resource does not declare: blocked, and nothing left.
    assert!(log.contains("beacon: blocked"), "{log}");
    beacon.set_nonblocking(true).unwrap();
    assert_eq!(
        beacon.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the beacon was reached"
    );
    // Its own server's app-only tool: called. A model-only tool, and
    // another server's app-only tool: refused.
    assert!(log.contains("call probe_refresh: ok"), "{log}");
    assert!(log.contains("call model_only: refused"), "{log}");
    assert!(log.contains("for the model only"), "{log}");
    assert!(log.contains("call dashboard_refresh: refused"), "{log}");
    assert!(log.contains("not a tool of server apps"), "{log}");
    browser.screenshot(&shots.join("app-probe.png"));

    // The protocol view lists what went to each server and back.
    browser.click("#show-protocol");
    browser.wait_text("#protocol-table", "tools/call");
    browser.retype("#protocol-filter", "probe_refresh");
    let rows = browser.wait_text("#protocol-table tbody", "apps");
    assert!(rows.contains("tools/call"), "{rows}");
    browser.retype("#protocol-filter", "");
    browser.wait_text("#protocol-table", "initialize");
    browser.screenshot(&shots.join("protocol.png"));
    let export = console.get("/api/protocol/export", &console.cookie()).2;
    assert!(
        export.contains("\"method\":\"tools/call\""),
        "{export:.400}"
    );
    if vanilla.is_some() {
        let calls = export
            .lines()
            .filter(|line| {
                line.contains("\"server\":\"vanilla\"")
                    && line.contains("\"method\":\"tools/call\"")
            })
            .count();
        assert_eq!(calls, 2, "the form's call and the view's");
    }
}

#[test]
fn in_chromium_a_login_finishes_in_the_browser_and_the_server_comes_up() {
    let test = "in_chromium_a_login_finishes_in_the_browser_and_the_server_comes_up";
    let Some(browser) = support::browser::Browser::start(test, 1280, 900) else {
        return;
    };
    // An HTTP server behind the testkit's authorization server (which
    // approves at once).
    let server = support::HttpServer::start(&["--auth"]);
    let console = Console::start_with(
        "login",
        None,
        // And one whose port nothing listens on (port 9 of loopback).
        &format!(
            "\n[servers.remote]\nurl = \"{}/mcp\"\n\n[servers.down]\nurl = \"http://127.0.0.1:9/mcp\"\n",
            server.1
        ),
    );
    browser.goto(&format!(
        "http://127.0.0.1:{}/?token={}",
        console.port, console.token
    ));
    browser.wait_text(r#"tr[data-server="remote"] .state"#, "needs-auth");
    // The doctor: where each server stands, step by step.
    browser.click(r#"button[data-diagnose="remote"]"#);
    browser.wait_text(
        r#".modal[data-doctor="remote"] li[data-step="TCP"].passed"#,
        "connected",
    );
    browser.wait_text(
        r#".modal[data-doctor="remote"] li[data-step="HTTP"]"#,
        "answered 401",
    );
    browser.wait_text(
        r#".modal[data-doctor="remote"] li[data-step="authorization"]"#,
        server.issuer(),
    );
    browser.click(r#".modal[data-doctor="remote"] button"#);
    browser.wait_text(r#"tr[data-server="down"] .state"#, "failed");
    browser.click(r#"button[data-diagnose="down"]"#);
    browser.wait_text(
        r#".modal[data-doctor="down"] li[data-step="DNS"].passed"#,
        "127.0.0.1",
    );
    let tcp = browser.wait_text(
        r#".modal[data-doctor="down"] li[data-step="TCP"].failed"#,
        "127.0.0.1:9",
    );
    assert!(tcp.contains("is the server running"), "{tcp}");
    browser
        .screenshot(&std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console/doctor.png"));
    browser.click(r#".modal[data-doctor="down"] button"#);
    browser.click(r#"button[data-login="remote"]"#);
    // The consent page's host, as the browser will open it.
    let issuer_host = server
        .issuer()
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    browser.wait_text(r#".modal[data-login-page="remote"] .host"#, &issuer_host);
    browser
        .screenshot(&std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console/login.png"));
    browser.click(r#"button[data-open-login="remote"]"#);
    // The browser went there and came back; the server starts with the
    // new credentials.
    browser.wait_text(r#"tr[data-server="remote"] .state"#, "ready");
    browser.click("#show-tools");
    browser.find(r#"li[data-tool="remote__echo"]"#);
    // The tokens are in the store the CLI uses.
    let credentials =
        std::fs::read_to_string(console.home.root.join("credentials.json")).unwrap_or_default();
    assert!(credentials.contains("access_token"), "{credentials}");
    // Logged out: the tokens are gone, and the server wants a login again.
    browser.click("#show-servers");
    browser.click(r#"button[data-logout="remote"]"#);
    browser.wait_text(r#"tr[data-server="remote"] .state"#, "needs-auth");
    let credentials =
        std::fs::read_to_string(console.home.root.join("credentials.json")).unwrap_or_default();
    assert!(!credentials.contains("access_token"), "{credentials}");
}

#[test]
fn in_chromium_a_tool_the_policy_asks_about_is_asked_in_the_page() {
    let test = "in_chromium_a_tool_the_policy_asks_about_is_asked_in_the_page";
    let Some(browser) = support::browser::Browser::start(test, 1280, 900) else {
        return;
    };
    let console = Console::start_with("policy", None, "\n[policy.tools]\nask = [\"t/echo\"]\n");
    browser.goto(&format!(
        "http://127.0.0.1:{}/?token={}",
        console.port, console.token
    ));
    browser.wait_text(r#"tr[data-server="t"] .state"#, "ready");
    browser.click("#show-tools");
    browser.click(r#"li[data-tool="t__echo"]"#);
    browser.type_into(r#"input[data-path="text"]"#, "asked first");
    browser.click("#call");
    // The question, with the rule and the arguments; nothing ran yet.
    browser.wait_text(".modal[data-ask]", "The tool policy asks first");
    browser.wait_text(".modal[data-ask] pre", "asked first");
    assert!(
        !console.record().contains("tools/call"),
        "{}",
        console.record()
    );
    browser.click(r#".modal button[data-answer="once"]"#);
    browser.wait_text("#result pre.text", "asked first");
    assert_eq!(console.record().matches("\"tools/call\"").count(), 1);
    // Refused: the call does not reach the server, and says why.
    browser.click("#call");
    browser.click(r#".modal button[data-answer="decline"]"#);
    browser.wait_text("#result", "did not allow `t/echo`");
    assert_eq!(console.record().matches("\"tools/call\"").count(), 1);

    // Roots: none until the page names some; then the server gets those.
    browser.retype("#tool-search", "roots");
    browser.click(r#"li[data-tool="t__roots"]"#);
    browser.click("#call");
    browser.wait_text("#result pre.text", "[]");
    browser.click("#show-servers");
    browser.click(r#"button[data-roots="t"]"#);
    browser.type_into("#roots-text", "file:///tmp/project-a\nnot a root");
    browser.click(r#"button[data-save-roots="t"]"#);
    browser.wait_text(r#".modal[data-roots-of="t"] .warning"#, "not a file:// URI");
    browser.retype(
        "#roots-text",
        "file:///tmp/project-a\nfile:///tmp/project-b",
    );
    browser.click(r#"button[data-save-roots="t"]"#);
    browser.click("#show-tools");
    browser.click(r#"li[data-tool="t__roots"]"#);
    browser.click("#call");
    let roots = browser.wait_text("#result pre.text", "project-a");
    assert!(roots.contains("file:///tmp/project-b"), "{roots}");
}

/// Waits until `/api/servers` says `test` of the console's servers.
fn servers_until(console: &Console, what: &str, test: impl Fn(&serde_json::Value) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (_, _, body) = console.get("/api/servers", &console.cookie());
        let servers: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        if test(&servers["servers"]) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "never {what}: {body}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn in_chromium_servers_are_added_disabled_enabled_and_removed_in_the_files() {
    let test = "in_chromium_servers_are_added_disabled_enabled_and_removed_in_the_files";
    let Some(browser) = support::browser::Browser::start(test, 1280, 900) else {
        return;
    };
    let console = Console::start("config");
    let local = console.home.work().join("switchboard.local.toml");
    browser.goto(&format!(
        "http://127.0.0.1:{}/?token={}",
        console.port, console.token
    ));
    browser.wait_text(r#"tr[data-server="t"] .state"#, "ready");

    // Added through the form: written to this project's local file, and
    // running at once.
    browser.click("#add-box summary");
    browser.type_into("#add-name", "added");
    browser.type_into("#add-command", BIN);
    browser.type_into("#add-args", "__testserver\n--name\nadded");
    browser.type_into("#add-env", "GREETING=hello");
    browser.click("#add-form button[type=\"submit\"]");
    browser.wait_text("#config-said", "added added to");
    browser.wait_text(r#"tr[data-server="added"] .state"#, "ready");
    let written = std::fs::read_to_string(&local).unwrap();
    assert!(written.contains("[servers.added]"), "{written}");
    assert!(written.contains("GREETING = \"hello\""), "{written}");
    browser.click("#show-tools");
    browser.wait_text(r#"li[data-tool="added__echo"]"#, "echo");
    browser.click("#show-servers");

    // Disabled in the file: stopped, and the file says so; enabled again.
    browser.click(r#"button[data-config="disable"][data-config-server="added"]"#);
    browser.wait_text(r#"tr[data-server="added"] .state"#, "disabled");
    assert!(
        std::fs::read_to_string(&local)
            .unwrap()
            .contains("enabled = false")
    );
    browser.wait_text("#config-said", "disabled added in");
    browser.click(r#"button[data-config="enable"][data-config-server="added"]"#);
    browser.wait_text(r#"tr[data-server="added"] .state"#, "ready");
    assert!(
        !std::fs::read_to_string(&local)
            .unwrap()
            .contains("enabled = false")
    );

    // Removed, after the page's own question: gone from the file and the
    // page. The user's file was not touched.
    let user = std::fs::read_to_string(console.home.config()).unwrap();
    browser.click(r#"button[data-config="remove"][data-config-server="added"]"#);
    browser.click(r#".modal button[data-confirm-yes="Remove"]"#);
    // The page follows: the row goes.
    assert_eq!(
        browser.script(
            "return new Promise((done) => { const t0 = Date.now(); (function look() {              if (!document.querySelector('tr[data-server=\"added\"]')) done('gone');              else if (Date.now() - t0 > 20000) done('still there');              else setTimeout(look, 50); })(); });",
            json!([])
        ),
        "gone"
    );
    assert!(
        !std::fs::read_to_string(&local)
            .unwrap()
            .contains("[servers.added]")
    );
    assert_eq!(
        std::fs::read_to_string(console.home.config()).unwrap(),
        user
    );
    browser.wait_text("#config-said", "removed added from");
    browser.click("#add-box summary");
    browser.screenshot(
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("console")
            .join("add.png"),
    );
}

#[test]
fn what_the_page_adds_is_checked_as_the_cli_checks_it() {
    let console = Console::start("add-checks");
    console.settled();
    let cookie = console.cookie();
    let headers = format!("{cookie}Content-Type: application/json\r\n");
    // A name `call` could not tell from a tool, a URL of another scheme,
    // an environment variable for a remote server: refused, nothing
    // written.
    for (body, says) in [
        (
            json!({"name": "a/b", "command": ["true"]}),
            "cannot be a server name",
        ),
        (
            json!({"name": "remote", "url": "ftp://example.com/mcp"}),
            "is not a scheme",
        ),
        (
            json!({"name": "remote", "url": "https://example.com/mcp", "env": ["A=1"]}),
            "--env is for a local server",
        ),
        (json!({"name": "nothing"}), "no server command"),
        (
            json!({"name": "x", "command": ["true"], "scope": "everywhere"}),
            "no scope",
        ),
    ] {
        let (status, _, answer) = console.post("/api/add", &headers, &body.to_string());
        assert!(status == 422 || status == 400, "{status} {answer}");
        assert!(answer.contains(says), "{body}: {answer}");
    }
    assert!(!console.home.work().join("switchboard.local.toml").exists());
    // Without the cookie, from another site: refused before anything.
    let (status, _, _) = console.post(
        "/api/add",
        "Content-Type: application/json\r\n",
        &json!({"name": "sneaky", "command": ["true"]}).to_string(),
    );
    assert_eq!(status, 401);
    let (status, _, _) = console.post(
        "/api/config",
        &format!("{headers}Origin: https://evil.example\r\n"),
        &json!({"name": "t", "action": "disable"}).to_string(),
    );
    assert_eq!(status, 403);
    assert!(
        !std::fs::read_to_string(console.home.config())
            .unwrap()
            .contains("enabled = false")
    );
    // Added to the project's shared file by the person at the page: run
    // as typed, like `switchboard add -s project`.
    let (status, _, answer) = console.post(
        "/api/add",
        &headers,
        &json!({
            "name": "shared", "scope": "project",
            "command": [BIN, "__testserver", "--name", "shared"],
        })
        .to_string(),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("switchboard.toml"), "{answer}");
    servers_until(&console, "with `shared` ready", |servers| {
        servers.as_array().is_some_and(|s| {
            s.iter()
                .any(|s| s["name"] == "shared" && s["state"] == "ready")
        })
    });
}

#[test]
fn in_chromium_the_audit_tab_shows_the_pages_calls_and_a_broken_chain() {
    let test = "in_chromium_the_audit_tab_shows_the_pages_calls_and_a_broken_chain";
    let Some(browser) = support::browser::Browser::start(test, 1280, 900) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!(
        "switchboard-console-audit-log-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("audit.jsonl");
    let console = Console::start_args("audit", None, "", &["--audit", log.to_str().unwrap()]);
    console.settled();
    browser.goto(&format!(
        "http://127.0.0.1:{}/?token={}",
        console.port, console.token
    ));
    // A call made in the page, and a read through the API.
    browser.wait_text(r#"tr[data-server="t"] .state"#, "ready");
    browser.click("#show-tools");
    browser.click(r#"li[data-tool="t__echo"]"#);
    browser.type_into(r#"input[data-path="text"]"#, "for the record");
    browser.click("#call");
    browser.wait_text("#result pre.text", "for the record");
    let cookie = console.cookie();
    let (status, _, answer) = console.post(
        "/api/read",
        &format!("{cookie}Content-Type: application/json\r\n"),
        &json!({"server": "t", "uri": "test://static/hello"}).to_string(),
    );
    assert_eq!(status, 200, "{answer}");
    browser.click("#show-audit");
    let verdict = browser.wait_text("#audit-verdict", "intact");
    assert!(verdict.contains("2 records"), "{verdict}");
    let rows = browser.wait_text("#audit-table", "tool_call");
    assert!(
        rows.contains("t__echo") && rows.contains("resource_read"),
        "{rows}"
    );
    // The CLI's check agrees, while the console still writes the log.
    let verified = console
        .home
        .command()
        .args(["audit", "verify", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(verified.status.success(), "{verified:?}");
    browser.screenshot(
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("console")
            .join("audit.png"),
    );
    // A record changed behind the console's back: the view says where.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("t__echo"), "{text}");
    std::fs::write(&log, text.replace("t__echo", "t__gone")).unwrap();
    browser.click("#audit-verify");
    let verdict = browser.wait_text("#audit-verdict", "does not verify");
    assert!(verdict.contains("line"), "{verdict}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `switchboard` in `home`, its sessions below `sessions`.
fn session_command(home: &Home, sessions: &std::path::Path) -> std::process::Command {
    let mut command = home.command();
    command
        .env("SWITCHBOARD_SESSION_DIR", sessions)
        .env_remove("SWITCHBOARD_NO_SESSION");
    command
}

/// `switchboard ARGS` in `home`, through its session.
fn in_session(home: &Home, sessions: &std::path::Path, args: &[&str]) -> std::process::Output {
    session_command(home, sessions).args(args).output().unwrap()
}

/// `switchboard up` in `home`; where its sessions are.
fn up(home: &Home) -> std::path::PathBuf {
    let sessions = home.root.join("sessions");
    let up = in_session(home, &sessions, &["up"]);
    assert!(up.status.success(), "{up:?}");
    sessions
}

/// `switchboard console` while the project's background session runs: the
/// session's console (started from `home`, the session's directories
/// below `sessions`).
fn session_console(
    home: &Home,
    sessions: &std::path::Path,
) -> (Child, BufReader<std::process::ChildStdout>, u16, String) {
    let mut child = session_command(home, sessions)
        .args(["console", "--no-open"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    stdout.read_line(&mut first).unwrap();
    stdout.read_line(&mut second).unwrap();
    assert!(second.contains("background session"), "{first}{second}");
    let url = first
        .trim()
        .strip_prefix("switchboard console: http://127.0.0.1:")
        .unwrap_or_else(|| panic!("no address: {first:?}"))
        .to_owned();
    let (port, token) = url.split_once("/?token=").unwrap();
    (child, stdout, port.parse().unwrap(), token.to_owned())
}

#[test]
fn the_sessions_console_shows_what_its_hosts_sent_and_what_it_forwarded() {
    let home = Home::new(
        "console-session",
        &format!(
            "[servers.t]\ncommand = \"sh\"\nargs = [\"-c\", \"echo $$ >> \\\"$0\\\"; exec '{BIN}' __testserver\", \"SPAWNS\"]\n"
        ),
    );
    // The test server's starts, one pid a line.
    let spawns = home.root.join("spawns");
    let config = std::fs::read_to_string(home.config()).unwrap();
    std::fs::write(
        home.config(),
        config.replace("SPAWNS", spawns.to_str().unwrap()),
    )
    .unwrap();
    let sessions = up(&home);
    let session = |args: &[&str]| in_session(&home, &sessions, args);
    let (mut child, _stdout, port, token) = session_console(&home, &sessions);
    let console = Attached { port, token };
    // A command served by the session, as a host of it.
    let call = session(&["call", "t/echo", r#"{"text":"sent by a command"}"#]);
    assert!(call.status.success(), "{call:?}");
    // The console's servers are the session's: nothing started twice.
    let servers = console.get("/api/servers");
    assert!(
        servers.contains("\"gateway\":\"the background session"),
        "{servers}"
    );
    assert!(servers.contains("\"state\":\"ready\""), "{servers}");
    // A call from the page, as one more host of the session.
    let (status, answer) = console.post(
        "/api/call",
        &json!({"name": "t__echo", "arguments": {"text": "sent from the page"}}).to_string(),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("sent from the page"), "{answer}");
    assert_eq!(
        std::fs::read_to_string(&spawns).unwrap().lines().count(),
        1,
        "the console started a server of its own"
    );
    // What each host sent the session, and what the session forwarded.
    let record: serde_json::Value = serde_json::from_str(&console.get("/api/protocol")).unwrap();
    let entries = record["entries"].as_array().unwrap();
    let find = |host: bool, text: &str, direction: &str| {
        entries.iter().any(|e| {
            e["host"] == host
                && e["direction"] == direction
                && e["method"] == "tools/call"
                && e["text"].as_str().unwrap().contains(text)
        })
    };
    assert!(find(true, "sent by a command", "received"), "{record}");
    assert!(find(false, "sent by a command", "sent"), "{record}");
    assert!(find(true, "sent from the page", "received"), "{record}");
    assert!(find(false, "sent from the page", "sent"), "{record}");
    let hosts: std::collections::BTreeSet<&str> = entries
        .iter()
        .filter(|e| e["host"] == true)
        .map(|e| e["server"].as_str().unwrap())
        .collect();
    assert!(
        hosts.contains("console-1") && hosts.iter().any(|h| h.starts_with("session-")),
        "{hosts:?}"
    );
    // Roots are the hosts' in the session: the page cannot set them.
    let (status, _) = console.post("/api/roots", r#"{"server":"t","roots":[]}"#);
    assert_eq!(status, 409);
    // Closing the console closes its port; the session runs on.
    let _ = std::process::Command::new("kill")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the console still listens"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let again = session(&["call", "t/echo", r#"{"text":"still here"}"#]);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(std::fs::read_to_string(&spawns).unwrap().lines().count(), 1);
    let down = session(&["down"]);
    assert!(down.status.success(), "{down:?}");
}

/// A console reached with its cookie (no `Console` process of the test's
/// own: the session serves it).
struct Attached {
    port: u16,
    token: String,
}

impl Attached {
    fn send(&self, request: String) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
        (status, body.to_owned())
    }

    fn get(&self, path: &str) -> String {
        self.send(format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: switchboard_console_{port}={token}\r\nConnection: close\r\n\r\n",
            port = self.port,
            token = self.token
        ))
        .1
    }

    fn post(&self, path: &str, body: &str) -> (u16, String) {
        self.send(format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: switchboard_console_{port}={token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len(),
            port = self.port,
            token = self.token
        ))
    }
}

#[test]
fn another_user_cannot_open_the_sessions_console() {
    if !support::intruder::can_switch_user() {
        eprintln!("skipped: needs root, to connect as another user");
        return;
    }
    let home = Home::new(
        "console-session-peer",
        &format!("[servers.t]\ncommand = \"{BIN}\"\nargs = [\"__testserver\"]\n"),
    );
    let sessions = up(&home);
    let session = |args: &[&str]| in_session(&home, &sessions, args);
    let dir = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let socket = dir.join("console.sock");
    // Opened up on purpose: only the session's own check stands between
    // the other user and a console that could call every tool.
    use std::os::unix::fs::PermissionsExt as _;
    for path in [&sessions, &dir] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let said = support::intruder::send_as_nobody(&socket, r#"{"port": 0}"#);
    assert!(
        said.contains("answer:b''") || said.contains("answer:reset"),
        "no address for another user: {said}"
    );
    let log = std::fs::read_to_string(dir.join("session.log")).unwrap();
    assert!(log.contains("refused a connection from uid 65534"), "{log}");
    let down = session(&["down"]);
    assert!(down.status.success(), "{down:?}");
}

#[test]
fn in_chromium_the_sessions_console_answers_a_servers_question_and_shows_its_hosts() {
    let test = "in_chromium_the_sessions_console_answers_a_servers_question_and_shows_its_hosts";
    let Some(browser) = support::browser::Browser::start(test, 1280, 900) else {
        return;
    };
    let home = Home::new(
        "console-session-page",
        &format!("[servers.t]\ncommand = \"{BIN}\"\nargs = [\"__testserver\"]\n"),
    );
    let sessions = up(&home);
    let session = |args: &[&str]| in_session(&home, &sessions, args);
    let (mut child, _stdout, port, token) = session_console(&home, &sessions);
    browser.goto(&format!("http://127.0.0.1:{port}/?token={token}"));
    browser.wait_text(r#"tr[data-server="t"] .state"#, "ready");
    browser.wait_text("#session-note", "background session");
    // A server's question during the page's call comes to the page,
    // through the session (the page is one of its hosts).
    browser.click("#show-tools");
    browser.click(r#"li[data-tool="t__ask"]"#);
    browser.click("#call");
    browser.wait_text(".modal[data-ask]", "Please tell us about yourself");
    browser.retype(r#".modal input[data-path="name"]"#, "Grace Hopper");
    browser.click(r#".modal button[data-answer="accept"]"#);
    browser.wait_text("#result pre.text", "Grace Hopper");
    // A command's call, in the protocol view beside what was forwarded.
    let call = session(&["call", "t/echo", r#"{"text":"from the terminal"}"#]);
    assert!(call.status.success(), "{call:?}");
    browser.click("#show-protocol");
    browser.retype("#protocol-filter", "from the terminal");
    browser.wait_text("#protocol-table", "host session-");
    // Both sides of it: what the command sent the session (a host row)
    // and what the session sent `t`.
    let sides = browser.script(
        "return [...document.querySelectorAll('#protocol-table tbody tr')] \
         .filter((row) => row.cells[4].textContent === 'tools/call') \
         .map((row) => `${row.classList.contains('host') ? 'host' : row.cells[1].textContent} ${row.cells[2].textContent}`);",
        json!([]),
    );
    let sides: Vec<String> = serde_json::from_value(sides).unwrap();
    assert!(sides.contains(&"host ←".to_owned()), "{sides:?}");
    assert!(sides.contains(&"t →".to_owned()), "{sides:?}");
    browser.retype("#protocol-filter", "");
    browser.screenshot(
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("console")
            .join("session.png"),
    );
    let _ = std::process::Command::new("kill")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
    let down = session(&["down"]);
    assert!(down.status.success(), "{down:?}");
}

#[test]
fn serve_with_a_console_shows_what_its_host_sent_and_what_it_forwarded() {
    let home = Home::new(
        "console-serve",
        &format!(
            "[servers.t]\ncommand = \"{BIN}\"\nargs = [\"__testserver\"]\n\n\
             [servers.u]\ncommand = \"{BIN}\"\nargs = [\"__testserver\", \"--name\", \"u\"]\n"
        ),
    );
    let mut serve = home
        .command()
        .args(["serve", "--console"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(serve.stderr.take().unwrap());
    let url = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no console said");
        if let Some(rest) = line.trim().strip_prefix("switchboard serve: console at ") {
            break rest.split(' ').next().unwrap().to_owned();
        }
    };
    let (port, token) = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap()
        .split_once("/?token=")
        .unwrap();
    let console = Attached {
        port: port.parse().unwrap(),
        token: token.to_owned(),
    };
    // The host, on stdio.
    let mut stdin = serve.stdin.take().unwrap();
    let mut stdout = BufReader::new(serve.stdout.take().unwrap());
    for message in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a host","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t__echo","arguments":{"text":"the host's words"}}}"#,
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut answered = String::new();
    while !answered.contains("\"id\":2") {
        answered.clear();
        assert!(stdout.read_line(&mut answered).unwrap() > 0);
    }
    assert!(answered.contains("the host's words"), "{answered}");
    let record: serde_json::Value = serde_json::from_str(&console.get("/api/protocol")).unwrap();
    let entries = record["entries"].as_array().unwrap();
    let seen = |host: bool, server: &str, direction: &str| {
        entries.iter().any(|e| {
            e["host"] == host
                && e["server"] == server
                && e["direction"] == direction
                && e["method"] == "tools/call"
                && e["text"].as_str().unwrap().contains("the host's words")
        })
    };
    assert!(seen(true, "stdio", "received"), "{record}");
    assert!(seen(false, "t", "sent"), "{record}");
    drop(stdin);
    let _ = serve.wait();
}
