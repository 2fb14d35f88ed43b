//! The stateless era's response cache (2026-07-28 `ttlMs` / `cacheScope`).
//!
//! Cacheable: `tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list` (each page on its own, keyed by its cursor)
//! and `resources/read`. `server/discover` is cacheable too, but it runs
//! once, before there is a client, so there is nothing to reuse.
//!
//! - **Key**: the method and its params without `_meta` (so neither the
//!   progress token, the log level nor the client's identity split it),
//!   with object keys sorted.
//! - **Freshness**: `now < received + ttlMs`. An absent, zero or negative
//!   `ttlMs` is immediately stale and not stored (unless stale-on-error
//!   is on, which needs something to fall back to); one above a day counts
//!   as a day.
//! - **Scope**: a `public` result (or one without `cacheScope`) is shared by
//!   every authorization context; a `private` one is served only to the
//!   partition it was stored under ([`ClientBuilder::cache_partition`]).
//! - **Never cached**: a request carrying `inputResponses` or
//!   `requestState` (a multi round-trip retry), an `input_required`
//!   answer, an error.
//! - **Invalidation**: a `list_changed` notification empties the matching
//!   list (`resources` also its templates); `resources/updated` the reads
//!   of that URI (and of URIs it is under, or that are under it);
//!   [`Client::invalidate_cache`] everything. Invalidated entries are only
//!   ever served by stale-on-error.
//! - **Bounds**: at most 256 entries and 8 MiB of raw results by default
//!   ([`ClientBuilder::cache_limits`]); the oldest stored entry goes first.
//!   A result larger than the byte bound is not stored.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use switchboard_types::{CacheScope, Era, codes, methods};
use tokio::time::Instant;

use super::{Client, ClientBuilder};
use crate::client::events::ListKind;
use crate::engine::RawResult;
use crate::engine::RequestOptions;
use crate::error::{Error, Result};

/// Names the authorization context private cache entries belong to.
pub(super) type CachePartitionFn = Arc<dyn Fn() -> String + Send + Sync>;

/// The response cache's settings (the `cache_*` builder setters).
#[derive(Clone)]
pub(super) struct CacheConfig {
    /// Whether results are cached at all (default true; only 2026-07-28
    /// servers send caching hints).
    pub(super) enabled: bool,
    /// Most entries kept (default 256).
    pub(super) max_entries: usize,
    /// Most bytes of raw results kept (default 8 MiB).
    pub(super) max_bytes: usize,
    /// Serve an expired or invalidated entry when re-fetching fails with a
    /// timeout, a transport failure, a lost connection or an internal
    /// server error (default false).
    pub(super) serve_stale_on_error: bool,
    /// The authorization context of private entries (default: one context,
    /// `""`). Consulted on every lookup and store, so a hook that hashes
    /// the current credentials moves private entries with them.
    pub(super) partition: Option<CachePartitionFn>,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_entries: 256,
            max_bytes: 8 << 20,
            serve_stale_on_error: false,
            partition: None,
        }
    }
}

impl fmt::Debug for CacheConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheConfig")
            .field("enabled", &self.enabled)
            .field("max_entries", &self.max_entries)
            .field("max_bytes", &self.max_bytes)
            .field("serve_stale_on_error", &self.serve_stale_on_error)
            .field("partition", &self.partition.is_some())
            .finish()
    }
}

impl CacheConfig {
    pub(super) fn validate(&self) -> Result<()> {
        for (setting, value) in [
            ("cache.max_entries", self.max_entries),
            ("cache.max_bytes", self.max_bytes),
        ] {
            if value == 0 {
                return Err(Error::Config {
                    setting,
                    reason: "must be at least 1 (use ClientBuilder::cache_enabled(false) to turn the cache off)".into(),
                });
            }
        }
        Ok(())
    }
}

