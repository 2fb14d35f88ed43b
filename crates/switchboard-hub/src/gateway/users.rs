//! Hosts as users, each with their own backends (features `oauth` and
//! `http-server`): [`UserGateway`] serves every host user (the `sub` of
//! its token) the gateway over that user's own hub — the same configured
//! servers, connected with that user's own tokens — from
//! [`Users`](crate::hub::users::Users). One user's login never serves
//! another: the tokens are kept per user, and a hub holds one user's.
//!
//! A backend waiting for this user's login is listed as its
//! `SERVER__authenticate` tool. Calling it sends the host a URL
//! elicitation to the gateway's own `/oauth/connect` page — a link sealed
//! with the session key, naming the user and the server, good for
//! [`LINK_TTL`]. The spec's URL mode asks that the page make sure the
//! person who opens it is the user it was made for (a link forwarded to
//! someone else must not log *their* account in for the sender), so the
//! page first has the browser sign in at the gateway's own issuer, and
//! goes on only when that token names the same user; then to the
//! backend's authorization server. Both answers come back to
//! `/oauth/callback`, bound to the browser by a sealed cookie. The
//! pending logins are in the shared store, so any replica may serve any
//! step, and every replica's hub for the user hears of the new tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use switchboard::server::http::{HostAuth, Page, PageRequest, Pages, SessionKey};
use switchboard::server::{HostUser, Peer, Reply, RequestContext, ServerHandler};
use switchboard::transport::BoxFuture;
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::subscriptions::{
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use switchboard::types::tasks::{
    CancelTaskRequestParams, GetTaskRequestParams, GetTaskResult, UpdateTaskRequestParams,
};
use switchboard::types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult, EmptyResult,
    GetPromptRequestParams, GetPromptResult, GetSkillRequestParams, GetSkillResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResult,
    RequestOutcome, ServerCapabilities, SubscribeRequestParams, UnsubscribeRequestParams, codes,
};
use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
use switchboard_auth::store::{CredentialKey, CredentialStore, StoreError, StoredCredentials};

use super::{Authenticator, HubServer};
use crate::hub::users::Users;
use crate::hub::{Connect, Hub, ServerState};

/// How long a login link a host was sent may be opened.
pub const LINK_TTL: Duration = Duration::from_secs(10 * 60);
/// The cookie that binds a login's steps to the browser that began it.
pub const LOGIN_COOKIE: &str = "switchboard_login";
/// The gateway's page a login link opens.
pub const CONNECT_PATH: &str = "/oauth/connect";
/// Where authorization servers send the browser back.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// How long the last login page waits for the server to be ready.
const SETTLE: Duration = Duration::from_secs(30);

/// Makes the gateway a user is served: over their hub, logging in through
/// the given authenticator (which sends the login link).
pub type MakeServer = Arc<dyn Fn(&str, Hub, Authenticator) -> HubServer + Send + Sync>;

/// Sees each request's user (their token's claims) and hub before the
/// request is served: what a policy that names groups follows.
pub type RequestObserver = Arc<dyn Fn(&HostUser, &Hub) + Send + Sync>;

/// How the gateway's login pages reach the gateway's own issuer and know
/// its users.
#[derive(Clone)]
pub struct UserLogins {
    /// The gateway's public origin (`https://gw.example`): where the login
    /// pages are, as browsers reach them.
    pub public_url: url::Url,
    /// The gateway's resource (its MCP URL, the audience of its tokens):
    /// the browser signs in for it at the issuer the gateway's metadata
    /// names.
    pub resource: String,
    /// Checks the token the browser's sign-in yields, as hosts' tokens
    /// are checked; its `sub` must be the link's user.
    pub host_auth: Arc<dyn HostAuth>,
    /// Seals the links and the cookie (the replicas' shared session key).
    pub key: SessionKey,
    /// The name the gateway registers with under (dynamic registration).
    pub client_name: String,
    /// Plain `http` to an issuer on this machine (tests, a local issuer).
    pub allow_http_loopback: bool,
}

impl std::fmt::Debug for UserLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserLogins")
            .field("public_url", &self.public_url.as_str())
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

