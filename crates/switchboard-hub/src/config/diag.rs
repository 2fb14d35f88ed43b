//! Diagnostics: what loading found wrong, where, and what to do.

use std::fmt;
use std::path::{Path, PathBuf};

/// How bad a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Severity {
    /// Worth knowing (a server shadowed by one of higher precedence, a
    /// duplicate skipped, an entry of a kind switchboard does not run).
    Info,
    /// Something was probably not what the user meant (an unset
    /// variable); loading went on.
    Warning,
    /// A file or a server could not be read; the rest still loaded.
    Error,
}

/// One thing found while loading or expanding: a bad file, a bad entry,
/// an unset variable, a skipped duplicate, a server a policy blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// How bad it is.
    pub severity: Severity,
    /// The file, when one is concerned.
    pub file: Option<PathBuf>,
    /// 1-based line in `file`, when known.
    pub line: Option<usize>,
    /// 1-based column in `file`, when known.
    pub column: Option<usize>,
    /// The server concerned, when one is.
    pub server: Option<String>,
    /// The key within the server's entry (`args`, `env.API_KEY`, …).
    pub key: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn new(severity: Severity, message: impl Into<String>) -> Self {
        Self {
            severity,
            file: None,
            line: None,
            column: None,
            server: None,
            key: None,
            message: message.into(),
        }
    }

    pub(crate) fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }

    /// A warning saying `message` (a caller's own, beside the loader's).
    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }

    pub(crate) fn info(message: impl Into<String>) -> Self {
        Self::new(Severity::Info, message)
    }

    /// The same, about `file`.
    pub fn in_file(mut self, file: &Path) -> Self {
        self.file = Some(file.to_path_buf());
        self
    }

    pub(crate) fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    pub(crate) fn at_opt(self, position: Option<(usize, usize)>) -> Self {
        match position {
            Some((line, column)) => self.at(line, column),
            None => self,
        }
    }

    /// The same, about the server `name`.
    pub fn server(mut self, name: &str) -> Self {
        self.server = Some(name.to_owned());
        self
    }

    pub(crate) fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Whether this is an [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    /// `FILE:LINE:COL: server `NAME`, key `KEY`: MESSAGE`, leaving out
    /// what is not known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut wrote = false;
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
            wrote = true;
        }
        if let Some(server) = &self.server {
            write!(f, "{}server `{server}`", if wrote { ": " } else { "" })?;
            wrote = true;
        }
        if let Some(key) = &self.key {
            write!(f, "{}key `{key}`", if wrote { ", " } else { "" })?;
            wrote = true;
        }
        if wrote {
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

/// The 1-based line and column of byte `offset` in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// Best effort: where the entry `server` (and within it `key`) is written
/// in `text`, found by looking for the name as a JSON/YAML key or a TOML
/// table header, then the key after it. Used only to point at a semantic
/// error; a miss leaves the position out.
pub(crate) fn find_entry(text: &str, server: &str, key: Option<&str>) -> Option<(usize, usize)> {
    let start = find_key(text, server, 0)?;
    let at = match key.and_then(|k| k.split(['.', '[']).next()) {
        Some(key) => find_key(text, key, start).unwrap_or(start),
        None => start,
    };
    Some(line_col(text, at))
}

fn find_key(text: &str, key: &str, from: usize) -> Option<usize> {
    let patterns = [
        format!("\"{key}\""),
        format!(".{key}]"),
        format!("'{key}'"),
        format!("\n{key}:"),
        format!(" {key}:"),
        format!("\n{key} ="),
        format!("\n{key}="),
    ];
    patterns
        .iter()
        .filter_map(|p| {
            text.get(from..)?
                .find(p.as_str())
                .map(|i| from + i + usize::from(p.starts_with(['\n', ' '])))
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn display_names_file_position_server_and_key() {
        let d = Diagnostic::error("expected an array of strings")
            .in_file(Path::new("/p/.mcp.json"))
            .at(4, 7)
            .server("files")
            .key("args");
        assert_eq!(
            d.to_string(),
            "/p/.mcp.json:4:7: server `files`, key `args`: expected an array of strings"
        );
    }

    #[test]
    fn entries_are_found_in_json_toml_and_yaml() {
        let json = "{\n  \"mcpServers\": {\n    \"a\": {\n      \"args\": 1\n    }\n  }\n}";
        assert_eq!(find_entry(json, "a", Some("args")), Some((4, 7)));
        let toml = "[mcp_servers.a]\ncommand = \"x\"\nargs = 1\n";
        assert_eq!(find_entry(toml, "a", Some("args")), Some((3, 1)));
        let yaml = "extensions:\n  a:\n    args: 1\n";
        assert_eq!(find_entry(yaml, "a", Some("args")), Some((3, 5)));
    }
}
