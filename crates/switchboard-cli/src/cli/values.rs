//! Values given on the command line, checked: URLs, durations.

use std::time::Duration;

use crate::failure::Failure;

/// A remote server's URL: http(s) or ws(s), with its scheme written out.
pub(crate) fn server_url(text: &str) -> Result<String, String> {
    let text = text.trim();
    match text.split_once("://") {
        Some((scheme, rest)) if !rest.is_empty() => {
            if ["http", "https", "ws", "wss"].contains(&scheme.to_ascii_lowercase().as_str()) {
                Ok(text.to_owned())
            } else {
                Err(format!(
                    "`{scheme}://` is not a scheme an MCP server is reached by: use https:// \
                     (or http:// on loopback, ws:// or wss://)"
                ))
            }
        }
        _ => {
            let rest = text.trim_start_matches(':').trim_start_matches('/');
            // A server on this machine is reached by plain http://.
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            let host = host
                .rsplit_once(':')
                .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
                .map_or(host, |(host, _)| host);
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            let scheme = if loopback { "http" } else { "https" };
            Err(format!(
                "`{text}` has no scheme: did you mean {scheme}://{rest}?"
            ))
        }
    }
}
/// `add NAME URL`'s URL: as [`server_url`], but a word that is no host
/// (`npx`) is a command whose `--` was forgotten.
pub(crate) fn add_url(text: &str) -> Result<String, String> {
    let host_like = text.contains('.') || text.contains(':') || text.contains('/');
    if !text.contains("://") && !host_like {
        return Err(format!(
            "`{text}` is not a URL: to add a local server, put its command after `--`: \
             switchboard add NAME -- {text} …"
        ));
    }
    server_url(text)
}
/// The longest idle period `up` takes: a year (a longer one overflowed the
/// clock and crashed the session).
pub(crate) const MAX_IDLE_SECONDS: u64 = 365 * 86_400;
/// `90s`, `30m`, `8h`, `1d`, or plain seconds, at most 365 days.
pub(crate) fn parse_idle(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 90s, 30m or 8h"))?;
    let seconds = match unit {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err(format!("`{text}`: the unit is s, m, h or d")),
    };
    if seconds == 0 {
        return Err("the idle period must be at least one second".to_owned());
    }
    if seconds > MAX_IDLE_SECONDS {
        return Err(format!(
            "`{text}` is too long: the idle period is at most 365d; to keep the session \
             until `switchboard down`, give 365d"
        ));
    }
    Ok(Duration::from_secs(seconds))
}
/// A number of seconds given on the command line as a duration: positive
/// and finite (`nan`, `-1` and `inf` are refused, never a panic); above a
/// year it is a year.
pub(crate) fn seconds(flag: &str, value: f64) -> Result<Duration, Failure> {
    const YEAR: f64 = 365.0 * 24.0 * 3600.0;
    if !value.is_finite() || value <= 0.0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "{flag} must be a positive number of seconds, not {value}"
        )));
    }
    Ok(Duration::from_secs_f64(value.min(YEAR)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_without_a_scheme_is_told_http_on_this_machine_and_https_elsewhere() {
        for (typed, meant) in [
            ("127.0.0.1:8765/mcp", "http://127.0.0.1:8765/mcp"),
            ("localhost:3000/mcp", "http://localhost:3000/mcp"),
            ("[::1]:9000/mcp", "http://[::1]:9000/mcp"),
            ("mcp.example.com/mcp", "https://mcp.example.com/mcp"),
            ("example.com:8443", "https://example.com:8443"),
        ] {
            let said = server_url(typed).unwrap_err();
            assert!(said.contains(&format!("did you mean {meant}?")), "{said}");
        }
    }
}