/// The gateway, each host user served their own (see the module docs).
/// Cheap to clone.
#[derive(Clone)]
pub struct UserGateway {
    inner: Arc<Inner>,
}

struct Inner {
    users: Users,
    info: Implementation,
    make: MakeServer,
    logins: UserLogins,
    /// Each user's gateway, over the hub it was made for.
    served: Mutex<HashMap<String, (Hub, HubServer)>>,
    /// Sees each request first ([`UserGateway::on_request`]).
    observer: std::sync::OnceLock<RequestObserver>,
    /// Each link user's sign-ins begun in the current minute.
    begun: Mutex<HashMap<String, (std::time::Instant, u32)>>,
}

/// The most sign-ins one user's links may begin per minute on one
/// replica (each asks the gateway's issuer and writes a pending login).
pub const MAX_SIGN_INS_PER_MINUTE: u32 = 20;

/// The most users whose sign-ins are counted at once.
const MAX_COUNTED: usize = 10_000;

impl std::fmt::Debug for UserGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserGateway")
            .field("logins", &self.inner.logins)
            .finish_non_exhaustive()
    }
}

/// What a login link carries.
#[derive(Serialize, Deserialize)]
struct Link {
    /// The user it was made for.
    u: String,
    /// The server to log in to.
    s: String,
    /// Made at, seconds since the Unix epoch.
    t: u64,
}

/// What the login cookie carries: the link's user and server, and the
/// step the browser is at.
#[derive(Serialize, Deserialize)]
struct Cookie {
    u: String,
    s: String,
    t: u64,
    /// `false` while signing in at the gateway's issuer, `true` at the
    /// backend's.
    b: bool,
}

const LINK_PURPOSE: &str = "user login link";
const COOKIE_PURPOSE: &str = "user login cookie";

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn fresh(t: u64) -> bool {
    now_secs().saturating_sub(t) <= LINK_TTL.as_secs()
}

