//! Model-facing tool names: `mcp__<server>__<tool>` by default, valid for
//! the provider, unique, stable, and mapped back to (server, tool).
//!
//! ```
//! use switchboard_models::{NameOptions, Names, Provider};
//!
//! let names = Names::build(
//!     Provider::OpenAiResponses,
//!     &NameOptions::default(),
//!     [("github", "create_issue"), ("files.local", "read file")],
//! );
//! assert_eq!(names.all(), ["mcp__github__create_issue", "mcp__files_local__read_file"]);
//! assert_eq!(names.resolve("mcp__files_local__read_file"), Some(("files.local", "read file")));
//! ```

use std::collections::HashMap;

use crate::Provider;

/// How names are built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NameOptions {
    /// Before the server's name (default `mcp`); empty for none, in which
    /// case no separator is written before the server either.
    pub prefix: String,
    /// Between prefix, server and tool (default `__`).
    pub separator: String,
}

impl Default for NameOptions {
    fn default() -> Self {
        Self {
            prefix: "mcp".into(),
            separator: "__".into(),
        }
    }
}

impl NameOptions {
    /// Sets the prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets the separator.
    pub fn separator(mut self, separator: impl Into<String>) -> Self {
        self.separator = separator.into();
        self
    }
}

/// Two tools whose names came out the same; the later one (in input order)
/// was renamed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collision {
    /// The name both wanted.
    pub wanted: String,
    /// The server of the tool that was renamed.
    pub server: String,
    /// Its tool name, as the server gives it.
    pub tool: String,
    /// The name it got instead.
    pub renamed: String,
    /// The server and tool that kept `wanted`.
    pub kept: (String, String),
}

/// Longest function name every provider takes.
pub const MAX_LEN: usize = 64;

/// Characters of the hash a shortened or renamed name ends with (after a
/// `_`): lowercase base32 of a 64-bit FNV-1a hash, 40 bits of it.
pub const HASH_LEN: usize = 8;

/// Whether `name` is a valid function name for `provider`.
///
/// - OpenAI (Responses and Chat Completions) and Anthropic:
///   `^[a-zA-Z0-9_-]{1,64}$`.
/// - Gemini: `^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$` — a letter or underscore
///   first, then letters, digits, `_`, `.` and `-`. (Gemini documents
///   colons too; they are left out so that names stay portable.)
pub fn is_valid(provider: Provider, name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    name.len() <= MAX_LEN && allowed_first(provider, first) && chars.all(|c| allowed(provider, c))
}

fn allowed(provider: Provider, c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || (provider == Provider::Gemini && c == '.')
}

fn allowed_first(provider: Provider, c: char) -> bool {
    match provider {
        Provider::Gemini => c.is_ascii_alphabetic() || c == '_',
        _ => allowed(provider, c),
    }
}

/// `part` with every character `provider` does not allow in a name
/// (non-ASCII ones included) replaced by `_`, one `_` per character.
/// Empty stays empty.
pub fn sanitize(provider: Provider, part: &str) -> String {
    part.chars()
        .map(|c| if allowed(provider, c) { c } else { '_' })
        .collect()
}

/// A 64-bit FNV-1a hash over `server`, a `0xFF` byte (never part of UTF-8,
/// so `("a", "bc")` and `("ab", "c")` differ), `tool` and `round`, with a
/// final mix so that every bit of the result depends on the input. Fixed
/// constants: the same on every run and platform.
fn hash(server: &str, tool: &str, round: u32) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    let bytes = server
        .bytes()
        .chain([0xFF])
        .chain(tool.bytes())
        .chain(round.to_le_bytes());
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    // splitmix64's finalizer
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// [`HASH_LEN`] lowercase base32 characters of `h` (valid for every provider).
fn hash_text(h: u64) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    (0..HASH_LEN)
        .map(|i| char::from(ALPHABET[((h >> (5 * i)) & 31) as usize]))
        .collect()
}

/// `name` (sanitized, so ASCII) cut to leave room for `_` and a hash, then
/// the hash: at most [`MAX_LEN`] characters.
fn with_hash(name: &str, h: u64) -> String {
    let stem = &name[..name.len().min(MAX_LEN - 1 - HASH_LEN)];
    let mut out = String::with_capacity(stem.len() + 1 + HASH_LEN);
    out.push_str(stem);
    out.push('_');
    out.push_str(&hash_text(h));
    out
}

/// Stands for an empty server or tool name.
const EMPTY: &str = "_";

/// The name `(server, tool)` wants before collisions are looked at:
/// prefix, separator, server, separator, tool, each part sanitized; an
/// empty part becomes `_`; for Gemini, a name not starting with a letter
/// or `_` gets a leading `_`; over [`MAX_LEN`], a stem plus `_` and a hash
/// of the raw server and tool names.
fn wanted(provider: Provider, prefix: &str, separator: &str, server: &str, tool: &str) -> String {
    // One buffer, no intermediate strings: this runs once per tool.
    let mut name = String::with_capacity(
        1 + prefix.len() + 2 * separator.len() + server.len().max(1) + tool.len().max(1),
    );
    if !prefix.is_empty() {
        name.push_str(prefix);
        name.push_str(separator);
    }
    push_sanitized(provider, &mut name, server);
    name.push_str(separator);
    push_sanitized(provider, &mut name, tool);
    if let Some(first) = name.chars().next()
        && !allowed_first(provider, first)
    {
        name.insert(0, '_');
    }
    if name.len() > MAX_LEN {
        name = with_hash(&name, hash(server, tool, 0));
    }
    name
}