impl ClientBuilder {
    /// Turns the stateless era's response cache on or off (default on).
    pub fn cache_enabled(mut self, enabled: bool) -> Self {
        self.subs.cache.enabled = enabled;
        self
    }

    /// Bounds the response cache: entries and bytes of raw results
    /// (default 256 entries, 8 MiB). The oldest entry is evicted first.
    pub fn cache_limits(mut self, max_entries: usize, max_bytes: usize) -> Self {
        self.subs.cache.max_entries = max_entries;
        self.subs.cache.max_bytes = max_bytes;
        self
    }

    /// When re-fetching a cached result fails (timeout, transport failure,
    /// lost connection, internal server error), answer with the expired
    /// entry instead of the error (default off).
    pub fn serve_stale_on_error(mut self, enabled: bool) -> Self {
        self.subs.cache.serve_stale_on_error = enabled;
        self
    }

    /// The authorization context `private` results are cached under. A
    /// client that changes whose credentials it sends must change this too;
    /// by default every private entry belongs to one context.
    pub fn cache_partition(self, partition: impl Into<String>) -> Self {
        let partition = partition.into();
        self.cache_partition_fn(move || partition.clone())
    }

    /// [`ClientBuilder::cache_partition`] computed at each lookup and store
    /// (e.g. a hash of the `Authorization` header currently sent).
    pub fn cache_partition_fn(
        mut self,
        partition: impl Fn() -> String + Send + Sync + 'static,
    ) -> Self {
        self.subs.cache.partition = Some(Arc::new(partition));
        self
    }
}

/// Which entries a notification makes stale.
#[derive(Debug)]
pub(super) enum Invalidate<'a> {
    List(ListKind),
    Read(&'a str),
    All,
}

/// A request's place in the cache.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct CacheKey {
    method: &'static str,
    /// The params without `_meta`, keys sorted.
    params: String,
    /// For `resources/read`: the URI, for `resources/updated`.
    uri: Option<String>,
}

struct Entry {
    raw: RawResult,
    /// `None`: public.
    partition: Option<String>,
    fresh_until: Instant,
    /// Insertion order, for eviction.
    seq: u64,
}

impl Entry {
    fn size(&self) -> usize {
        self.raw.get().len()
    }
}

#[derive(Default)]
struct Store {
    /// Public and private entries of one request live side by side.
    entries: HashMap<CacheKey, Vec<Entry>>,
    bytes: usize,
    count: usize,
    seq: u64,
}

/// The cache itself; one per client.
pub(super) struct ResponseCache {
    config: CacheConfig,
    store: Mutex<Store>,
    /// Bumped by every invalidation: a result that was in flight across
    /// one may predate the change, so it is stored already stale.
    epoch: AtomicU64,
}

impl fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let store = self.lock();
        f.debug_struct("ResponseCache")
            .field("entries", &store.count)
            .field("bytes", &store.bytes)
            .finish()
    }
}

const CACHEABLE: [&str; 5] = [
    methods::TOOLS_LIST,
    methods::PROMPTS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
];

