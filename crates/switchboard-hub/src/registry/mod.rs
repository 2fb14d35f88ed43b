//! A typed client of an MCP registry: the official one
//! (<https://registry.modelcontextprotocol.io>, API `/v0.1`) or a private
//! one speaking the same API.
//!
//! [`RegistryClient::search`] lists servers (`GET /v0.1/servers`, `search`,
//! `version=latest`, deleted ones left out), page by page on the
//! registry's opaque cursor; [`RegistryClient::versions`] and
//! [`RegistryClient::version`] read one server's versions. The documents
//! are [`ServerResponse`]s: the `server.json` a publisher wrote
//! ([`ServerDetail`]: packages on npm, PyPI, OCI, NuGet or as `.mcpb`
//! bundles, and remote endpoints) and the registry's own metadata
//! ([`Official`]: active, deprecated or deleted).
//!
//! A registry is someone else's server and is treated as hostile: every
//! answer is bounded ([`MAX_ANSWER`] bytes a page, [`MAX_PAGES`] pages, a
//! cursor seen before ends the listing with an error), nothing it says is
//! run or written by this module, and callers show its text sanitised.
//! Answers are kept in memory, and on disk with
//! [`RegistryClient::with_cache_dir`], as the registry's `Cache-Control:
//! max-age` and `ETag` allow; [`RegistryClient::download_bundle`] fetches
//! a package's `.mcpb` bundle and checks its `fileSha256` ([`fetch`]).

pub mod fetch;
mod plan;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use plan::{Choice, Needed, Plan, Planned, plan, usable};

/// The official registry.
pub const OFFICIAL: &str = "https://registry.modelcontextprotocol.io";

/// The largest answer read, in bytes (a page of a listing, or one
/// version): far more than any real page, little enough that a hostile
/// registry cannot exhaust memory.
pub const MAX_ANSWER: usize = 4 * 1024 * 1024;

/// The most pages one listing reads.
pub const MAX_PAGES: usize = 50;

/// How long a request may take.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// What went wrong talking to a registry. `Display` names the registry
/// and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The registry's URL is not an `http(s)` URL.
    #[error("the registry URL `{url}` cannot be used: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The registry could not be reached or did not answer in time.
    #[error("the registry {url} could not be reached: {reason}")]
    Connect {
        /// The registry.
        url: String,
        /// Why.
        reason: String,
    },
    /// The registry answered with an error status.
    #[error("the registry {url} answered HTTP {status}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Status {
        /// The request's URL.
        url: String,
        /// The status code.
        status: u16,
        /// The answer's `error`, if any.
        message: Option<String>,
    },
    /// No such server, or no such version of it.
    #[error("the registry {url} has no server `{name}`{}", version.as_deref().map(|v| format!(" of version {v}")).unwrap_or_default())]
    NotFound {
        /// The registry.
        url: String,
        /// The server's name.
        name: String,
        /// The version asked for.
        version: Option<String>,
    },
    /// An answer larger than [`MAX_ANSWER`].
    #[error(
        "the registry {url} answered more than {limit} bytes; a registry's page is far smaller — it is not used"
    )]
    TooLarge {
        /// The request's URL.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// An answer that is not the API's JSON.
    #[error(
        "the registry {url} answered with something that is not the registry API's JSON: {reason}"
    )]
    Json {
        /// The request's URL.
        url: String,
        /// The parser's words.
        reason: String,
    },
    /// A package's bundle that cannot be used.
    #[error("the bundle {url} is not used: {reason}")]
    Bundle {
        /// Where the registry says it is.
        url: String,
        /// Why.
        reason: String,
    },
    /// A listing that does not end: a cursor seen before, or more than
    /// [`MAX_PAGES`] pages.
    #[error("the registry {url}'s listing does not end ({reason}); stopped after {pages} pages")]
    Endless {
        /// The registry.
        url: String,
        /// Why it was stopped.
        reason: &'static str,
        /// Pages read.
        pages: usize,
    },
}

