//! The floor: a hand-written minimal MCP client (std only, no runtime, no
//! SDK) that does one request the way `switchboard` does it, so that what
//! the CLI adds on top of the process start, the connection and the
//! server's own work shows as a ratio.
//!
//! It runs in two ways: as a whole process (this bench binary run as
//! `cli-… --floor-socket SOCKET METHOD PARAMS` or `--floor-stdio METHOD
//! PARAMS -- COMMAND…`, timed from spawn to exit like the CLI's rows), and
//! in this process for a server's own start ([`start`]: spawn → the
//! answers to `initialize` and `tools/list`).

use std::io::BufReader;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The protocol version the floor speaks: the session era's latest, which
/// every server here (and the session's gateway) accepts.
const VERSION: &str = "2025-11-25";

fn initialize() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{VERSION}","capabilities":{{}},"clientInfo":{{"name":"floor","version":"0"}}}}}}"#
    )
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn request(id: u64, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

/// Reads lines until the response to `id` (skipping the peer's
/// notifications and requests); its `result`, or why there is none.
fn answer(reader: &mut impl std::io::BufRead, id: u64) -> Result<serde_json::Value, String> {
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err(format!("the peer closed before answering request {id}"));
        }
        let Ok(mut message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message.get("method").is_none() && message["id"] == id {
            return match message.get_mut("result") {
                Some(result) => Ok(result.take()),
                None => Err(format!("request {id}: {}", message["error"])),
            };
        }
    }
}

/// initialize, initialized, then `method` with `params`, over `reader` and
/// `writer`; the request's result.
fn session(
    reader: &mut impl std::io::BufRead,
    writer: &mut impl std::io::Write,
    method: &str,
    params: &str,
) -> Result<serde_json::Value, String> {
    let mut send = |text: String| {
        writer
            .write_all(text.as_bytes())
            .and_then(|()| writer.flush())
            .map_err(|e| e.to_string())
    };
    send(format!("{}\n", initialize()))?;
    answer(reader, 1)?;
    send(format!("{INITIALIZED}\n{}\n", request(2, method, params)))?;
    answer(reader, 2)
}

/// `--floor-socket SOCKET METHOD PARAMS`: the request through the running
/// session's socket; exits 0 with the result on stdout, 1 on a failure.
pub(crate) fn socket_main(args: &[String]) -> ! {
    let [socket, method, params, ..] = args else {
        eprintln!("usage: --floor-socket SOCKET METHOD PARAMS");
        std::process::exit(2);
    };
    let result = std::os::unix::net::UnixStream::connect(socket)
        .map_err(|e| format!("{socket}: {e}"))
        .and_then(|stream| {
            let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
            session(&mut BufReader::new(stream), &mut writer, method, params)
        });
    finish(result)
}

/// `--floor-stdio METHOD PARAMS -- COMMAND ARGS…`: starts the server, does
/// the request, closes its stdin and waits for it; as `socket_main`.
pub(crate) fn stdio_main(args: &[String]) -> ! {
    let (Some(method), Some(params), Some(command)) = (
        args.first(),
        args.get(1),
        args.iter().position(|a| a == "--").map(|i| &args[i + 1..]),
    ) else {
        eprintln!("usage: --floor-stdio METHOD PARAMS -- COMMAND ARGS…");
        std::process::exit(2);
    };
    let result = spawn(command).and_then(|mut child| {
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let result = session(&mut stdout, &mut stdin, method, params);
        drop(stdin);
        let _ = child.wait();
        result
    });
    finish(result)
}

fn finish(result: Result<serde_json::Value, String>) -> ! {
    match result {
        Ok(result) => {
            println!("{result}");
            std::process::exit(0)
        }
        Err(error) => {
            eprintln!("floor: {error}");
            std::process::exit(1)
        }
    }
}

fn spawn(command: &[String]) -> Result<Child, String> {
    let (program, args) = command.split_first().ok_or("no command")?;
    Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))
}

/// A server's own start, measured here: spawn → the answer to `initialize`
/// and then to `tools/list` (what `list` shows of it), as time since
/// `since`. The server is then closed (stdin) and reaped, outside the time.
pub(crate) fn start(command: &[String], since: Instant) -> Result<Duration, String> {
    let mut child = spawn(command)?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let result = session(&mut stdout, &mut stdin, "tools/list", "{}");
    let took = since.elapsed();
    drop(stdin);
    // A server that ignores the closed stdin is not waited for.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return result.map(|_| took);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    result.map(|_| took)
}

/// Every server of `commands` started at once ([`start`] on a thread
/// each): the time to the last one's answer.
pub(crate) fn start_all(commands: &[Vec<String>]) -> Result<Duration, String> {
    let since = Instant::now();
    let threads: Vec<_> = commands
        .iter()
        .cloned()
        .map(|command| std::thread::spawn(move || start(&command, since)))
        .collect();
    let mut last = Duration::ZERO;
    for thread in threads {
        last = last.max(thread.join().map_err(|_| "a thread panicked")??);
    }
    Ok(last)
}
