//! The shared state's costs, side by side in one run, on a PostgreSQL this
//! binary starts (a Unix socket in a temporary directory; none on the
//! machine: it says so and ends).
//!
//! ```text
//! cargo bench -p switchboard-postgres --bench state            # or: -- CALLS
//! ```
//!
//! 1. **A cold credential read**: 10 replicas (each its own `PgState`, pool
//!    and runtime) store 1,000 users' credentials, 10 servers each (10,000
//!    sealed rows, written round-robin); then all 10 at once read 1,000
//!    credentials each that they hold nowhere in memory — a row fetched,
//!    its seal opened. Printed: p50, p95, p99 of one read.
//! 2. **A tool call with the tokens in PostgreSQL and in a file**: one hub
//!    whose OAuth tokens are in a `FileStore`, one user's hub of `Users`
//!    on `PgState`, both logged in to the test server behind its test
//!    authorization server (on loopback, in this process); then CALLS echo
//!    calls (2,000 by default) through each, in alternating blocks of 100.
//!    Printed: each p50 and the ratio PostgreSQL / file.
//!
//! 3. **A tool call through a gateway replica**: what `switchboard serve
//!    --http` runs, in this process: a `HubServer` over the file-store hub
//!    (one bearer token), against a `UserGateway` over `Users` on
//!    `PgState` (hosts as users: each request's JWT checked against the
//!    test issuer's keys, the user's own hub, its tokens from the
//!    database), and the file-store hub behind the same JWT checks (what
//!    the users' gateway adds but its store); a host client over HTTP
//!    makes CALLS echo calls through each, in alternating blocks of 100.
//!    Printed: each p50 and the ratios.
//!
//! `cargo test` runs it as a smoke run (a few of each, nothing judged).

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_auth::flow::RedirectAgent;
use switchboard_auth::store::{
    CredentialKey, CredentialStore, FileStore, Secret, StoredCredentials,
};
use switchboard_hub::hub::OAuthLogins;
use switchboard_hub::hub::users::Users;
use switchboard_hub::{Dialect, Hub, Origin, Scope, ServerConfig, TransportConfig};
use switchboard_postgres::{PgState, StateKey};
use switchboard_testkit::postgres::Postgres;

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const REPLICAS: usize = 10;
const SERVERS_PER_USER: usize = 10;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes `--bench`; `cargo test` does not: a smoke run.
    let bench = args.iter().any(|a| a == "--bench");
    let calls: usize = args[1..]
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(if bench { 2_000 } else { 20 });
    let users = if bench { 1_000 } else { 10 };
    let Some(postgres) = Postgres::start("bench-state") else {
        println!("no PostgreSQL on this machine: nothing measured");
        return;
    };
    let url = postgres.database("switchboard");
    println!(
        "shared state, {} CPUs{}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if bench { "" } else { " (smoke run)" }
    );
    cold_reads(&url, users);
    tool_calls(&url, calls);
}

fn key() -> StateKey {
    StateKey::from_hex(KEY).expect("the key")
}

fn resource(server: usize) -> String {
    format!("https://mcp{server}.example/mcp")
}

