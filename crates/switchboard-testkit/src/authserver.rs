//! A built-in OAuth 2.1 authorization server and bearer-token checks for
//! the HTTP test server (`--auth`, [`ServerConfig::with_auth`]).
//!
//! One file: every endpoint works on the same issued codes, clients and
//! tokens; it is test equipment.
//!
//! Everything runs in the test server's own axum app, on its port, so a
//! client test needs nothing but loopback HTTP:
//! - protected resource metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource/mcp` (and at the root form);
//! - authorization server metadata (RFC 8414) at
//!   `/.well-known/oauth-authorization-server` (with `--auth-issuer-suffix X`
//!   the issuer is `<base>/X` and its metadata lives at
//!   `/.well-known/oauth-authorization-server/X`);
//! - dynamic client registration (RFC 7591) at `/register`, an
//!   auto-approving `/authorize` (PKCE S256, RFC 9207 `iss`; the user who
//!   approves is its `login_hint`, else `user`), `/token`
//!   (`authorization_code`, rotating `refresh_token`, `client_credentials`);
//! - `/auth/stats`: counters a test uses to prove a refresh happened, and
//!   that no rotated refresh token was presented again; and the latest
//!   tool calls with the user whose token carried each (`calls`);
//! - `POST /auth/expire`, which ends every access token issued so far;
//! - `/jwks` (the metadata's `jwks_uri`) and `POST /auth/mint`, which signs
//!   any token a test asks for (`crate::jwt_issuer`).
//!
//! Access tokens are JWTs (ES256, `sub` the user, `aud` the resource asked
//! for) that are also kept in memory: the test server checks them by
//! lookup, a resource of its own by signature. The MCP endpoints then
//! require `Authorization: Bearer <access token>` (401 otherwise) with the
//! `mcp:read` scope (403 `insufficient_scope` otherwise); the `admin_echo`
//! tool also needs `mcp:admin` (403 `insufficient_scope` naming only that
//! scope, so a client must ask for the union itself) and then behaves like
//! `echo`.
//!
//! Refresh tokens rotate on every use. A rotated one presented again is
//! refused, counted (`refresh_reused`), and its whole family — every token
//! descended from the same authorization — is revoked (RFC 9700 §4.14.2),
//! so a client that loses a rotated token finds out.
//!
//! [`ServerConfig::with_auth`]: crate::ServerConfig::with_auth

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use switchboard_testserver::auth::{base_url, issuer};
use switchboard_testserver::{AuthConfig, AuthQuirk};

use crate::jwt_issuer::{Forgery, Signer, merged, now_secs};

/// The scope every MCP request needs.
pub const SCOPE_READ: &str = "mcp:read";
/// The extra scope the `admin_echo` tool needs (step-up).
pub const SCOPE_ADMIN: &str = "mcp:admin";
/// The tool that needs [`SCOPE_ADMIN`]; it answers like `echo`.
pub const ADMIN_TOOL: &str = "admin_echo";

/// Scopes the protected resource knows (`offline_access` is the
/// authorization server's business, not the resource's).
const RESOURCE_SCOPES: [&str; 2] = [SCOPE_READ, SCOPE_ADMIN];
/// How long an authorization code can be redeemed.
const CODE_TTL: Duration = Duration::from_secs(60);
/// Largest accepted body on the authorization server endpoints.
const AUTH_BODY_LIMIT: usize = 64 << 10;
/// Most clients, codes and tokens kept at once; beyond that registering or
/// issuing fails (a runaway test, not a real load).
const MAX_ENTRIES: usize = 100_000;
/// The refresh-token family [`AuthServer::issue`] replaces by a new one.
const NEW_FAMILY: u64 = 0;

// ---------------------------------------------------------------------------
// State

#[derive(Debug)]
struct Client {
    /// `None` for a public client (`token_endpoint_auth_method` `none`).
    secret: Option<String>,
    auth_method: AuthMethod,
    redirect_uris: Vec<String>,
    grant_types: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthMethod {
    None,
    Basic,
    Post,
}

impl AuthMethod {
    fn parse(s: &str) -> Option<AuthMethod> {
        match s {
            "none" => Some(AuthMethod::None),
            "client_secret_basic" => Some(AuthMethod::Basic),
            "client_secret_post" => Some(AuthMethod::Post),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
        }
    }
}

#[derive(Debug)]
struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
    scopes: Vec<String>,
    expires: Instant,
    /// The user who approved (`login_hint`, else `user`).
    sub: String,
}

#[derive(Debug)]
struct AccessToken {
    scopes: Vec<String>,
    resource: String,
    expires: Instant,
    sub: String,
}

#[derive(Debug)]
struct RefreshToken {
    client_id: String,
    resource: String,
    scopes: Vec<String>,
    sub: String,
    /// Every refresh token descended from one authorization shares this.
    family: u64,
}

#[derive(Debug, Default)]
struct Store {
    clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    access: HashMap<String, AccessToken>,
    refresh: HashMap<String, RefreshToken>,
    /// Rotated-away refresh tokens and their family, to recognise reuse.
    rotated: HashMap<String, u64>,
    next_family: u64,
}

#[derive(Debug, Default)]
struct Stats {
    clients_registered: AtomicU64,
    codes_issued: AtomicU64,
    /// Access tokens issued by any grant.
    tokens_issued: AtomicU64,
    /// Successful `refresh_token` grants.
    refreshed: AtomicU64,
    /// Rotated refresh tokens presented again (each revoked its family).
    refresh_reused: AtomicU64,
    /// `client_credentials` grants.
    client_credentials: AtomicU64,
    /// Requests to the MCP endpoints refused with 401 or 403.
    rejected: AtomicU64,
    /// Token introspections answered (RFC 7662).
    introspected: AtomicU64,
}

/// The authorization server and the resource server's token checks.
#[derive(Debug)]
pub(crate) struct AuthServer {
    config: AuthConfig,
    /// `http://IP:PORT` of the test server.
    base: String,
    issuer: String,
    /// The protected resource: `<base>/mcp`.
    resource: String,
    store: Mutex<Store>,
    stats: Stats,
    /// Signs the access tokens.
    signer: Signer,
    /// The latest tool calls and whose token carried each (`note_calls`).
    calls_seen: Mutex<Vec<Value>>,
}

/// How many tool calls `/stats` remembers.
const MAX_CALLS_SEEN: usize = 1_000;