impl UserGateway {
    /// Serves each user of `users` the gateway `make` makes over their
    /// hub; `logins` for the login pages.
    pub fn new(
        users: Users,
        info: Implementation,
        logins: UserLogins,
        make: impl Fn(&str, Hub, Authenticator) -> HubServer + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                users,
                info,
                make: Arc::new(make),
                logins,
                served: Mutex::default(),
                observer: std::sync::OnceLock::new(),
                begun: Mutex::default(),
            }),
        }
    }

    /// Calls `observe` with each request's user and their hub before the
    /// request is served (set once; a later call is ignored).
    pub fn on_request(&self, observe: impl Fn(&HostUser, &Hub) + Send + Sync + 'static) {
        let _ = self.inner.observer.set(Arc::new(observe));
    }

    /// The gateway of the request's user, once the observer has seen it.
    async fn serve_request(&self, user: Option<&HostUser>) -> Result<HubServer, ErrorObject> {
        let (hub, server) = self.served(user.map(|u| u.sub.as_str())).await?;
        if let (Some(observe), Some(user)) = (self.inner.observer.get(), user) {
            observe(user, &hub);
        }
        Ok(server)
    }

    /// `/metrics` in the Prometheus text format, over the users' hubs this
    /// replica holds: how many, per server how many users have it ready,
    /// and its calls, errors, timeouts, reconnects, calls in flight and
    /// latencies added up.
    pub fn metrics_text(&self) -> String {
        super::metrics::users_metrics_text(&self.inner.users.loaded_hubs())
    }

    /// The users' hubs.
    pub fn users(&self) -> &Users {
        &self.inner.users
    }

    /// `user`'s gateway: the one over their current hub, or one made now.
    ///
    /// # Errors
    /// No user (the endpoint does not authenticate hosts as users), or
    /// their hub cannot be made.
    async fn served(&self, user: Option<&str>) -> Result<(Hub, HubServer), ErrorObject> {
        let Some(user) = user else {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "this gateway serves each user their own servers, and the request names no \
                 user: serve it with hosts as users (an issuer)"
                    .to_owned(),
            ));
        };
        let hub = self.inner.users.hub(user).await.map_err(|e| {
            ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("cannot open the servers of this user: {e}"),
            )
        })?;
        let mut served = self.inner.served.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((made_for, server)) = served.get(user)
            && made_for.same(&hub)
        {
            return Ok((hub, server.clone()));
        }
        let server = (self.inner.make)(user, hub.clone(), self.authenticator(user));
        // Only the users whose hubs are kept (idle ones are let go).
        served.retain(|kept, _| self.inner.users.is_loaded(kept));
        served.insert(user.to_owned(), (hub.clone(), server.clone()));
        Ok((hub, server))
    }

    /// Logs `user` in to a server: the link to send them (a URL
    /// elicitation), and the end — the server ready in their hub, told by
    /// whichever replica the browser came back to.
    fn authenticator(&self, user: &str) -> Authenticator {
        // Weak: the user's gateway, which holds this, is held by `served`.
        let (inner, user) = (Arc::downgrade(&self.inner), user.to_owned());
        Arc::new(move |server: &str| {
            let (inner, user, server) = (inner.clone(), user.clone(), server.to_owned());
            Box::pin(async move {
                let gateway = UserGateway {
                    inner: inner.upgrade().ok_or("the gateway is stopping")?,
                };
                let link = serde_json::to_vec(&Link {
                    u: user.clone(),
                    s: server.clone(),
                    t: now_secs(),
                })
                .map_err(|e| e.to_string())?;
                let logins = &gateway.inner.logins;
                let sealed = logins
                    .key
                    .seal_value(LINK_PURPOSE, &link)
                    .ok_or("no randomness to seal a login link")?;
                let mut page = logins
                    .public_url
                    .join(CONNECT_PATH)
                    .map_err(|e| e.to_string())?;
                page.query_pairs_mut().append_pair("login", &sealed);
                let hub = gateway
                    .inner
                    .users
                    .hub(&user)
                    .await
                    .map_err(|e| e.to_string())?;
                let done: BoxFuture<'static, Result<(), String>> =
                    Box::pin(async move { ready(&hub, &server).await });
                Ok((page.to_string(), done))
            })
        })
    }

    /// The login pages: [`CONNECT_PATH`] and [`CALLBACK_PATH`].
    pub fn pages(&self) -> Pages {
        let gateway = self.clone();
        Pages::new(move |request| {
            let gateway = gateway.clone();
            match request.path.as_str() {
                CONNECT_PATH => Some(Box::pin(async move { gateway.connect(request).await })),
                CALLBACK_PATH => Some(Box::pin(async move { gateway.callback(request).await })),
                _ => None,
            }
        })
    }

    /// `/oauth/connect?login=…`: the link checked, then the browser sent
    /// to sign in at the gateway's issuer.
    async fn connect(&self, request: PageRequest) -> Page {
        let logins = &self.inner.logins;
        let Some(link) = request
            .param("login")
            .and_then(|sealed| logins.key.open_value(LINK_PURPOSE, &sealed))
            .and_then(|plain| serde_json::from_slice::<Link>(&plain).ok())
        else {
            return Page::text(
                400,
                "This login link is not valid here (changed, or made by another gateway). \
                 Ask your MCP host to log in to the server again for a new link.",
            );
        };
        if !fresh(link.t) {
            return Page::text(
                400,
                format!(
                    "This login link is older than {} minutes. Ask your MCP host to log in \
                     to the server again for a new link.",
                    LINK_TTL.as_secs() / 60
                ),
            );
        }
        if !self.may_begin(&link.u) {
            return Page::text(
                429,
                format!(
                    "Too many sign-ins were begun for this user in the last minute (at most \
                     {MAX_SIGN_INS_PER_MINUTE}). Wait a minute, then open the link again."
                ),
            );
        }
        let begun = match self.identity_flow(&link.u) {
            Ok(flow) => flow.begin(&logins.resource, None).await,
            Err(e) => Err(e),
        };
        match begun {
            Ok(request) => self
                .with_cookie(
                    Page::redirect(request.authorization_url.as_str()),
                    &Cookie {
                        u: link.u,
                        s: link.s,
                        t: now_secs(),
                        b: false,
                    },
                )
                .unwrap_or_else(|page| page),
            Err(e) => {
                tracing::warn!("a login page could not begin the sign-in at the issuer: {e}");
                Page::text(
                    502,
                    format!("The gateway cannot begin the sign-in at its issuer: {e}"),
                )
            }
        }
    }

    /// `/oauth/callback`: the gateway's issuer (the browser's user
    /// checked, then on to the backend's authorization server) or the
    /// backend's (the login finished).
    async fn callback(&self, request: PageRequest) -> Page {
        let logins = &self.inner.logins;
        let Some(cookie) = request
            .cookie(LOGIN_COOKIE)
            .and_then(|sealed| logins.key.open_value(COOKIE_PURPOSE, sealed))
            .and_then(|plain| serde_json::from_slice::<Cookie>(&plain).ok())
            .filter(|cookie| fresh(cookie.t))
        else {
            return Page::text(
                400,
                "This browser did not begin this login (or began it too long ago). Open the \
                 login link your MCP host showed, in this browser.",
            );
        };
        if let Some(error) = request.param("error") {
            let said = request.param("error_description").unwrap_or_default();
            return self.forget_cookie(Page::text(
                400,
                format!(
                    "The authorization server refused the login: {}",
                    clean(&format!("{error} {said}"))
                ),
            ));
        }
        if cookie.b {
            return self.finish_backend(&request, &cookie).await;
        }
        match self.signed_in_as(&request, &cookie.u).await {
            Ok(user) if user == cookie.u => {}
            Ok(_) => {
                return self.forget_cookie(Page::text(
                    403,
                    "You signed in as another user than the one this login link was made \
                     for, so nothing was logged in: a login link works only for the user \
                     whose MCP host showed it.",
                ));
            }
            Err(why) => return self.forget_cookie(Page::text(400, why)),
        }
        let connected = match self.inner.users.hub(&cookie.u).await {
            Ok(hub) => hub.connect(&cookie.s).await,
            Err(e) => Err(e),
        };
        match connected {
            Ok(Connect::Ready) => self.forget_cookie(Page::text(
                200,
                format!(
                    "You are logged in to `{}` already. You can close this page.",
                    clean(&cookie.s)
                ),
            )),
            Ok(Connect::NeedsAuth {
                authorization_url, ..
            }) => self
                .with_cookie(
                    Page::redirect(authorization_url.as_str()),
                    &Cookie {
                        b: true,
                        t: now_secs(),
                        ..cookie
                    },
                )
                .unwrap_or_else(|page| page),
            Err(e) => self.forget_cookie(Page::text(
                502,
                format!(
                    "The login to `{}` cannot begin: {}",
                    clean(&cookie.s),
                    clean(&e.to_string())
                ),
            )),
        }
    }

    /// The user the browser signed in as at the gateway's issuer: the
    /// code exchanged (the pending sign-in is the link user's, so
    /// another user's `state` finds nothing), its token checked as a
    /// host's.
    async fn signed_in_as(&self, request: &PageRequest, user: &str) -> Result<String, String> {
        let (Some(code), Some(state)) = (request.param("code"), request.param("state")) else {
            return Err("The sign-in came back without a code.".to_owned());
        };
        let flow = self.identity_flow(user).map_err(|e| e.to_string())?;
        let credentials = flow
            .finish(&code, &state, request.param("iss").as_deref())
            .await
            .map_err(|e| format!("The sign-in at the gateway's issuer failed: {e}"))?;
        let token = credentials
            .access_token
            .ok_or("The gateway's issuer gave no access token.")?;
        self.inner
            .logins
            .host_auth
            .check(token.expose())
            .await
            .map(|who| who.sub)
            .map_err(|e| format!("The gateway's issuer gave a token the gateway refuses: {e}"))
    }

    /// The backend's answer: the login finished for the cookie's user.
    async fn finish_backend(&self, request: &PageRequest, cookie: &Cookie) -> Page {
        let mut callback = match self.inner.logins.public_url.join(CALLBACK_PATH) {
            Ok(url) => url,
            Err(e) => return Page::text(500, e.to_string()),
        };
        callback.set_query(request.query.as_deref());
        let finished = match self
            .inner
            .users
            .finish_login(&cookie.u, callback.as_str())
            .await
        {
            // Every replica's hub for the user hears of the new tokens and
            // starts the server again, this one's too: a moment later it
            // is ready (or says why not).
            Ok((server, state)) if !state.is_ready() => {
                let settled = match self.inner.users.hub(&cookie.u).await {
                    Ok(hub) => tokio::time::timeout(SETTLE, ready(&hub, &server))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .and_then(|()| hub.status(&server).ok())
                        .map_or(state, |status| status.state),
                    Err(_) => state,
                };
                Ok((server, settled))
            }
            other => other,
        };
        let page = match finished {
            Ok((server, state)) if state.is_ready() => Page::text(
                200,
                format!(
                    "Logged in to `{}`: its tools are listed in your MCP host now. You can \
                     close this page.",
                    clean(&server)
                ),
            ),
            Ok((server, state)) => Page::text(
                502,
                format!(
                    "Logged in, but `{}` is {} now.",
                    clean(&server),
                    clean(state.name())
                ),
            ),
            Err(e) => Page::text(
                400,
                format!(
                    "The login to `{}` failed: {}",
                    clean(&cookie.s),
                    clean(&e.to_string())
                ),
            ),
        };
        self.forget_cookie(page)
    }

    /// Counts a sign-in begun for `user`; whether it is within
    /// [`MAX_SIGN_INS_PER_MINUTE`].
    fn may_begin(&self, user: &str) -> bool {
        let now = std::time::Instant::now();
        let minute = Duration::from_secs(60);
        let mut begun = self.inner.begun.lock().unwrap_or_else(|e| e.into_inner());
        if begun.len() >= MAX_COUNTED {
            begun.retain(|_, (since, _)| now.duration_since(*since) < minute);
            if begun.len() >= MAX_COUNTED {
                return false;
            }
        }
        let (since, count) = begun.entry(user.to_owned()).or_insert((now, 0));
        if now.duration_since(*since) >= minute {
            (*since, *count) = (now, 0);
        }
        *count += 1;
        *count <= MAX_SIGN_INS_PER_MINUTE
    }

    /// The sign-in at the gateway's own issuer, for `user`'s browser: its
    /// pending step kept with the user's pending logins (any replica
    /// finishes it; another user's callback finds nothing).
    fn identity_flow(&self, user: &str) -> Result<OAuthFlow, switchboard_auth::flow::OAuthError> {
        let logins = &self.inner.logins;
        let redirect = logins
            .public_url
            .join(CALLBACK_PATH)
            .map_err(|e| switchboard_auth::flow::OAuthError::Config(e.to_string()))?;
        OAuthFlow::new(
            OAuthConfig::new(
                logins.client_name.clone(),
                redirect.as_str(),
                Arc::new(Registered::new(
                    self.inner.users.store().credentials(GATEWAY_USER),
                )),
            )
            .pending_store(self.inner.users.pending_store(user))
            .pending_login_expiry(LINK_TTL)
            .allow_http_loopback(logins.allow_http_loopback),
        )
    }

    fn cookie_attributes(&self) -> &'static str {
        if self.inner.logins.public_url.scheme() == "https" {
            "; Path=/oauth/; HttpOnly; SameSite=Lax; Secure"
        } else {
            "; Path=/oauth/; HttpOnly; SameSite=Lax"
        }
    }

    fn with_cookie(&self, page: Page, cookie: &Cookie) -> Result<Page, Page> {
        let sealed = serde_json::to_vec(cookie)
            .ok()
            .and_then(|plain| self.inner.logins.key.seal_value(COOKIE_PURPOSE, &plain))
            .ok_or_else(|| Page::text(500, "no randomness to seal the login cookie"))?;
        Ok(page.set_cookie(format!(
            "{LOGIN_COOKIE}={sealed}; Max-Age={}{}",
            LINK_TTL.as_secs(),
            self.cookie_attributes()
        )))
    }

    fn forget_cookie(&self, page: Page) -> Page {
        page.set_cookie(format!(
            "{LOGIN_COOKIE}=; Max-Age=0{}",
            self.cookie_attributes()
        ))
    }
}

