//! Model-facing tool names: `mcp__<server>__<tool>` by default, valid for
//! the provider, unique, stable, and mapped back to (server, tool).
//!
//! SKELETON — owned by the names/definitions helper. Public signatures are
//! shared with other modules; change them only together with their users.

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

/// Whether `name` is a valid function name for `provider`.
pub fn is_valid(provider: Provider, name: &str) -> bool {
    let _ = (provider, name);
    unimplemented!("names helper")
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
    pub fn build<'a>(
        provider: Provider,
        options: &NameOptions,
        tools: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Names {
        let _ = (provider, options, tools.into_iter().count());
        unimplemented!("names helper")
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
