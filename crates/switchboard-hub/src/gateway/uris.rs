//! Which backend a URI belongs to, and how the gateway serves each
//! backend's URIs: as the backend wrote them wherever that is
//! unambiguous, mapped reversibly where it is not.
//!
//! - One server behind the gateway: every URI is its, served as written.
//! - Several: a URI is served as written when its scheme and authority
//!   (`test://static`, `file://`, `ui://weather`) belong to that server
//!   alone, as the backends' resource and template lists show
//!   ([`UriClaims`]); a template whose authority is a variable claims its
//!   whole scheme. Anything else is mapped: `ui://` stays `ui://`
//!   (`ui://SERVER+REST`, the server percent-encoded, so an MCP App's
//!   host still knows it for one), skill files keep their skill URI
//!   (`skill://SERVER/PATH`), the rest becomes `switchboard://SERVER/URI`
//!   ([`resource_uri`]).
//!
//! A URI a backend answers (a link, an embedded resource, a read's
//! contents, a tool's `_meta.ui.resourceUri`) is served as written only
//! when reading it back would reach that same backend; so backend A can
//! never hand the host a URI that reads backend B's resource.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::names::{decode, encode};
use super::{resource_origin, resource_template_uri, resource_uri, skill_origin, skill_uri};

use switchboard::types::apps::UI_SCHEME;

/// What a URI is claimed by: `scheme://authority` (the scheme in lower
/// case), or `scheme:` for a URI with no authority. `None` for a string
/// that has no scheme.
fn key(uri: &str) -> Option<String> {
    let (scheme, rest) = uri.split_once(':')?;
    let valid = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    Some(match rest.strip_prefix("//") {
        Some(rest) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            format!("{scheme}://{}", &rest[..end])
        }
        None => format!("{scheme}:"),
    })
}

/// What a template claims: its key, or its whole scheme (`scheme:*`) when
/// a variable stands in its authority; `None` when its scheme is a
/// variable (it claims nothing, and is served mapped).
fn template_key(template: &str) -> Option<String> {
    let key = key(template)?;
    Some(match key.split_once("://") {
        Some((scheme, authority)) if authority.contains('{') => format!("{scheme}:*"),
        _ => key,
    })
}

/// The scheme-wide key a URI's key falls under.
fn scheme_key(key: &str) -> String {
    let scheme = key.split(':').next().unwrap_or_default();
    format!("{scheme}:*")
}

/// Which servers claim which keys, by what their lists showed last; shared
/// by every session of one gateway.
#[derive(Clone, Debug, Default)]
pub(crate) struct UriClaims {
    inner: Arc<RwLock<Claims>>,
}

#[derive(Debug, Default)]
struct Claims {
    /// Each server's keys from its resources, and from its templates.
    resources: HashMap<String, HashSet<String>>,
    templates: HashMap<String, HashSet<String>>,
    /// Whether each kind was listed yet.
    listed: [bool; 2],
    /// Every key and the servers claiming it, rebuilt on each change.
    owners: Arc<HashMap<String, Vec<String>>>,
    /// When the claims were last read from the backends for a URI no one
    /// claimed.
    refreshed: Option<Instant>,
}

/// The two kinds of list that claim keys.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Listed {
    Resources,
    Templates,
}

/// How often a read of a URI no server claims may list every backend
/// again to find its owner.
const REFRESH_AT_MOST_EVERY: Duration = Duration::from_secs(2);

impl UriClaims {
    /// Takes `server`'s keys from a list of `kind` it answered (URIs, or
    /// templates).
    pub(crate) fn listed<'a>(
        &self,
        kind: Listed,
        lists: impl IntoIterator<Item = (&'a str, Vec<String>)>,
    ) {
        let mut claims = self.inner.write().unwrap_or_else(|e| e.into_inner());
        for (server, uris) in lists {
            let keys: HashSet<String> = match kind {
                Listed::Resources => uris.iter().filter_map(|u| key(u)).collect(),
                Listed::Templates => uris.iter().filter_map(|t| template_key(t)).collect(),
            };
            let (map, at) = match kind {
                Listed::Resources => (&mut claims.resources, 0),
                Listed::Templates => (&mut claims.templates, 1),
            };
            map.insert(server.to_owned(), keys);
            claims.listed[at] = true;
        }
        claims.listed[match kind {
            Listed::Resources => 0,
            Listed::Templates => 1,
        }] = true;
        let mut owners: HashMap<String, Vec<String>> = HashMap::new();
        for (server, keys) in claims.resources.iter().chain(&claims.templates) {
            for key in keys {
                let servers = owners.entry(key.clone()).or_default();
                if !servers.contains(server) {
                    servers.push(server.clone());
                }
            }
        }
        claims.owners = Arc::new(owners);
    }

