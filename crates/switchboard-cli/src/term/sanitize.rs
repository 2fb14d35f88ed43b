//! The one gate between text a peer wrote and the user's terminal.
//!
//! Servers, config files and authorization servers are someone else's:
//! a tool description, a log line or an error text could carry escape
//! sequences that set the terminal's title, clear the screen, write the
//! clipboard (OSC 52), plant a hyperlink (OSC 8) or hide text (`ESC[8m`)
//! inside a consent prompt. Everything such a peer wrote goes through
//! [`term`] (or [`line`] for one-line fields) before it is printed:
//!
//! - C0 controls but newline and tab, and DEL, become `\x1b`-style escapes;
//! - C1 controls (U+0080–U+009F, which some terminals take as 8-bit
//!   `CSI`/`OSC`) become `\u009b`-style escapes;
//! - bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069),
//!   which can make a command read backwards, become `\u202e`-style escapes.
//!
//! JSON output goes through [`json`]: `serde_json` already escapes C0, and
//! the rest is escaped the same way inside strings, so the document stays
//! valid and lossless (`\u009b` is a JSON escape). `--raw` is the one way
//! to get a result's text byte for byte.

use std::borrow::Cow;
use std::fmt::Write as _;

fn escaped(c: char, keep_newlines: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_newlines,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| escaped(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !escaped(c, keep_newlines) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// Text for the terminal: newlines and tabs kept, every other control
/// character shown as an escape.
pub(crate) fn term(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// One-line text for the terminal (a name, a table cell's line, a URL): as
/// [`term`], and newlines and tabs escaped too.
pub(crate) fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// A JSON document's text with what `serde_json` leaves raw (DEL, C1,
/// bidirectional controls) written as `\u` escapes: the same value, safe on
/// a terminal.
pub(crate) fn json(text: String) -> String {
    if !text.chars().any(
        |c| matches!(c, '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'),
    ) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if matches!(c, '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_visible_escapes() {
        assert_eq!(term("plain"), "plain");
        assert!(matches!(term("plain"), Cow::Borrowed(_)));
        assert_eq!(term("a\u{1b}]0;pwned\u{7}b"), "a\\x1b]0;pwned\\x07b");
        assert_eq!(term("x\u{9b}31mred"), "x\\u009b31mred");
        assert_eq!(term("del\u{7f}"), "del\\x7f");
        assert_eq!(term("two\nlines\tand tab\r!"), "two\nlines\tand tab\\x0d!");
        assert_eq!(line("two\nlines"), "two\\x0alines");
        assert_eq!(term("evil \u{202e}txt.exe"), "evil \\u202etxt.exe");
        // OSC 52 (clipboard), OSC 8 (hyperlink), hidden text.
        for attack in [
            "\u{1b}]52;c;cm0gLXJmIC8=\u{7}",
            "\u{1b}]8;;https://evil.example\u{1b}\\click\u{1b}]8;;\u{1b}\\",
            "\u{1b}[8mhidden\u{1b}[0m",
        ] {
            assert!(!term(attack).contains('\u{1b}'), "{attack:?}");
        }
    }

    #[test]
    fn json_stays_valid_and_lossless() {
        let value = serde_json::json!({"t": "a\u{1b}b\u{9b}c\u{7f}d\u{202e}e"});
        let text = json(serde_json::to_string(&value).unwrap());
        assert!(!text.chars().any(|c| c.is_control()), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
