//! The hub-wide tool names: unique and deterministic, in one table that
//! both [`Hub::tools`](super::Hub::tools) and
//! [`Hub::call_tool`](super::Hub::call_tool) read, so what is listed is
//! what is routed.
//!
//! `server__tool` is ambiguous: server `a__b` with tool `c` and server `a`
//! with tool `b__c` both make `a__b__c`. The table is rebuilt from every
//! server's tools, in configuration order, whenever any list changes: the
//! first (server, tool) that wants a name keeps it; a later one is named
//! `server__tool_HASH` (a hash of server and tool, the same on every run)
//! and carries the name it wanted in [`HubTool::renamed_from`]. Because
//! the whole table is rebuilt, a name may move when an earlier server's
//! list changes; never silently (a `warn!` names both tools).
//!
//! [`HubTool::renamed_from`]: super::HubTool::renamed_from

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use switchboard::types::Tool;

use super::ServerState;
use super::namespaced;
use super::supervisor::Slot;

/// One hub-wide name and what it calls.
#[derive(Debug)]
pub(crate) struct Route {
    pub(crate) name: String,
    /// The server.
    pub(crate) slot: Arc<Slot>,
    /// The slot's tool list and the tool's place in it (shared, not
    /// copied: every list change rebuilds every route).
    tools: Arc<[Tool]>,
    at: usize,
    /// The `server__tool` name another tool kept.
    pub(crate) renamed_from: Option<String>,
}

/// A (server, tool) and the name it wants: the server, its tool list, the
/// tool's place in it, the name.
type Wanted = (Arc<Slot>, Arc<[Tool]>, usize, String);

/// Every route, in configuration order, and the index by name.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    list: Vec<Route>,
    by_name: HashMap<String, usize>,
}

impl Route {
    /// The tool as its server lists it.
    pub(crate) fn tool(&self) -> &Tool {
        &self.tools[self.at]
    }
}

impl Routes {
    /// The routes of every slot's current tools (allowed by its filter),
    /// in configuration order. A slot that never starts (disabled, not
    /// approved) takes no name. `previous` is the table this replaces:
    /// only renames it did not have are logged.
    pub(crate) fn build(slots: &[Arc<Slot>], previous: &Routes) -> Self {
        // Pass 1: every (server, tool) and the name it wants; the first
        // claimant of a name keeps it.
        let mut wanted: Vec<Wanted> = Vec::new();
        let mut taken: HashMap<String, usize> = HashMap::new();
        let mut losers = Vec::new();
        for slot in slots {
            let view = slot.view.borrow();
            if matches!(
                view.state,
                ServerState::Disabled | ServerState::NeedsApproval { .. }
            ) {
                continue;
            }
            let mut own = HashSet::new();
            for (place, tool) in view.tools.iter().enumerate() {
                if !slot.config.tools.allows(&tool.name) {
                    continue;
                }
                if !own.insert(tool.name.as_str()) {
                    // The server lists the name twice: a call by name
                    // reaches one of them anyway.
                    tracing::debug!(server = %slot.config.name, tool = %tool.name, "tool listed twice; the second is left out");
                    continue;
                }
                let name = namespaced(&slot.config.name, &tool.name);
                let at = wanted.len();
                if taken.contains_key(&name) {
                    losers.push(at);
                } else {
                    taken.insert(name.clone(), at);
                }
                wanted.push((slot.clone(), view.tools.clone(), place, name));
            }
        }
        // Pass 2: the others get a hashed name no one wants or has.
        let mut renamed: HashMap<usize, (String, String)> = HashMap::new();
        for &at in &losers {
            let (slot, tools, place, name) = &wanted[at];
            let server = &slot.config.name;
            let tool = &tools[*place];
            let mut round = 0;
            let new = loop {
                let candidate = format!("{name}_{}", hash_text(hash(server, &tool.name, round)));
                if !taken.contains_key(&candidate) {
                    break candidate;
                }
                round += 1;
            };
            taken.insert(new.clone(), at);
            renamed.insert(at, (new, name.clone()));
        }
        let mut routes = Routes::default();
        for (at, (slot, tools, place, name)) in wanted.into_iter().enumerate() {
            let tool = &tools[place];
            let (name, renamed_from) = match renamed.remove(&at) {
                Some((new, old)) => (new, Some(old)),
                None => (name, None),
            };
            if let Some(old) = &renamed_from {
                let again = previous
                    .get(&name)
                    .is_some_and(|r| r.renamed_from.as_deref() == Some(old.as_str()));
                if !again {
                    // Keepers come first in configuration order: already in.
                    let keeper = routes
                        .get(old)
                        .map(|r| (r.slot.config.name.as_str(), r.tool().name.as_str()))
                        .unwrap_or_default();
                    tracing::warn!(
                        server = %slot.config.name,
                        tool = %tool.name,
                        name = %name,
                        wanted = %old,
                        kept_by_server = %keeper.0,
                        kept_by_tool = %keeper.1,
                        "two tools want the same hub-wide name; the later one (in configuration order) is renamed"
                    );
                }
            }
            routes.by_name.insert(name.clone(), routes.list.len());
            routes.list.push(Route {
                name,
                slot,
                tools,
                at: place,
                renamed_from,
            });
        }
        routes
    }