fn cold_reads(url: &str, users: usize) {
    let replicas: Vec<PgState> = (0..REPLICAS)
        .map(|_| PgState::connect(url, key()).expect("a replica"))
        .collect();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for (n, replica) in replicas.iter().enumerate() {
            scope.spawn(move || {
                for user in (n..users).step_by(REPLICAS) {
                    let store = replica.credentials(&format!("user-{user}"));
                    for server in 0..SERVERS_PER_USER {
                        let mut stored = StoredCredentials::new(
                            resource(server),
                            "https://as.example",
                            "client-1",
                        );
                        stored.access_token = Some(Secret::new(format!("at-{user}-{server}")));
                        stored.refresh_token = Some(Secret::new(format!("rt-{user}-{server}")));
                        let key = CredentialKey::new(resource(server), "https://as.example");
                        store
                            .update(&key, &mut |_| Some(stored.clone()))
                            .expect("a write");
                    }
                }
            });
        }
    });
    println!(
        "  wrote {} credentials of {users} users from {REPLICAS} replicas in {:.1} s",
        users * SERVERS_PER_USER,
        started.elapsed().as_secs_f64()
    );
    // Each replica reads what another wrote, all at once; one read first
    // opens each pool's connection (not timed).
    let mut times: Vec<Duration> = std::thread::scope(|scope| {
        let readers: Vec<_> = replicas
            .iter()
            .enumerate()
            .map(|(n, replica)| {
                scope.spawn(move || {
                    let probe = CredentialKey::new(resource(0), "https://as.example");
                    let _ = replica.credentials("user-0").load(&probe);
                    let mut times = Vec::with_capacity(users);
                    for i in 0..users {
                        let user = (i * 7 + n * 131 + 1) % users;
                        let server = (i + n) % SERVERS_PER_USER;
                        let key = CredentialKey::new(resource(server), "https://as.example");
                        let store = replica.credentials(&format!("user-{user}"));
                        let start = Instant::now();
                        let stored = store.load(&key).expect("a read").expect("stored");
                        times.push(start.elapsed());
                        assert_eq!(
                            stored.access_token.as_ref().map(Secret::expose),
                            Some(format!("at-{user}-{server}").as_str())
                        );
                    }
                    times
                })
            })
            .collect();
        readers
            .into_iter()
            .flat_map(|r| r.join().expect("a reader"))
            .collect()
    });
    times.sort();
    println!(
        "  cold credential read, {REPLICAS} replicas reading at once ({} reads): p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms",
        times.len(),
        ms(percentile(&times, 50)),
        ms(percentile(&times, 95)),
        ms(percentile(&times, 99)),
    );
}

