//! A real Chromium, driven over WebDriver (`chromedriver`, Debian's
//! `chromium-driver`; `scripts/install-browser.sh` installs both): plain
//! HTTP/1.1 JSON on loopback, so no client crate. Headless, its own
//! profile; stopped when dropped.
#![allow(dead_code)] // only the browser tests use it

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// WebDriver's key for an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long an element or a text is waited for.
const WAIT: Duration = Duration::from_secs(30);

pub(crate) struct Browser {
    driver: Child,
    port: u16,
    session: String,
    /// Where the browser saves what a page downloads (removed on drop).
    downloads: std::path::PathBuf,
}

/// `chromedriver` and `chromium` on PATH (or `CHROMEDRIVER`,
/// `CHROMIUM`), or why not.
fn found() -> Result<(String, String), String> {
    let on_path = |name: &str, var: &str| {
        std::env::var(var).ok().or_else(|| {
            std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join(name))
                    .find(|file| file.is_file())
                    .map(|file| file.display().to_string())
            })
        })
    };
    let driver = on_path("chromedriver", "CHROMEDRIVER")
        .ok_or("no chromedriver (apt-get install chromium-driver)")?;
    let browser = on_path("chromium", "CHROMIUM")
        .or_else(|| on_path("chromium-browser", "CHROMIUM"))
        .ok_or("no chromium (apt-get install chromium)")?;
    Ok((driver, browser))
}

impl Browser {
    /// A headless Chromium `width`×`height`; `None` (the test skips) when
    /// none is installed, unless `SWITCHBOARD_REQUIRE_INTEROP` is set (as
    /// in CI), which makes that a failure.
    pub(crate) fn start(test: &str, width: u32, height: u32) -> Option<Self> {
        let (driver, browser) = match found() {
            Ok(found) => found,
            Err(why) => {
                super::interop::skip(test, &format!("{why}; run scripts/install-browser.sh"));
                return None;
            }
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let downloads = std::env::temp_dir().join(format!(
            "switchboard-downloads-{test}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&downloads);
        std::fs::create_dir_all(&downloads).unwrap();
        let mut browser_started = Self {
            driver,
            port,
            session: String::new(),
            downloads: downloads.clone(),
        };
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        let session = browser_started.call(
            "POST",
            "/session",
            Some(json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:loggingPrefs": {"browser": "ALL"},
                "goog:chromeOptions": {
                    "binary": browser,
                    "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--no-first-run",
                        format!("--window-size={width},{height}"),
                    ],
                    "prefs": {
                        "download.default_directory": downloads,
                        "download.prompt_for_download": false,
                    },
                },
            }}})),
        );
        browser_started.session = session["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {session}"))
            .to_owned();
        Some(browser_started)
    }

    /// Where what a page downloads is saved.
    pub(crate) fn downloads(&self) -> &std::path::Path {
        &self.downloads
    }

    /// One WebDriver command; its `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .unwrap();
        // chromedriver keeps the connection open: the head, then
        // Content-Length bytes.
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte).unwrap() == 0 {
                break;
            }
            answer.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&answer).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{method} {path}: no Content-Length: {head}"));
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).unwrap();
        let value: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}: {}", String::from_utf8_lossy(&body)));
        value["value"].clone()
    }

    fn session(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub(crate) fn goto(&self, url: &str) {
        self.call("POST", &self.session("/url"), Some(json!({ "url": url })));
    }

    /// The element `css` selects, waited for.
    pub(crate) fn find(&self, css: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let found = self.call(
                "POST",
                &self.session("/element"),
                Some(json!({"using": "css selector", "value": css})),
            );
            if let Some(id) = found.get(ELEMENT).and_then(Value::as_str) {
                return id.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no element {css:?}; the page: {}\nits console: {}",
                self.text("body"),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clicks the element `css` selects: found again if the page
    /// replaced it between the finding and the click; any other refusal
    /// fails the test (a click is never lost quietly).
    pub(crate) fn click(&self, css: &str) {
        for _ in 0..20 {
            let id = self.find(css);
            let answer = self.call(
                "POST",
                &self.session(&format!("/element/{id}/click")),
                Some(json!({})),
            );
            match answer.get("error").and_then(Value::as_str) {
                None => return,
                Some("stale element reference") => continue,
                Some(error) => panic!("clicking {css:?}: {error}: {}", answer["message"]),
            }
        }
        panic!("{css:?} was replaced every time it was clicked");
    }

    pub(crate) fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call(
            "POST",
            &self.session(&format!("/element/{id}/value")),
            Some(json!({ "text": text })),
        );
    }

    /// Empties the field `css` selects, then types `text` into it.
    pub(crate) fn retype(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call(
            "POST",
            &self.session(&format!("/element/{id}/clear")),
            Some(json!({})),
        );
        self.type_into(css, text);
    }

    /// The visible text of the element `css` selects (empty when none).
    pub(crate) fn text(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            &self.session("/element"),
            Some(json!({"using": "css selector", "value": css})),
        );
        let Some(id) = found.get(ELEMENT).and_then(Value::as_str) else {
            return String::new();
        };
        self.call("GET", &self.session(&format!("/element/{id}/text")), None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until the element `css` selects shows `what`; its text.
    pub(crate) fn wait_text(&self, css: &str, what: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let text = self.text(css);
            if text.contains(what) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{css:?} never showed {what:?}; it shows {text:?}; the page: {}\nits console: {}",
                self.text("body"),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the browser's console said since last asked (a failing
    /// test's evidence).
    pub(crate) fn logs(&self) -> String {
        let logs = self.call(
            "POST",
            &self.session("/se/log"),
            Some(json!({"type": "browser"})),
        );
        logs.as_array()
            .into_iter()
            .flatten()
            .map(|entry| format!("{} {}", entry["level"], entry["message"]))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Goes into the frame `css` selects: later commands act in its
    /// document, until [`Browser::leave_frame`].
    pub(crate) fn enter_frame(&self, css: &str) {
        let id = self.find(css);
        self.call(
            "POST",
            &self.session("/frame"),
            Some(json!({ "id": { (ELEMENT): id } })),
        );
    }

    /// Back to the page's own document.
    pub(crate) fn leave_frame(&self) {
        self.call("POST", &self.session("/frame"), Some(json!({ "id": null })));
    }

    /// Runs `script` in the page (`arguments` as WebDriver passes them).
    pub(crate) fn script(&self, script: &str, arguments: Value) -> Value {
        self.call(
            "POST",
            &self.session("/execute/sync"),
            Some(json!({"script": script, "args": arguments})),
        )
    }

    /// Writes a PNG of the window to `path`.
    pub(crate) fn screenshot(&self, path: &std::path::Path) {
        use base64::Engine as _;
        let png = self.call("GET", &self.session("/screenshot"), None);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or_default())
            .unwrap();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.call("DELETE", &self.session(""), None)
            }));
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.downloads);
    }
}