/// One server version as the registry answers it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerResponse {
    /// The publisher's `server.json`.
    pub server: ServerDetail,
    /// The registry's metadata.
    #[serde(rename = "_meta", default)]
    pub meta: ResponseMeta,
}

impl ServerResponse {
    /// The registry's status: `active` (also when it says none),
    /// `deprecated` or `deleted`.
    pub fn status(&self) -> &str {
        self.meta
            .official
            .as_ref()
            .and_then(|o| o.status.as_deref())
            .unwrap_or("active")
    }

    /// The registry's message about the status, if any.
    pub fn status_message(&self) -> Option<&str> {
        self.meta
            .official
            .as_ref()
            .and_then(|o| o.status_message.as_deref())
    }
}

/// The registry's metadata on an answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseMeta {
    /// The official registry's.
    #[serde(
        rename = "io.modelcontextprotocol.registry/official",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub official: Option<Official>,
}

/// The official registry's metadata on one version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Official {
    /// `active`, `deprecated` or `deleted`.
    pub status: Option<String>,
    /// Why (a deprecation's replacement, say).
    pub status_message: Option<String>,
    /// When it was first published (RFC 3339).
    pub published_at: Option<String>,
    /// When it last changed (RFC 3339).
    pub updated_at: Option<String>,
    /// Whether this is the server's latest version.
    pub is_latest: Option<bool>,
}

/// A publisher's `server.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerDetail {
    /// Reverse-DNS name, `namespace/name`.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Its source repository, as the publisher describes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<Value>,
    /// Packages that run it locally.
    #[serde(default)]
    pub packages: Vec<Package>,
    /// Endpoints that serve it remotely.
    #[serde(default)]
    pub remotes: Vec<Transport>,
}

/// A package that runs the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Package {
    /// `npm`, `pypi`, `oci`, `nuget`, `mcpb` …
    pub registry_type: String,
    /// The package registry's URL, if not the usual one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_base_url: Option<String>,
    /// The package's name, or (`mcpb`) the bundle's URL.
    pub identifier: String,
    /// Its exact version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The SHA-256 (hex) of the package file, to check before running it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sha256: Option<String>,
    /// The runtime to run it with (`npx`, `uvx`, `docker`, `dnx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_hint: Option<String>,
    /// How it speaks MCP once running.
    #[serde(default)]
    pub transport: Transport,
    /// Arguments to the runtime.
    #[serde(default)]
    pub runtime_arguments: Vec<Argument>,
    /// Arguments to the package.
    #[serde(default)]
    pub package_arguments: Vec<Argument>,
    /// Its environment variables.
    #[serde(default)]
    pub environment_variables: Vec<Input>,
}

/// A transport: `stdio`, or `streamable-http` / `sse` with a URL.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Transport {
    /// `stdio`, `streamable-http` or `sse`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The endpoint (a template: `{name}` stands for an input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers to send.
    #[serde(default)]
    pub headers: Vec<Input>,
    /// The inputs the URL's `{names}` stand for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<Map<String, Value>>,
}

/// A command-line argument: `positional` or `named` (`--flag value`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Argument {
    /// `positional` or `named`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// A named argument's flag, dashes included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A positional argument's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_hint: Option<String>,
    /// Its input.
    #[serde(flatten)]
    pub input: InputFields,
}

/// An environment variable or header: a name and its input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Input {
    /// The variable's or header's name.
    #[serde(default)]
    pub name: String,
    /// Its input.
    #[serde(flatten)]
    pub input: InputFields,
}

/// What a user is asked for, or given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InputFields {
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A fixed value (`{name}`s stand for variables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The value when the user gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub is_required: bool,
    /// Whether it is a secret (never written literally).
    #[serde(default)]
    pub is_secret: bool,
    /// Whether the argument may repeat.
    #[serde(default)]
    pub is_repeated: bool,
    /// `string`, `number`, `boolean` or `filepath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The values allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
}

