//! Which servers may run: allow and deny lists matching a server by name,
//! by command array (a local server) or by URL glob (a remote one). Deny
//! wins; when any allow list is given, a server must match each one.
//!
//! Lists come from switchboard files (`[policy] allow = […]`,
//! `deny = […]`) and from Claude Code's `managed-settings.json`
//! (`allowedMcpServers`, `deniedMcpServers`, entries `{"serverName": …}`,
//! `{"serverCommand": […]}`, `{"serverUrl": "https://*.corp.example/*"}`).
//! An empty allow list allows nothing.

use std::fmt;

use super::model::{ServerConfig, TransportConfig};

/// One entry of an allow or deny list.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rule {
    /// The server's name, exactly.
    Name(String),
    /// A local server's command and arguments, exactly.
    Command(Vec<String>),
    /// A remote server's URL; `*` matches any run of characters.
    Url(String),
}

impl Rule {
    /// Whether `server` matches this rule.
    pub fn matches(&self, server: &ServerConfig) -> bool {
        match (self, &server.transport) {
            (Self::Name(name), _) => *name == server.name,
            (Self::Command(want), TransportConfig::Stdio { command, args, .. }) => {
                want.first() == Some(command)
                    && want.len() == args.len() + 1
                    && want[1..].iter().zip(args).all(|(a, b)| a == b)
            }
            (
                Self::Url(glob),
                TransportConfig::Http { url, .. } | TransportConfig::WebSocket { url, .. },
            ) => glob_match(glob, url),
            _ => false,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(n) => write!(f, "name `{n}`"),
            Self::Command(c) => write!(f, "command `{}`", c.join(" ")),
            Self::Url(u) => write!(f, "url `{u}`"),
        }
    }
}

/// Allow and deny lists, merged from every file that gives some.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Each allow list given, with the file that gave it; a server must
    /// match a rule of each.
    pub allow: Vec<(String, Vec<Rule>)>,
    /// Every deny rule, with the file that gave it.
    pub deny: Vec<(String, Rule)>,
    /// What the gateway lets a host call (`[policy.tools]`).
    pub tools: ToolPolicy,
}

/// Which tools may be called — through the gateway, the CLI, the
/// library's `Hub` and the agent alike (the hub decides, see
/// `switchboard_hub::hub::policy`). Each rule is a pattern naming a
/// (server, tool) pair, `*` matching any run of characters:
///
/// - `SERVER/TOOL` (`github/delete_*`, `*/delete_repo`): a glob over the
///   server's name and a glob over the tool's own name, apart, so it
///   names exactly the pair it says whatever hub-wide name the tool has;
/// - anything else (`github__delete_*`, `*__echo`, `*`): a glob over the
///   text `SERVER__TOOL` made of the server's name and the tool's own
///   name — never the hub-wide name, so a tool renamed `…_HASH` (two
///   tools wanting one name) is matched as the pair it is. When a server
///   name holds `__` the text can mean two pairs; the rule then matches
///   both (prefer `SERVER/TOOL`).
///
/// `deny` wins, then every `allow` list (a tool must match each one
/// given; with none, every tool not denied is allowed), then `ask` (the
/// caller's user confirms each call). Any file may narrow, none may widen
/// what another said. A tool's read-only hint is never permission.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    /// Each allow list given, with its file.
    pub allow: Vec<(String, Vec<String>)>,
    /// Deny patterns, with their file.
    pub deny: Vec<(String, String)>,
    /// Ask patterns, with their file.
    pub ask: Vec<(String, String)>,
}

/// What [`ToolPolicy::decide`] says of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolDecision {
    /// Call it.
    Allow,
    /// Ask the user first; says which rule, and where it is written.
    Ask(String),
    /// Refuse; says which rule, where it is written, and what to do.
    Deny(String),
}

/// Whether the pattern `rule` (see [`ToolPolicy`]) names `server`'s tool
/// `tool` (its own name, as the server lists it).
pub fn tool_rule_matches(rule: &str, server: &str, tool: &str) -> bool {
    match rule.split_once('/') {
        Some((servers, tools)) => glob_match(servers, server) && glob_match(tools, tool),
        None => glob_match(rule, &format!("{server}__{tool}")),
    }
}

impl ToolPolicy {
    /// Whether no rule is given.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty() && self.ask.is_empty()
    }

    /// What to do with a call of `server`'s tool `tool` (the tool's own
    /// name, not its hub-wide one).
    pub fn decide(&self, server: &str, tool: &str) -> ToolDecision {
        let matches = |rule: &str| tool_rule_matches(rule, server, tool);
        if let Some((source, rule)) = self.deny.iter().find(|(_, r)| matches(r)) {
            return ToolDecision::Deny(format!(
                "the tool `{tool}` of server `{server}` is denied by the policy in {source} \
                 (deny `{rule}` in [policy.tools]); remove that rule to allow it"
            ));
        }
        for (source, rules) in &self.allow {
            if !rules.iter().any(|r| matches(r)) {
                return ToolDecision::Deny(format!(
                    "the tool `{tool}` of server `{server}` is not on the tools allow list in \
                     {source} ([policy.tools] allow); add `{server}/{tool}` to it to allow it"
                ));
            }
        }
        if let Some((source, rule)) = self.ask.iter().find(|(_, r)| matches(r)) {
            return ToolDecision::Ask(format!("ask `{rule}` in {source}"));
        }
        ToolDecision::Allow
    }
}

/// Why a server may not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// Said to the user: the rule or list and the file it is in.
    pub reason: String,
}

