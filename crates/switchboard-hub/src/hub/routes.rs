//! The hub-wide tool names: unique and deterministic, in one table that
//! both [`Hub::tools`](super::Hub::tools) and
//! [`Hub::call_tool`](super::Hub::call_tool) read, so what is listed is
//! what is routed.
//!
//! Each server's [`Prefix`] says what its tools want to be called:
//! `server__tool`, the tool's own name, or its own name unless another
//! server has one alike ([`served_names`]); every name is at most
//! [`MAX_NAME_LEN`] characters. Names can still collide (server `a__b`
//! with tool `c` and server `a` with tool `b__c` both want `a__b__c`).
//! The table is rebuilt from every server's tools whenever any list
//! changes: the first (server, tool) that wants a name keeps it (a
//! `never` server's first of all, then configuration order); a later one
//! is named `NAME_HASH` (a hash of server and tool, the same on every
//! run) and carries the name it wanted in [`HubTool::renamed_from`].
//! Because the whole table is rebuilt, a name may move when an earlier
//! server's list changes; never silently (a `warn!` names both tools).
//!
//! [`HubTool::renamed_from`]: super::HubTool::renamed_from

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use switchboard::types::Tool;

use super::ServerState;
use super::namespaced;
use super::supervisor::Slot;
use crate::config::Prefix;

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
    /// in configuration order, named by [`served_names`] (each server's
    /// [`Prefix`], `default` where its configuration does not say). A
    /// slot that never starts (disabled, not approved) takes no name.
    /// `previous` is the table this replaces: only renames it did not
    /// have are logged.
    pub(crate) fn build(slots: &[Arc<Slot>], previous: &Routes, default: Prefix) -> Self {
        // Every (server, tool) that is offered, in configuration order.
        let mut offered: Vec<(Arc<Slot>, Arc<[Tool]>, usize)> = Vec::new();
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
                offered.push((slot.clone(), view.tools.clone(), place));
            }
        }
        let names = served_names(offered.iter().map(|(slot, tools, place)| {
            (
                slot.config.name.as_str(),
                tools[*place].name.as_str(),
                slot.config.prefix.unwrap_or(default),
            )
        }));
        let mut routes = Routes::default();
        for ((slot, tools, place), (name, renamed_from)) in offered.into_iter().zip(names) {
            if let Some(old) = &renamed_from {
                let again = previous
                    .get(&name)
                    .is_some_and(|r| r.renamed_from.as_deref() == Some(old.as_str()));
                if !again {
                    let keeper = routes
                        .get(old)
                        .map(|r| (r.slot.config.name.as_str(), r.tool().name.as_str()))
                        .unwrap_or_default();
                    tracing::warn!(
                        server = %slot.config.name,
                        tool = %tools[place].name,
                        name = %name,
                        wanted = %old,
                        kept_by_server = %keeper.0,
                        kept_by_tool = %keeper.1,
                        "two tools want the same hub-wide name; the later one is renamed"
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

/// The longest name served: what every model API accepts (OpenAI's
/// function names stop at 64 characters).
pub const MAX_NAME_LEN: usize = 64;

/// Hub-wide names for `(server, own name, prefix)` entries, in the order
/// given: unique, deterministic, each at most [`MAX_NAME_LEN`]
/// characters; with each, the name it wanted when another entry kept it.
///
/// An entry wants, by its server's prefix: [`Prefix::Always`],
/// `server__name` ([`namespaced`]); [`Prefix::Never`], its own name;
/// [`Prefix::OnCollision`], its own name unless another server has an
/// entry of that own name, then `server__name`. A wanted name over the
/// limit is cut and ends in a hash of server and own name. Entries of
/// `never` servers claim their names first, then the rest in order; a
/// later claimant of a taken name gets `NAME_HASH` (a hash of server and
/// own name, the same on every run), so no two entries shadow each other.
pub(crate) fn served_names<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a str, Prefix)>,
) -> Vec<(String, Option<String>)> {
    let entries: Vec<(&str, &str, Prefix)> = entries.into_iter().collect();
    // Each own name: the first server with it, and whether another has it.
    let mut servers_of: HashMap<&str, (&str, bool)> = HashMap::with_capacity(entries.len());
    for &(server, own, _) in &entries {
        let seen = servers_of.entry(own).or_insert((server, false));
        seen.1 |= seen.0 != server;
    }
    let wanted: Vec<String> = entries
        .iter()
        .map(|&(server, own, prefix)| {
            let shared = servers_of.get(own).is_some_and(|seen| seen.1);
            let name = match prefix {
                Prefix::Never => own.to_owned(),
                Prefix::OnCollision if !shared => own.to_owned(),
                Prefix::Always | Prefix::OnCollision => namespaced(server, own),
            };
            fit(name, hash(server, own, u32::MAX))
        })
        .collect();
    drop(servers_of);
    // Who keeps each name: `never` entries first, then the rest, each
    // set in order.
    let mut keeper: HashMap<&str, usize> = HashMap::with_capacity(wanted.len());
    let order = (0..entries.len())
        .filter(|&i| entries[i].2 == Prefix::Never)
        .chain((0..entries.len()).filter(|&i| entries[i].2 != Prefix::Never));
    for i in order {
        keeper.entry(wanted[i].as_str()).or_insert(i);
    }
    // The names given to later claimants (rare), beside those wanted.
    let mut given: HashMap<usize, (String, String)> = HashMap::new();
    let mut taken_too: HashSet<String> = HashSet::new();
    for (i, name) in wanted.iter().enumerate() {
        if keeper.get(name.as_str()) == Some(&i) {
            continue;
        }
        let (server, own, _) = entries[i];
        let mut round = 0;
        let candidate = loop {
            let candidate = fit(
                format!("{name}_{}", hash_text(hash(server, own, round))),
                hash(server, own, u32::MAX - 1 - round),
            );
            if !keeper.contains_key(candidate.as_str()) && taken_too.insert(candidate.clone()) {
                break candidate;
            }
            round += 1;
        };
        given.insert(i, (candidate, name.clone()));
    }
    drop(keeper);
    wanted
        .into_iter()
        .enumerate()
        .map(|(i, name)| match given.remove(&i) {
            Some((new, old)) => (new, Some(old)),
            None => (name, None),
        })
        .collect()
}

/// `name`, or when it is over [`MAX_NAME_LEN`] characters its first
/// characters, `_` and the hash text of `h`: [`MAX_NAME_LEN`] in all.
fn fit(name: String, h: u64) -> String {
    if name.chars().count() <= MAX_NAME_LEN {
        return name;
    }
    let stem: String = name.chars().take(MAX_NAME_LEN - 9).collect();
    format!("{stem}_{}", hash_text(h))
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

    fn names(entries: &[(&str, &str, Prefix)]) -> Vec<String> {
        served_names(entries.iter().copied())
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    /// `a`'s prompt `b__c` and `a__b`'s prompt `c` both want `a__b__c`:
    /// the first keeps it, the second gets a name of its own.
    #[test]
    fn two_servers_prompts_never_share_a_name() {
        let entries = [
            ("a", "b__c", Prefix::Always),
            ("a__b", "c", Prefix::Always),
            ("x", "y", Prefix::Always),
        ];
        let served = served_names(entries);
        assert_eq!(served[0], ("a__b__c".to_owned(), None));
        assert!(served[1].0.starts_with("a__b__c_"), "{served:?}");
        assert_eq!(served[1].1.as_deref(), Some("a__b__c"));
        assert_eq!(served[2].0, "x__y");
        let distinct: HashSet<&String> = served.iter().map(|(n, _)| n).collect();
        assert_eq!(distinct.len(), 3);
        // The same lists give the same names.
        assert_eq!(served, served_names(entries));
    }

    /// `never` serves own names and wins a collision wherever its server
    /// stands; `on-collision` serves own names until another server has
    /// the same one; `always` prefixes.
    #[test]
    fn each_prefix_names_as_it_says() {
        use Prefix::{Always, Never, OnCollision};
        assert_eq!(
            names(&[("s", "echo", OnCollision), ("s", "add", OnCollision)]),
            ["echo", "add"]
        );
        assert_eq!(
            names(&[
                ("a", "echo", OnCollision),
                ("b", "echo", OnCollision),
                ("b", "x", OnCollision)
            ]),
            ["a__echo", "b__echo", "x"]
        );
        // `b`'s `never` keeps `a__x` although `a` comes first.
        let served = names(&[("a", "x", Always), ("b", "a__x", Never), ("b", "y", Never)]);
        assert_eq!(served[1], "a__x");
        assert_eq!(served[2], "y");
        assert!(served[0].starts_with("a__x_"), "{served:?}");
        // A never's own name beside an always one of the same own name.
        assert_eq!(
            names(&[("a", "echo", Always), ("b", "echo", Never)]),
            ["a__echo", "echo"]
        );
    }

    /// Every name served fits [`MAX_NAME_LEN`] characters, stays unique
    /// and the same on every run, whatever the server and tool names.
    #[test]
    fn every_name_fits_the_limit() {
        let long = "t".repeat(100);
        let server = "s".repeat(70);
        let entries = [
            (server.as_str(), long.as_str(), Prefix::Always),
            (
                server.as_str(),
                "é".repeat(70).leak() as &str,
                Prefix::Always,
            ),
            ("x", long.as_str(), Prefix::Never),
            ("y", long.as_str(), Prefix::Never),
            ("z", "short", Prefix::Always),
        ];
        let served = names(&entries);
        for name in &served {
            assert!(name.chars().count() <= MAX_NAME_LEN, "{name}");
        }
        assert_eq!(served[4], "z__short");
        let distinct: HashSet<&String> = served.iter().collect();
        assert_eq!(distinct.len(), served.len(), "{served:?}");
        assert_eq!(served, names(&entries));
        assert!(served[2].starts_with(&"t".repeat(55)), "{served:?}");
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