#[derive(Deserialize)]
struct ServerList {
    servers: Vec<ServerResponse>,
    #[serde(default)]
    metadata: Option<ListMetadata>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListMetadata {
    #[serde(default)]
    next_cursor: Option<String>,
}

/// An answer kept until its `max-age` ends, and its `ETag`.
struct Cached {
    body: Vec<u8>,
    fresh_until: Instant,
    etag: Option<String>,
}

/// A registry. Cheap to share (`Arc`); answers are cached in memory.
pub struct RegistryClient {
    base: reqwest::Url,
    http: reqwest::Client,
    cache: Mutex<HashMap<String, Cached>>,
    disk: Option<fetch::DiskCache>,
    max_bundle: u64,
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClient")
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

impl RegistryClient {
    /// A client of the registry at `base` (its root: `/v0.1/…` is added).
    ///
    /// # Errors
    /// [`RegistryError::Url`] for a URL that is not `http(s)`, or an HTTP
    /// client that cannot be set up.
    pub fn new(base: &str) -> Result<Self, RegistryError> {
        let bad = |reason: String| RegistryError::Url {
            url: base.to_owned(),
            reason,
        };
        let mut parsed = reqwest::Url::parse(base).map_err(|e| bad(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(bad(format!(
                "its scheme is `{}`, not http or https",
                parsed.scheme()
            )));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad("it holds a user name or password".into()));
        }
        parsed.set_query(None);
        parsed.set_fragment(None);
        let http = switchboard::transport::http::reqwest_builder()
            .map_err(|e| bad(e.to_string()))?
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            base: parsed,
            http,
            cache: Mutex::default(),
            disk: None,
            max_bundle: fetch::MAX_BUNDLE,
        })
    }

    /// The largest bundle [`RegistryClient::download_bundle`] takes
    /// (default [`fetch::MAX_BUNDLE`]).
    #[must_use]
    pub fn with_max_bundle(mut self, bytes: u64) -> Self {
        self.max_bundle = bytes;
        self
    }

