//! The team gateway: `switchboard serve --http` replicas sharing their
//! state in a real PostgreSQL the test starts (`--state URL
//! --state-key-file FILE`). Their audit records make one chain, which
//! `switchboard audit verify --database` checks, and which a change made
//! in the database breaks; a password on the command line and a key file
//! others can read are refused. Behind nginx (the sample config of
//! `docs/team-gateway.nginx.conf`, run as it is), two replicas serve one
//! host of each era round robin, a 2026-07-28 round is answered through
//! the other replica, a deny added to the shared policy holds on both
//! within 2 s, and one killed mid-call fails that call and no other.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use switchboard::{Client, EraMode};
use switchboard_testkit::nginx::Nginx;
use switchboard_testkit::postgres::Postgres;

#[allow(dead_code)] // the pty helpers are not used here
mod support;

use support::BIN;
use support::gateway::{Sandbox, authed};

/// A state key in a file of the sandbox's own, mode 0600.
fn key_file(sandbox: &Sandbox) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = sandbox.work().join("state.key");
    std::fs::write(&path, "0f".repeat(32)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// A replica, killed when dropped (a failed assertion leaves no gateway
/// running).
struct Replica {
    url: String,
    child: std::process::Child,
}

impl Replica {
    fn start(sandbox: &Sandbox, shared: &[&str]) -> Self {
        let (url, child) = sandbox.http_gateway(shared);
        Self { url, child }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A host of `era` on each replica, with the gateway's token.
async fn hosts_of(replicas: &[Replica], era: EraMode) -> Vec<Client> {
    let mut hosts = Vec::new();
    for replica in replicas {
        hosts.push(
            Client::builder()
                .era_mode(era)
                .connect(authed(&replica.url))
                .await
                .unwrap(),
        );
    }
    hosts
}

/// A fresh PostgreSQL, its database's URL, a sandbox and a state key
/// for `test`; `None` without PostgreSQL.
fn team(test: &str) -> Option<(Postgres, String, Sandbox, PathBuf)> {
    let postgres = Postgres::start(test)?;
    let url = postgres.database("switchboard");
    let sandbox = Sandbox::new(test);
    let key = key_file(&sandbox);
    Some((postgres, url, sandbox, key))
}

/// A session key in a file of the sandbox's own, mode 0600.
fn session_key_file(sandbox: &Sandbox) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = sandbox.work().join("session.key");
    std::fs::write(&path, "a5".repeat(32)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// `docs/team-gateway.nginx.conf` for replicas at `upstreams`
/// (`http://127.0.0.1:PORT/mcp`), in `prefix`, on `port`.
fn nginx_config(prefix: &Path, port: u16, upstreams: &[String]) -> String {
    let sample = include_str!("../../../docs/team-gateway.nginx.conf");
    let authority = |url: &str| {
        url.trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned()
    };
    let config = sample
        .replace("PREFIX", &prefix.display().to_string())
        .replace("LISTEN", &format!("127.0.0.1:{port}"))
        .replace("127.0.0.1:8001", &authority(&upstreams[0]))
        .replace("127.0.0.1:8002", &authority(&upstreams[1]));
    assert!(
        !config.contains(":800"),
        "the sample's upstreams changed: {config}"
    );
    config
}

/// A replica's Prometheus text.
async fn metrics(replica: &str) -> String {
    let url = replica.replace("/mcp", "/metrics");
    reqwest::Client::new()
        .get(url)
        .bearer_auth(support::gateway::TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A metric's value for `server` in Prometheus text.
fn metric(text: &str, name: &str, server: &str) -> u64 {
    let line = format!("{name}{{server=\"{server}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&line))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn verify(sandbox: &Sandbox, url: &str, key: &Path) -> (bool, String) {
    let output = sandbox
        .host(BIN)
        .args(["audit", "verify", "--database", url, "--state-key-file"])
        .arg(key)
        .output()
        .unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[tokio::test]
async fn two_replicas_write_one_audit_chain_in_the_database() {
    let Some((postgres, url, sandbox, key)) = team("team-audit") else {
        return;
    };
    let shared = [
        "--state",
        &url,
        "--state-key-file",
        key.to_str().unwrap(),
        "--audit-database",
    ];
    let replicas = [
        Replica::start(&sandbox, &shared),
        Replica::start(&sandbox, &shared),
    ];
    let hosts = hosts_of(&replicas, EraMode::Legacy).await;
    // Calls alternate between the replicas.
    for n in 0..6 {
        let text = format!("hunter{n}");
        hosts[n % 2]
            .call_tool("old__echo", json!({ "text": text }).as_object().cloned())
            .await
            .unwrap();
    }
    for host in hosts {
        host.close().await;
    }
    let (intact, said) = verify(&sandbox, &url, &key);
    assert!(intact, "{said}");
    assert!(said.contains("intact: 6 records"), "{said}");
    // One order, both replicas' records in it; no argument in the clear.
    let records = postgres.psql(
        "switchboard",
        "SELECT record FROM switchboard_audit ORDER BY seq",
    );
    assert_eq!(records.lines().count(), 6, "{records}");
    assert!(!records.contains("hunter"), "{records}");
    // A record edited in the database: the chain breaks right after it.
    postgres.psql(
        "switchboard",
        "UPDATE switchboard_audit SET record = replace(record, '\"ok\"', '\"tool_error\"') WHERE seq = 3",
    );
    let (intact, said) = verify(&sandbox, &url, &key);
    assert!(!intact, "{said}");
    assert!(said.contains("breaks at record 4"), "{said}");
    drop(replicas);
}

#[test]
fn a_password_on_the_command_line_and_an_open_key_file_are_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let sandbox = Sandbox::new("team-refused");
    let key = key_file(&sandbox);
    let serve = |url: &str| {
        sandbox
            .host(BIN)
            .args(["serve", "--http", "127.0.0.1:0", "--state", url])
            .arg("--state-key-file")
            .arg(&key)
            .arg("--audit-database")
            .env("SWITCHBOARD_TOKEN", support::gateway::TOKEN)
            .output()
            .unwrap()
    };
    let refused = serve("postgres://team:s3cret-pw@db.example/switchboard");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("password"), "{said}");
    assert!(!said.contains("s3cret-pw"), "the password repeated: {said}");
    // --state alone: its database is reached at the start (it holds the
    // shared policy), and one that cannot be is said at once.
    let alone = sandbox
        .host(BIN)
        .args(["serve", "--http", "127.0.0.1:0", "--state"])
        .arg("postgres://team@localhost/switchboard?host=/nonexistent")
        .arg("--state-key-file")
        .arg(&key)
        .env("SWITCHBOARD_TOKEN", support::gateway::TOKEN)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&alone.stderr);
    // The database cannot be reached (exit 4), each cause said once.
    assert_eq!(alone.status.code(), Some(4), "{said}");
    assert_eq!(
        said.matches("No such file or directory").count(),
        1,
        "{said}"
    );
    // A key others can read is not a key.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = serve("postgres://team@localhost/switchboard?host=/nonexistent");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("open to other users"), "{said}");
    // --audit-database without --state says what is missing.
    let output = sandbox
        .host(BIN)
        .args(["serve", "--audit-database"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--state"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_behind_nginx_serve_both_eras_and_one_dying_fails_only_its_call() {
    let Some((_postgres, url, sandbox, key)) = team("team-nginx") else {
        return;
    };
    let session_key = session_key_file(&sandbox);
    let shared = [
        "--state",
        &url,
        "--state-key-file",
        key.to_str().unwrap(),
        "--audit-database",
        "--session-key-file",
        session_key.to_str().unwrap(),
    ];
    let mut replicas = vec![
        Replica::start(&sandbox, &shared),
        Replica::start(&sandbox, &shared),
    ];
    let upstreams: Vec<String> = replicas.iter().map(|r| r.url.clone()).collect();
    let Some(nginx) = Nginx::start("team-nginx", |prefix, port| {
        nginx_config(prefix, port, &upstreams)
    }) else {
        return;
    };
    let front = format!("http://127.0.0.1:{}/mcp", nginx.port());
    let legacy = Client::builder()
        .era_mode(EraMode::Legacy)
        .connect(authed(&front))
        .await
        .unwrap();
    let modern = Client::builder()
        .era_mode(EraMode::Modern)
        .connect(authed(&front))
        .await
        .unwrap();
    // Round robin: the session's requests land on both replicas, which
    // serve it from its sealed id (three calls a round, so each host's
    // calls alternate between the two).
    for n in 0..6 {
        let text = format!("call {n}");
        for (host, tool) in [
            (&legacy, "old__echo"),
            (&modern, "new__echo"),
            (&modern, "new__echo"),
        ] {
            let result = host
                .call_tool(tool, json!({ "text": text }).as_object().cloned())
                .await
                .unwrap_or_else(|e| panic!("{tool} {n}: {e:#}\nnginx: {}", nginx.log()));
            assert!(
                serde_json::to_string(&result.content)
                    .unwrap()
                    .contains(&text)
            );
        }
    }
    for replica in &replicas {
        let text = metrics(&replica.url).await;
        assert!(
            metric(&text, "switchboard_calls_total", "old") > 0
                && metric(&text, "switchboard_calls_total", "new") > 0,
            "{} served no call of one era:\n{text}",
            replica.url
        );
    }

    // A 2026-07-28 backend's `input_required` round: the host's retry
    // comes back through nginx to the other replica (two requests a
    // call, round robin), which opens the round the first one sealed.
    let asking = Client::builder()
        .era_mode(EraMode::Modern)
        .elicitation(FormAnswerer::new(json!({"name": "Ada"})))
        .connect(authed(&front))
        .await
        .unwrap();
    for n in 0..4 {
        let result = asking
            .call_tool("new__ask", None)
            .await
            .unwrap_or_else(|e| panic!("round {n}: {e:#}\nnginx: {}", nginx.log()));
        assert_ne!(result.is_error, Some(true), "round {n}: {result:?}");
        let said = serde_json::to_string(&result.content).unwrap();
        assert!(said.contains("Ada"), "round {n}: {said}");
    }
    asking.close().await;

    // A deny added to the shared policy (from the command line, as a
    // team's admin would) holds on both replicas within 2 s, and its
    // removal too.
    let direct: Vec<Client> = {
        let mut hosts = Vec::new();
        for replica in &replicas {
            hosts.push(
                Client::builder()
                    .connect(authed(&replica.url))
                    .await
                    .unwrap(),
            );
        }
        hosts
    };
    for (change, denied) in [
        (&["deny", "old/echo"][..], true),
        (&["remove", "deny", "old/echo"][..], false),
    ] {
        policy(&sandbox, &url, &key, change);
        let changed = std::time::Instant::now();
        for (n, host) in direct.iter().enumerate() {
            loop {
                let result = host
                    .call_tool("old__echo", json!({"text": "policy"}).as_object().cloned())
                    .await
                    .unwrap();
                if (result.is_error == Some(true)) == denied {
                    if denied {
                        let said = serde_json::to_string(&result.content).unwrap();
                        assert!(said.contains("shared policy"), "{said}");
                    }
                    break;
                }
                assert!(
                    changed.elapsed() < std::time::Duration::from_secs(2),
                    "replica {n} did not follow `policy {}` within 2 s: {result:?}",
                    change.join(" ")
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
    for host in direct {
        host.close().await;
    }

    // A slow call; the replica running it is killed.
    let slow = {
        let legacy = legacy.clone();
        tokio::spawn(async move {
            legacy
                .call_tool("old__slow", json!({"ms": 120_000}).as_object().cloned())
                .await
        })
    };
    let running = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            for (n, replica) in replicas.iter().enumerate() {
                if metric(
                    &metrics(&replica.url).await,
                    "switchboard_calls_in_flight",
                    "old",
                ) > 0
                {
                    return n;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the slow call never started on a replica");
    drop(replicas.remove(running));
    let failed = tokio::time::timeout(std::time::Duration::from_secs(30), slow)
        .await
        .expect("the call on the killed replica never ended")
        .unwrap();
    assert!(failed.is_err(), "{failed:?}");
    // The next calls go to the replica left, in the same session.
    for n in 0..3 {
        let text = format!("after {n}");
        for (host, tool) in [(&legacy, "old__echo"), (&modern, "new__echo")] {
            let result = host
                .call_tool(tool, json!({ "text": text }).as_object().cloned())
                .await
                .unwrap_or_else(|e| panic!("{tool} after the kill: {e:#}"));
            assert!(
                serde_json::to_string(&result.content)
                    .unwrap()
                    .contains(&text)
            );
        }
    }
    legacy.close().await;
    modern.close().await;
    // One chain, records of both replicas in it, intact.
    let (intact, said) = verify(&sandbox, &url, &key);
    assert!(intact, "{said}");
}

/// A host's user who answers every form with `content` (the policy's
/// question, a backend's), counting the forms.
struct FormAnswerer {
    content: serde_json::Value,
    asked: Arc<AtomicUsize>,
}

impl FormAnswerer {
    fn new(content: serde_json::Value) -> Self {
        Self {
            content,
            asked: Arc::default(),
        }
    }
}

impl switchboard::ElicitationHandler for FormAnswerer {
    fn elicit_form(
        &self,
        _: switchboard::HandlerContext,
        _: switchboard::FormRequest,
    ) -> switchboard::BoxFuture<
        'static,
        Result<switchboard::types::ElicitResult, switchboard::HandlerError>,
    > {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let content = self.content.as_object().cloned();
        Box::pin(async move { Ok(switchboard::types::ElicitResult::accept(content)) })
    }
}

/// A browser: follows redirects by hand, keeps the gateway's cookie (sent
/// back to the gateway's origin only), logs in at any authorization
/// server as `user` (the testkit's `login_hint`), and sends each request
/// for the gateway's public origin to the replica `route` names for that
/// step (0, 1, …), as a load balancer might. The last page's status and
/// text.
async fn browse(
    link: &str,
    user: &str,
    public: &str,
    route: impl Fn(usize) -> String,
) -> (u16, String) {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut cookie: Option<String> = None;
    let mut url = link.to_owned();
    let mut step = 0;
    for _ in 0..10 {
        let ours = url.starts_with(public);
        let mut request = match ours {
            true => {
                let sent = url.replacen(public, &route(step), 1);
                step += 1;
                client.get(sent)
            }
            false => client.get(&url),
        };
        if let (true, Some(cookie)) = (ours, &cookie) {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        if ours {
            for set in response.headers().get_all("set-cookie") {
                let pair = set.to_str().unwrap().split(';').next().unwrap().to_owned();
                cookie = (!pair.ends_with('=')).then_some(pair);
            }
        }
        let status = response.status().as_u16();
        if status == 302 {
            let mut next = response.headers()["location"].to_str().unwrap().to_owned();
            if next.contains("/authorize?") {
                next.push_str(&format!("&login_hint={user}"));
            }
            url = next;
            continue;
        }
        return (status, response.text().await.unwrap());
    }
    panic!("too many redirects from {link}");
}

/// An access token of the gateway's issuer for `user`.
async fn token_for(issuer: &str, user: &str, audience: &str) -> String {
    token_in(issuer, user, audience, &[]).await
}

/// [`token_for`], the token naming `groups`.
async fn token_in(issuer: &str, user: &str, audience: &str, groups: &[&str]) -> String {
    let minted: serde_json::Value = reqwest::Client::new()
        .post(format!("{issuer}/auth/mint"))
        .json(&json!({ "claims": { "sub": user, "aud": audience, "groups": groups } }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    minted["access_token"].as_str().unwrap().to_owned()
}

/// A host at `url` with the bearer `token`, whose user is `handler`.
async fn host_of(
    url: &str,
    token: &str,
    handler: impl switchboard::ElicitationHandler + 'static,
) -> Client {
    Client::builder()
        .era_mode(EraMode::Legacy)
        .elicitation(handler)
        .connect(
            switchboard::transport::http::HttpConfig::new(url)
                .header("Authorization", format!("Bearer {token}")),
        )
        .await
        .unwrap_or_else(|e| panic!("{url}: {e:#}"))
}

/// A host of `user` at `url`, following its login links on `links`.
async fn user_host(
    url: &str,
    token: &str,
) -> (Client, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (tx, links) = tokio::sync::mpsc::unbounded_channel();
    let opener = support::url_opener::UrlOpener(move |url| {
        let _ = tx.send(url);
    });
    (host_of(url, token, opener).await, links)
}

/// A host of the user `token` names at `url`, answering the policy's
/// questions (with `always`); how many it was asked.
async fn answering_host(url: &str, token: &str, always: bool) -> (Client, Arc<AtomicUsize>) {
    let answerer = FormAnswerer::new(json!({ "always": always }));
    let asked = answerer.asked.clone();
    (host_of(url, token, answerer).await, asked)
}

async fn tool_names(host: &Client) -> Vec<String> {
    host.list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// `switchboard policy ARGS --state URL --state-key-file KEY`, which
/// must succeed.
fn policy(sandbox: &Sandbox, url: &str, key: &Path, args: &[&str]) {
    let output = sandbox
        .host(BIN)
        .arg("policy")
        .args(args)
        .args(["--state", url, "--state-key-file"])
        .arg(key)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `gh__echo` of `text` through `host`, which must succeed.
async fn echo(host: &Client, text: &str) {
    let said = host
        .call_tool("gh__echo", json!({ "text": text }).as_object().cloned())
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_ne!(said.is_error, Some(true), "{said:?}");
}

/// `gh__echo` through `host` until it is refused (or, `refused` false,
/// until it is not), which must come within 2 s of `since` (a shared
/// rule's change); the answer then.
async fn echo_until(
    host: &Client,
    refused: bool,
    since: std::time::Instant,
) -> switchboard::types::CallToolResult {
    loop {
        let said = host
            .call_tool("gh__echo", json!({"text": "denied?"}).as_object().cloned())
            .await
            .unwrap();
        if (said.is_error == Some(true)) == refused {
            return said;
        }
        assert!(
            since.elapsed() < std::time::Duration::from_secs(2),
            "the shared rule's change did not hold within 2 s: {said:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The backend's authorization server's counters.
async fn backend_stats(backend: &str) -> serde_json::Value {
    reqwest::get(format!("{backend}/auth/stats"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// What the backend's authorization server saw: each tool call's text and
/// the user whose token carried it.
async fn backend_calls(backend: &str) -> Vec<(String, String)> {
    let stats = backend_stats(backend).await;
    stats["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            (
                call["sub"].as_str().unwrap().to_owned(),
                call["arguments"]["text"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// A replica serving hosts as users reads its config again when a file
/// changes: every user's hub drops a removed server, starts an added one
/// and follows a new `[policy.tools]` rule, without a restart; `/metrics`
/// adds up the users' hubs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_config_changes_every_users_servers_and_policy() {
    let Some((_postgres, url, sandbox, key)) = team("team-users-reload") else {
        return;
    };
    let issuer = support::HttpServer::start(&["--auth"]);
    let audience = "https://gateway.test/mcp";
    let (gateway, _child) = sandbox.http_users_gateway_on(
        "127.0.0.1:0",
        &[
            "--state",
            &url,
            "--state-key-file",
            key.to_str().unwrap(),
            "--issuer",
            issuer.issuer(),
            "--audience",
            audience,
        ],
    );
    let _child = Replica {
        url: gateway.clone(),
        child: _child,
    };
    let token = token_for(&issuer.1, "alice", audience).await;
    let (alice, _) = user_host(&gateway, &token).await;
    let names = tool_names(&alice).await;
    assert!(names.contains(&"new__echo".to_owned()), "{names:?}");

    // `new` goes, `third` comes (what `new` ran, under another name: the
    // loader drops a server that runs what another does), and old/echo is
    // denied by the file.
    let config = sandbox.home().join(".config/switchboard/config.toml");
    std::fs::write(
        &config,
        format!(
            "[servers.old]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--era\", \"legacy\"]\n\n\
             [servers.third]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--era\", \"modern\"]\n\n\
             [servers.fx]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--era\", \"modern\", \"--suite-fixture\"]\n\n\
             [policy.tools]\ndeny = [\"old/echo\"]\n"
        ),
    )
    .unwrap();
    let changed = std::time::Instant::now();
    loop {
        let names = tool_names(&alice).await;
        if names.contains(&"third__echo".to_owned())
            && names.contains(&"fx__test_custom_headers".to_owned())
            && !names.iter().any(|n| n.starts_with("new__"))
            && !names.contains(&"old__echo".to_owned())
        {
            break;
        }
        assert!(
            changed.elapsed() < std::time::Duration::from_secs(20),
            "the changed config did not reach alice's hub: {names:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let refused = alice
        .call_tool("old__echo", json!({"text": "x"}).as_object().cloned())
        .await;
    assert!(
        format!("{refused:?}").contains("denied") || format!("{refused:?}").contains("policy"),
        "{refused:?}"
    );
    let said = alice
        .call_tool(
            "third__echo",
            json!({"text": "from third"}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert_ne!(said.is_error, Some(true), "{said:?}");
    // A 2026-07-28 call of her tool that mirrors `region` into a header,
    // without the header: refused by the gateway itself (400, -32020),
    // which knows her tools; with it, served.
    let post = |with_header: bool| {
        let (gateway, token) = (gateway.clone(), token.clone());
        async move {
            let mut request = reqwest::Client::new()
                .post(&gateway)
                .bearer_auth(&token)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "fx__test_custom_headers")
                .json(
                    &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "fx__test_custom_headers", "arguments": {"region": "eu"},
                    "_meta": {
                        switchboard::types::meta::META_PROTOCOL_VERSION: "2026-07-28",
                        switchboard::types::meta::META_CLIENT_CAPABILITIES: {},
                    }}}),
                );
            if with_header {
                request = request.header("mcp-param-region", "eu");
            }
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let (status, body) = post(false).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("-32020") && body.contains("Mcp-Param-Region"),
        "{body}"
    );
    let (status, body) = post(true).await;
    assert_eq!(status, 200, "{body}");
    // `/metrics` over the users' hubs: one user, `third` ready for them,
    // its call counted; a request without a user's token gets none.
    let metrics = gateway.replace("/mcp", "/metrics");
    let text = reqwest::Client::new()
        .get(&metrics)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "switchboard_users_loaded 1",
        "switchboard_backend_ready_users{server=\"third\"} 1",
        "switchboard_calls_total{server=\"third\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
    }
    let anonymous = reqwest::get(&metrics).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    // Servers pushed to the shared state reach every user's hub, and
    // leave it when cleared.
    let file = sandbox.work().join("shared.toml");
    std::fs::write(
        &file,
        format!("[servers.pushed]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--era\", \"modern\"]\n"),
    )
    .unwrap();
    let (ok, said) = team_command(&sandbox, &url, &key, &["push", file.to_str().unwrap()]);
    assert!(ok, "{said}");
    listed_within(&alice, "pushed__echo", true, std::time::Instant::now()).await;
    let (ok, said) = team_command(&sandbox, &url, &key, &["clear"]);
    assert!(ok, "{said}");
    listed_within(&alice, "pushed__echo", false, std::time::Instant::now()).await;
    alice.close().await;
}

/// Hosts as users with their own backends: two replicas (behind nginx,
/// and reached directly) share the database. Alice's host, on the first
/// replica, is sent a login link; her browser signs in at the gateway's
/// issuer through the second replica and logs in at the backend there;
/// the first replica's call ends logged in, and her tools are on both.
/// Her access token ended, both replicas call at once: one refresh.
/// Bob sees only his own `authenticate` tool; Alice opening Bob's link
/// (logged in as herself) is refused; Bob logs in for himself through
/// nginx. A shared `ask`: Alice's "always", given through one replica,
/// holds on the other and not for Bob, and her revocation holds at her
/// next call. Shared rules for a group (in the token) and for a user hold
/// for them alone. The backend saw each user's calls with their own token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_user_logs_in_to_a_backend_for_themselves_on_any_replica() {
    let Some((postgres, url, _team_sandbox, _)) = team("team-users") else {
        return;
    };
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let ports = [free(), free()];
    let upstreams: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}/mcp"))
        .collect();
    let Some(nginx) = Nginx::start("team-users", |prefix, port| {
        nginx_config(prefix, port, &upstreams)
    }) else {
        return;
    };
    let public = format!("http://127.0.0.1:{}", nginx.port());
    let audience = format!("{public}/mcp");
    // The gateway's issuer, and the backend (its own authorization
    // server), each the testkit's.
    let issuer = support::HttpServer::start(&["--auth", "--auth-resource", &audience]);
    let backend = support::HttpServer::start(&["--auth"]);
    let sandbox = Sandbox::with_config(
        "team-users-gateway",
        &format!("[servers.gh]\nurl = \"{}/mcp\"\n", backend.1),
    );
    let key = key_file(&sandbox);
    let session_key = session_key_file(&sandbox);
    let flags = [
        "--state",
        &url,
        "--state-key-file",
        key.to_str().unwrap(),
        "--session-key-file",
        session_key.to_str().unwrap(),
        "--issuer",
        issuer.issuer(),
        "--audience",
        &audience,
    ];
    let replicas: Vec<Replica> = ports
        .iter()
        .map(|port| {
            let (url, child) = sandbox.http_users_gateway_on(&format!("127.0.0.1:{port}"), &flags);
            Replica { url, child }
        })
        .collect();
    let origin = |n: usize| replicas[n].url.trim_end_matches("/mcp").to_owned();

    // Alice, on the first replica.
    let alice_token = token_for(&issuer.1, "alice", &audience).await;
    let (alice, mut alice_links) = user_host(&replicas[0].url, &alice_token).await;
    let names = tool_names(&alice).await;
    assert!(names.contains(&"gh__authenticate".to_owned()), "{names:?}");
    assert!(!names.contains(&"gh__echo".to_owned()), "{names:?}");
    let login = {
        let alice = alice.clone();
        tokio::spawn(async move { alice.call_tool("gh__authenticate", None).await })
    };
    let link = alice_links.recv().await.expect("a login link");
    assert!(
        link.starts_with(&format!("{public}/oauth/connect?")),
        "{link}"
    );
    // Opened on the first replica; both callbacks land on the second.
    let (status, page) = browse(&link, "alice", &public, |step| match step {
        0 => origin(0),
        _ => origin(1),
    })
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Logged in to `gh`"), "{page}");
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), login)
        .await
        .expect("the first replica never heard of the login")
        .unwrap()
        .unwrap();
    assert_ne!(ended.is_error, Some(true), "{ended:?}");
    // Her tools, on each replica.
    for replica in &replicas {
        let (host, _) = user_host(&replica.url, &alice_token).await;
        echo(&host, &format!("alice via {}", replica.url)).await;
        host.close().await;
    }

    // Her access token ends at the backend; both replicas' next calls,
    // at once, find out: one refresh is made (under the database's lock)
    // and the other replica uses the token it stored.
    let before = backend_stats(&backend.1).await;
    let expired = reqwest::Client::new()
        .post(format!("{}/auth/expire", backend.1))
        .send()
        .await
        .unwrap();
    assert!(expired.status().is_success());
    let (first, _) = user_host(&replicas[0].url, &alice_token).await;
    let (second, _) = user_host(&replicas[1].url, &alice_token).await;
    let call = |host: &Client, text: &'static str| {
        let host = host.clone();
        async move {
            host.call_tool("gh__echo", json!({ "text": text }).as_object().cloned())
                .await
        }
    };
    let (one, two) = tokio::join!(
        call(&first, "after expiry 1"),
        call(&second, "after expiry 2")
    );
    for said in [one, two] {
        let said = said.unwrap();
        assert_ne!(said.is_error, Some(true), "{said:?}");
    }
    let after = backend_stats(&backend.1).await;
    assert_eq!(
        after["refreshed"].as_u64().unwrap() - before["refreshed"].as_u64().unwrap(),
        1,
        "{after}"
    );
    assert_eq!(after["refresh_reused"], 0, "{after}");
    first.close().await;
    second.close().await;

    // Bob, through nginx: only his own login to make.
    let bob_token = token_for(&issuer.1, "bob", &audience).await;
    let (bob, mut bob_links) = user_host(&audience, &bob_token).await;
    let names = tool_names(&bob).await;
    assert!(names.contains(&"gh__authenticate".to_owned()), "{names:?}");
    assert!(!names.contains(&"gh__echo".to_owned()), "{names:?}");
    let login = {
        let bob = bob.clone();
        tokio::spawn(async move { bob.call_tool("gh__authenticate", None).await })
    };
    let link = bob_links.recv().await.expect("a login link");
    // Bob's link, opened by Alice (signed in as herself): refused.
    let (status, page) = browse(&link, "alice", &public, |_| public.clone()).await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("another user"), "{page}");
    // Bob opens it himself.
    let (status, page) = browse(&link, "bob", &public, |_| public.clone()).await;
    assert_eq!(status, 200, "{page}");
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), login)
        .await
        .expect("bob's login never ended")
        .unwrap()
        .unwrap();
    assert_ne!(ended.is_error, Some(true), "{ended:?}");
    echo(&bob, "bob's words").await;
    echo(&alice, "alice's words").await;

    // Three sign-ins through two replicas: the gateway registered at its
    // issuer once (the registration is shared, its tokens are not).
    assert_eq!(backend_stats(&issuer.1).await["clients_registered"], 1);
    // A link opened over and over: one replica begins at most 20 sign-ins
    // a minute for one user, then says to wait.
    let opener = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut statuses = Vec::new();
    for _ in 0..21 {
        let sent = link.replacen(&public, &origin(0), 1);
        statuses.push(opener.get(sent).send().await.unwrap().status().as_u16());
    }
    let begun = statuses.iter().filter(|s| **s == 302).count();
    assert!((18..=20).contains(&begun), "{statuses:?}");
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");

    // A shared `ask`: Alice answers "always" through the first replica;
    // the second lets her calls run unasked, and still asks Bob.
    policy(&sandbox, &url, &key, &["ask", "gh/echo"]);
    let (alice_first, alice_asked) = answering_host(&replicas[0].url, &alice_token, true).await;
    let changed = std::time::Instant::now();
    while alice_asked.load(Ordering::SeqCst) == 0 {
        assert!(
            changed.elapsed() < std::time::Duration::from_secs(2),
            "the shared ask did not hold within 2 s"
        );
        echo(&alice_first, "asked alice").await;
    }
    assert_eq!(alice_asked.load(Ordering::SeqCst), 1);
    let (alice_second, alice_asked_second) =
        answering_host(&replicas[1].url, &alice_token, true).await;
    echo(&alice_second, "asked alice, second replica").await;
    assert_eq!(alice_asked_second.load(Ordering::SeqCst), 0, "asked again");
    let (bob_second, bob_asked) = answering_host(&replicas[1].url, &bob_token, false).await;
    echo(&bob_second, "asked bob").await;
    echo(&bob_second, "asked bob").await;
    assert_eq!(
        bob_asked.load(Ordering::SeqCst),
        2,
        "alice's answer held for bob"
    );
    // Revoked (for Alice, from the command line): the second replica asks
    // her at her very next call, as every question reads the database.
    let listed = sandbox
        .host(BIN)
        .args([
            "policy",
            "list",
            "--json",
            "--state",
            &url,
            "--state-key-file",
        ])
        .arg(&key)
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["allows"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["allows"][0]["user"], "alice", "{listed}");
    policy(
        &sandbox,
        &url,
        &key,
        &["revoke", "gh/echo", "--user", "alice"],
    );
    echo(&alice_second, "asked alice again").await;
    assert_eq!(alice_asked_second.load(Ordering::SeqCst), 1);
    for host in [alice_first, alice_second, bob_second] {
        host.close().await;
    }
    policy(&sandbox, &url, &key, &["remove", "ask", "gh/echo"]);
    echo_until(&alice, false, std::time::Instant::now()).await;

    // Shared rules for a group and for a user. A token naming the group is
    // refused; the same user's next token, naming none, is not (the hub
    // follows the user's latest token); Bob is refused only once a rule
    // names him.
    let contractor = token_in(&issuer.1, "alice", &audience, &["contractors"]).await;
    policy(
        &sandbox,
        &url,
        &key,
        &["deny", "gh/echo", "--group", "contractors"],
    );
    let since = std::time::Instant::now();
    let (as_contractor, _) = user_host(&replicas[1].url, &contractor).await;
    let said = echo_until(&as_contractor, true, since).await;
    assert!(
        format!("{said:?}").contains("group contractors"),
        "{said:?}"
    );
    echo(&bob, "bob, in no group").await;
    let (alice_plain, _) = user_host(&replicas[1].url, &alice_token).await;
    echo(&alice_plain, "alice, in no group").await;
    let said = as_contractor
        .call_tool("gh__echo", json!({"text": "x"}).as_object().cloned())
        .await
        .unwrap();
    assert_eq!(said.is_error, Some(true), "{said:?}");
    policy(&sandbox, &url, &key, &["deny", "gh/echo", "--user", "bob"]);
    let said = echo_until(&bob, true, std::time::Instant::now()).await;
    assert!(format!("{said:?}").contains("user bob"), "{said:?}");
    echo(&alice_plain, "alice, not bob").await;
    policy(
        &sandbox,
        &url,
        &key,
        &["remove", "deny", "gh/echo", "--user", "bob"],
    );
    policy(
        &sandbox,
        &url,
        &key,
        &["remove", "deny", "gh/echo", "--group", "contractors"],
    );
    echo_until(&bob, false, std::time::Instant::now()).await;
    echo_until(&as_contractor, false, std::time::Instant::now()).await;
    as_contractor.close().await;
    alice_plain.close().await;

    // A shared deny holds in every user's own hub, on both replicas.
    policy(&sandbox, &url, &key, &["deny", "gh/echo"]);
    let changed = std::time::Instant::now();
    for host in [&alice, &bob] {
        echo_until(host, true, changed).await;
    }

    // On the backend: each call came with its own user's token.
    let calls = backend_calls(&backend.1).await;
    let by = |text: &str| -> Vec<String> {
        calls
            .iter()
            .filter(|(_, t)| t.contains(text))
            .map(|(sub, _)| sub.clone())
            .collect()
    };
    assert_eq!(by("bob's words"), ["bob"], "{calls:?}");
    assert_eq!(by("alice's words"), ["alice"], "{calls:?}");
    assert_eq!(by("alice via"), ["alice", "alice"], "{calls:?}");
    assert!(
        calls.iter().all(|(sub, _)| sub == "alice" || sub == "bob"),
        "{calls:?}"
    );
    alice.close().await;
    bob.close().await;
    // One era verdict for the one backend, whichever replica and user
    // found it first; its URL is not kept.
    let verdicts = postgres.psql(
        "switchboard",
        "SELECT encode(server_key, 'hex') FROM switchboard_era_verdicts",
    );
    assert_eq!(verdicts.lines().count(), 1, "{verdicts}");
}

/// `switchboard team ARGS --state URL --state-key-file KEY`: whether it
/// succeeded, and what it said.
fn team_command(sandbox: &Sandbox, url: &str, key: &Path, args: &[&str]) -> (bool, String) {
    let output = sandbox
        .host(BIN)
        .arg("team")
        .args(args)
        .args(["--state", url, "--state-key-file"])
        .arg(key)
        .output()
        .unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// Waits (at most 2 s from `since`) until `host` lists `tool`, or stops
/// listing it (`listed: false`).
async fn listed_within(host: &Client, tool: &str, listed: bool, since: std::time::Instant) {
    loop {
        let names = tool_names(host).await;
        if names.iter().any(|n| n == tool) == listed {
            return;
        }
        assert!(
            since.elapsed() < std::time::Duration::from_secs(2),
            "after 2 s, {tool} listed is not {listed}: {names:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_pushed_once_are_served_by_every_replica_until_cleared() {
    let Some((postgres, url, sandbox, key)) = team("team-servers") else {
        return;
    };
    let shared = ["--state", &url, "--state-key-file", key.to_str().unwrap()];
    let replicas = [
        Replica::start(&sandbox, &shared),
        Replica::start(&sandbox, &shared),
    ];
    let hosts = hosts_of(&replicas, EraMode::Modern).await;
    let names = tool_names(&hosts[1]).await;
    assert!(
        names.contains(&"new__echo".to_owned()) && !names.iter().any(|n| n.starts_with("extra__")),
        "{names:?}"
    );

    // Refused, nothing written: a file with a [policy], a broken file.
    let file = sandbox.work().join("shared.toml");
    let entry = format!(
        "[servers.extra]\ncommand = {BIN:?}\nargs = [\"__testserver\", \"--era\", \"modern\"]\n"
    );
    std::fs::write(
        &file,
        format!("{entry}\n[policy.tools]\ndeny = [\"extra/*\"]\n"),
    )
    .unwrap();
    let file_arg = file.to_str().unwrap();
    let (ok, said) = team_command(&sandbox, &url, &key, &["push", file_arg]);
    assert!(!ok && said.contains("[policy]"), "{said}");
    std::fs::write(&file, "[servers.extra\ncommand = 1\n").unwrap();
    let (ok, said) = team_command(&sandbox, &url, &key, &["push", file_arg]);
    assert!(!ok && said.contains("is not pushed"), "{said}");
    let (ok, said) = team_command(&sandbox, &url, &key, &["show", "--json"]);
    assert!(ok && said.contains("\"version\": null"), "{said}");

    // Pushed once: both replicas serve it within 2 s.
    std::fs::write(&file, &entry).unwrap();
    let (ok, said) = team_command(&sandbox, &url, &key, &["push", file_arg]);
    assert!(ok && said.contains("version 1"), "{said}");
    let pushed = std::time::Instant::now();
    for host in &hosts {
        listed_within(host, "extra__echo", true, pushed).await;
        let result = host
            .call_tool(
                "extra__echo",
                json!({ "text": "shared" }).as_object().cloned(),
            )
            .await
            .unwrap();
        assert!(
            serde_json::to_string(&result.content)
                .unwrap()
                .contains("shared")
        );
    }
    let (ok, said) = team_command(&sandbox, &url, &key, &["show"]);
    assert!(
        ok && said.contains("[servers.extra]") && said.contains("version 1"),
        "{said}"
    );

    // A replica started now serves it from the start.
    let late = [Replica::start(&sandbox, &shared)];
    let late_host = hosts_of(&late, EraMode::Modern).await.remove(0);
    listed_within(&late_host, "extra__echo", true, std::time::Instant::now()).await;

    // A document changed in the database is refused where it is read.
    postgres.psql(
        "switchboard",
        "UPDATE switchboard_shared_config SET version = version + 1",
    );
    let (ok, said) = team_command(&sandbox, &url, &key, &["show"]);
    assert!(!ok && said.contains("cannot be used"), "{said}");

    // Cleared: every replica stops it within 2 s.
    let (ok, said) = team_command(&sandbox, &url, &key, &["clear"]);
    assert!(ok && said.contains("cleared"), "{said}");
    let cleared = std::time::Instant::now();
    for host in hosts.iter().chain([&late_host]) {
        listed_within(host, "extra__echo", false, cleared).await;
        assert!(tool_names(host).await.contains(&"new__echo".to_owned()));
    }
    for host in hosts.into_iter().chain([late_host]) {
        host.close().await;
    }
}