impl ResponseCache {
    pub(super) fn new(config: CacheConfig) -> Self {
        Self {
            config,
            store: Mutex::new(Store::default()),
            epoch: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn partition(&self) -> String {
        self.config
            .partition
            .as_ref()
            .map_or_else(String::new, |f| f())
    }

    /// Whether answers to `method` are kept (then requests for it carry
    /// their params as a JSON value, to make the key).
    pub(super) fn caches(&self, method: &str) -> bool {
        self.config.enabled && CACHEABLE.contains(&method)
    }

    /// The key of a cacheable request, or `None`.
    pub(super) fn key(&self, method: &str, params: Option<&Value>) -> Option<CacheKey> {
        if !self.config.enabled {
            return None;
        }
        let method = *CACHEABLE.iter().find(|m| **m == method)?;
        let mut object = match params {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(object)) => object.clone(),
            Some(_) => return None,
        };
        // A multi round-trip retry depends on inputs outside the key.
        if object.contains_key("inputResponses") || object.contains_key("requestState") {
            return None;
        }
        object.remove("_meta");
        let uri = (method == methods::RESOURCES_READ)
            .then(|| object.get("uri").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        let mut params = String::new();
        canonical(&Value::Object(object), &mut params);
        Some(CacheKey {
            method,
            params,
            uri,
        })
    }

    /// A fresh entry for `key` in this partition.
    pub(super) fn fresh(&self, key: &CacheKey) -> Option<RawResult> {
        self.find(key, true)
    }

    /// Any entry for `key` in this partition, fresh or not.
    pub(super) fn stale(&self, key: &CacheKey) -> Option<RawResult> {
        self.find(key, false)
    }

    fn find(&self, key: &CacheKey, fresh_only: bool) -> Option<RawResult> {
        let partition = self.partition();
        let now = Instant::now();
        let store = self.lock();
        store
            .entries
            .get(key)?
            .iter()
            .filter(|e| e.partition.as_deref().is_none_or(|p| p == partition))
            .filter(|e| !fresh_only || now < e.fresh_until)
            .max_by_key(|e| e.seq)
            .map(|e| e.raw.clone())
    }

    /// The invalidation count, taken before sending a request.
    pub(super) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Stores a complete result according to its `ttlMs` and `cacheScope`;
    /// `epoch` is [`ResponseCache::epoch`] from before it was requested.
    pub(super) fn store(&self, key: CacheKey, raw: &RawResult, epoch: u64) {
        let hints = Hints::peek(raw);
        let ttl = if self.epoch() == epoch {
            hints.ttl()
        } else {
            Duration::ZERO
        };
        if ttl.is_zero() && !self.config.serve_stale_on_error {
            return;
        }
        let size = raw.get().len();
        if size > self.config.max_bytes {
            return;
        }
        let partition = match hints.cache_scope {
            Some(CacheScope::Private) => Some(self.partition()),
            _ => None,
        };
        let now = Instant::now();
        let mut store = self.lock();
        store.seq += 1;
        let entry = Entry {
            raw: raw.clone(),
            partition,
            fresh_until: now.checked_add(ttl).unwrap_or(now),
            seq: store.seq,
        };
        // One entry per request and partition: replace the old one.
        let store = &mut *store;
        let slot = store.entries.entry(key).or_default();
        if let Some(i) = slot.iter().position(|e| e.partition == entry.partition) {
            let old = slot.swap_remove(i);
            store.bytes -= old.size();
            store.count -= 1;
        }
        store.bytes += entry.size();
        store.count += 1;
        slot.push(entry);
        while store.count > self.config.max_entries || store.bytes > self.config.max_bytes {
            evict_oldest(store);
        }
    }

    /// Marks entries stale; they stay only for stale-on-error.
    pub(super) fn invalidate(&self, what: Invalidate<'_>) {
        let now = Instant::now();
        let mut store = self.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        for (key, entries) in &mut store.entries {
            let hit = match &what {
                Invalidate::All => true,
                Invalidate::List(kind) => list_methods(*kind).contains(&key.method),
                Invalidate::Read(uri) => key.uri.as_deref().is_some_and(|u| related(u, uri)),
            };
            if hit {
                for entry in entries {
                    entry.fresh_until = entry.fresh_until.min(now);
                }
            }
        }
    }

    /// Drops the entries of one method (a list whose cursor stopped working).
    fn forget_method(&self, method: &str) {
        let mut store = self.lock();
        let store = &mut *store;
        store.entries.retain(|key, entries| {
            if key.method != method {
                return true;
            }
            for entry in entries.iter() {
                store.bytes -= entry.size();
                store.count -= 1;
            }
            false
        });
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> (usize, usize) {
        let store = self.lock();
        (store.count, store.bytes)
    }
}

fn evict_oldest(store: &mut Store) {
    let oldest = store
        .entries
        .iter()
        .flat_map(|(key, entries)| entries.iter().map(move |e| (e.seq, key)))
        .min_by_key(|(seq, _)| *seq)
        .map(|(seq, key)| (seq, key.clone()));
    let Some((seq, key)) = oldest else {
        return;
    };
    if let Some(entries) = store.entries.get_mut(&key) {
        if let Some(i) = entries.iter().position(|e| e.seq == seq) {
            let old = entries.swap_remove(i);
            store.bytes -= old.size();
            store.count -= 1;
        }
        if entries.is_empty() {
            store.entries.remove(&key);
        }
    }
}

fn list_methods(kind: ListKind) -> &'static [&'static str] {
    match kind {
        ListKind::Tools => &[methods::TOOLS_LIST],
        ListKind::Prompts => &[methods::PROMPTS_LIST],
        ListKind::Resources => &[methods::RESOURCES_LIST, methods::RESOURCES_TEMPLATES_LIST],
    }
}

/// `a` and `b` are the same resource, or one lies under the other.
fn related(a: &str, b: &str) -> bool {
    fn under(child: &str, parent: &str) -> bool {
        child
            .strip_prefix(parent)
            .is_some_and(|rest| parent.ends_with('/') || rest.starts_with('/'))
    }
    a == b || under(a, b) || under(b, a)
}

/// Writes `value` as JSON with object keys sorted.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&object[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The longest `ttlMs` honoured (one day); a longer one counts as this.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// The caching hints of a result, read without building the rest.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Hints {
    /// A number of any sign (a negative one counts as 0).
    #[serde(default)]
    ttl_ms: Option<serde_json::Number>,
    #[serde(default)]
    cache_scope: Option<CacheScope>,
}

impl Hints {
    fn peek(raw: &RawResult) -> Self {
        serde_json::from_str(raw.get()).unwrap_or_default()
    }