    /// Keeps answers in `dir` too (made owner-only), so the next run reuses
    /// them while the registry's `max-age` lasts and revalidates them by
    /// `ETag` after.
    #[must_use]
    pub fn with_cache_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.disk = Some(fetch::DiskCache::new(dir.into()));
        self
    }

    /// The registry's root URL.
    pub fn url(&self) -> &str {
        self.base.as_str()
    }

    /// The latest version of every server whose name holds `query`
    /// (every server without one), deleted ones left out, at most `max`.
    ///
    /// # Errors
    /// [`RegistryError`]: unreachable, an error status, an answer too
    /// large or not the API's, a listing that does not end.
    pub async fn search(
        &self,
        query: Option<&str>,
        max: usize,
    ) -> Result<Vec<ServerResponse>, RegistryError> {
        let mut found = Vec::new();
        let mut cursors = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        for page in 1..=MAX_PAGES {
            let mut url = self.endpoint(&["v0.1", "servers"]);
            {
                let mut pairs = url.query_pairs_mut();
                pairs.append_pair("version", "latest");
                pairs.append_pair("limit", "100");
                if let Some(query) = query.filter(|q| !q.is_empty()) {
                    pairs.append_pair("search", query);
                }
                if let Some(cursor) = &cursor {
                    pairs.append_pair("cursor", cursor);
                }
            }
            let body = self.get(&url).await?.ok_or_else(|| RegistryError::Status {
                url: url.to_string(),
                status: 404,
                message: None,
            })?;
            let list: ServerList = parse(&url, &body)?;
            found.extend(list.servers.into_iter().filter(|s| s.status() != "deleted"));
            if found.len() >= max {
                found.truncate(max);
                return Ok(found);
            }
            match list
                .metadata
                .and_then(|m| m.next_cursor)
                .filter(|c| !c.is_empty())
            {
                None => return Ok(found),
                Some(next) if !cursors.insert(next.clone()) => {
                    return Err(RegistryError::Endless {
                        url: self.url().to_owned(),
                        reason: "it gave a cursor it gave before",
                        pages: page,
                    });
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(RegistryError::Endless {
            url: self.url().to_owned(),
            reason: "more pages than a listing has",
            pages: MAX_PAGES,
        })
    }

    /// Every version of `name`, newest first (deleted ones too, marked).
    ///
    /// # Errors
    /// [`RegistryError::NotFound`] for a name the registry does not have;
    /// as [`search`](Self::search) otherwise.
    pub async fn versions(&self, name: &str) -> Result<Vec<ServerResponse>, RegistryError> {
        let mut url = self.endpoint(&["v0.1", "servers", name, "versions"]);
        url.query_pairs_mut().append_pair("include_deleted", "true");
        let Some(body) = self.get(&url).await? else {
            return Err(self.not_found(name, None));
        };
        Ok(parse::<ServerList>(&url, &body)?.servers)
    }

    /// Version `version` of `name` (`latest`: the latest).
    ///
    /// # Errors
    /// [`RegistryError::NotFound`] when there is no such version; as
    /// [`search`](Self::search) otherwise.
    pub async fn version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<ServerResponse, RegistryError> {
        let mut url = self.endpoint(&["v0.1", "servers", name, "versions", version]);
        url.query_pairs_mut().append_pair("include_deleted", "true");
        let Some(body) = self.get(&url).await? else {
            let asked = (version != "latest").then(|| version.to_owned());
            return Err(self.not_found(name, asked));
        };
        parse(&url, &body)
    }

    fn not_found(&self, name: &str, version: Option<String>) -> RegistryError {
        RegistryError::NotFound {
            url: self.url().to_owned(),
            name: name.to_owned(),
            version,
        }
    }

    /// `base` with `segments` appended, each percent-encoded (a server's
    /// name holds a `/`, which must reach the registry as `%2F`).
    fn endpoint(&self, segments: &[&str]) -> reqwest::Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty();
            for segment in segments {
                path.push(segment);
            }
        }
        url
    }

    /// The body of `url` (`None`: 404), from the cache while fresh.
    async fn get(&self, url: &reqwest::Url) -> Result<Option<Vec<u8>>, RegistryError> {
        let key = url.to_string();
        if let Some(disk) = &self.disk {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if !cache.contains_key(&key)
                && let Some((entry, left)) = disk.read(&key)
            {
                cache.insert(
                    key.clone(),
                    Cached {
                        body: entry.body.into_bytes(),
                        fresh_until: Instant::now() + left,
                        etag: entry.etag,
                    },
                );
            }
        }
        let etag = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            match cache.get(&key) {
                Some(hit) if hit.fresh_until > Instant::now() => return Ok(Some(hit.body.clone())),
                Some(hit) => hit.etag.clone(),
                None => None,
            }
        };
        let mut request = self
            .http
            .get(url.clone())
            .header("accept", "application/json");
        if let Some(etag) = &etag {
            request = request.header("if-none-match", etag);
        }
        let mut response = request.send().await.map_err(|e| RegistryError::Connect {
            url: self.url().to_owned(),
            reason: e.without_url().to_string(),
        })?;
        let status = response.status().as_u16();
        let max_age = max_age(response.headers());
        let new_etag = response
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if status == 304 {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(hit) = cache.get_mut(&key) {
                hit.fresh_until = Instant::now() + max_age;
                if let Some(disk) = &self.disk {
                    disk.write(&key, &hit.body, max_age, hit.etag.as_deref());
                }
                return Ok(Some(hit.body.clone()));
            }
        }
        if status == 404 {
            return Ok(None);
        }
        if response
            .content_length()
            .is_some_and(|l| l > MAX_ANSWER as u64)
        {
            return Err(RegistryError::TooLarge {
                url: key,
                limit: MAX_ANSWER,
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| RegistryError::Connect {
            url: self.url().to_owned(),
            reason: e.without_url().to_string(),
        })? {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(RegistryError::TooLarge {
                    url: key,
                    limit: MAX_ANSWER,
                });
            }
            body.extend_from_slice(&chunk);
        }
        if !(200..300).contains(&status) {
            let message = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v["error"].as_str().map(|m| m.chars().take(300).collect()));
            return Err(RegistryError::Status {
                url: key,
                status,
                message,
            });
        }
        if !max_age.is_zero() || new_etag.is_some() {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() > 256 {
                cache.clear();
            }
            if let Some(disk) = &self.disk {
                disk.write(&key, &body, max_age, new_etag.as_deref());
            }
            cache.insert(
                key,
                Cached {
                    body: body.clone(),
                    fresh_until: Instant::now() + max_age,
                    etag: new_etag,
                },
            );
        }
        Ok(Some(body))
    }
}