/// The user a login approves when the authorization request names none
/// (`login_hint`).
const DEFAULT_SUB: &str = "user";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AuthServer {
    pub(crate) fn new(config: AuthConfig, addr: SocketAddr) -> AuthServer {
        let base = base_url(addr);
        AuthServer {
            issuer: issuer(&base, config.issuer_suffix.as_deref()),
            resource: format!("{base}/mcp"),
            base,
            config,
            store: Mutex::new(Store::default()),
            stats: Stats::default(),
            signer: Signer::generate(),
            calls_seen: Mutex::default(),
        }
    }

    fn resource_metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.base)
    }

    fn token_ttl(&self) -> Duration {
        Duration::from_secs(self.config.token_ttl_secs)
    }

    // -----------------------------------------------------------------------
    // Resource server side (hooks in http.rs)

    /// The scopes of a valid bearer token in `headers`, or the 401 answer.
    #[allow(clippy::result_large_err)]
    pub(crate) fn check_bearer(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Vec<String>, String), Response> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| token.trim().to_owned())
            });
        let Some(token) = presented else {
            return Err(self.unauthorized(false));
        };
        let mut store = lock(&self.store);
        let now = Instant::now();
        store.access.retain(|_, t| t.expires > now);
        let (scopes, sub) = match store.access.get(&token) {
            // A token for another resource is not ours to accept.
            Some(t) if t.resource == self.resource => (t.scopes.clone(), t.sub.clone()),
            _ => {
                drop(store);
                return Err(self.unauthorized(true));
            }
        };
        drop(store);
        if !scopes.iter().any(|s| s == SCOPE_READ) {
            return Err(self.insufficient_scope(SCOPE_READ, "every request"));
        }
        Ok((scopes, sub))
    }

    /// The 403 step-up answer naming the one `scope` missing for `what`.
    fn insufficient_scope(&self, scope: &str, what: &str) -> Response {
        self.stats.rejected.fetch_add(1, Ordering::Relaxed);
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\", \
             resource_metadata=\"{}\", error_description=\"{what} requires {scope}\"",
            self.resource_metadata_url()
        );
        challenge_response(StatusCode::FORBIDDEN, &challenge)
    }

    fn unauthorized(&self, bad_token: bool) -> Response {
        self.stats.rejected.fetch_add(1, Ordering::Relaxed);
        let error = if bad_token {
            "error=\"invalid_token\", "
        } else {
            ""
        };
        let challenge = format!(
            "Bearer {error}resource_metadata=\"{}\", scope=\"{SCOPE_READ}\"",
            self.resource_metadata_url()
        );
        challenge_response(StatusCode::UNAUTHORIZED, &challenge)
    }

    /// Notes each `tools/call` in `msg` with the user whose token carried
    /// it (the latest [`MAX_CALLS_SEEN`]), for `/stats`' `calls`: what a
    /// test asserts on to know whose token reached the server.
    fn note_calls(&self, sub: &str, msg: &Value) {
        let calls = match msg {
            Value::Array(batch) => batch.iter().collect(),
            m => vec![m],
        };
        let mut seen = lock(&self.calls_seen);
        for call in calls
            .into_iter()
            .filter(|m| m.get("method").and_then(Value::as_str) == Some("tools/call"))
        {
            if seen.len() >= MAX_CALLS_SEEN {
                seen.remove(0);
            }
            seen.push(json!({
                "sub": sub,
                "tool": call.pointer("/params/name"),
                "arguments": call.pointer("/params/arguments"),
            }));
        }
    }

    /// The 401 check, then the step-up check for a `tools/call` of
    /// [`ADMIN_TOOL`] (alone or in a batch) without [`SCOPE_ADMIN`].
    pub(crate) fn check_request(&self, headers: &HeaderMap, msg: &Value) -> Option<Response> {
        let scopes = match self.check_bearer(headers) {
            Ok((scopes, sub)) => {
                self.note_calls(&sub, msg);
                scopes
            }
            Err(r) => return Some(r),
        };
        let calls_admin = |m: &Value| {
            m.get("method").and_then(Value::as_str) == Some("tools/call")
                && m.pointer("/params/name").and_then(Value::as_str) == Some(ADMIN_TOOL)
        };
        let needs_admin = match msg {
            Value::Array(batch) => batch.iter().any(calls_admin),
            m => calls_admin(m),
        };
        let granted = scopes.iter().any(|s| s == SCOPE_ADMIN)
            && !self.config.has_quirk(AuthQuirk::StepUpLoop);
        if !needs_admin || granted {
            return None;
        }
        Some(self.insufficient_scope(SCOPE_ADMIN, ADMIN_TOOL))
    }
}

/// A request that passed [`AuthServer::check_request`] may call
/// [`ADMIN_TOOL`]: it is served by `echo`.
pub(crate) fn rewrite_admin_call(msg: &mut Value) {
    match msg {
        Value::Array(batch) => batch.iter_mut().for_each(rewrite_admin_call),
        Value::Object(obj) => {
            if obj.get("method").and_then(Value::as_str) == Some("tools/call")
                && let Some(Value::Object(params)) = obj.get_mut("params")
                && params.get("name").and_then(Value::as_str) == Some(ADMIN_TOOL)
            {
                params.insert("name".into(), Value::String("echo".into()));
            }
        }
        _ => {}
    }
}

fn challenge_response(status: StatusCode, challenge: &str) -> Response {
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        status.canonical_reason().unwrap_or(""),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

// ---------------------------------------------------------------------------
// Authorization server endpoints

/// The authorization server's routes (merged into the test server's app).
pub(crate) fn router(auth: Arc<AuthServer>) -> Router {
    let mut app = Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(prm))
        .route("/.well-known/oauth-protected-resource", get(prm))
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/auth/stats", get(stats))
        .route("/jwks", get(jwks))
        .route("/auth/mint", post(mint))
        .route("/auth/expire", post(expire))
        .route("/introspect", post(introspect));
    app = match &auth.config.issuer_suffix {
        Some(s) => app.route(
            &format!("/.well-known/oauth-authorization-server/{s}"),
            get(as_metadata),
        ),
        None => app.route("/.well-known/oauth-authorization-server", get(as_metadata)),
    };
    app.with_state(auth)
}

fn json_ok(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    json_ok(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

async fn prm(State(auth): State<Arc<AuthServer>>) -> Response {
    json_ok(
        StatusCode::OK,
        &json!({
            "resource": auth.resource,
            "authorization_servers": [auth.issuer],
            "scopes_supported": RESOURCE_SCOPES,
            "bearer_methods_supported": ["header"],
            "resource_name": "switchboard-testserver",
        }),
    )
}

async fn as_metadata(State(auth): State<Arc<AuthServer>>) -> Response {
    let base = &auth.base;
    json_ok(
        StatusCode::OK,
        &json!({
            "issuer": auth.issuer,
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "registration_endpoint": format!("{base}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported":
                ["none", "client_secret_basic", "client_secret_post"],
            "scopes_supported": [SCOPE_READ, SCOPE_ADMIN, "offline_access"],
            "authorization_response_iss_parameter_supported": true,
            "jwks_uri": format!("{base}/jwks"),
            "introspection_endpoint": format!("{base}/introspect"),
        }),
    )
}

async fn jwks(State(auth): State<Arc<AuthServer>>) -> Response {
    json_ok(StatusCode::OK, &auth.signer.jwks())
}

/// `POST /auth/mint` `{"claims": {…}, "forge": "…"}`: a token of the
/// default claims (`iss` the issuer, `sub` `user`, `aud` the test server's
/// resource, `exp` a token lifetime away) with `claims` applied (`null`
/// removes one), signed — or forged — as `forge` says
/// ([`Forgery::parse`]). Not kept: the test server itself does not take it.
async fn mint(State(auth): State<Arc<AuthServer>>, body: Bytes) -> Response {
    let Ok(asked) = serde_json::from_slice::<Value>(&body) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "not JSON");
    };
    let forgery = match asked.get("forge").and_then(Value::as_str) {
        None => Forgery::None,
        Some(name) => match Forgery::parse(name) {
            Some(forgery) => forgery,
            None => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "forge?"),
        },
    };
    let claims = merged(
        auth.claims("user", &auth.resource, &[]),
        asked.get("claims").and_then(Value::as_object),
    );
    if asked.get("opaque") == Some(&Value::Bool(true)) {
        // Kept, as the token endpoint keeps its own: what introspection
        // answers about (its `sub` and `aud` as the claims say).
        let token = random_token();
        let text = |key: &str| claims.get(key).and_then(Value::as_str).unwrap_or("");
        lock(&auth.store).access.insert(
            token.clone(),
            AccessToken {
                scopes: vec![SCOPE_READ.to_owned()],
                resource: text("aud").to_owned(),
                expires: Instant::now() + auth.token_ttl(),
                sub: text("sub").to_owned(),
            },
        );
        return json_ok(StatusCode::OK, &json!({ "access_token": token }));
    }
    json_ok(
        StatusCode::OK,
        &json!({ "access_token": auth.signer.sign(&claims, forgery) }),
    )
}

/// `POST /auth/expire`: every access token issued so far stops working
/// at once (refresh tokens still do): what a test uses to make clients
/// refresh now, not after a token's lifetime.
async fn expire(State(auth): State<Arc<AuthServer>>) -> Response {
    let gone = {
        let mut store = lock(&auth.store);
        let gone = store.access.len();
        store.access.clear();
        gone
    };
    json_ok(StatusCode::OK, &json!({ "expired": gone }))
}

/// RFC 7662 token introspection, for clients authenticated as at the
/// token endpoint: whether a token this server issued (or minted opaque)
/// is active, and its `sub`, `aud`, `exp` and `scope`.
async fn introspect(
    State(auth): State<Arc<AuthServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let params = match auth.client_form(&headers, &body) {
        Ok((_, params)) => params,
        Err(r) => return r,
    };
    let Some(token) = params.get("token") else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "token missing");
    };
    auth.stats.introspected.fetch_add(1, Ordering::Relaxed);
    let store = lock(&auth.store);
    let now = Instant::now();
    let answer = match store.access.get(token) {
        Some(t) if t.expires > now => json!({
            "active": true,
            "iss": auth.issuer,
            "sub": t.sub,
            "aud": t.resource,
            "scope": t.scopes.join(" "),
            "exp": now_secs() + t.expires.duration_since(now).as_secs(),
            "token_type": "Bearer",
        }),
        _ => json!({ "active": false }),
    };
    json_ok(StatusCode::OK, &answer)
}