fn tool_calls(url: &str, calls: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let url = url.to_owned();
    runtime.block_on(async move {
        let (_server, mcp) = switchboard_testkit::spawn_http(&["--auth"]).await;
        let agent = RedirectAgent::new().expect("an agent");
        let redirect = "http://127.0.0.1:9/callback";

        // The tokens in a file.
        let dir = std::env::temp_dir().join(format!("sb-bench-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory");
        let logins = OAuthLogins::new(
            "bench",
            redirect,
            Arc::new(FileStore::new(dir.join("credentials.json"))),
        )
        .allow_http_loopback(true);
        let server = ServerConfig::new(
            "remote",
            TransportConfig::Http {
                url: mcp.clone(),
                headers: Default::default(),
                kind: Default::default(),
            },
            Origin {
                file: dir.join("switchboard.toml"),
                dialect: Dialect::Switchboard,
                scope: Scope::User,
            },
        );
        let file_hub = Hub::builder()
            .server(server.clone())
            .persist(false)
            .oauth(logins)
            .build()
            .expect("a hub");
        file_hub.start().await.expect("started");
        file_hub.login("remote", &agent).await.expect("logged in");

        // The tokens in PostgreSQL.
        let (url_again, server_again) = (url.clone(), server.clone());
        let state = tokio::task::spawn_blocking(move || PgState::connect(&url, key()))
            .await
            .expect("joined")
            .expect("connected");
        let users = Users::builder(Arc::new(state))
            .redirect_uri(redirect)
            .allow_http_loopback(true)
            .build()
            .expect("users");
        let name = match users.add_server_for("bench-user", &mcp).await.expect("added") {
            switchboard_hub::hub::Added::NeedsAuth { server, .. }
            | switchboard_hub::hub::Added::Ready { server } => server,
            other => panic!("{other:?}"),
        };
        let pg_hub = users.hub("bench-user").await.expect("the user's hub");
        pg_hub.login(&name, &agent).await.expect("logged in");

        let targets = [
            ("file", file_hub.clone(), "remote__echo".to_owned()),
            ("postgres", pg_hub.clone(), format!("{name}__echo")),
        ];
        let args = serde_json::json!({"text": "hi"}).as_object().cloned();
        // Warm both.
        for (_, hub, tool) in &targets {
            for _ in 0..20 {
                hub.call_tool(tool, args.clone()).await.expect("a call");
            }
        }
        let (done, p50) = p50_interleaved(targets.len(), calls, |i| {
            let ((_, hub, tool), args) = (&targets[i], args.clone());
            async move {
                hub.call_tool(tool, args).await.expect("a call");
            }
        })
        .await;
        println!(
            "  echo through a hub, {} calls each: tokens in a file p50 {:.3} ms, in PostgreSQL p50 {:.3} ms, ratio {:.2}",
            done,
            ms(p50[0]),
            ms(p50[1]),
            p50[1].as_secs_f64() / p50[0].as_secs_f64()
        );
        users.shutdown().await;
        through_replicas(&url_again, &file_hub, server_again, &mcp, calls).await;
        file_hub.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// The bearer token of the file-store gateway.
const GATEWAY_TOKEN: &str = "bench-token-0123456789abcdefghijklmnopqrstuvwxyz";

/// Checks hosts' JWTs against the test issuer, as `serve --issuer` does.
struct Jwts(switchboard_auth::access_token::JwtValidator);

impl switchboard::server::http::HostAuth for Jwts {
    fn check<'a>(
        &'a self,
        token: &'a str,
    ) -> switchboard::BoxFuture<
        'a,
        Result<switchboard::server::HostUser, switchboard::server::http::TokenRefused>,
    > {
        Box::pin(async move {
            let valid = self
                .0
                .validate(token)
                .await
                .map_err(|e| switchboard::server::http::TokenRefused(e.to_string()))?;
            Ok(switchboard::server::HostUser::new(
                valid.sub,
                serde_json::Value::Object(valid.claims),
            ))
        })
    }
}

/// Part 3: echo through each replica's serving code, over HTTP.
async fn through_replicas(
    url: &str,
    file_hub: &Hub,
    server: ServerConfig,
    mcp: &str,
    calls: usize,
) {
    use switchboard::server::http::{HttpServeOptions, SessionKey, serve_http};
    use switchboard_hub::HubServer;
    use switchboard_hub::gateway::users::{UserGateway, UserLogins};
    let info = switchboard::types::Implementation::new("bench gateway", "1");
    let agent = RedirectAgent::new().expect("an agent");
    let issuer = mcp.trim_end_matches("/mcp").to_owned();
    let guard = switchboard_auth::ssrf::UrlGuard::builder()
        .allow_http_loopback(true)
        .build()
        .expect("a guard");
    let validator = |audience: &str| {
        switchboard_auth::access_token::JwtValidator::builder(issuer.clone(), audience)
            .guard(guard.clone())
            .build()
            .expect("a validator")
    };
    let bind = || async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}/mcp", listener.local_addr().expect("its address"));
        (listener, url)
    };

    // The file-store hub behind one bearer token, and behind hosts' JWTs
    // (what the users' gateway adds but its store).
    let (listener, file_url) = bind().await;
    let file_gateway = HubServer::new(file_hub.clone(), info.clone())
        .serve_http(
            listener,
            HttpServeOptions::default().bearer_token(GATEWAY_TOKEN),
        )
        .expect("served");
    let (listener, jwt_file_url) = bind().await;
    let jwt_file_gateway = HubServer::new(file_hub.clone(), info.clone())
        .serve_http(
            listener,
            HttpServeOptions::default().host_auth(Jwts(validator(&jwt_file_url))),
        )
        .expect("served");

    // Hosts as users, each their own hub on the database.
    let (listener, users_url) = bind().await;
    let owned = url.to_owned();
    let state = tokio::task::spawn_blocking(move || PgState::connect(&owned, key()))
        .await
        .expect("joined")
        .expect("connected");
    let users = Users::builder(Arc::new(state))
        .redirect_uri("http://127.0.0.1:9/callback")
        .allow_http_loopback(true)
        .servers([server])
        .build()
        .expect("users");
    users
        .hub("alice")
        .await
        .expect("alice's hub")
        .login("remote", &agent)
        .await
        .expect("logged in");
    let logins = UserLogins {
        public_url: url::Url::parse(&users_url).expect("a URL"),
        resource: users_url.clone(),
        host_auth: Arc::new(Jwts(validator(&users_url))),
        key: SessionKey::generate().expect("a key"),
        client_name: "bench gateway".to_owned(),
        allow_http_loopback: true,
    };
    let made = info.clone();
    let gateway = UserGateway::new(users.clone(), info, logins, move |_, hub, authenticator| {
        HubServer::new(hub, made.clone()).authenticator(authenticator)
    });
    let users_gateway = serve_http(
        Arc::new(gateway),
        listener,
        HttpServeOptions::default().host_auth(Jwts(validator(&users_url))),
    )
    .expect("served");

    let mint = |audience: &str| {
        let (issuer, audience) = (issuer.clone(), audience.to_owned());
        async move {
            let minted: serde_json::Value = reqwest::Client::new()
                .post(format!("{issuer}/auth/mint"))
                .header("content-type", "application/json")
                .body(serde_json::json!({"claims": {"sub": "alice", "aud": audience}}).to_string())
                .send()
                .await
                .expect("minted")
                .text()
                .await
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok())
                .expect("a token");
            minted["access_token"].as_str().expect("a token").to_owned()
        }
    };
    let host = |url: &str, token: &str| {
        switchboard::Client::builder().connect(
            switchboard::transport::http::HttpConfig::new(url)
                .header("Authorization", format!("Bearer {token}")),
        )
    };
    let hosts = [
        host(&file_url, GATEWAY_TOKEN)
            .await
            .expect("a host of the file gateway"),
        host(&jwt_file_url, &mint(&jwt_file_url).await)
            .await
            .expect("a host of the file gateway with JWTs"),
        host(&users_url, &mint(&users_url).await)
            .await
            .expect("a host of alice's gateway"),
    ];
    let args = serde_json::json!({"text": "hi"}).as_object().cloned();
    for host in &hosts {
        for _ in 0..20 {
            host.call_tool("remote__echo", args.clone())
                .await
                .expect("a call");
        }
    }
    let (done, p50) = p50_interleaved(hosts.len(), calls, |i| {
        let (host, args) = (&hosts[i], args.clone());
        async move {
            let said = host.call_tool("remote__echo", args).await.expect("a call");
            assert_ne!(said.is_error, Some(true), "{said:?}");
        }
    })
    .await;
    println!(
        "  echo through a gateway replica over HTTP, {} calls each, p50: one hub, tokens in a file, \
         behind a bearer token {:.3} ms, behind hosts' JWTs {:.3} ms; hosts as users, each their \
         own hub, tokens in PostgreSQL {:.3} ms; PostgreSQL / file (both JWTs) {:.2}, / the bearer \
         token {:.2}",
        done,
        ms(p50[0]),
        ms(p50[1]),
        ms(p50[2]),
        p50[2].as_secs_f64() / p50[1].as_secs_f64(),
        p50[2].as_secs_f64() / p50[0].as_secs_f64()
    );
    for host in hosts {
        host.close().await;
    }
    users_gateway.shutdown(Duration::from_secs(1)).await;
    jwt_file_gateway.shutdown(Duration::from_secs(1)).await;
    file_gateway.shutdown(Duration::from_secs(1)).await;
    users.shutdown().await;
}

/// Runs `call(side)` `calls` times (rounded up to a block) for each of
/// `sides` sides, in alternating blocks of 100: how many a side, and each
/// side's p50.
async fn p50_interleaved<F: std::future::Future<Output = ()>>(
    sides: usize,
    calls: usize,
    mut call: impl FnMut(usize) -> F,
) -> (usize, Vec<Duration>) {
    let mut times = vec![Vec::with_capacity(calls); sides];
    let block = 100.min(calls.max(1));
    while times.last().is_some_and(|t| t.len() < calls) {
        for (side, taken) in times.iter_mut().enumerate() {
            for _ in 0..block {
                let start = Instant::now();
                call(side).await;
                taken.push(start.elapsed());
            }
        }
    }
    let done = times.first().map_or(0, Vec::len);
    let p50 = times
        .iter_mut()
        .map(|t| {
            t.sort();
            percentile(t, 50)
        })
        .collect();
    (done, p50)
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}
