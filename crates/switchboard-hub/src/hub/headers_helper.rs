//! A remote server's headers helper (Claude Code's `headersHelper`): a
//! shell command run before each connection attempt whose stdout, a JSON
//! object of string values, gives HTTP headers for that connection.
//!
//! The helper is the user's own program (a project's only once approved:
//! the approval signs its command), but what it prints is treated as
//! hostile all the same: its output is bounded
//! ([`HeadersHelper::max_output`]), its run is bounded
//! ([`HeadersHelper::timeout`], then its whole process group is killed),
//! each header name and value is checked before it reaches the transport,
//! and no header value is ever logged or put in an error: only names are.
//! Its stderr is not read at all: a helper that fails may print the token
//! it got there, and a failure's reason reaches listings, logs and hosts;
//! the reason says to run the helper by hand to see it.

use std::process::Stdio;

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::Command;

use super::state::Failure;
use crate::config::{Dialect, HeadersHelper, ServerConfig};

/// Runs `server`'s helper for a connection to `url`: the headers it gives,
/// in its order, or why the attempt fails (naming the helper and what to
/// do).
///
/// # Cancel safety
/// Dropping the future kills the helper's process group.
pub(crate) async fn run(
    helper: &HeadersHelper,
    server: &ServerConfig,
    url: &str,
) -> Result<Vec<(String, String)>, Failure> {
    let failed = |what: String| {
        // The command itself is not quoted: one written with a literal
        // token in it would show the token.
        Failure::message(format!(
            "the headers helper of server `{}` {what}; fix its command (`{}`) in {}, or run \
             it by hand to see what it prints",
            server.name,
            match server.origin.dialect {
                Dialect::Switchboard => "headers_helper",
                _ => "headersHelper",
            },
            server.origin.file.display()
        ))
    };
    let mut command = shell(&helper.command);
    command
        .env("SWITCHBOARD_MCP_SERVER_NAME", &server.name)
        .env("SWITCHBOARD_MCP_SERVER_URL", url)
        .env("CLAUDE_CODE_MCP_SERVER_NAME", &server.name)
        .env("CLAUDE_CODE_MCP_SERVER_URL", url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| failed(format!("could not be started: {e}")))?;
    // Kills what the shell started too, however this future ends.
    let _group = GroupGuard(child.id());
    let stdout = child.stdout.take();
    let work = async {
        let out = read_bounded(stdout, helper.max_output).await;
        (out, child.wait().await)
    };
    let Ok((out, status)) = tokio::time::timeout(helper.timeout, work).await else {
        return Err(failed(format!(
            "did not finish within {:?} (its time limit)",
            helper.timeout
        )));
    };
    let status = status.map_err(|e| failed(format!("could not be waited for: {e}")))?;
    if !status.success() {
        let how = match status.code() {
            Some(code) => format!("exit code {code}"),
            None => "a signal".to_owned(),
        };
        // Its stderr may hold a token: never in the reason.
        return Err(failed(format!(
            "failed with {how} (its stderr is not shown, as it may hold a token)"
        )));
    }
    let (out, over) = out.map_err(|e| failed(format!("could not be read: {e}")))?;
    if over {
        return Err(failed(format!(
            "printed more than {} bytes (its output limit)",
            helper.max_output
        )));
    }
    parse(&out).map_err(failed)
}

/// The helper's output as headers. Names and values are checked as HTTP
/// allows them; a value never appears in the reason.
fn parse(out: &[u8]) -> Result<Vec<(String, String)>, String> {
    let object: Map<String, Value> = serde_json::from_slice(out).map_err(|e| {
        format!(
            "printed no JSON object of headers ({}; expected {{\"Header-Name\": \"value\"}})",
            if e.is_data() {
                "a JSON value of another kind".to_owned()
            } else {
                format!("not JSON at line {} column {}", e.line(), e.column())
            }
        )
    })?;
    let mut headers = Vec::with_capacity(object.len());
    for (name, value) in object {
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(format!(
                "gave a header name that HTTP does not allow: {:?}",
                name.chars().take(64).collect::<String>()
            ));
        }
        let Value::String(value) = value else {
            return Err(format!(
                "gave a header `{name}` whose value is not a string"
            ));
        };
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(format!(
                "gave a header `{name}` whose value holds control characters (a line break?)"
            ));
        }
        headers.push((name, value));
    }
    Ok(headers)
}

/// RFC 9110 `tchar`.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn shell(command: &str) -> Command {
    #[cfg(windows)]
    {
        let mut shell = Command::new("cmd");
        shell.arg("/C").arg(command);
        shell
    }
    #[cfg(not(windows))]
    {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(command);
        shell
    }
}

/// Reads `from` to its end, keeping the first `limit` bytes; `true` when
/// there was more (read and dropped, so the writer never blocks on a full
/// pipe).
async fn read_bounded(
    from: Option<impl AsyncRead + Unpin>,
    limit: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut over = false;
    let Some(mut from) = from else {
        return Ok((kept, over));
    };
    let mut buf = [0u8; 8192];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok((kept, over));
        }
        let room = limit.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        over |= n > room;
    }
}

/// Kills the helper's process group when dropped: a shell's children (a
/// `sleep` the helper waits on) would otherwise outlive it.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self
            .0
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            // Gone already (the usual case): nothing to do.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_an_object_of_valid_string_headers() {
        assert_eq!(
            parse(br#"{"Authorization": "Bearer t", "X-A": "1"}"#).unwrap(),
            [
                ("Authorization".to_owned(), "Bearer t".to_owned()),
                ("X-A".to_owned(), "1".to_owned())
            ]
        );
        assert!(parse(b"[1]").unwrap_err().contains("no JSON object"));
        assert!(parse(b"Bearer x").unwrap_err().contains("not JSON"));
        assert!(parse(br#"{"A": 1}"#).unwrap_err().contains("not a string"));
        assert!(parse(br#"{"A B": "x"}"#).unwrap_err().contains("name"));
        let broken = parse(br#"{"X": "secret\r\nInjected: 1"}"#).unwrap_err();
        assert!(broken.contains("control characters"), "{broken}");
        assert!(
            !broken.contains("secret"),
            "no value in the reason: {broken}"
        );
    }

    #[tokio::test]
    async fn output_over_the_limit_is_kept_to_the_limit_and_flagged() {
        let (kept, over) = read_bounded(Some(&b"0123456789"[..]), 4).await.unwrap();
        assert_eq!((kept.as_slice(), over), (&b"0123"[..], true));
        let (kept, over) = read_bounded(Some(&b"0123"[..]), 4).await.unwrap();
        assert_eq!((kept.as_slice(), over), (&b"0123"[..], false));
    }
}