async fn stats(State(auth): State<Arc<AuthServer>>) -> Response {
    let s = &auth.stats;
    let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
    json_ok(
        StatusCode::OK,
        &json!({
            "clients_registered": n(&s.clients_registered),
            "codes_issued": n(&s.codes_issued),
            "tokens_issued": n(&s.tokens_issued),
            "refreshed": n(&s.refreshed),
            "refresh_reused": n(&s.refresh_reused),
            "client_credentials": n(&s.client_credentials),
            "rejected": n(&s.rejected),
            "introspected": n(&s.introspected),
            "calls": *lock(&auth.calls_seen),
        }),
    )
}

/// RFC 7591 dynamic client registration. The default
/// `token_endpoint_auth_method` is RFC 7591's, `client_secret_basic`.
async fn register(State(auth): State<Arc<AuthServer>>, body: Bytes) -> Response {
    let bad =
        |error: &str, description: &str| oauth_error(StatusCode::BAD_REQUEST, error, description);
    if body.len() > AUTH_BODY_LIMIT {
        return bad("invalid_client_metadata", "body too large");
    }
    let Ok(Value::Object(meta)) = serde_json::from_slice::<Value>(&body) else {
        return bad("invalid_client_metadata", "expected a JSON object");
    };
    let method = match meta.get("token_endpoint_auth_method") {
        None => AuthMethod::Basic,
        Some(v) => match v.as_str().and_then(AuthMethod::parse) {
            Some(m) => m,
            None => {
                return bad(
                    "invalid_client_metadata",
                    "token_endpoint_auth_method must be none, client_secret_basic or \
                     client_secret_post",
                );
            }
        },
    };
    let method =
        if method == AuthMethod::None && auth.config.has_quirk(AuthQuirk::ConfidentialClients) {
            AuthMethod::Basic
        } else {
            method
        };
    let strings = |key: &str| -> Result<Option<Vec<String>>, String> {
        match meta.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| format!("{key} must be an array of strings")),
            Some(_) => Err(format!("{key} must be an array of strings")),
        }
    };
    let grant_types = match strings("grant_types") {
        Ok(g) => g.unwrap_or_else(|| vec!["authorization_code".to_owned()]),
        Err(e) => return bad("invalid_client_metadata", &e),
    };
    let redirect_uris = match strings("redirect_uris") {
        Ok(r) => r.unwrap_or_default(),
        Err(e) => return bad("invalid_redirect_uri", &e),
    };
    for g in &grant_types {
        if !matches!(
            g.as_str(),
            "authorization_code" | "refresh_token" | "client_credentials"
        ) {
            return bad(
                "invalid_client_metadata",
                &format!("unsupported grant type {g}"),
            );
        }
    }
    if grant_types.iter().any(|g| g == "client_credentials") && method == AuthMethod::None {
        return bad(
            "invalid_client_metadata",
            "client_credentials needs a confidential client",
        );
    }
    if grant_types.iter().any(|g| g == "authorization_code") && redirect_uris.is_empty() {
        return bad(
            "invalid_redirect_uri",
            "redirect_uris is required for authorization_code",
        );
    }
    if let Some(u) = redirect_uris.iter().find(|u| parse_loopback(u).is_none()) {
        return bad(
            "invalid_redirect_uri",
            &format!("{u} is not an http loopback URI"),
        );
    }
    let client_id = format!("client-{}", random_token());
    let secret = (method != AuthMethod::None).then(random_token);
    let mut out = Map::new();
    out.insert("client_id".into(), json!(client_id));
    if let Some(s) = &secret {
        out.insert("client_secret".into(), json!(s));
        out.insert("client_secret_expires_at".into(), json!(0));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    out.insert("client_id_issued_at".into(), json!(now));
    out.insert("token_endpoint_auth_method".into(), json!(method.as_str()));
    out.insert("grant_types".into(), json!(grant_types));
    out.insert("redirect_uris".into(), json!(redirect_uris));
    out.insert("response_types".into(), json!(["code"]));
    for key in ["client_name", "scope", "client_uri", "software_id"] {
        if let Some(v) = meta.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    {
        let mut store = lock(&auth.store);
        if store.clients.len() >= MAX_ENTRIES {
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "too many clients",
            );
        }
        store.clients.insert(
            client_id,
            Client {
                secret,
                auth_method: method,
                redirect_uris,
                grant_types,
            },
        );
    }
    auth.stats
        .clients_registered
        .fetch_add(1, Ordering::Relaxed);
    json_ok(StatusCode::CREATED, &Value::Object(out))
}

/// `(host, port, path+query)` of an `http://` loopback URI.
fn parse_loopback(uri: &str) -> Option<(String, Option<u16>, String)> {
    let rest = uri.strip_prefix("http://")?;
    if rest.contains('#') {
        return None;
    }
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (host, port) = match authority.strip_prefix('[') {
        Some(r) => {
            let (h, after) = r.split_once(']')?;
            (format!("[{h}]"), after.strip_prefix(':'))
        }
        None => match authority.split_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        },
    };
    let host = host.to_ascii_lowercase();
    if !matches!(host.as_str(), "127.0.0.1" | "[::1]" | "localhost") {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse().ok()?),
        None => None,
    };
    Some((host, port, path.to_owned()))
}

/// RFC 8252 §7.3: a loopback IP redirect URI matches whatever its port.
fn redirect_matches(registered: &str, given: &str) -> bool {
    if registered == given {
        return true;
    }
    match (parse_loopback(registered), parse_loopback(given)) {
        (Some((h1, _, p1)), Some((h2, _, p2))) => h1 == h2 && h1 != "localhost" && p1 == p2,
        _ => false,
    }
}

/// The auto-approving authorization endpoint.
async fn authorize(State(auth): State<Arc<AuthServer>>, uri: Uri) -> Response {
    let params = match parse_form(uri.query().unwrap_or("")) {
        Ok(p) => p,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e),
    };
    let p = |k: &str| params.get(k).map(String::as_str);
    // Without a known client and one of its redirect URIs there is nowhere
    // safe to send an error: answer it here.
    let Some(client_id) = p("client_id") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "client_id missing",
        );
    };
    let Some(redirect_uri) = p("redirect_uri") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "redirect_uri missing",
        );
    };
    {
        let store = lock(&auth.store);
        let Some(client) = store.clients.get(client_id) else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client",
                "unknown client_id",
            );
        };
        if !client
            .redirect_uris
            .iter()
            .any(|r| redirect_matches(r, redirect_uri))
        {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "redirect_uri is not registered for this client",
            );
        }
        if !client.grant_types.iter().any(|g| g == "authorization_code") {
            drop(store);
            return redirect_error(&auth, redirect_uri, p("state"), "unauthorized_client");
        }
    }
    let state = p("state");
    let fail = |error: &str| redirect_error(&auth, redirect_uri, state, error);
    if p("response_type") != Some("code") {
        return fail("unsupported_response_type");
    }
    if state.is_none_or(str::is_empty) {
        return fail("invalid_request");
    }
    let Some(challenge) = p("code_challenge") else {
        return fail("invalid_request");
    };
    if p("code_challenge_method") != Some("S256") || !is_pkce_value(challenge, 43, 43) {
        return fail("invalid_request");
    }
    let resource = match p("resource") {
        Some(r) if r == auth.resource || auth.config.resources.iter().any(|o| o == r) => r,
        _ => return fail("invalid_target"),
    };
    let scopes = match requested_scopes(p("scope"), true) {
        Some(s) => s,
        None => return fail("invalid_scope"),
    };
    let code = random_token();
    {
        let mut store = lock(&auth.store);
        let now = Instant::now();
        store.codes.retain(|_, c| c.expires > now);
        if store.codes.len() >= MAX_ENTRIES {
            drop(store);
            return fail("temporarily_unavailable");
        }
        store.codes.insert(
            code.clone(),
            Code {
                client_id: client_id.to_owned(),
                redirect_uri: redirect_uri.to_owned(),
                challenge: challenge.to_owned(),
                resource: resource.to_owned(),
                scopes,
                expires: now + CODE_TTL,
                // The user the browser logs in as: a test playing two
                // users' browsers says which with `login_hint`.
                sub: p("login_hint")
                    .filter(|h| !h.is_empty() && h.len() <= 64)
                    .unwrap_or(DEFAULT_SUB)
                    .to_owned(),
            },
        );
    }
    auth.stats.codes_issued.fetch_add(1, Ordering::Relaxed);
    redirect(
        redirect_uri,
        &[
            ("code", &code),
            ("state", state.unwrap_or("")),
            ("iss", &auth.issuer),
        ],
    )
}