/// Resolves when `server` is ready in `hub` (a login finished here or on
/// another replica), or fails with why it cannot be.
async fn ready(hub: &Hub, server: &str) -> Result<(), String> {
    let mut events = hub.events();
    loop {
        match hub.status(server).map(|s| s.state) {
            Ok(ServerState::Ready) => return Ok(()),
            Ok(ServerState::Failed(failure)) => return Err(failure.message),
            Ok(ServerState::Disabled) => return Err(format!("`{server}` is disabled")),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        match events.next().await {
            Some(_) => {}
            None => return Err("the gateway is stopping".to_owned()),
        }
    }
}

/// A peer's text as one short line for a page: no control characters.
fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(500).collect()
}

/// The user the gateway's own registration at its issuer is kept under in
/// the shared store (a host user's `sub` is never empty).
const GATEWAY_USER: &str = "";

/// The sign-in's credentials: its token only in memory (read once, to
/// know the user, never used), its client registration also in the
/// shared store, so that a sign-in on any replica registers the gateway
/// at its issuer once, not at every opening of a link.
#[derive(Debug)]
struct Registered {
    memory: Mutex<HashMap<CredentialKey, StoredCredentials>>,
    shared: Arc<dyn CredentialStore>,
}

impl Registered {
    fn new(shared: Arc<dyn CredentialStore>) -> Self {
        Self {
            memory: Mutex::default(),
            shared,
        }
    }
}