    fn ttl(&self) -> Duration {
        let ms = self.ttl_ms.as_ref().and_then(|n| {
            n.as_u64()
                .or_else(|| n.as_f64().filter(|f| *f > 0.0).map(|f| f as u64))
        });
        // A `ttlMs` of 1e300 is "long", not an instant past the clock's end.
        Duration::from_millis(ms.unwrap_or(0)).min(MAX_TTL)
    }
}

/// Errors a stale entry may stand in for: the server could not be reached
/// or failed, not "your request is wrong".
fn is_outage(error: &Error) -> bool {
    match error {
        Error::Timeout { .. }
        | Error::Transport { .. }
        | Error::Disconnected { .. }
        | Error::ResponseLost { .. } => true,
        Error::Server { error, .. } => error.code == codes::INTERNAL_ERROR,
        _ => false,
    }
}

impl Client {
    /// The cache key of a request, when it may be answered from the cache.
    pub(super) fn cache_key(&self, method: &str, params: Option<&Value>) -> Option<CacheKey> {
        if self.inner.session.era != Era::Modern {
            return None;
        }
        self.sync_notifications();
        self.inner.subs.cache.key(method, params)
    }

    /// Answers from the cache while fresh; otherwise sends, stores a
    /// complete answer, and on an outage serves a stale entry if allowed.
    pub(super) async fn request_cached(
        &self,
        key: CacheKey,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<RawResult> {
        let cache = &self.inner.subs.cache;
        if let Some(hit) = cache.fresh(&key) {
            tracing::trace!(server = %self.server_name(), %method, "served from cache");
            return Ok(hit);
        }
        let had_cursor = key.params.contains("\"cursor\":");
        let epoch = cache.epoch();
        match self.send_raw(method, params, options).await {
            Ok(raw) => {
                // A notification that arrived while this was in flight may
                // describe a newer state than the answer.
                self.sync_notifications();
                cache.store(key, &raw, epoch);
                Ok(raw)
            }
            Err(error) if cache.config.serve_stale_on_error && is_outage(&error) => {
                match cache.stale(&key) {
                    Some(stale) => {
                        tracing::debug!(server = %self.server_name(), %method, %error, "re-fetch failed; serving a stale cached result");
                        Ok(stale)
                    }
                    None => Err(error),
                }
            }
            Err(error) => {
                // A cursor that stopped working: every page of that list
                // is suspect.
                if had_cursor && matches!(error, Error::Server { .. }) {
                    cache.forget_method(key.method);
                }
                Err(error)
            }
        }
    }

    /// An error that says the server's definitions changed (a header
    /// mismatch, an unknown tool or prompt, params it no longer takes)
    /// makes the cached list stale, so the refresh that follows reaches
    /// the server.
    pub(super) fn note_refusal(&self, method: &str, outcome: &Result<RawResult>) {
        let Err(error) = outcome else {
            return;
        };
        let list = match (method, error.code()) {
            (_, Some(codes::HEADER_MISMATCH)) => ListKind::Tools,
            (methods::TOOLS_CALL, Some(codes::INVALID_PARAMS | codes::METHOD_NOT_FOUND)) => {
                ListKind::Tools
            }
            (methods::PROMPTS_GET, Some(codes::INVALID_PARAMS)) => ListKind::Prompts,
            _ => return,
        };
        self.inner.subs.cache.invalidate(Invalidate::List(list));
    }

    /// Forgets every cached result (the next request of each goes to the
    /// server). With stale-on-error on, the entries stay as fallbacks.
    pub fn invalidate_cache(&self) {
        self.inner.subs.cache.invalidate(Invalidate::All);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;

    fn raw(s: &str) -> RawResult {
        RawResult::from(RawValue::from_string(s.to_owned()).unwrap())
    }

    #[test]
    fn key_ignores_meta_and_key_order_and_skips_retries() {
        let cache = ResponseCache::new(CacheConfig::default());
        let a = cache
            .key(
                "resources/read",
                Some(&serde_json::json!({"uri": "x", "b": 1, "_meta": {"progressToken": 3}})),
            )
            .unwrap();
        let b = cache
            .key(
                "resources/read",
                Some(&serde_json::json!({"b": 1, "uri": "x"})),
            )
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.uri.as_deref(), Some("x"));
        assert!(cache.key("tools/call", None).is_none());
        assert!(
            cache
                .key(
                    "resources/read",
                    Some(&serde_json::json!({"uri": "x", "requestState": "s"}))
                )
                .is_none()
        );
        assert!(
            cache
                .key(
                    "resources/read",
                    Some(&serde_json::json!({"uri": "x", "inputResponses": {}}))
                )
                .is_none()
        );
        let page2 = cache
            .key("tools/list", Some(&serde_json::json!({"cursor": "2"})))
            .unwrap();
        assert_ne!(page2, cache.key("tools/list", None).unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_huge_ttl_is_a_day_not_a_panic() {
        let cache = ResponseCache::new(CacheConfig::default());
        let key = cache
            .key("resources/read", Some(&serde_json::json!({"uri": "x"})))
            .unwrap();
        for ttl in ["1e300", "18446744073709551615", "1.7976931348623157e308"] {
            cache.store(
                key.clone(),
                &raw(&format!(r#"{{"contents":[],"ttlMs":{ttl}}}"#)),
                0,
            );
            assert!(cache.fresh(&key).is_some(), "{ttl}");
        }
        tokio::time::advance(MAX_TTL + Duration::from_secs(1)).await;
        assert!(cache.fresh(&key).is_none(), "stale after a day");
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_by_entries_and_bytes_oldest_first() {
        let cache = ResponseCache::new(CacheConfig {
            max_entries: 2,
            max_bytes: 100,
            ..CacheConfig::default()
        });
        let key = |uri: &str| {
            cache
                .key("resources/read", Some(&serde_json::json!({"uri": uri})))
                .unwrap()
        };
        let result = raw(r#"{"contents":[],"ttlMs":1000}"#);
        cache.store(key("a"), &result, 0);
        cache.store(key("b"), &result, 0);
        cache.store(key("c"), &result, 0);
        assert_eq!(cache.len().0, 2);
        assert!(cache.fresh(&key("a")).is_none(), "oldest evicted");
        assert!(cache.fresh(&key("c")).is_some());
        // Too big to store at all.
        let big = raw(&format!(
            r#"{{"contents":[],"ttlMs":1000,"x":"{}"}}"#,
            "y".repeat(100)
        ));
        cache.store(key("d"), &big, 0);
        assert!(cache.fresh(&key("d")).is_none());
        // Two that do not fit together: the older goes.
        let half = raw(&format!(r#"{{"ttlMs":1000,"x":"{}"}}"#, "y".repeat(40)));
        cache.store(key("e"), &half, 0);
        cache.store(key("f"), &half, 0);
        assert!(cache.len().1 <= 100);
        assert!(cache.fresh(&key("f")).is_some());
        assert!(cache.fresh(&key("c")).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn zero_negative_or_absent_ttl_is_not_stored() {
        let cache = ResponseCache::new(CacheConfig::default());
        let key = cache.key("tools/list", None).unwrap();
        for body in [
            r#"{"tools":[]}"#,
            r#"{"tools":[],"ttlMs":0}"#,
            r#"{"tools":[],"ttlMs":-5}"#,
        ] {
            cache.store(key.clone(), &raw(body), 0);
            assert!(cache.fresh(&key).is_none(), "{body}");
        }
        assert_eq!(cache.len().0, 0);
    }

    mod scripted {
        use std::sync::Mutex;

        use serde_json::json;

        use super::super::super::subscriptions::script::*;
        use crate::Client;
        use crate::error::Error;
        use tokio::time::{Duration, advance};

        fn tools(ttl: u64) -> serde_json::Value {
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "ttlMs": ttl, "cacheScope": "public"})
        }

        fn contents(text: &str, ttl: u64, scope: &str) -> serde_json::Value {
            json!({"contents": [{"uri": "file:///a", "text": text}], "ttlMs": ttl, "cacheScope": scope})
        }

        #[tokio::test(start_paused = true)]
        async fn fresh_results_are_served_without_a_round_trip_until_the_ttl_ends() {
            let (client, mut server) = connect(Client::builder()).await;
            let (first, request) =
                tokio::join!(client.list_tools(), answer(&mut server, tools(1000)));
            assert_eq!(first.unwrap().len(), 1);
            assert_eq!(request["method"], "tools/list");
            // Within the TTL: nothing on the wire.
            advance(Duration::from_millis(500)).await;
            assert_eq!(client.list_tools().await.unwrap().len(), 1);
            assert!(quiet(&mut server).await);
            // After it: asked again.
            advance(Duration::from_millis(600)).await;
            let (again, request) = tokio::join!(client.list_tools(), answer(&mut server, tools(0)));
            assert_eq!(again.unwrap().len(), 1);
            assert_eq!(request["method"], "tools/list");
            // ttlMs 0: never served from the cache.
            let (_, request) = tokio::join!(client.list_tools(), answer(&mut server, tools(0)));
            assert_eq!(request["method"], "tools/list");
            // A bypass.
            let (_, _) = tokio::join!(client.list_tools(), answer(&mut server, tools(1000)));
            client.invalidate_cache();
            let (_, request) = tokio::join!(client.list_tools(), answer(&mut server, tools(1000)));
            assert_eq!(request["method"], "tools/list");
        }

        #[tokio::test(start_paused = true)]
        async fn private_results_stay_in_their_authorization_context() {
            let context = std::sync::Arc::new(Mutex::new("alice".to_owned()));
            let current = context.clone();
            let builder =
                Client::builder().cache_partition_fn(move || current.lock().unwrap().clone());
            let (client, mut server) = connect(builder).await;
            let (read, _) = tokio::join!(
                client.read_resource("file:///a"),
                answer(&mut server, contents("alice's", 10_000, "private"))
            );
            assert_eq!(read.unwrap().contents.len(), 1);
            let (_, _) = tokio::join!(client.list_tools(), answer(&mut server, tools(10_000)));
            client.read_resource("file:///a").await.unwrap();
            assert!(quiet(&mut server).await, "same context: cached");

            *context.lock().unwrap() = "bob".into();
            let (_, request) = tokio::join!(
                client.read_resource("file:///a"),
                answer(&mut server, contents("bob's", 10_000, "private"))
            );
            assert_eq!(
                request["method"], "resources/read",
                "another context: not shared"
            );
            // Public results are shared across contexts.
            client.list_tools().await.unwrap();
            assert!(quiet(&mut server).await);

            *context.lock().unwrap() = "alice".into();
            let read = client.read_resource("file:///a").await.unwrap();
            assert!(quiet(&mut server).await);
            assert_eq!(
                serde_json::to_value(&read.contents[0]).unwrap()["text"],
                "alice's"
            );
        }

        #[tokio::test(start_paused = true)]
        async fn notifications_invalidate_the_matching_entries() {
            let (client, mut server) = connect(Client::builder()).await;
            // To wait until the client has read each notification.
            let mut events = client.events();
            let (_, _) = tokio::join!(client.list_tools(), answer(&mut server, tools(60_000)));
            let (_, _) = tokio::join!(
                client.read_resource("file:///a"),
                answer(&mut server, contents("1", 60_000, "public"))
            );
            let (_, _) = tokio::join!(
                client.read_resource("file:///b"),
                answer(&mut server, contents("1", 60_000, "public"))
            );

            notify(&server, "notifications/tools/list_changed", json!({})).await;
            events.next().await.unwrap();
            let (_, request) =
                tokio::join!(client.list_tools(), answer(&mut server, tools(60_000)));
            assert_eq!(
                request["method"], "tools/list",
                "list_changed: fetched again"
            );
            client.read_resource("file:///a").await.unwrap();
            assert!(
                quiet(&mut server).await,
                "reads are untouched by a tools change"
            );

            notify(
                &server,
                "notifications/resources/updated",
                json!({"uri": "file:///a"}),
            )
            .await;
            events.next().await.unwrap();
            let (_, request) = tokio::join!(
                client.read_resource("file:///a"),
                answer(&mut server, contents("2", 60_000, "public"))
            );
            assert_eq!(request["params"]["uri"], "file:///a");
            client.read_resource("file:///b").await.unwrap();
            client.list_tools().await.unwrap();
            assert!(
                quiet(&mut server).await,
                "only that resource was invalidated"
            );
        }

        #[tokio::test(start_paused = true)]
        async fn stale_results_stand_in_for_errors_only_when_enabled() {
            for enabled in [false, true] {
                let (client, mut server) =
                    connect(Client::builder().serve_stale_on_error(enabled)).await;
                let (_, _) = tokio::join!(
                    client.read_resource("file:///a"),
                    answer(&mut server, contents("old", 1000, "public"))
                );
                advance(Duration::from_secs(2)).await;
                let script = async {
                    let request = recv(&mut server).await;
                    fail(&server, &request, -32603).await;
                };
                let (read, ()) = tokio::join!(client.read_resource("file:///a"), script);
                match (enabled, read) {
                    (true, Ok(read)) => assert_eq!(
                        serde_json::to_value(&read.contents[0]).unwrap()["text"],
                        "old"
                    ),
                    (false, Err(error)) => assert_eq!(error.code(), Some(-32603)),
                    (enabled, other) => panic!("stale-on-error {enabled}: {other:?}"),
                }
                // A refusal is an answer, never papered over.
                let script = async {
                    let request = recv(&mut server).await;
                    fail(&server, &request, -32602).await;
                };
                let (read, ()) = tokio::join!(client.read_resource("file:///a"), script);
                assert!(matches!(read, Err(Error::Server { .. })));
            }
        }

        #[tokio::test(start_paused = true)]
        async fn a_header_mismatch_refetches_a_cached_tool_list() {
            let (client, mut server) = connect(Client::builder()).await;
            let (_, _) = tokio::join!(client.list_tools(), answer(&mut server, tools(60_000)));
            let script = async {
                let call = recv(&mut server).await;
                assert_eq!(call["method"], "tools/call");
                fail(&server, &call, -32020).await;
                let list = answer(&mut server, tools(60_000)).await;
                assert_eq!(list["method"], "tools/list", "not answered from the cache");
                let retry = answer(&mut server, json!({"content": []})).await;
                assert_eq!(retry["method"], "tools/call");
            };
            let (result, ()) = tokio::join!(client.call_tool("a", None), script);
            result.unwrap();
        }

        #[tokio::test(start_paused = true)]
        async fn a_cursor_the_server_refuses_drops_every_page_of_that_list() {
            let (client, mut server) = connect(Client::builder()).await;
            let page = |next: Option<&str>| {
                let mut page = tools(60_000);
                if let Some(next) = next {
                    page["nextCursor"] = json!(next);
                }
                page
            };
            let script = async {
                answer(&mut server, page(Some("2"))).await;
                answer(&mut server, page(None)).await;
            };
            let (listed, ()) = tokio::join!(client.list_tools(), script);
            assert_eq!(listed.unwrap().len(), 2);
            client.list_tools().await.unwrap();
            assert!(quiet(&mut server).await, "both pages cached");

            // The second page expires first and its cursor is refused.
            let cursor_key = client
                .inner
                .subs
                .cache
                .key("tools/list", Some(&json!({"cursor": "2"})))
                .unwrap();
            {
                let mut store = client.inner.subs.cache.lock();
                for entry in store.entries.get_mut(&cursor_key).unwrap() {
                    entry.fresh_until = tokio::time::Instant::now();
                }
            }
            let script = async {
                let request = recv(&mut server).await;
                assert_eq!(request["params"]["cursor"], "2");
                fail(&server, &request, -32602).await;
            };
            let (listed, ()) = tokio::join!(client.list_tools(), script);
            assert!(listed.is_err());
            let (_, first) = tokio::join!(client.list_tools(), answer(&mut server, page(None)));
            assert!(
                first["params"].get("cursor").is_none(),
                "the first page is fetched again"
            );
        }

        #[tokio::test(start_paused = true)]
        async fn multi_round_trip_answers_are_never_cached() {
            let (client, mut server) = connect(Client::builder()).await;
            let script = async {
                let first = answer(
                    &mut server,
                    json!({"resultType": "input_required", "requestState": "s"}),
                )
                .await;
                assert!(first["params"].get("requestState").is_none());
                let retry = answer(&mut server, contents("x", 60_000, "public")).await;
                assert_eq!(retry["params"]["requestState"], "s");
            };
            let (read, ()) = tokio::join!(client.read_resource("file:///a"), script);
            read.unwrap();
            let (_, request) = tokio::join!(
                client.read_resource("file:///a"),
                answer(&mut server, contents("x", 60_000, "public"))
            );
            assert_eq!(
                request["method"], "resources/read",
                "the retry's answer was not stored"
            );
            assert!(request["params"].get("requestState").is_none());
            // A plain answer is.
            client.read_resource("file:///a").await.unwrap();
            assert!(quiet(&mut server).await);
        }
    }

    #[test]
    fn resource_relations() {
        assert!(related("file:///a", "file:///a"));
        assert!(related("file:///a", "file:///a/b"));
        assert!(related("file:///a/b", "file:///a"));
        assert!(!related("file:///a", "file:///ab"));
    }
}
