//! `switchboard login`, `logout` and `auth status`, and OAuth for every
//! command that talks to an HTTP server.
//!
//! The library's credential store cannot list what it holds (the OS
//! keyring offers no listing), so the CLI keeps an index of its logins
//! beside the credentials: `<credentials file stem>.logins.json`, holding
//! for each login the URL given, the resource and the issuer — never a
//! token. A command given `--url` finds its credentials through it.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard::url_display::url_display;
use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
use switchboard_auth::loopback::{CallbackError, LoopbackReceiver, parse_redirect};
use switchboard_auth::provider::OAuthProvider;
use switchboard_auth::store::{
    CredentialKey, CredentialStore, FileStore, StoredCredentials, default_store,
};
use switchboard_hub::config::OAuthSettings;
use switchboard_hub::private_file;
use switchboard_hub::{ServerConfig, TransportConfig};

use crate::cli::LoginArgs;
use crate::term::sanitize::line;
use url::Url;

/// The variable naming a credentials file to use instead of the default
/// store (as `--credentials` does).
pub(crate) const CREDENTIALS_ENV: &str = "SWITCHBOARD_CREDENTIALS";
/// The client name sent in dynamic registration.
const CLIENT_NAME: &str = "switchboard";
/// The redirect URI of flows that only refresh (never sent anywhere).
const REFRESH_ONLY_REDIRECT: &str = "http://127.0.0.1/callback";

/// Where credentials live: the store and the CLI's index of logins.
pub(crate) struct Credentials {
    store: Arc<dyn CredentialStore>,
    index: PathBuf,
    /// Shown to the user: the file, or "the default store".
    described: String,
}

impl Credentials {
    /// The store `--credentials` (or `SWITCHBOARD_CREDENTIALS`) names, else
    /// the library's default store.
    pub(crate) fn open(flag: Option<&Path>) -> anyhow::Result<Self> {
        let file = flag
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(CREDENTIALS_ENV).map(PathBuf::from))
            .filter(|p| !p.as_os_str().is_empty());
        if let Some(file) = file {
            return Ok(Self {
                index: index_path(&file),
                described: file.display().to_string(),
                store: Arc::new(FileStore::new(file)),
            });
        }
        let store = default_store().context("no credential store is available")?;
        let default = FileStore::default_path()
            .context("no configuration directory for the index of logins")?;
        Ok(Self {
            index: index_path(&default),
            described: format!("the default store, {}", store.describe()),
            store,
        })
    }

    fn logins(&self) -> anyhow::Result<Vec<Login>> {
        let bytes = match private_file::read_no_follow(&self.index) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", self.index.display()));
            }
        };
        let index: Index = serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not an index of logins", self.index.display()))?;
        Ok(index.logins)
    }

    fn save_logins(&self, logins: Vec<Login>) -> anyhow::Result<()> {
        let index = Index { version: 1, logins };
        let bytes = serde_json::to_vec_pretty(&index)?;
        if let Some(dir) = self.index.parent() {
            private_file::create_private_dir(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        // Written aside and renamed, so a crash never leaves half an index;
        // 0600 from creation, never through a planted symlink: a server URL
        // may name a tenant, or carry a key in its query.
        private_file::write_atomically(&self.index, &bytes, false)
            .with_context(|| format!("cannot write {}", self.index.display()))
    }

    /// The login that serves `url`: one made with that URL, else one whose
    /// resource is it, else the one whose resource is its longest prefix.
    fn login_for(&self, url: &str) -> Option<Login> {
        let logins = self.logins().ok()?;
        let wanted = normalize(url);
        if let Some(login) = logins.iter().rev().find(|l| normalize(&l.server) == wanted) {
            return Some(login.clone());
        }
        logins
            .iter()
            .rev()
            .filter(|l| {
                let resource = normalize(&l.resource);
                wanted == resource || wanted.starts_with(&format!("{resource}/"))
            })
            .max_by_key(|l| l.resource.len())
            .cloned()
    }

    async fn load(&self, key: CredentialKey) -> anyhow::Result<Option<StoredCredentials>> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || store.load(&key))
            .await?
            .context("cannot read the credential store")
    }
}