/// Where the shared registration says when it was made.
const REGISTERED_AT: &str = "switchboard_registered_at";

/// How long the shared registration is used.
const REGISTRATION_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// `credentials` less their tokens (and the stamp): the registration
/// alone.
fn registration(mut credentials: StoredCredentials) -> StoredCredentials {
    credentials.access_token = None;
    credentials.refresh_token = None;
    credentials.token_type = None;
    credentials.expires_at = None;
    credentials.received_at = None;
    credentials.extra.remove(REGISTERED_AT);
    credentials
}

impl CredentialStore for Registered {
    fn load(&self, key: &CredentialKey) -> Result<Option<StoredCredentials>, StoreError> {
        if let Some(kept) = self
            .memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
        {
            return Ok(Some(kept.clone()));
        }
        // A registration older than a day is made again: an issuer may
        // forget dynamically registered clients, and nothing would say so.
        Ok(self
            .shared
            .load(key)?
            .filter(|kept| {
                kept.extra
                    .get(REGISTERED_AT)
                    .and_then(serde_json::Value::as_u64)
                    .is_some_and(|at| now_secs().saturating_sub(at) < REGISTRATION_FOR.as_secs())
            })
            .map(registration))
    }

    fn update(
        &self,
        key: &CredentialKey,
        f: &mut dyn FnMut(Option<StoredCredentials>) -> Option<StoredCredentials>,
    ) -> Result<Option<StoredCredentials>, StoreError> {
        let before = self.load(key)?;
        let new = f(before.clone());
        let mut kept = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        match &new {
            Some(new) => kept.insert(key.clone(), new.clone()),
            None => kept.remove(key),
        };
        drop(kept);
        let (was, now) = (before.map(registration), new.clone().map(registration));
        if was != now {
            let stamped = now.map(|mut kept| {
                kept.extra
                    .insert(REGISTERED_AT.to_owned(), now_secs().into());
                kept
            });
            self.shared.update(key, &mut |_| stamped.clone())?;
        }
        Ok(new)
    }
}