impl Policy {
    /// Adds the lists of another source (`source` names its file).
    pub fn merge(&mut self, source: &str, allow: Option<Vec<Rule>>, deny: Vec<Rule>) {
        if let Some(allow) = allow {
            self.allow.push((source.to_owned(), allow));
        }
        self.deny
            .extend(deny.into_iter().map(|r| (source.to_owned(), r)));
    }

    /// Whether `server` may run; deny wins over allow.
    ///
    /// # Errors
    /// [`Denied`] with the rule that denies it, or the allow list it is
    /// not on.
    pub fn check(&self, server: &ServerConfig) -> Result<(), Denied> {
        if let Some((source, rule)) = self.deny.iter().find(|(_, r)| r.matches(server)) {
            return Err(Denied {
                reason: format!("denied by the policy in {source} ({rule})"),
            });
        }
        for (source, rules) in &self.allow {
            if !rules.iter().any(|r| r.matches(server)) {
                return Err(Denied {
                    reason: format!(
                        "not on the allow list in {source}; ask its administrator to allow it"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// `*` matches any run of characters (including none); everything else
/// matches itself.
pub(crate) fn glob_match(glob: &str, text: &str) -> bool {
    let parts: Vec<&str> = glob.split('*').collect();
    if parts.len() == 1 {
        return glob == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::config::model::{Dialect, HttpKind, Origin, Scope};

    fn origin() -> Origin {
        Origin {
            file: PathBuf::from("/p/switchboard.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Project,
        }
    }

    fn stdio(name: &str, command: &[&str]) -> ServerConfig {
        ServerConfig::new(
            name,
            TransportConfig::Stdio {
                command: command[0].into(),
                args: command[1..].iter().map(|s| s.to_string()).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
            origin(),
        )
    }

    fn remote(name: &str, url: &str) -> ServerConfig {
        ServerConfig::new(
            name,
            TransportConfig::Http {
                url: url.into(),
                headers: BTreeMap::new(),
                kind: HttpKind::Auto,
            },
            origin(),
        )
    }

    #[test]
    fn globs() {
        assert!(glob_match(
            "https://*.corp.example/*",
            "https://mcp.corp.example/v1"
        ));
        assert!(!glob_match(
            "https://*.corp.example/*",
            "https://evil.example/corp.example/"
        ));
        assert!(glob_match("a*b*c", "abc"));
        assert!(!glob_match("a*b*c", "acb"));
        assert!(glob_match("exact", "exact") && !glob_match("exact", "exactly"));
    }

    #[test]
    fn deny_wins_over_allow() {
        let mut policy = Policy::default();
        policy.merge(
            "managed.toml",
            Some(vec![
                Rule::Name("files".into()),
                Rule::Url("https://*.corp.example/*".into()),
            ]),
            vec![Rule::Command(vec!["npx".into(), "evil".into()])],
        );
        assert_eq!(policy.check(&stdio("files", &["npx", "ok"])), Ok(()));
        let denied = policy.check(&stdio("files", &["npx", "evil"])).unwrap_err();
        assert!(denied.reason.contains("denied") && denied.reason.contains("managed.toml"));
        assert!(
            policy
                .check(&remote("docs", "https://mcp.corp.example/mcp"))
                .is_ok()
        );
        let off_list = policy
            .check(&remote("docs", "https://other.example/mcp"))
            .unwrap_err();
        assert!(off_list.reason.contains("not on the allow list"));
        // A command rule matches the whole array, not a prefix.
        assert!(policy.check(&stdio("x", &["npx", "evil", "more"])).is_err());
        assert!(
            !Rule::Command(vec!["npx".into(), "evil".into()])
                .matches(&stdio("x", &["npx", "evil", "more"]))
        );
    }

    #[test]
    fn an_empty_allow_list_allows_nothing_and_no_list_allows_all() {
        let mut policy = Policy::default();
        assert!(policy.check(&stdio("a", &["x"])).is_ok());
        policy.merge("m", Some(vec![]), vec![]);
        assert!(policy.check(&stdio("a", &["x"])).is_err());
    }

    #[test]
    fn tool_rules_name_a_server_and_a_tool_apart() {
        let policy = ToolPolicy {
            deny: vec![("p.toml".into(), "gh/admin__delete".into())],
            ask: vec![("p.toml".into(), "*__echo".into())],
            ..ToolPolicy::default()
        };
        // `gh`'s `admin__delete` — whatever hub-wide name it has.
        assert!(matches!(
            policy.decide("gh", "admin__delete"),
            ToolDecision::Deny(why) if why.contains("p.toml") && why.contains("gh/admin__delete")
        ));
        // `gh__admin`'s `delete` is another tool.
        assert_eq!(policy.decide("gh__admin", "delete"), ToolDecision::Allow);
        assert!(matches!(policy.decide("a", "echo"), ToolDecision::Ask(_)));
        // The old form matches the pair's `SERVER__TOOL` text: both
        // readings of an ambiguous one.
        assert!(tool_rule_matches(
            "gh__admin__delete",
            "gh",
            "admin__delete"
        ));
        assert!(tool_rule_matches(
            "gh__admin__delete",
            "gh__admin",
            "delete"
        ));
        assert!(!tool_rule_matches(
            "gh__admin__delete",
            "gh",
            "admin__delete_abcdefgh"
        ));
        assert!(tool_rule_matches("*/delete_*", "any", "delete_repo"));
        assert!(!tool_rule_matches("gh/*", "gh2", "x"));
        let listed = ToolPolicy {
            allow: vec![("a.toml".into(), vec!["docs/*".into()])],
            ..ToolPolicy::default()
        };
        assert_eq!(listed.decide("docs", "search"), ToolDecision::Allow);
        assert!(matches!(
            listed.decide("shell", "run"),
            ToolDecision::Deny(why) if why.contains("allow list in a.toml")
        ));
    }
}