/// `Cache-Control: max-age=N` (at most an hour; `no-store`/`no-cache`:
/// none).
fn max_age(headers: &reqwest::header::HeaderMap) -> Duration {
    let Some(control) = headers.get("cache-control").and_then(|v| v.to_str().ok()) else {
        return Duration::ZERO;
    };
    let mut age = Duration::ZERO;
    for directive in control.split(',').map(str::trim) {
        if directive.eq_ignore_ascii_case("no-store") || directive.eq_ignore_ascii_case("no-cache")
        {
            return Duration::ZERO;
        }
        if let Some(seconds) = directive
            .strip_prefix("max-age=")
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            age = Duration::from_secs(seconds.min(3600));
        }
    }
    age
}

fn parse<T: serde::de::DeserializeOwned>(
    url: &reqwest::Url,
    body: &[u8],
) -> Result<T, RegistryError> {
    serde_json::from_slice(body).map_err(|e| RegistryError::Json {
        url: url.to_string(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_encoded_segment_and_bad_urls_are_refused() {
        let client = RegistryClient::new("https://registry.example/").unwrap();
        let url = client.endpoint(&["v0.1", "servers", "io.github.x/y", "versions", "1.0.0+b"]);
        assert_eq!(
            url.as_str(),
            "https://registry.example/v0.1/servers/io.github.x%2Fy/versions/1.0.0+b"
        );
        for bad in ["ftp://r.example", "not a url", "https://user:pw@r.example"] {
            assert!(RegistryClient::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn documents_read_as_the_api_writes_them() {
        let doc: ServerResponse = serde_json::from_value(serde_json::json!({
            "server": {
                "name": "io.github.x/y", "description": "d", "version": "1.2.3",
                "packages": [{
                    "registryType": "npm", "identifier": "@x/y", "version": "1.2.3",
                    "runtimeHint": "npx", "transport": {"type": "stdio"},
                    "packageArguments": [{"type": "positional", "valueHint": "dir", "isRequired": true}],
                    "environmentVariables": [{"name": "TOKEN", "isSecret": true, "description": "t"}]
                }],
                "remotes": [{"type": "streamable-http", "url": "https://x.example/mcp",
                             "headers": [{"name": "Authorization", "value": "Bearer {key}", "isSecret": true}]}]
            },
            "_meta": {"io.modelcontextprotocol.registry/official": {
                "status": "deprecated", "statusMessage": "use z", "isLatest": true}}
        }))
        .unwrap();
        assert_eq!(doc.status(), "deprecated");
        assert_eq!(doc.status_message(), Some("use z"));
        let package = &doc.server.packages[0];
        assert_eq!(
            package.package_arguments[0].value_hint.as_deref(),
            Some("dir")
        );
        assert!(package.environment_variables[0].input.is_secret);
        assert_eq!(doc.server.remotes[0].headers[0].name, "Authorization");
    }
}
