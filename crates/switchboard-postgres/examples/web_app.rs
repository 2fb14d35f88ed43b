//! A web application whose users each connect their own MCP servers, run
//! as many instances behind a load balancer: a login begun on one instance
//! finishes on whichever the browser comes back to, and survives restarts
//! and deploys.
//!
//! ```text
//! DATABASE_URL='postgres:///app?host=/run/postgresql' \
//! STATE_KEY_FILE=/etc/app/state.key PUBLIC_URL=https://app.example.com \
//! LISTEN=127.0.0.1:8080 cargo run -p switchboard-postgres --example web_app
//! ```
//!
//! `STATE_KEY_FILE` holds 64 hex digits (`openssl rand -hex 32`), the same
//! on every instance; it seals the tokens at rest. The application sits
//! behind an authenticating proxy (oauth2-proxy, say) that sets
//! `X-Forwarded-User`: a real application takes the user from its own
//! session instead. Never from anything the browser alone can set.
//!
//! - `GET /connect?url=URL`: the user's server at `URL`, connected: "ready",
//!   or a redirect to its login page;
//! - `GET /oauth/callback`: where the login page sends the browser back
//!   (`PUBLIC_URL/oauth/callback` is the redirect URI);
//! - `GET /tools`: the user's tools, one per line.

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use switchboard_hub::hub::users::{Added, Users};
use switchboard_postgres::{PgState, StateKey};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let (database, key_file, public) = (
        var("DATABASE_URL")?,
        var("STATE_KEY_FILE")?,
        var("PUBLIC_URL")?,
    );
    let key = StateKey::from_hex(std::fs::read_to_string(key_file)?.trim())?;
    let state = tokio::task::spawn_blocking(move || PgState::connect(&database, key)).await??;
    let users = Users::builder(Arc::new(state))
        .client_name("web_app example")
        .redirect_uri(format!("{}/oauth/callback", public.trim_end_matches('/')))
        .build()?;
    let app = Router::new()
        .route("/connect", get(connect))
        .route("/oauth/callback", get(callback))
        .route("/tools", get(tools))
        .with_state(App { users, public });
    let listen = std::env::var("LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("listening on {listen}");
    axum::serve(listener, app).await?;
    Ok(())
}

#[derive(Clone)]
struct App {
    users: Users,
    public: String,
}

/// The user the authenticating proxy vouches for.
struct User(String);

impl<S: Send + Sync> FromRequestParts<S> for User {
    type Rejection = (StatusCode, &'static str);

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .headers
            .get("x-forwarded-user")
            .and_then(|v| v.to_str().ok())
            .map(|user| Self(user.to_owned()))
            .ok_or((StatusCode::UNAUTHORIZED, "no user\n"))
    }
}

/// A failure as plain text (never HTML: it may quote a server).
fn failed(error: impl std::fmt::Display) -> Response {
    (StatusCode::BAD_GATEWAY, format!("{error}\n")).into_response()
}

async fn connect(State(app): State<App>, User(user): User, uri: Uri) -> Response {
    let url = uri
        .query()
        .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "url"))
        .map(|(_, v)| v.into_owned());
    let Some(url) = url else {
        return (StatusCode::BAD_REQUEST, "say ?url=\n").into_response();
    };
    match app.users.add_server_for(&user, &url).await {
        Ok(Added::Ready { server }) => format!("{server}: ready\n").into_response(),
        Ok(Added::NeedsAuth {
            authorization_url, ..
        }) => Redirect::to(authorization_url.as_str()).into_response(),
        Ok(other) => failed(format!("{other:?}")),
        Err(error) => failed(error),
    }
}

async fn callback(State(app): State<App>, User(user): User, uri: Uri) -> Response {
    // The URL the browser came back to, as the authorization server sent it.
    let url = format!("{}{}", app.public.trim_end_matches('/'), uri);
    match app.users.finish_login(&user, &url).await {
        Ok((server, state)) => format!("{server}: {state}\n").into_response(),
        Err(error) => failed(error),
    }
}

async fn tools(State(app): State<App>, User(user): User) -> Response {
    match app.users.hub(&user).await {
        Ok(hub) => hub
            .tools()
            .into_iter()
            .map(|tool| format!("{}\n", tool.name))
            .collect::<String>()
            .into_response(),
        Err(error) => failed(error),
    }
}