    /// Whether `kind` was never listed.
    pub(crate) fn unlisted(&self, kind: Listed) -> bool {
        let claims = self.inner.read().unwrap_or_else(|e| e.into_inner());
        !claims.listed[kind as usize]
    }

    /// Whether a URI no one claims may list the backends again now (and
    /// if so, that it is being done).
    pub(crate) fn may_refresh(&self) -> bool {
        let mut claims = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let due = claims
            .refreshed
            .is_none_or(|at| at.elapsed() >= REFRESH_AT_MOST_EVERY);
        if due {
            claims.refreshed = Some(Instant::now());
        }
        due
    }

    /// The map as it stands, for `servers` (every configured server).
    pub(crate) fn now(&self, servers: Vec<String>) -> Uris {
        let owners = if servers.len() == 1 {
            Arc::default()
        } else {
            let claims = self.inner.read().unwrap_or_else(|e| e.into_inner());
            claims.owners.clone()
        };
        Uris { servers, owners }
    }
}

/// How the gateway serves URIs at one moment (see the module
/// documentation).
#[derive(Debug)]
pub(crate) struct Uris {
    servers: Vec<String>,
    owners: Arc<HashMap<String, Vec<String>>>,
}

impl Uris {
    /// The server a URI the host sent belongs to, and the URI that server
    /// wrote; `None` when no server (or more than one) could own it.
    pub(crate) fn resolve(&self, uri: &str) -> Option<(String, String)> {
        if let Some(found) = resource_origin(uri).or_else(|| skill_origin(uri)) {
            return Some(found);
        }
        if let Some(found) = self.ui_origin(uri) {
            return Some(found);
        }
        if let [only] = self.servers.as_slice() {
            return Some((only.clone(), uri.to_owned()));
        }
        let key = key(uri)?;
        let mut owners = self
            .owners
            .get(&key)
            .into_iter()
            .chain(self.owners.get(&scheme_key(&key)))
            .flatten();
        let first = owners.next()?;
        if owners.all(|other| other == first) {
            Some((first.clone(), uri.to_owned()))
        } else {
            None
        }
    }

    /// A mapped UI URI (`ui://SERVER+REST`) of a configured server.
    fn ui_origin(&self, uri: &str) -> Option<(String, String)> {
        let (server, rest) = uri.strip_prefix(UI_SCHEME)?.split_once('+')?;
        let server = decode(server)?;
        self.servers
            .contains(&server)
            .then(|| (server, format!("{UI_SCHEME}{rest}")))
    }

    /// `server`'s `uri` as the gateway serves it: as written when reading
    /// it back reaches `server` with that URI, else mapped.
    pub(crate) fn serve(&self, server: &str, uri: &str) -> String {
        if let Some(skill) = skill_uri(server, uri) {
            return skill;
        }
        match self.resolve(uri) {
            Some((owner, original)) if owner == server && original == uri => uri.to_owned(),
            _ => match uri.strip_prefix(UI_SCHEME) {
                Some(rest) => format!("{UI_SCHEME}{}+{rest}", encode(server)),
                None => resource_uri(server, uri),
            },
        }
    }

    /// `server`'s resource template as the gateway serves it: as written
    /// when what it claims is `server`'s alone, else mapped
    /// ([`resource_template_uri`]).
    pub(crate) fn serve_template(&self, server: &str, template: &str) -> String {
        let alone = match self.servers.as_slice() {
            [only] => only == server,
            _ => template_key(template).is_some_and(|key| self.claimed_alone(&key, server)),
        };
        // A template the host expands must resolve back here as well.
        if alone && !template.starts_with(super::names::URI_PREFIX) {
            template.to_owned()
        } else {
            resource_template_uri(server, template)
        }
    }