/// Delegates a request to the user's gateway.
macro_rules! delegate {
    ($self:ident, $cx:ident, |$server:ident| $call:expr) => {{
        let this = $self.clone();
        Box::pin(async move {
            let user = $cx.user().cloned();
            let $server = this.serve_request(user.as_ref()).await?;
            $call.await
        })
    }};
}

impl ServerHandler for UserGateway {
    fn info(&self) -> Implementation {
        self.inner.info.clone()
    }

    fn capabilities(&self) -> ServerCapabilities {
        super::handler::capabilities()
    }

    fn instructions(&self) -> Option<String> {
        Some(super::handler::INSTRUCTIONS.to_owned())
    }

    /// The user's own tool's schema, for the endpoint's `Mcp-Param-*`
    /// check, once their hub is held here (before, the backend checks).
    fn tool_input_schema_for(
        &self,
        name: &str,
        user: Option<&HostUser>,
    ) -> Option<serde_json::Value> {
        let user = user?;
        let served = self.inner.served.lock().unwrap_or_else(|e| e.into_inner());
        let (_, server) = served.get(&user.sub)?;
        server.tool_input_schema(name)
    }

    /// A session-era session is its user's: their gateway follows it
    /// (list changes, roots). A 2026-07-28 request names its own user.
    fn connected(&self, peer: &Peer) {
        let Some(user) = peer.user().map(str::to_owned) else {
            return;
        };
        let (this, peer) = (self.clone(), peer.clone());
        tokio::spawn(async move {
            if let Ok((_, server)) = this.served(Some(&user)).await {
                server.connected(&peer);
            }
        });
    }