/// The index of logins; see the module docs.
#[derive(Serialize, Deserialize)]
struct Index {
    version: u32,
    #[serde(default)]
    logins: Vec<Login>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct Login {
    /// The URL given to `switchboard login`.
    server: String,
    resource: String,
    issuer: String,
}

impl Login {
    fn key(&self) -> CredentialKey {
        CredentialKey::new(self.resource.clone(), self.issuer.clone())
    }
}

fn index_path(credentials: &Path) -> PathBuf {
    let stem = credentials.file_stem().map_or_else(
        || "credentials".into(),
        |s| s.to_string_lossy().into_owned(),
    );
    credentials.with_file_name(format!("{stem}.logins.json"))
}

/// A URL compared by what it means: scheme and host lowercased, default
/// port dropped, no trailing slash, no fragment.
fn normalize(url: &str) -> String {
    let mut text = match Url::parse(url.trim()) {
        Ok(mut parsed) => {
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.trim().to_owned(),
    };
    while text.ends_with('/') {
        text.pop();
    }
    text
}

/// Whether the URL's host is this machine: plain `http` is allowed there
/// (local servers, tests) and nowhere else.
fn is_loopback(url: &str) -> bool {
    Url::parse(url).ok().is_some_and(|u| match u.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    })
}

/// The command that logs in to `url`, as the user should type it.
pub(crate) fn login_command(url: &str, credentials_flag: Option<&Path>) -> String {
    match credentials_flag {
        Some(file) => format!(
            "switchboard login --credentials {} {}",
            shell_word(&file.display().to_string()),
            shell_word(url)
        ),
        None => format!("switchboard login {}", shell_word(url)),
    }
}

fn shell_word(text: &str) -> String {
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:=%@+,".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// OAuth for a command connecting to `url`: the stored tokens of the login
/// that serves it, sent and refreshed. `None` when there is none (the
/// server then answers 401 if it needs authorization).
///
/// `oauth` is the server's `oauth` block, when it is a configured server:
/// its client and scopes are the refresh's too.
pub(crate) fn provider_for(
    url: &str,
    flag: Option<&Path>,
    oauth: Option<&OAuthSettings>,
) -> Option<Arc<OAuthProvider>> {
    // No store here (no configuration directory): connect without OAuth;
    // a server that needs it answers 401 and the login hint says what to do.
    let credentials = Credentials::open(flag).ok()?;
    let login = credentials.login_for(url)?;
    let mut config = OAuthConfig::new(CLIENT_NAME, REFRESH_ONLY_REDIRECT, credentials.store)
        .allow_http_loopback(is_loopback(url));
    if let Some(oauth) = oauth {
        config = with_settings(config, oauth);
    }
    let flow = OAuthFlow::new(config).ok()?;
    Some(Arc::new(OAuthProvider::new(flow, login.key())))
}

/// `config` with a server's `oauth` block applied: its pre-registered
/// client (and secret), its scopes, and the issuer the secret is for.
fn with_settings(mut config: OAuthConfig, oauth: &OAuthSettings) -> OAuthConfig {
    if let Some(id) = &oauth.client_id {
        let secret = oauth
            .client_secret
            .as_ref()
            .map(switchboard_auth::store::Secret::new);
        config = config.pre_registered(id.clone(), secret);
    }
    if !oauth.scopes.is_empty() {
        config = config.scopes(oauth.scopes.iter().cloned());
    }
    if let Some(issuer) = &oauth.issuer {
        config = config.expected_issuer(issuer.clone());
    }
    config
}

/// The configured server called `name`, expanded (its URL may hold
/// `${VAR}` references): its URL and `oauth` block.
fn configured(name: &str, config_flag: Option<PathBuf>) -> anyhow::Result<(String, ServerConfig)> {
    let context = crate::configure::Context::new(config_flag).map_err(|f| f.error)?;
    let loaded = context.load(false);
    let Some(server) = loaded.get(name) else {
        return Err(crate::configure::not_configured(name, &loaded).error);
    };
    let clean = crate::approve::clean(name);
    if !server.trust.allows_start() {
        bail!(
            "server `{clean}` is not approved yet ({}); run `switchboard approve {clean}` first",
            crate::approve::pending_reason(server)
        );
    }
    match &server.transport {
        TransportConfig::Http { .. } => {}
        TransportConfig::WebSocket { .. } => {
            bail!("server `{clean}` is a WebSocket server; only HTTP servers log in with OAuth")
        }
        _ => bail!(
            "server `{clean}` runs a local command (stdio), which takes no login; only HTTP servers log in with OAuth"
        ),
    }
    let expanded = loaded
        .expander(&context.locations)
        .expand(server)
        .with_context(|| format!("server `{clean}`"))?;
    for warning in &expanded.warnings {
        crate::configure::report_diagnostic(warning, false);
    }
    let server = expanded.config;
    let TransportConfig::Http { url, .. } = &server.transport else {
        bail!("server `{clean}`: only HTTP servers log in with OAuth");
    };
    Ok((url.clone(), server))
}

/// The server's `WWW-Authenticate` challenge, from a request made without
/// credentials; `None` when it does not refuse (discovery then goes by the
/// well-known URLs alone).
async fn challenge(url: &str) -> Option<String> {
    let http = probe_client(Duration::from_secs(10))?;
    let response = http
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .send()
        .await
        .ok()?;
    if !matches!(response.status().as_u16(), 401 | 403) {
        return None;
    }
    response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// An HTTP client for asking a server something without credentials:
/// the transports' TLS (no CA roots are read until an https://
/// handshake), no redirect followed, `timeout` for the whole exchange.
pub(crate) fn probe_client(timeout: Duration) -> Option<reqwest::Client> {
    switchboard::transport::http::reqwest_builder()
        .ok()?
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .build()
        .ok()
}

/// `switchboard login`.
///
/// `server` is a URL, or the name of a server in the configuration
/// (`config_flag` is `--config`).
pub(crate) async fn login(
    args: LoginArgs,
    flag: Option<&Path>,
    config_flag: Option<PathBuf>,
) -> anyhow::Result<u8> {
    let given = args.server.trim().to_owned();
    let (server, oauth) = match Url::parse(&given) {
        Ok(parsed) => {
            if !matches!(parsed.scheme(), "http" | "https") {
                bail!("{given}: only http(s) servers use OAuth");
            }
            (given, None)
        }
        // Not a URL: a configured server's name.
        Err(_) => {
            let (url, config) = configured(&given, config_flag)?;
            (url, config.oauth)
        }
    };
    let credentials = Credentials::open(flag)?;
    let port = args
        .port
        .or_else(|| oauth.as_ref().and_then(|o| o.callback_port));
    let Begun {
        flow,
        request,
        receiver,
    } = begin(
        &server,
        oauth.as_ref(),
        port,
        &args.scopes,
        args.client_id.as_deref(),
        &credentials,
    )
    .await?;
    // The authorization server chose this URL: shown as the browser will
    // parse it, and that very text is what the browser gets.
    let shown = url_display(request.authorization_url.as_str()).with_context(|| {
        format!(
            "the authorization server {} gave a login page that is not an http(s) URL",
            request.issuer
        )
    })?;
    let warnings = crate::term::ask::url_warnings(&shown);
    let url = shown.url.as_str();

    if args.json {
        eprintln!(
            "{}",
            crate::term::sanitize::json(
                json!({ "authorizationUrl": url, "host": shown.host, "warnings": warnings })
                    .to_string()
            )
        );
    } else {
        eprintln!(
            "To authorize switchboard at {}, open this page on {}:\n\n  {}\n",
            line(request.issuer.as_str()),
            line(&shown.host),
            line(url)
        );
        for warning in &warnings {
            eprintln!("warning: {}", line(warning));
        }
    }
    if args.no_browser {
        eprintln!(
            "After you approve, the browser goes to {}?… (it may show an error page there).\n\
             Paste that whole URL from its address bar here:",
            receiver.redirect_uri()
        );
    } else {
        // On a thread of its own: a text-mode browser (or `BROWSER=…`) runs
        // until it is done, and it comes back to the loopback this process
        // must already be serving. The thread ends with the process.
        let url = url.to_owned();
        std::thread::spawn(move || {
            if let Err(e) = webbrowser::open(&url) {
                eprintln!("Could not open a browser ({e}); open the URL above yourself.");
            }
        });
        eprintln!("Waiting for the browser (or paste the URL it was redirected to)…");
    }

    let timeout = Duration::from_secs(args.timeout);
    let read_stdin = args.no_browser || std::io::IsTerminal::is_terminal(&std::io::stdin());
    let params = wait(&receiver, &request.state, timeout, read_stdin).await?;
    let stored = finish(&flow, &request, &params, &server, &credentials).await?;

    let entry = status_json(&server, &stored);
    if args.json {
        crate::term::output::print_json(&json!({ "loggedIn": entry }));
    } else {
        println!(
            "Logged in to {} (issuer {}, client {}); credentials kept in {}.",
            line(stored.resource.as_str()),
            line(stored.issuer.as_str()),
            line(&stored.client_id),
            credentials.described
        );
        if !stored.scopes.is_empty() {
            println!("Scopes: {}", line(&stored.scopes.join(" ")));
        }
    }
    Ok(0)
}

/// A login under way: the flow, what the browser must open, and the
/// loopback it comes back to.
struct Begun {
    flow: OAuthFlow,
    request: switchboard_auth::flow::AuthorizationRequest,
    receiver: LoopbackReceiver,
}

/// Begins a login to `server` (a URL) with its `oauth` block: binds the
/// loopback (on `port`, else any) and asks the authorization server.
async fn begin(
    server: &str,
    oauth: Option<&OAuthSettings>,
    port: Option<u16>,
    scopes: &[String],
    client_id: Option<&str>,
    credentials: &Credentials,
) -> anyhow::Result<Begun> {
    let receiver = LoopbackReceiver::bind(port.unwrap_or(0)).await?;
    let mut config = OAuthConfig::new(
        CLIENT_NAME,
        receiver.redirect_uri(),
        credentials.store.clone(),
    )
    .allow_http_loopback(is_loopback(server));
    if let Some(oauth) = oauth {
        config = with_settings(config, oauth);
    }
    if !scopes.is_empty() {
        config = config.scopes(scopes.iter().cloned());
    }
    if let Some(id) = client_id {
        config = config.pre_registered(id.to_owned(), None);
    }
    let flow = OAuthFlow::new(config)?;
    let challenge = challenge(server).await;
    let request = match flow.begin(server, challenge.as_deref()).await {
        Ok(request) => request,
        // The flow's advice names the library's setting; the user has a
        // config file.
        Err(error @ switchboard_auth::flow::OAuthError::IssuerNotNamed { .. }) => {
            return Err(anyhow::Error::new(error).context(format!(
                "cannot start authorization for {server}: its client secret may only go to the \
                 authorization server it belongs to; name it in the server's oauth block \
                 (`issuer = \"https://…\"` in switchboard.toml, `\"issuer\"` in JSON)"
            )));
        }
        Err(error) => {
            return Err(anyhow::Error::new(error)
                .context(format!("cannot start authorization for {server}")));
        }
    };
    Ok(Begun {
        flow,
        request,
        receiver,
    })
}

/// Ends a login with the authorization response: the tokens are stored
/// and the login is indexed under `server`.
async fn finish(
    flow: &OAuthFlow,
    request: &switchboard_auth::flow::AuthorizationRequest,
    params: &switchboard_auth::loopback::CallbackParams,
    server: &str,
    credentials: &Credentials,
) -> anyhow::Result<StoredCredentials> {
    let stored = flow
        .finish(&params.code, &params.state, params.iss.as_deref())
        .await
        .with_context(|| format!("authorization at {} failed", request.issuer))?;
    let mut logins = credentials.logins()?;
    logins.retain(|l| normalize(&l.server) != normalize(server) && l.key() != stored.key());
    logins.push(Login {
        server: server.to_owned(),
        resource: stored.resource.clone(),
        issuer: stored.issuer.clone(),
    });
    credentials.save_logins(logins)?;
    Ok(stored)
}

/// A login to configured server `name` for `switchboard serve`'s
/// `authenticate` tool: the page the host's user must open (an http(s)
/// URL, as the browser will parse it), and the login's end — the browser
/// back on the loopback within `timeout`, the tokens stored.
pub(crate) async fn gateway_login(
    name: &str,
    url: &str,
    oauth: Option<&OAuthSettings>,
    flag: Option<&Path>,
    timeout: Duration,
) -> anyhow::Result<(String, switchboard::BoxFuture<'static, anyhow::Result<()>>)> {
    let credentials = Credentials::open(flag)?;
    let port = oauth.and_then(|o| o.callback_port);
    let Begun {
        flow,
        request,
        receiver,
    } = begin(url, oauth, port, &[], None, &credentials).await?;
    let shown = url_display(request.authorization_url.as_str()).with_context(|| {
        format!(
            "the authorization server {} gave a login page that is not an http(s) URL",
            request.issuer
        )
    })?;
    let page = shown.url.as_str().to_owned();
    let server = url.to_owned();
    let name = name.to_owned();
    let done = Box::pin(async move {
        let params = match receiver.receive(&request.state, timeout).await {
            Err(CallbackError::Timeout { .. }) => {
                bail!(
                    "no authorization for `{name}` arrived within {} s; call the tool again",
                    timeout.as_secs()
                )
            }
            other => other?,
        };
        finish(&flow, &request, &params, &server, &credentials).await?;
        Ok(())
    });
    Ok((page, done))
}

/// Where logins made by `switchboard login` are indexed: a file that
/// changes with every login, for a running gateway to watch.
pub(crate) fn login_index(flag: Option<&Path>) -> Option<PathBuf> {
    Credentials::open(flag).ok().map(|c| c.index)
}

/// The authorization response: from the browser on the loopback, or a
/// redirect URL pasted on stdin, whichever comes first.
async fn wait(
    receiver: &LoopbackReceiver,
    state: &str,
    timeout: Duration,
    read_stdin: bool,
) -> anyhow::Result<switchboard_auth::loopback::CallbackParams> {
    let deadline = tokio::time::Instant::now() + timeout;
    let (tx, mut lines) = tokio::sync::mpsc::channel::<String>(4);
    if read_stdin {
        // A plain thread: a blocking read of stdin cannot be cancelled, and
        // a runtime's blocking task would hold up its shutdown. It ends with
        // the process.
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
    } else {
        drop(tx);
    }
    let mut stdin_open = read_stdin;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        tokio::select! {
            received = receiver.receive(state, left) => {
                return match received {
                    Err(CallbackError::Timeout { .. }) => Err(anyhow::anyhow!(
                        "no authorization arrived within {} s (--timeout); run the login again",
                        timeout.as_secs()
                    )),
                    other => Ok(other?),
                };
            }
            line = lines.recv(), if stdin_open => {
                let Some(line) = line else {
                    stdin_open = false;
                    continue;
                };
                if line.trim().is_empty() {
                    continue;
                }
                match parse_redirect(&line, Some(state)) {
                    Ok(params) => return Ok(params),
                    Err(e @ CallbackError::Denied { .. }) => return Err(e.into()),
                    Err(e) => eprintln!("{e}; paste the whole URL again:"),
                }
            }
        }
    }
}

/// `switchboard logout`.
pub(crate) async fn logout(target: &str, flag: Option<&Path>, json: bool) -> anyhow::Result<u8> {
    let gone = remove_logins(target, flag).await?;
    if json {
        let removed: Vec<Value> = gone
            .iter()
            .map(|l| json!({ "server": l.server, "resource": l.resource, "issuer": l.issuer }))
            .collect();
        crate::term::output::print_json(&json!({ "loggedOut": removed }));
    } else {
        for login in &gone {
            println!(
                "Logged out of {} (issuer {}); its credentials were removed.",
                line(&login.resource),
                line(&login.issuer)
            );
        }
    }
    Ok(0)
}

/// The logins to `target` (a server's URL or its resource) removed, with
/// their credentials: what `logout` and the console's Log out do.
pub(crate) async fn remove_logins(target: &str, flag: Option<&Path>) -> anyhow::Result<Vec<Login>> {
    let credentials = Credentials::open(flag)?;
    let wanted = normalize(target);
    let (gone, kept): (Vec<Login>, Vec<Login>) = credentials
        .logins()?
        .into_iter()
        .partition(|l| normalize(&l.server) == wanted || normalize(&l.resource) == wanted);
    if gone.is_empty() {
        bail!("not logged in to {target} (`switchboard auth status` lists the logins)");
    }
    for login in &gone {
        let store = credentials.store.clone();
        let key = login.key();
        tokio::task::spawn_blocking(move || store.delete(&key))
            .await?
            .with_context(|| format!("cannot remove the credentials for {}", login.resource))?;
    }
    credentials.save_logins(kept)?;
    Ok(gone)
}

/// `switchboard auth status`.
pub(crate) async fn status(flag: Option<&Path>, json: bool) -> anyhow::Result<u8> {
    let credentials = Credentials::open(flag)?;
    let mut entries = Vec::new();
    for login in credentials.logins()? {
        if let Some(stored) = credentials.load(login.key()).await? {
            entries.push(status_json(&login.server, &stored));
        }
    }
    if json {
        crate::term::output::print_json(
            &json!({ "store": credentials.described, "credentials": entries }),
        );
        return Ok(0);
    }
    if entries.is_empty() {
        println!("Not logged in anywhere (store: {}).", credentials.described);
        return Ok(0);
    }
    let mut table =
        crate::term::output::table(&["SERVER", "ISSUER", "CLIENT ID", "SCOPES", "TOKEN"]);
    for entry in &entries {
        let text = |key: &str| line(entry[key].as_str().unwrap_or("")).into_owned();
        let scopes: Vec<&str> = entry["scopes"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        table.add_row([
            text("server"),
            text("issuer"),
            text("clientId"),
            line(&scopes.join(" ")).into_owned(),
            token_state(entry),
        ]);
    }
    println!("{table}");
    println!("Store: {}", credentials.described);
    Ok(0)
}

/// What `auth status` shows of one login: never a secret value, only
/// whether there is one.
fn status_json(server: &str, stored: &StoredCredentials) -> Value {
    let now = SystemTime::now();
    let unix = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let expires_in = stored.expires_at.map(|at| match at.duration_since(now) {
        Ok(left) => left.as_secs() as i64,
        Err(past) => -(past.duration().as_secs() as i64),
    });
    json!({
        "server": server,
        "resource": stored.resource,
        "issuer": stored.issuer,
        "clientId": stored.client_id,
        "scopes": stored.scopes,
        "expiresAt": stored.expires_at.map(unix),
        "expiresInSecs": expires_in,
        "hasAccessToken": stored.access_token.is_some(),
        "hasRefreshToken": stored.refresh_token.is_some(),
    })
}

fn token_state(entry: &Value) -> String {
    let refreshable = entry["hasRefreshToken"] == true;
    if entry["hasAccessToken"] != true {
        return if refreshable {
            "refreshable"
        } else {
            "none: log in again"
        }
        .to_owned();
    }
    match entry["expiresInSecs"].as_i64() {
        None => "valid (no expiry given)".to_owned(),
        Some(left) if left > 0 => format!("expires in {}", human(left)),
        Some(_) if refreshable => "expired, refreshable".to_owned(),
        Some(_) => "expired: log in again".to_owned(),
    }
}

fn human(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn the_index_is_private_and_a_planted_symlink_is_not_written_through() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("switchboard-index-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let index = dir.join("credentials.logins.json");
        std::os::unix::fs::symlink(&victim, &index).unwrap();
        private_file::write_atomically(&index, b"[]", false).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let meta = std::fs::symlink_metadata(&index).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn urls_compare_by_meaning() {
        assert_eq!(
            normalize("HTTPS://Example.COM:443/mcp/"),
            normalize("https://example.com/mcp")
        );
        assert_ne!(
            normalize("https://example.com/mcp2"),
            normalize("https://example.com/mcp")
        );
    }

    #[test]
    fn finds_the_login_by_url_then_by_resource_prefix() {
        let dir = std::env::temp_dir().join(format!("switchboard-login-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = dir.join("creds.json");
        let credentials = Credentials::open(Some(&file)).unwrap();
        assert_eq!(credentials.index, dir.join("creds.logins.json"));
        assert!(credentials.login_for("https://a.example/mcp").is_none());
        credentials
            .save_logins(vec![
                Login {
                    server: "https://a.example/mcp".into(),
                    resource: "https://a.example/".into(),
                    issuer: "https://as.example".into(),
                },
                Login {
                    server: "https://b.example/x".into(),
                    resource: "https://b.example/tenant".into(),
                    issuer: "https://as.example".into(),
                },
            ])
            .unwrap();
        let found = |url: &str| credentials.login_for(url).map(|l| l.server);
        assert_eq!(
            found("https://a.example/mcp/").as_deref(),
            Some("https://a.example/mcp")
        );
        assert_eq!(
            found("https://a.example/other").as_deref(),
            Some("https://a.example/mcp")
        );
        assert_eq!(
            found("https://b.example/tenant/mcp").as_deref(),
            Some("https://b.example/x")
        );
        assert_eq!(
            found("https://b.example/tenant2/mcp"),
            None,
            "not a path-segment prefix"
        );
        assert_eq!(found("https://c.example/mcp"), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&credentials.index)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the index is private: {mode:o}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_loopback_hosts_may_use_plain_http() {
        assert!(is_loopback("http://127.0.0.1:8080/mcp"));
        assert!(is_loopback("http://localhost/mcp"));
        assert!(is_loopback("http://[::1]:1/mcp"));
        assert!(!is_loopback("http://10.0.0.1/mcp"));
        assert!(!is_loopback("http://localhost.example/mcp"));
    }

    #[test]
    fn the_login_hint_is_a_command_to_paste() {
        assert_eq!(
            login_command("https://a.example/mcp", None),
            "switchboard login https://a.example/mcp"
        );
        assert_eq!(
            login_command(
                "https://a.example/mcp",
                Some(Path::new("/tmp/my creds.json"))
            ),
            "switchboard login --credentials '/tmp/my creds.json' https://a.example/mcp"
        );
    }

    #[test]
    fn status_never_shows_a_secret() {
        let mut stored =
            StoredCredentials::new("https://a.example/mcp", "https://as.example", "cid");
        stored.access_token = Some(switchboard_auth::store::Secret::new("AT-SECRET"));
        stored.refresh_token = Some(switchboard_auth::store::Secret::new("RT-SECRET"));
        stored.client_secret = Some(switchboard_auth::store::Secret::new("CS-SECRET"));
        stored.expires_at = Some(SystemTime::now() + Duration::from_secs(3600));
        let entry = status_json("https://a.example/mcp", &stored);
        let text = entry.to_string();
        assert!(!text.contains("SECRET"), "{text}");
        assert_eq!(entry["clientId"], "cid");
        assert!(
            token_state(&entry).starts_with("expires in"),
            "{}",
            token_state(&entry)
        );
    }
}