    /// Whether `key` is claimed, and only by `server`: for a scheme-wide
    /// key, every key of the scheme.
    fn claimed_alone(&self, key: &str, server: &str) -> bool {
        let scheme = scheme_key(key);
        let mut claimed = self
            .owners
            .iter()
            .filter(|(k, _)| {
                if key == scheme {
                    k.split(':').next() == scheme.split(':').next()
                } else {
                    *k == key || **k == scheme
                }
            })
            .flat_map(|(_, owners)| owners)
            .peekable();
        claimed.peek().is_some() && claimed.all(|owner| owner == server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(servers: &[&str], resources: &[(&str, &[&str])], templates: &[(&str, &[&str])]) -> Uris {
        let claims = UriClaims::default();
        let owned = |lists: &[(&str, &[&str])]| -> Vec<(String, Vec<String>)> {
            lists
                .iter()
                .map(|(s, uris)| {
                    (
                        (*s).to_owned(),
                        uris.iter().map(|u| (*u).to_owned()).collect(),
                    )
                })
                .collect()
        };
        let resources = owned(resources);
        let templates = owned(templates);
        claims.listed(
            Listed::Resources,
            resources.iter().map(|(s, u)| (s.as_str(), u.clone())),
        );
        claims.listed(
            Listed::Templates,
            templates.iter().map(|(s, u)| (s.as_str(), u.clone())),
        );
        claims.now(servers.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn keys_are_scheme_and_authority() {
        assert_eq!(key("test://static/text").as_deref(), Some("test://static"));
        assert_eq!(key("FILE:///etc/x").as_deref(), Some("file://"));
        assert_eq!(key("urn:isbn:1").as_deref(), Some("urn:"));
        assert_eq!(key("ui://app?x#y").as_deref(), Some("ui://app"));
        assert_eq!(key("no scheme"), None);
        assert_eq!(key("1x://a"), None);
        assert_eq!(template_key("test://{host}/x").as_deref(), Some("test:*"));
        assert_eq!(template_key("{scheme}://x"), None);
    }

    /// One server: everything is its, as written, whatever it lists.
    #[test]
    fn one_server_is_served_as_written() {
        let uris = map(&["only"], &[], &[]);
        for uri in [
            "test://static-text",
            "ui://app/index.html",
            "file:///x",
            "weird",
        ] {
            assert_eq!(uris.serve("only", uri), uri);
            assert_eq!(uris.resolve(uri), Some(("only".into(), uri.into())));
        }
        assert_eq!(
            uris.serve_template("only", "test://t/{id}"),
            "test://t/{id}"
        );
        // Its skills and mapped URIs still read back to it.
        assert_eq!(
            uris.resolve(&resource_uri("only", "x://y")),
            Some(("only".into(), "x://y".into()))
        );
    }

    /// Two servers: what one alone claims is served as written; what both
    /// claim, or neither, is mapped, `ui://` staying `ui://`.
    #[test]
    fn several_servers_share_nothing_ambiguous() {
        let uris = map(
            &["a", "b"],
            &[
                ("a", &["alpha://x/1", "test://s/1"]),
                ("b", &["test://s/2"]),
            ],
            &[("b", &["beta://{host}/p"])],
        );
        assert_eq!(uris.serve("a", "alpha://x/1"), "alpha://x/1");
        assert_eq!(
            uris.resolve("alpha://x/2"),
            Some(("a".into(), "alpha://x/2".into()))
        );
        assert_eq!(
            uris.resolve("beta://any/p"),
            Some(("b".into(), "beta://any/p".into()))
        );
        assert_eq!(
            uris.serve_template("b", "beta://{host}/p"),
            "beta://{host}/p"
        );
        // Both claim test://s.
        let mapped = uris.serve("a", "test://s/1");
        assert_eq!(mapped, resource_uri("a", "test://s/1"));
        assert_eq!(
            uris.resolve(&mapped),
            Some(("a".into(), "test://s/1".into()))
        );
        assert_eq!(uris.resolve("test://s/1"), None);
        // B answering A's URI gets it mapped as B's: it reads B, not A.
        let forged = uris.serve("b", "alpha://x/1");
        assert_eq!(
            uris.resolve(&forged),
            Some(("b".into(), "alpha://x/1".into()))
        );
        // An unclaimed UI resource stays ui://, and reads back to its server.
        let ui = uris.serve("a", "ui://weather/app.html");
        assert_eq!(ui, "ui://a+weather/app.html");
        assert_eq!(
            uris.resolve(&ui),
            Some(("a".into(), "ui://weather/app.html".into()))
        );
        // A backend's own `ui://b+x` does not read server b's `ui://x`.
        let own = uris.serve("a", "ui://b+x/app.html");
        assert_eq!(
            uris.resolve(&own),
            Some(("a".into(), "ui://b+x/app.html".into()))
        );
        // A server name that needs encoding.
        let odd = uris.serve("a b", "ui://w/x");
        assert_eq!(odd, "ui://a%20b+w/x");
    }
}