    fn list_tools(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListToolsResult> {
        delegate!(self, cx, |server| server.list_tools(params, cx))
    }

    fn list_json(
        &self,
        method: &str,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Option<Reply<Box<RawValue>>> {
        let method = method.to_owned();
        Some(delegate!(self, cx, |server| async move {
            match server.list_json(&method, params, cx) {
                Some(answer) => answer.await,
                None => Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("{method} is not answered"),
                )),
            }
        }))
    }

    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<CallToolResult>> {
        delegate!(self, cx, |server| server.call_tool(params, cx))
    }

    fn list_resources(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListResourcesResult> {
        delegate!(self, cx, |server| server.list_resources(params, cx))
    }

    fn list_resource_templates(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListResourceTemplatesResult> {
        delegate!(self, cx, |server| server
            .list_resource_templates(params, cx))
    }

    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext,
    ) -> Reply<ReadResourceResult> {
        delegate!(self, cx, |server| server.read_resource(params, cx))
    }

    fn subscribe_resource(
        &self,
        params: SubscribeRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        delegate!(self, cx, |server| server.subscribe_resource(params, cx))
    }

    fn unsubscribe_resource(
        &self,
        params: UnsubscribeRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        delegate!(self, cx, |server| server.unsubscribe_resource(params, cx))
    }

    fn list_prompts(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListPromptsResult> {
        delegate!(self, cx, |server| server.list_prompts(params, cx))
    }

    fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> Reply<GetPromptResult> {
        delegate!(self, cx, |server| server.get_prompt(params, cx))
    }

    fn get_prompt_outcome(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> Reply<RequestOutcome<GetPromptResult>> {
        delegate!(self, cx, |server| server.get_prompt_outcome(params, cx))
    }

    fn listen(
        &self,
        params: SubscriptionsListenRequestParams,
        cx: RequestContext,
    ) -> Reply<SubscriptionsListenResult> {
        delegate!(self, cx, |server| ServerHandler::listen(
            &server, params, cx
        ))
    }

    fn get_task(&self, params: GetTaskRequestParams, cx: RequestContext) -> Reply<GetTaskResult> {
        delegate!(self, cx, |server| server.get_task(params, cx))
    }

    fn update_task(
        &self,
        params: UpdateTaskRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        delegate!(self, cx, |server| server.update_task(params, cx))
    }

    fn cancel_task(
        &self,
        params: CancelTaskRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        delegate!(self, cx, |server| server.cancel_task(params, cx))
    }

    fn complete(&self, params: CompleteRequestParams, cx: RequestContext) -> Reply<CompleteResult> {
        delegate!(self, cx, |server| server.complete(params, cx))
    }

    fn list_skills(
        &self,
        params: PaginatedRequestParams,
        cx: RequestContext,
    ) -> Reply<ListSkillsResult> {
        delegate!(self, cx, |server| server.list_skills(params, cx))
    }

    fn get_skill(
        &self,
        params: GetSkillRequestParams,
        cx: RequestContext,
    ) -> Reply<GetSkillResult> {
        delegate!(self, cx, |server| server.get_skill(params, cx))
    }
}