fn redirect_error(
    auth: &AuthServer,
    redirect_uri: &str,
    state: Option<&str>,
    error: &str,
) -> Response {
    let mut params = vec![("error", error)];
    if let Some(s) = state {
        params.push(("state", s));
    }
    params.push(("iss", &auth.issuer));
    redirect(redirect_uri, &params)
}

fn redirect(redirect_uri: &str, params: &[(&str, &str)]) -> Response {
    let mut location = redirect_uri.to_owned();
    let mut sep = if location.contains('?') { '&' } else { '?' };
    for (k, v) in params {
        location.push(sep);
        location.push_str(k);
        location.push('=');
        location.push_str(&percent_encode(v));
        sep = '&';
    }
    match HeaderValue::from_str(&location) {
        Ok(v) => (StatusCode::FOUND, [(header::LOCATION, v)]).into_response(),
        Err(_) => oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "bad redirect_uri",
        ),
    }
}

/// The scopes asked for (default `mcp:read`); `None` if one is unknown.
/// `offline_access` is accepted where `allow_offline` and then dropped:
/// refresh tokens come with every authorization code grant anyway.
fn requested_scopes(scope: Option<&str>, allow_offline: bool) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for s in scope
        .unwrap_or(SCOPE_READ)
        .split(' ')
        .filter(|s| !s.is_empty())
    {
        if s == "offline_access" && allow_offline {
            continue;
        }
        if !RESOURCE_SCOPES.contains(&s) {
            return None;
        }
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    if out.is_empty() {
        out.push(SCOPE_READ.to_owned());
    }
    Some(out)
}

/// RFC 7636: 43–128 characters of `[A-Za-z0-9-._~]` (a S256 challenge is 43).
fn is_pkce_value(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// The token endpoint.
async fn token(State(auth): State<Arc<AuthServer>>, headers: HeaderMap, body: Bytes) -> Response {
    let (client_id, params) = match auth.client_form(&headers, &body) {
        Ok(found) => found,
        Err(r) => return r,
    };
    let p = |k: &str| params.get(k).map(String::as_str);
    let grant = p("grant_type").unwrap_or("");
    let allowed = {
        let store = lock(&auth.store);
        store.clients.get(&client_id).is_some_and(|c| {
            c.grant_types.iter().any(|g| g == grant)
                // Refreshing what an authorization code gave is always allowed.
                || (grant == "refresh_token"
                    && c.grant_types.iter().any(|g| g == "authorization_code"))
        })
    };
    match grant {
        "authorization_code" | "refresh_token" | "client_credentials" if !allowed => oauth_error(
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            "grant type not registered for this client",
        ),
        "authorization_code" => auth.code_grant(&client_id, p),
        "refresh_token" => auth.refresh_grant(&client_id, p),
        "client_credentials" => auth.client_credentials_grant(&client_id, p),
        "" => oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "grant_type missing",
        ),
        _ => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "supported: authorization_code, refresh_token, client_credentials",
        ),
    }
}

impl AuthServer {
    /// A client's form request (the token and introspection endpoints):
    /// its parameters, once the client is authenticated.
    #[allow(clippy::result_large_err)]
    fn client_form(
        &self,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<(String, HashMap<String, String>), Response> {
        if body.len() > AUTH_BODY_LIMIT {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "body too large",
            ));
        }
        let params = std::str::from_utf8(body)
            .map_err(|_| "body is not UTF-8".to_owned())
            .and_then(parse_form)
            .map_err(|e| oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &e))?;
        let client_id = self.authenticate_client(headers, &params)?;
        Ok((client_id, params))
    }

    /// Client authentication at the token endpoint, by the method the
    /// client registered with.
    #[allow(clippy::result_large_err)]
    fn authenticate_client(
        &self,
        headers: &HeaderMap,
        params: &HashMap<String, String>,
    ) -> Result<String, Response> {
        let basic = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, creds) = v.trim().split_once(' ')?;
                if !scheme.eq_ignore_ascii_case("basic") {
                    return None;
                }
                let decoded =
                    String::from_utf8(switchboard_testserver::b64::decode(creds.trim())?).ok()?;
                let (id, secret) = decoded.split_once(':')?;
                // RFC 6749 §2.3.1: both parts are form-urlencoded first.
                Some((percent_decode(id)?, percent_decode(secret)?))
            });
        let invalid = |used_basic: bool, description: &str| {
            let mut r = oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", description);
            if used_basic {
                r.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"switchboard-testserver\""),
                );
            }
            r
        };
        let (client_id, secret, method) = match (&basic, params.get("client_secret")) {
            (Some(_), Some(_)) => {
                return Err(oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "more than one client authentication method",
                ));
            }
            (Some((id, secret)), None) => (id.clone(), Some(secret.clone()), AuthMethod::Basic),
            (None, Some(secret)) => match params.get("client_id") {
                Some(id) => (id.clone(), Some(secret.clone()), AuthMethod::Post),
                None => return Err(invalid(false, "client_id missing")),
            },
            (None, None) => match params.get("client_id") {
                Some(id) => (id.clone(), None, AuthMethod::None),
                None => return Err(invalid(false, "client authentication missing")),
            },
        };
        if let (Some((id, _)), Some(body_id)) = (&basic, params.get("client_id"))
            && id != body_id
        {
            return Err(invalid(true, "client_id does not match the credentials"));
        }
        let store = lock(&self.store);
        let Some(client) = store.clients.get(&client_id) else {
            return Err(invalid(basic.is_some(), "unknown client"));
        };
        if client.auth_method != method {
            return Err(invalid(
                basic.is_some(),
                &format!(
                    "this client authenticates with {}",
                    client.auth_method.as_str()
                ),
            ));
        }
        if client.secret != secret {
            return Err(invalid(basic.is_some(), "wrong client secret"));
        }
        Ok(client_id)
    }

    fn code_grant<'a>(&self, client_id: &str, p: impl Fn(&str) -> Option<&'a str>) -> Response {
        let grant_error = |d: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", d);
        let (Some(code), Some(redirect_uri), Some(verifier)) =
            (p("code"), p("redirect_uri"), p("code_verifier"))
        else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "code, redirect_uri and code_verifier are required",
            );
        };
        // A code is spent by any attempt to redeem it.
        let Some(c) = lock(&self.store).codes.remove(code) else {
            return grant_error("unknown or already used code");
        };
        if c.expires <= Instant::now() {
            return grant_error("code expired");
        }
        if c.client_id != client_id {
            return grant_error("code was issued to another client");
        }
        if c.redirect_uri != redirect_uri {
            return grant_error("redirect_uri differs from the authorization request");
        }
        if !is_pkce_value(verifier, 43, 128) || s256(verifier) != c.challenge {
            return grant_error("PKCE verification failed");
        }
        match p("resource") {
            Some(r) if r == c.resource => {}
            Some(_) => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "resource differs from the authorization request",
                );
            }
            None => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "resource is required",
                );
            }
        }
        self.issue(client_id, &c.sub, c.resource, c.scopes, Some(NEW_FAMILY))
    }

    fn refresh_grant<'a>(&self, client_id: &str, p: impl Fn(&str) -> Option<&'a str>) -> Response {
        if self.config.has_quirk(AuthQuirk::Refresh200Error) {
            return json_ok(StatusCode::OK, &json!({"error": "invalid_refresh_token"}));
        }
        if self.config.has_quirk(AuthQuirk::Refresh200ErrorObject) {
            return json_ok(
                StatusCode::OK,
                &json!({"error": {"code": "invalid_refresh_token",
                                  "message": "The refresh token is invalid or expired."}}),
            );
        }
        let grant_error = |d: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", d);
        let Some(refresh) = p("refresh_token") else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "refresh_token missing",
            );
        };
        let old = {
            let mut store = lock(&self.store);
            match store.refresh.get(refresh) {
                Some(t) if t.client_id == client_id => {
                    let old = store.refresh.remove(refresh);
                    if let Some(t) = &old {
                        store.rotated.insert(refresh.to_owned(), t.family);
                    }
                    old
                }
                Some(_) => return grant_error("refresh token was issued to another client"),
                None => {
                    if let Some(&family) = store.rotated.get(refresh) {
                        // Reuse: someone holds a copy. Revoke the family.
                        store.refresh.retain(|_, t| t.family != family);
                        drop(store);
                        self.stats.refresh_reused.fetch_add(1, Ordering::Relaxed);
                        return grant_error("reused refresh token; its grant is revoked");
                    }
                    None
                }
            }
        };
        let Some(old) = old else {
            return grant_error("unknown or revoked refresh token");
        };
        if p("resource").is_some_and(|r| r != old.resource) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource differs from the original grant",
            );
        }
        // A narrower scope may be asked for, never a wider one.
        let scopes = match p("scope") {
            None => old.scopes,
            Some(s) => match requested_scopes(Some(s), true) {
                Some(asked) if asked.iter().all(|a| old.scopes.contains(a)) => asked,
                _ => {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_scope",
                        "scope exceeds the original grant",
                    );
                }
            },
        };
        self.stats.refreshed.fetch_add(1, Ordering::Relaxed);
        self.issue(client_id, &old.sub, old.resource, scopes, Some(old.family))
    }

    fn client_credentials_grant<'a>(
        &self,
        client_id: &str,
        p: impl Fn(&str) -> Option<&'a str>,
    ) -> Response {
        if p("resource").is_some_and(|r| r != self.resource) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "unknown resource",
            );
        }
        let Some(scopes) = requested_scopes(p("scope"), false) else {
            return oauth_error(StatusCode::BAD_REQUEST, "invalid_scope", "unknown scope");
        };
        self.stats
            .client_credentials
            .fetch_add(1, Ordering::Relaxed);
        self.issue(client_id, DEFAULT_SUB, self.resource.clone(), scopes, None)
    }

    /// An access token's claims.
    fn claims(&self, sub: &str, resource: &str, scopes: &[String]) -> Value {
        let now = now_secs();
        json!({
            "iss": self.issuer,
            "sub": sub,
            "aud": resource,
            "iat": now,
            "exp": now + self.config.token_ttl_secs,
            "jti": random_token(),
            "scope": scopes.join(" "),
        })
    }

    /// Issue an access token, and a refresh token in `family` when given
    /// ([`NEW_FAMILY`] starts one).
    fn issue(
        &self,
        client_id: &str,
        sub: &str,
        resource: String,
        scopes: Vec<String>,
        family: Option<u64>,
    ) -> Response {
        let mut claims = self.claims(sub, &resource, &scopes);
        claims["client_id"] = client_id.into();
        let access = self.signer.sign(&claims, Forgery::None);
        let refresh = family.map(|f| (random_token(), f));
        {
            let mut store = lock(&self.store);
            let now = Instant::now();
            store.access.retain(|_, t| t.expires > now);
            if store.access.len() >= MAX_ENTRIES
                || store.refresh.len() >= MAX_ENTRIES
                || store.rotated.len() >= MAX_ENTRIES
            {
                return oauth_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily_unavailable",
                    "too many tokens",
                );
            }
            store.access.insert(
                access.clone(),
                AccessToken {
                    scopes: scopes.clone(),
                    resource: resource.clone(),
                    expires: now + self.token_ttl(),
                    sub: sub.to_owned(),
                },
            );
            if let Some((r, family)) = &refresh {
                let family = if *family == NEW_FAMILY {
                    store.next_family += 1;
                    store.next_family
                } else {
                    *family
                };
                store.refresh.insert(
                    r.clone(),
                    RefreshToken {
                        client_id: client_id.to_owned(),
                        resource,
                        scopes: scopes.clone(),
                        sub: sub.to_owned(),
                        family,
                    },
                );
            }
        }
        self.stats.tokens_issued.fetch_add(1, Ordering::Relaxed);
        let mut body = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.config.token_ttl_secs,
            "scope": scopes.join(" "),
        });
        if let Some((r, _)) = refresh {
            body["refresh_token"] = Value::String(r);
        }
        json_ok(StatusCode::OK, &body)
    }
}