    /// The route of hub-wide name `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Route> {
        self.by_name.get(name).map(|&i| &self.list[i])
    }

    /// Every route, in configuration order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Route> {
        self.list.iter()
    }
}

/// Hub-wide names for `(server, own name)` pairs other than tools
/// (prompts), by the tools' rule: each wants [`namespaced`]; the first
/// claimant (in the order given) keeps it, a later one gets
/// `server__name_HASH`, so no two servers' entries shadow each other.
pub(crate) fn unique_names<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<String> {
    let entries: Vec<(&str, &str)> = entries.into_iter().collect();
    let mut taken: HashSet<String> = entries
        .iter()
        .map(|(server, name)| namespaced(server, name))
        .collect();
    let mut kept: HashSet<String> = HashSet::new();
    entries
        .into_iter()
        .map(|(server, own)| {
            let name = namespaced(server, own);
            if kept.insert(name.clone()) {
                return name;
            }
            let mut round = 0;
            loop {
                let candidate = format!("{name}_{}", hash_text(hash(server, own, round)));
                if taken.insert(candidate.clone()) {
                    kept.insert(candidate.clone());
                    break candidate;
                }
                round += 1;
            }
        })
        .collect()
}

/// A 64-bit FNV-1a hash over `server`, a `0xFF` byte (never in UTF-8, so
/// `("a", "bc")` and `("ab", "c")` differ), `tool` and `round`, finished
/// with splitmix64's mix: fixed constants, the same on every run and
/// platform (as `switchboard-models`' names).
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
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Eight lowercase base32 characters of `h` (40 bits).
fn hash_text(h: u64) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    (0..8)
        .map(|i| char::from(ALPHABET[((h >> (5 * i)) & 31) as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a`'s prompt `b__c` and `a__b`'s prompt `c` both want `a__b__c`:
    /// the first keeps it, the second gets a name of its own.
    #[test]
    fn two_servers_prompts_never_share_a_name() {
        let names = unique_names([("a", "b__c"), ("a__b", "c"), ("x", "y")]);
        assert_eq!(names[0], "a__b__c");
        assert!(names[1].starts_with("a__b__c_"), "{names:?}");
        assert_eq!(names[2], "x__y");
        let distinct: HashSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), 3);
        // The same lists give the same names.
        assert_eq!(
            names,
            unique_names([("a", "b__c"), ("a__b", "c"), ("x", "y")])
        );
    }

    #[test]
    fn the_hash_is_fixed_and_tells_server_from_tool() {
        // Fixed across runs, versions and platforms: a renamed tool's name
        // that a model or a script learnt stays valid.
        assert_eq!(hash_text(hash("a", "b__c", 0)), "6e45u373");
        assert_ne!(hash("a", "bc", 0), hash("ab", "c", 0));
        assert_ne!(hash("a", "b", 0), hash("a", "b", 1));
        assert_eq!(hash_text(0), "aaaaaaaa");
    }
}