/// [`sanitize`] appended to `out`; `_` for an empty `part`.
fn push_sanitized(provider: Provider, out: &mut String, part: &str) {
    if part.is_empty() {
        out.push_str(EMPTY);
    } else if part.bytes().all(|b| allowed(provider, char::from(b))) {
        out.push_str(part);
    } else {
        out.extend(
            part.chars()
                .map(|c| if allowed(provider, c) { c } else { '_' }),
        );
    }
}

/// The names of a set of tools for one provider.
#[derive(Clone, Debug, Default)]
pub struct Names {
    names: Vec<String>,
    routes: HashMap<String, usize>,
    pairs: Vec<(String, String)>,
    collisions: Vec<Collision>,
}

impl Names {
    /// Names every `(server, tool)` pair, in order. Deterministic: the same
    /// input gives the same names.
    ///
    /// Each name is [`is_valid`] for `provider` and unique in the set. The
    /// prefix and separator are sanitized like the names. When two pairs
    /// want the same name (`a.b` and `a_b` both become `a_b`; or the same
    /// pair is listed twice), the first in input order keeps it and each
    /// later one gets the name cut to leave room for `_` and a hash of its
    /// raw server and tool names and a round number (counting up, per wanted
    /// name, over all renamings away from it, until the name is free); each
    /// renaming is reported in
    /// [`collisions`](Self::collisions). A pair's name therefore depends
    /// only on the pairs before it: adding tools at the end renames none.
    pub fn build<'a>(
        provider: Provider,
        options: &NameOptions,
        tools: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Names {
        let prefix = sanitize(provider, &options.prefix);
        let separator = sanitize(provider, &options.separator);
        let tools = tools.into_iter();
        let mut out = Names {
            names: Vec::with_capacity(tools.size_hint().0),
            routes: HashMap::with_capacity(tools.size_hint().0),
            pairs: Vec::with_capacity(tools.size_hint().0),
            collisions: Vec::new(),
        };
        let mut rounds: HashMap<String, u32> = HashMap::new();
        for (server, tool) in tools {
            let index = out.names.len();
            let wanted = wanted(provider, &prefix, &separator, server, tool);
            let name = match out.routes.get(&wanted) {
                None => wanted,
                Some(&holder) => {
                    // Rounds go on from the last renaming away from this
                    // name: the same pair listed n times costs n rounds in
                    // all, not n².
                    let round = rounds.entry(wanted.clone()).or_insert(0);
                    let renamed = loop {
                        *round += 1;
                        let candidate = with_hash(&wanted, hash(server, tool, *round));
                        if !out.routes.contains_key(&candidate) {
                            break candidate;
                        }
                    };
                    out.collisions.push(Collision {
                        wanted,
                        server: server.to_owned(),
                        tool: tool.to_owned(),
                        renamed: renamed.clone(),
                        kept: out.pairs[holder].clone(),
                    });
                    renamed
                }
            };
            out.routes.insert(name.clone(), index);
            out.names.push(name);
            out.pairs.push((server.to_owned(), tool.to_owned()));
        }
        out
    }

    /// The name of the `index`-th input pair.
    pub fn get(&self, index: usize) -> &str {
        &self.names[index]
    }

    /// All names, in input order.
    pub fn all(&self) -> &[String] {
        &self.names
    }

    /// The input index a name stands for.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.routes.get(name).copied()
    }

    /// (server, original tool name) for a name.
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        let (server, tool) = &self.pairs[self.index(name)?];
        Some((server, tool))
    }

    /// The collisions that were resolved by renaming.
    pub fn collisions(&self) -> &[Collision] {
        &self.collisions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_separates_server_from_tool_and_rounds() {
        assert_ne!(hash("a", "bc", 0), hash("ab", "c", 0));
        assert_ne!(hash("a", "b", 0), hash("a", "b", 1));
        assert_eq!(hash_text(0), "aaaaaaaa");
        assert_eq!(hash_text(u64::MAX), "77777777");
    }

    #[test]
    fn with_hash_fits_and_keeps_short_names_whole() {
        let long = "x".repeat(200);
        let named = with_hash(&long, 1);
        assert_eq!(named.len(), MAX_LEN);
        assert_eq!(with_hash("short", 0), "short_aaaaaaaa");
    }

    #[test]
    fn sanitize_replaces_each_character_once() {
        assert_eq!(sanitize(Provider::OpenAiChat, "a.b c✓"), "a_b_c_");
        assert_eq!(sanitize(Provider::Gemini, "a.b c✓"), "a.b_c_");
        assert_eq!(sanitize(Provider::Anthropic, ""), "");
    }
}