// ---------------------------------------------------------------------------
// Encodings (kept here: the test server has no crypto or URL dependencies)

/// A 128-bit random token (hex), from the standard library's randomly keyed
/// SipHash.
fn random_token() -> String {
    use std::hash::{BuildHasher, RandomState};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let a = RandomState::new().hash_one(n);
    let b = RandomState::new().hash_one((a, n));
    format!("{a:016x}{b:016x}")
}

/// `application/x-www-form-urlencoded` pairs; a repeated name is an error
/// (RFC 6749 §3.1).
fn parse_form(s: &str) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for pair in s.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = || format!("bad encoding in parameter {k:?}");
        let k = percent_decode(k).ok_or_else(bad)?;
        let v = percent_decode(v).ok_or_else(bad)?;
        if out.contains_key(&k) {
            return Err(format!("parameter {k:?} repeated"));
        }
        out.insert(k, v);
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The PKCE S256 challenge of `verifier`.
fn s256(verifier: &str) -> String {
    switchboard_testserver::b64::encode_url(&sha256(verifier.as_bytes()))
}

/// SHA-256 (FIPS 180-4).
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64).wrapping_mul(8)).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (wi, word) in w.iter_mut().zip(block.chunks_exact(4)) {
            *wi = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for (k, wi) in K.iter().zip(w.iter()) {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(*k)
                .wrapping_add(*wi);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (hv, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *hv = hv.wrapping_add(v);
        }
    }
    let mut out = [0u8; 32];
    for (o, v) in out.chunks_exact_mut(4).zip(h) {
        o.copy_from_slice(&v.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DEFAULT_TOKEN_TTL_SECS, ServerConfig, serve_http};
    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;

    const REDIRECT: &str = "http://127.0.0.1:33418/callback";
    const VERIFIER: &str = "test-verifier-0123456789-abcdefghijklmnopqrstuvwxyz";
    /// S256 of `VERIFIER` (computed with Python's hashlib).
    const CHALLENGE: &str = "nw4Cig7sk_DT0QSX9Qn-3UKs33fmbbp8bRuv1b5-wXw";

    struct Srv {
        base: String,
        http: reqwest::Client,
        task: JoinHandle<std::io::Result<()>>,
    }

    impl Drop for Srv {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    struct Resp {
        status: u16,
        headers: reqwest::header::HeaderMap,
        body: String,
    }

    impl Resp {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers.get(name).and_then(|v| v.to_str().ok())
        }

        fn json(&self) -> Value {
            serde_json::from_str(&self.body)
                .unwrap_or_else(|e| panic!("bad JSON {:?}: {e}", self.body))
        }
    }

    async fn start(auth: AuthConfig) -> Srv {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(serve_http(
            ServerConfig::default().with_auth(auth),
            listener,
        ));
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .unwrap();
        Srv {
            base: format!("http://{addr}"),
            http,
            task,
        }
    }

    async fn read(r: reqwest::RequestBuilder) -> Resp {
        let r = r.send().await.unwrap();
        Resp {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            body: r.text().await.unwrap(),
        }
    }

    fn form(pairs: &[(&str, &str)]) -> String {
        pairs
            .iter()
            .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    fn query_param(location: &str, name: &str) -> Option<String> {
        let query = location.split_once('?')?.1;
        parse_form(query).unwrap().remove(name)
    }

    impl Srv {
        async fn get(&self, path: &str) -> Resp {
            read(self.http.get(format!("{}{path}", self.base))).await
        }

        async fn register(&self, meta: Value) -> Resp {
            read(
                self.http
                    .post(format!("{}/register", self.base))
                    .header("content-type", "application/json")
                    .body(meta.to_string()),
            )
            .await
        }

        async fn public_client(&self) -> String {
            let r = self
                .register(json!({
                    "client_name": "test",
                    "redirect_uris": [REDIRECT],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "token_endpoint_auth_method": "none",
                }))
                .await;
            assert_eq!(r.status, 201, "{}", r.body);
            assert!(r.json().get("client_secret").is_none());
            r.json()["client_id"].as_str().unwrap().to_owned()
        }

        async fn token(&self, pairs: &[(&str, &str)], basic: Option<(&str, &str)>) -> Resp {
            let mut req = self
                .http
                .post(format!("{}/token", self.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form(pairs));
            if let Some((id, secret)) = basic {
                req = req.basic_auth(id, Some(secret));
            }
            read(req).await
        }

        fn resource(&self) -> String {
            format!("{}/mcp", self.base)
        }

        /// GET /authorize for `client_id`; returns the 302's Location.
        async fn authorize(&self, client_id: &str, scope: &str) -> String {
            let resource = self.resource();
            let query = form(&[
                ("response_type", "code"),
                ("client_id", client_id),
                ("redirect_uri", REDIRECT),
                ("code_challenge", CHALLENGE),
                ("code_challenge_method", "S256"),
                ("state", "st-1"),
                ("resource", &resource),
                ("scope", scope),
            ]);
            let r = self.get(&format!("/authorize?{query}")).await;
            assert_eq!(r.status, 302, "{}", r.body);
            r.header("location").unwrap().to_owned()
        }

        /// A full authorization-code + PKCE flow: the token response.
        async fn code_flow(&self, client_id: &str, scope: &str) -> Value {
            let location = self.authorize(client_id, scope).await;
            let code = query_param(&location, "code").unwrap();
            let resource = self.resource();
            let r = self
                .token(
                    &[
                        ("grant_type", "authorization_code"),
                        ("code", &code),
                        ("redirect_uri", REDIRECT),
                        ("code_verifier", VERIFIER),
                        ("client_id", client_id),
                        ("resource", &resource),
                    ],
                    None,
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(r.header("cache-control"), Some("no-store"));
            r.json()
        }

        async fn mcp(&self, token: Option<&str>, session: Option<&str>, msg: Value) -> Resp {
            let mut req = self
                .http
                .post(format!("{}/mcp", self.base))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(msg.to_string());
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            if let Some(s) = session {
                req = req.header("mcp-session-id", s);
            }
            read(req).await
        }

        /// `initialize` with `token`; the session id.
        async fn session(&self, token: &str) -> String {
            let r = self
                .mcp(
                    Some(token),
                    None,
                    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                        "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"}}}),
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            r.header("mcp-session-id").unwrap().to_owned()
        }

        async fn stats(&self) -> Value {
            self.get("/auth/stats").await.json()
        }
    }

    fn admin_call() -> Value {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": ADMIN_TOOL, "arguments": {"text": "hi"}}})
    }

    #[test]
    fn sha256_and_s256_match_known_vectors() {
        let hex = |d: [u8; 32]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(
            hex(sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // Two blocks, and a length that is not a multiple of the block.
        assert_eq!(
            hex(sha256(&[b'a'; 200])),
            "c2a908d98f5df987ade41b5fce213067efbcc21ef2240212a41e54b5e7c28ae5"
        );
        assert_eq!(s256(VERIFIER), CHALLENGE);
    }

    #[test]
    fn flags_parse() {
        let args = |a: &[&str]| ServerConfig::from_args(a.iter().map(|s| s.to_string()));
        assert_eq!(args(&[]).unwrap().auth, None);
        assert_eq!(args(&["--auth"]).unwrap().auth, Some(AuthConfig::default()));
        let c = args(&[
            "--auth-token-ttl-secs",
            "2",
            "--auth-quirk=refresh-200-error",
            "--auth-quirk",
            "confidential-clients",
            "--auth-quirk",
            "step-up-loop",
            "--auth-issuer-suffix",
            "/run-2/",
        ])
        .unwrap();
        assert_eq!(
            c.auth,
            Some(
                AuthConfig::default()
                    .with_token_ttl_secs(2)
                    .with_quirk(AuthQuirk::Refresh200Error)
                    .with_quirk(AuthQuirk::ConfidentialClients)
                    .with_quirk(AuthQuirk::StepUpLoop)
                    .with_issuer_suffix("run-2")
            )
        );
        assert!(args(&["--auth-quirk", "nope"]).is_err());
        assert!(args(&["--auth-issuer-suffix", "a b"]).is_err());
        let gateway = args(&["--auth-resource", "http://127.0.0.1:9/mcp"]).unwrap();
        assert_eq!(gateway.auth.unwrap().resources, ["http://127.0.0.1:9/mcp"]);
        assert!(args(&["--auth-resource", "not a url"]).is_err());
        let addr: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(
            c.auth.unwrap().issuer_for(addr),
            "http://127.0.0.1:8080/run-2"
        );
    }

    #[tokio::test]
    async fn metadata_documents() {
        let srv = start(AuthConfig::default()).await;
        let prm = srv.get("/.well-known/oauth-protected-resource/mcp").await;
        assert_eq!(prm.status, 200);
        let prm = prm.json();
        assert_eq!(prm["resource"], json!(srv.resource()));
        assert_eq!(prm["authorization_servers"], json!([srv.base]));
        assert_eq!(prm["scopes_supported"], json!(["mcp:read", "mcp:admin"]));

        let r = srv.get("/.well-known/oauth-authorization-server").await;
        assert_eq!(r.status, 200);
        let m = r.json();
        assert_eq!(m["issuer"], json!(srv.base));
        for (key, path) in [
            ("authorization_endpoint", "/authorize"),
            ("token_endpoint", "/token"),
            ("registration_endpoint", "/register"),
        ] {
            assert_eq!(m[key], json!(format!("{}{path}", srv.base)));
        }
        assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(
            m["token_endpoint_auth_methods_supported"],
            json!(["none", "client_secret_basic", "client_secret_post"])
        );
        assert!(
            m["scopes_supported"]
                .as_array()
                .unwrap()
                .contains(&json!("offline_access"))
        );
        assert_eq!(m["authorization_response_iss_parameter_supported"], true);
    }

    /// A JWT's header and claims, unverified.
    fn jwt_parts(token: &str) -> (Value, Value) {
        use base64::Engine as _;
        let part = |p: &str| -> Value {
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .unwrap();
            serde_json::from_slice(&bytes).unwrap()
        };
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        (part(parts[0]), part(parts[1]))
    }

    #[tokio::test]
    async fn access_tokens_are_jwts_of_the_published_key_and_tests_mint_forgeries() {
        let srv = start(AuthConfig::default()).await;
        let m = srv
            .get("/.well-known/oauth-authorization-server")
            .await
            .json();
        assert_eq!(m["jwks_uri"], json!(format!("{}/jwks", srv.base)));
        let jwks = srv.get("/jwks").await.json();
        assert_eq!(jwks["keys"][0]["kid"], crate::jwt_issuer::KEY_ID);
        assert_eq!(jwks["keys"][0]["kty"], "EC");
        assert!(jwks["keys"][0].get("d").is_none(), "no private part");

        let client = srv.public_client().await;
        let tokens = srv.code_flow(&client, SCOPE_READ).await;
        let access = tokens["access_token"].as_str().unwrap();
        let (header, claims) = jwt_parts(access);
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], crate::jwt_issuer::KEY_ID);
        assert_eq!(claims["iss"], json!(srv.base));
        assert_eq!(claims["aud"], json!(srv.resource()));
        assert_eq!(claims["sub"], "user");
        assert_eq!(claims["client_id"], json!(client));
        // The test server still takes it.
        srv.session(access).await;

        let mint = |asked: Value| {
            let http = srv.http.clone();
            let url = format!("{}/auth/mint", srv.base);
            async move { read(http.post(url).body(asked.to_string())).await }
        };
        let minted = mint(json!({"claims": {"sub": "bob", "exp": 5, "scope": null}})).await;
        assert_eq!(minted.status, 200, "{}", minted.body);
        let (_, claims) = jwt_parts(minted.json()["access_token"].as_str().unwrap());
        assert_eq!(claims["sub"], "bob");
        assert_eq!(claims["exp"], 5);
        assert!(claims.get("scope").is_none());
        for (forge, alg, kid) in [
            ("alg-none", "none", None),
            ("hs256-public-key", "HS256", Some(crate::jwt_issuer::KEY_ID)),
            ("unknown-kid", "ES256", Some("not-ours")),
        ] {
            let minted = mint(json!({"forge": forge})).await.json();
            let (header, _) = jwt_parts(minted["access_token"].as_str().unwrap());
            assert_eq!(header["alg"], alg, "{forge}");
            assert_eq!(header["kid"].as_str(), kid, "{forge}");
        }
        assert_eq!(mint(json!({"forge": "made-up"})).await.status, 400);
    }

    #[tokio::test]
    async fn issuer_suffix_moves_the_issuer_and_its_metadata() {
        let srv = start(AuthConfig::default().with_issuer_suffix("run-2")).await;
        let issuer = format!("{}/run-2", srv.base);
        let prm = srv
            .get("/.well-known/oauth-protected-resource/mcp")
            .await
            .json();
        assert_eq!(prm["authorization_servers"], json!([issuer]));
        assert_eq!(
            srv.get("/.well-known/oauth-authorization-server")
                .await
                .status,
            404
        );
        let m = srv
            .get("/.well-known/oauth-authorization-server/run-2")
            .await;
        assert_eq!(m.status, 200);
        assert_eq!(m.json()["issuer"], json!(issuer));
        let client = srv.public_client().await;
        let location = srv.authorize(&client, "mcp:read").await;
        assert_eq!(query_param(&location, "iss"), Some(issuer));
    }

    #[tokio::test]
    async fn missing_or_bad_token_gets_the_401_challenge() {
        let srv = start(AuthConfig::default()).await;
        let expected = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", \
             scope=\"mcp:read\"",
            srv.base
        );
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let r = srv.mcp(None, None, ping.clone()).await;
        assert_eq!(r.status, 401);
        assert_eq!(r.header("www-authenticate"), Some(expected.as_str()));
        let r = srv.mcp(Some("forged"), None, ping).await;
        assert_eq!(r.status, 401);
        let challenge = r.header("www-authenticate").unwrap();
        assert!(challenge.starts_with("Bearer error=\"invalid_token\", resource_metadata="));
        // The other MCP endpoints too.
        assert_eq!(srv.get("/sse").await.status, 401);
        let ws = srv
            .http
            .get(format!("{}/ws", srv.base))
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .header("sec-websocket-protocol", "mcp");
        assert_eq!(read(ws).await.status, 401);
        assert_eq!(srv.stats().await["rejected"], 4);
    }

    #[tokio::test]
    async fn code_flow_with_pkce_by_hand() {
        let srv = start(AuthConfig::default()).await;
        let client = srv.public_client().await;

        let location = srv.authorize(&client, "mcp:read offline_access").await;
        assert!(location.starts_with(&format!("{REDIRECT}?")), "{location}");
        assert_eq!(query_param(&location, "state").as_deref(), Some("st-1"));
        assert_eq!(query_param(&location, "iss"), Some(srv.base.clone()));
        let code = query_param(&location, "code").unwrap();

        // A wrong verifier fails and spends the code.
        let resource = srv.resource();
        let redeem = |verifier: &'static str| {
            let (code, client, resource) = (code.clone(), client.clone(), resource.clone());
            let srv = &srv;
            async move {
                srv.token(
                    &[
                        ("grant_type", "authorization_code"),
                        ("code", &code),
                        ("redirect_uri", REDIRECT),
                        ("code_verifier", verifier),
                        ("client_id", &client),
                        ("resource", &resource),
                    ],
                    None,
                )
                .await
            }
        };
        let r = redeem("wrong-verifier-0123456789-abcdefghijklmnopqrstuvwxyz").await;
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (400, json!("invalid_grant"))
        );
        let r = redeem(VERIFIER).await;
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (400, json!("invalid_grant"))
        );

        let tokens = srv.code_flow(&client, "mcp:read offline_access").await;
        assert_eq!(tokens["token_type"], "Bearer");
        assert_eq!(tokens["expires_in"], DEFAULT_TOKEN_TTL_SECS);
        assert_eq!(tokens["scope"], "mcp:read");
        assert!(tokens["refresh_token"].is_string());
        let access = tokens["access_token"].as_str().unwrap();
        let session = srv.session(access).await;
        let r = srv
            .mcp(
                Some(access),
                Some(&session),
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": "hi"}}}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
        let stats = srv.stats().await;
        assert_eq!(stats["codes_issued"], 2);
        assert_eq!(stats["tokens_issued"], 1);
    }

    #[tokio::test]
    async fn authorize_refuses_bad_requests() {
        let srv = start(AuthConfig::default()).await;
        let client = srv.public_client().await;
        let resource = srv.resource();
        let base: Vec<(&str, &str)> = vec![
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
            ("state", "s"),
            ("resource", &resource),
        ];
        let with = |key: &str, value: Option<&'static str>| {
            let mut q: Vec<(&str, &str)> =
                base.iter().filter(|(k, _)| *k != key).cloned().collect();
            if let Some(v) = value {
                q.push((key, v));
            }
            format!("/authorize?{}", form(&q))
        };
        // Nowhere safe to redirect to: answered directly.
        for (key, value) in [
            ("redirect_uri", Some("http://127.0.0.1:33418/other")),
            ("redirect_uri", Some("https://evil.example/callback")),
            ("client_id", Some("unknown")),
        ] {
            let r = srv.get(&with(key, value)).await;
            assert_eq!(r.status, 400, "{key}={value:?}");
        }
        // Another loopback port is the same redirect URI (RFC 8252).
        let r = srv
            .get(&with(
                "redirect_uri",
                Some("http://127.0.0.1:50000/callback"),
            ))
            .await;
        assert_eq!(r.status, 302);
        assert!(query_param(r.header("location").unwrap(), "code").is_some());
        // The rest comes back to the client, with iss.
        for (key, value, error) in [
            ("code_challenge", None, "invalid_request"),
            ("code_challenge_method", Some("plain"), "invalid_request"),
            ("state", None, "invalid_request"),
            ("resource", Some("http://127.0.0.1:1/mcp"), "invalid_target"),
            ("resource", None, "invalid_target"),
            ("scope", Some("mcp:root"), "invalid_scope"),
            ("response_type", Some("token"), "unsupported_response_type"),
        ] {
            let r = srv.get(&with(key, value)).await;
            assert_eq!(r.status, 302, "{key}={value:?}");
            let location = r.header("location").unwrap();
            assert_eq!(
                query_param(location, "error").as_deref(),
                Some(error),
                "{key}"
            );
            assert_eq!(query_param(location, "iss"), Some(srv.base.clone()));
            assert!(query_param(location, "code").is_none());
        }
    }

    #[tokio::test]
    async fn refresh_rotates_and_the_old_token_is_refused() {
        let srv = start(AuthConfig::default()).await;
        let client = srv.public_client().await;
        let first = srv.code_flow(&client, "mcp:read").await;
        let old = first["refresh_token"].as_str().unwrap();
        let refresh = |token: String| {
            let client = client.clone();
            let srv = &srv;
            async move {
                srv.token(
                    &[
                        ("grant_type", "refresh_token"),
                        ("refresh_token", &token),
                        ("client_id", &client),
                    ],
                    None,
                )
                .await
            }
        };
        let r = refresh(old.to_owned()).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let second = r.json();
        let new = second["refresh_token"].as_str().unwrap();
        assert_ne!(new, old);
        assert_ne!(second["access_token"], first["access_token"]);
        assert_eq!(second["scope"], "mcp:read");
        assert_eq!(refresh(new.to_owned()).await.status, 200);
        let r = refresh(old.to_owned()).await;
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (400, json!("invalid_grant"))
        );
        srv.session(second["access_token"].as_str().unwrap()).await;
        let stats = srv.stats().await;
        assert_eq!(stats["refreshed"], 2);
        assert_eq!(stats["tokens_issued"], 3);
        assert_eq!(stats["refresh_reused"], 1);
    }

    #[tokio::test]
    async fn a_reused_refresh_token_revokes_its_family() {
        let srv = start(AuthConfig::default()).await;
        let client = srv.public_client().await;
        let refresh = |token: String| {
            let client = client.clone();
            let srv = &srv;
            async move {
                srv.token(
                    &[
                        ("grant_type", "refresh_token"),
                        ("refresh_token", &token),
                        ("client_id", &client),
                    ],
                    None,
                )
                .await
            }
        };
        let rt = |v: &Value| v["refresh_token"].as_str().unwrap().to_owned();
        // Two grants: two families.
        let a0 = rt(&srv.code_flow(&client, "mcp:read").await);
        let b0 = rt(&srv.code_flow(&client, "mcp:read").await);
        let a1 = rt(&refresh(a0.clone()).await.json());
        let a2 = rt(&refresh(a1.clone()).await.json());
        assert_eq!(srv.stats().await["refresh_reused"], 0);
        // a1 was rotated away: presenting it again is reuse, and revokes
        // a2 (same family) but not b0.
        let r = refresh(a1).await;
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (400, json!("invalid_grant"))
        );
        assert_eq!(srv.stats().await["refresh_reused"], 1);
        let r = refresh(a2).await;
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (400, json!("invalid_grant"))
        );
        assert_eq!(refresh(b0).await.status, 200);
        // A token never issued is refused without counting as reuse.
        let r = refresh("never-issued".into()).await;
        assert_eq!(r.status, 400);
        let stats = srv.stats().await;
        assert_eq!(stats["refresh_reused"], 1);
        assert_eq!(stats["refreshed"], 3);
    }

    #[tokio::test]
    async fn every_request_needs_the_read_scope() {
        let srv = start(AuthConfig::default()).await;
        let client = srv.public_client().await;
        let admin_only = srv.code_flow(&client, "mcp:admin").await;
        let r = srv
            .mcp(
                admin_only["access_token"].as_str(),
                None,
                json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            )
            .await;
        assert_eq!(r.status, 403);
        assert!(
            r.header("www-authenticate").unwrap().starts_with(
                "Bearer error=\"insufficient_scope\", scope=\"mcp:read\", resource_metadata="
            ),
            "{:?}",
            r.header("www-authenticate")
        );
    }

    #[tokio::test]
    async fn confidential_clients_quirk_gives_every_client_a_secret() {
        let srv = start(AuthConfig::default().with_quirk(AuthQuirk::ConfidentialClients)).await;
        let r = srv
            .register(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}))
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let reg = r.json();
        assert_eq!(reg["token_endpoint_auth_method"], "client_secret_basic");
        let (id, secret) = (
            reg["client_id"].as_str().unwrap(),
            reg["client_secret"].as_str().unwrap(),
        );
        let code = query_param(&srv.authorize(id, "mcp:read").await, "code").unwrap();
        let resource = srv.resource();
        let pairs = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", resource.as_str()),
        ];
        let mut public = pairs.to_vec();
        public.push(("client_id", id));
        let r = srv.token(&public, None).await;
        assert_eq!(r.status, 401, "a secret is now needed: {}", r.body);
        let r = srv.token(&pairs, Some((id, secret))).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }

    #[tokio::test]
    async fn step_up_loop_quirk_refuses_even_the_admin_scope() {
        let srv = start(AuthConfig::default().with_quirk(AuthQuirk::StepUpLoop)).await;
        let client = srv.public_client().await;
        let admin = srv.code_flow(&client, "mcp:read mcp:admin").await;
        let admin = admin["access_token"].as_str().unwrap();
        let session = srv.session(admin).await;
        let r = srv.mcp(Some(admin), Some(&session), admin_call()).await;
        assert_eq!(r.status, 403);
        assert!(
            r.header("www-authenticate")
                .unwrap()
                .contains("insufficient_scope")
        );
    }

    #[tokio::test]
    async fn expired_access_token_gets_401() {
        let srv = start(AuthConfig::default().with_token_ttl_secs(0)).await;
        let client = srv.public_client().await;
        let tokens = srv.code_flow(&client, "mcp:read").await;
        assert_eq!(tokens["expires_in"], 0);
        let r = srv
            .mcp(
                tokens["access_token"].as_str(),
                None,
                json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            )
            .await;
        assert_eq!(r.status, 401);
        assert!(
            r.header("www-authenticate")
                .unwrap()
                .contains("invalid_token")
        );
    }

    #[tokio::test]
    async fn admin_tool_needs_step_up() {
        let srv = start(AuthConfig::default()).await;
        let client = srv.public_client().await;
        let read = srv.code_flow(&client, "mcp:read").await;
        let read = read["access_token"].as_str().unwrap();
        let session = srv.session(read).await;
        let r = srv.mcp(Some(read), Some(&session), admin_call()).await;
        assert_eq!(r.status, 403);
        assert_eq!(
            r.header("www-authenticate").unwrap(),
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"mcp:admin\", \
                 resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", \
                 error_description=\"admin_echo requires mcp:admin\"",
                srv.base
            )
        );
        // In a batch too.
        let r = srv
            .mcp(Some(read), Some(&session), json!([admin_call()]))
            .await;
        assert_eq!(r.status, 403);

        let admin = srv.code_flow(&client, "mcp:read mcp:admin").await;
        assert_eq!(admin["scope"], "mcp:read mcp:admin");
        let admin = admin["access_token"].as_str().unwrap();
        let session = srv.session(admin).await;
        let r = srv.mcp(Some(admin), Some(&session), admin_call()).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
    }

    #[tokio::test]
    async fn admin_tool_in_the_stateless_era() {
        let srv = start(AuthConfig::default()).await;
        let client = srv.public_client().await;
        let call = |token: String| {
            let srv = &srv;
            async move {
                let mut msg = admin_call();
                msg["params"]["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": crate::DEFAULT_MODERN_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                });
                read(
                    srv.http
                        .post(format!("{}/mcp", srv.base))
                        .header("content-type", "application/json")
                        .header("accept", "application/json, text/event-stream")
                        .header("mcp-protocol-version", crate::DEFAULT_MODERN_VERSION)
                        .header("mcp-method", "tools/call")
                        .header("mcp-name", ADMIN_TOOL)
                        .bearer_auth(token)
                        .body(msg.to_string()),
                )
                .await
            }
        };
        let read_only = srv.code_flow(&client, "mcp:read").await;
        let r = call(read_only["access_token"].as_str().unwrap().to_owned()).await;
        assert_eq!(r.status, 403);
        // mcp:admin alone is not enough: every request needs mcp:read.
        let admin_only = srv.code_flow(&client, "mcp:admin").await;
        let r = call(admin_only["access_token"].as_str().unwrap().to_owned()).await;
        assert_eq!(r.status, 403);
        assert!(
            r.header("www-authenticate")
                .unwrap()
                .contains("scope=\"mcp:read\""),
            "{:?}",
            r.header("www-authenticate")
        );
        let admin = srv.code_flow(&client, "mcp:read mcp:admin").await;
        // Mcp-Name still says admin_echo: the call is served as echo only
        // after the header checks.
        let r = call(admin["access_token"].as_str().unwrap().to_owned()).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
    }

    #[tokio::test]
    async fn refresh_200_error_quirk() {
        let srv = start(AuthConfig::default().with_quirk(AuthQuirk::Refresh200Error)).await;
        let client = srv.public_client().await;
        let tokens = srv.code_flow(&client, "mcp:read").await;
        let r = srv
            .token(
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
                    ("client_id", &client),
                ],
                None,
            )
            .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json(), json!({"error": "invalid_refresh_token"}));
        assert_eq!(srv.stats().await["refreshed"], 0);

        let srv = start(AuthConfig::default().with_quirk(AuthQuirk::Refresh200ErrorObject)).await;
        let client = srv.public_client().await;
        let tokens = srv.code_flow(&client, "mcp:read").await;
        let r = srv
            .token(
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
                    ("client_id", &client),
                ],
                None,
            )
            .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["error"]["code"], "invalid_refresh_token");
    }

    #[tokio::test]
    async fn confidential_clients_and_client_credentials() {
        let srv = start(AuthConfig::default()).await;
        let r = srv
            .register(json!({"grant_types": ["client_credentials"]}))
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let reg = r.json();
        assert_eq!(reg["token_endpoint_auth_method"], "client_secret_basic");
        let id = reg["client_id"].as_str().unwrap();
        let secret = reg["client_secret"].as_str().unwrap();

        let grant = [("grant_type", "client_credentials"), ("scope", "mcp:read")];
        let r = srv.token(&grant, Some((id, secret))).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let tokens = r.json();
        assert!(tokens.get("refresh_token").is_none());
        srv.session(tokens["access_token"].as_str().unwrap()).await;
        assert_eq!(srv.stats().await["client_credentials"], 1);

        let r = srv.token(&grant, Some((id, "wrong"))).await;
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (401, json!("invalid_client"))
        );
        assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
        // Registered for client_secret_basic: client_secret_post is refused.
        let mut post = grant.to_vec();
        post.extend([("client_id", id), ("client_secret", secret)]);
        let r = srv.token(&post, None).await;
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (401, json!("invalid_client"))
        );

        // A public client cannot use client_credentials.
        let r = srv
            .register(json!({"grant_types": ["client_credentials"],
                             "token_endpoint_auth_method": "none"}))
            .await;
        assert_eq!(r.status, 400);
        // Nor can a non-loopback redirect URI be registered.
        let r = srv
            .register(json!({"redirect_uris": ["https://evil.example/cb"]}))
            .await;
        assert_eq!(
            (r.status, r.json()["error"].clone()),
            (400, json!("invalid_redirect_uri"))
        );

        // client_secret_post with the code flow.
        let r = srv
            .register(json!({"redirect_uris": [REDIRECT],
                             "token_endpoint_auth_method": "client_secret_post"}))
            .await;
        let reg = r.json();
        let (id, secret) = (
            reg["client_id"].as_str().unwrap(),
            reg["client_secret"].as_str().unwrap(),
        );
        let code = query_param(&srv.authorize(id, "mcp:read").await, "code").unwrap();
        let resource = srv.resource();
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("client_id", id),
            ("resource", resource.as_str()),
        ];
        let r = srv.token(&pairs, None).await;
        assert_eq!(r.status, 401, "no secret: {}", r.body);
        // That attempt did not authenticate, so the code is still good.
        pairs.push(("client_secret", secret));
        let r = srv.token(&pairs, None).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
}
