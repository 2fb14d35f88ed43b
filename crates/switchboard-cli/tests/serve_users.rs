//! `switchboard serve --http --issuer URL --audience URL`: hosts as users,
//! against the testkit's authorization server (its JWT access tokens, and
//! the forgeries it mints on request). Two users' tokens both work; an
//! expired, wrong-audience, wrong-issuer, `alg: none`, HS256-with-the-
//! public-key, unknown-kid and garbage token are each refused with 401
//! and a challenge naming the resource metadata, which is served; one
//! user cannot use another's session; flags that make no sense together
//! are refused. The TypeScript SDK's client, given only the gateway's URL,
//! finds the issuer through the metadata, registers, logs in and calls.
//! Opaque tokens are asked about at the issuer (RFC 7662) as a client it
//! knows, the answers kept; refused ones are refused the same way.
#![cfg(target_os = "linux")]

use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

#[allow(dead_code)] // the sandbox and the test server are used here
mod support;

use support::gateway::Sandbox;
use support::{BIN, HttpServer};

/// The gateway's URL as hosts reach it (it sits behind a proxy, say).
const AUDIENCE: &str = "https://gateway.test/mcp";
const METADATA: &str =
    "resource_metadata=\"https://gateway.test/.well-known/oauth-protected-resource/mcp\"";

struct Gateway {
    child: Child,
    address: String,
    stderr: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve --http 127.0.0.1:0 [extra]` in `sandbox`, with no static token
/// in its environment.
fn serve(sandbox: &Sandbox, extra: &[&str]) -> Command {
    serve_at(sandbox, "127.0.0.1:0", extra)
}

/// [`serve`] on `address`.
fn serve_at(sandbox: &Sandbox, address: &str, extra: &[&str]) -> Command {
    let mut command = sandbox.host(BIN);
    command
        .args(["serve", "--http", address])
        .args(extra)
        .env("XDG_RUNTIME_DIR", sandbox.runtime())
        .env_remove("SWITCHBOARD_TOKEN");
    command
}

impl Gateway {
    /// `command`, once it says where it listens.
    #[allow(clippy::zombie_processes)] // kept in the `Gateway`, which waits
    fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "no address printed:\n{said}"
            );
            if let Some(url) = line.trim().strip_prefix("listening on http://") {
                let address = url.trim_end_matches("/mcp").to_owned();
                std::thread::spawn(move || for _ in stderr.lines() {});
                return Self {
                    child,
                    address,
                    stderr: said,
                };
            }
            said.push_str(&line);
        }
    }
}

use support::raw::Raw as Response;

/// One raw exchange (see `support::raw`) with the `Host` the gateway
/// checks.
fn exchange(address: &str, method: &str, path: &str, head: &[String], body: &str) -> Response {
    let host = format!("host: {address}");
    let mut lines = vec![host.as_str()];
    lines.extend(head.iter().map(String::as_str));
    support::raw::exchange(address, &format!("{method} {path} HTTP/1.1"), &lines, body)
        .expect("the gateway listens")
}

/// A POST of `message` to the gateway's endpoint with `token` (and a
/// session, when given).
fn post(
    gateway: &Gateway,
    token: Option<&str>,
    session: Option<&str>,
    message: &Value,
) -> Response {
    let mut head = vec![
        "content-type: application/json".to_owned(),
        "accept: application/json, text/event-stream".to_owned(),
        "mcp-protocol-version: 2025-06-18".to_owned(),
    ];
    if let Some(token) = token {
        head.push(format!("authorization: Bearer {token}"));
    }
    if let Some(session) = session {
        head.push(format!("mcp-session-id: {session}"));
    }
    exchange(
        &gateway.address,
        "POST",
        "/mcp",
        &head,
        &message.to_string(),
    )
}

/// A token the test authorization server signs: its defaults (`sub`
/// `user`, a lifetime ahead) with `claims` applied, forged as `forge` says.
fn mint(issuer: &HttpServer, claims: Value, forge: Option<&str>) -> String {
    let mut asked = json!({ "claims": claims });
    if let Some(forge) = forge {
        asked["forge"] = forge.into();
    }
    minted(issuer, &asked)
}

/// What `/auth/mint` makes of `asked`.
fn minted(issuer: &HttpServer, asked: &Value) -> String {
    let address = issuer.1.trim_start_matches("http://");
    let response = exchange(
        address,
        "POST",
        "/auth/mint",
        &["content-type: application/json".to_owned()],
        &asked.to_string(),
    );
    assert_eq!(response.status, 200, "{}", response.body);
    let minted: Value = serde_json::from_str(&response.body).unwrap();
    minted["access_token"].as_str().unwrap().to_owned()
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}})
}

fn list_tools() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
}

/// A session of `token`'s user, initialized.
fn open_session(gateway: &Gateway, token: &str) -> String {
    let answer = post(gateway, Some(token), None, &initialize());
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer.header("mcp-session-id").expect("a session id");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(gateway, Some(token), Some(&session), &note).status,
        202
    );
    session
}

fn users_gateway(name: &str, issuer: &HttpServer) -> (Sandbox, Gateway) {
    let sandbox = Sandbox::new(name);
    let gateway = issuer_gateway(&sandbox, issuer, &["--scope", "mcp:read"]);
    (sandbox, gateway)
}

/// A gateway in `sandbox` whose hosts are users of `issuer` (tokens for
/// [`AUDIENCE`]), with `extra` flags.
fn issuer_gateway(sandbox: &Sandbox, issuer: &HttpServer, extra: &[&str]) -> Gateway {
    let mut flags = vec!["--issuer", issuer.issuer(), "--audience", AUDIENCE];
    flags.extend_from_slice(extra);
    Gateway::start(serve(sandbox, &flags))
}

#[test]
fn each_users_token_works_and_a_session_is_its_users_alone() {
    let issuer = HttpServer::start(&["--auth"]);
    let (_sandbox, gateway) = users_gateway("users-two", &issuer);
    assert!(
        !gateway.stderr.contains("token:"),
        "no static token is made beside --issuer:\n{}",
        gateway.stderr
    );
    let alice = mint(&issuer, json!({"sub": "alice", "aud": AUDIENCE}), None);
    let bob = mint(
        &issuer,
        json!({"sub": "bob", "aud": [AUDIENCE, "other"]}),
        None,
    );

    let alices = open_session(&gateway, &alice);
    let listed = post(&gateway, Some(&alice), Some(&alices), &list_tools());
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains("\"tools\""), "{}", listed.body);
    let bobs = open_session(&gateway, &bob);
    assert_ne!(alices, bobs);

    // Bob's good token, Alice's session: as if there were no such session.
    let stolen = post(&gateway, Some(&bob), Some(&alices), &list_tools());
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    let ended = exchange(
        &gateway.address,
        "DELETE",
        "/mcp",
        &[
            format!("authorization: Bearer {bob}"),
            format!("mcp-session-id: {alices}"),
        ],
        "",
    );
    assert_eq!(ended.status, 404);
    // Alice's session is whole, and still hers.
    let listed = post(&gateway, Some(&alice), Some(&alices), &list_tools());
    assert_eq!(listed.status, 200, "{}", listed.body);
    let listed = post(&gateway, Some(&bob), Some(&bobs), &list_tools());
    assert_eq!(listed.status, 200, "{}", listed.body);
}

#[test]
fn every_bad_token_is_refused_with_a_challenge_naming_the_metadata() {
    let issuer = HttpServer::start(&["--auth"]);
    let (_sandbox, gateway) = users_gateway("users-refused", &issuer);
    // A good token first: the keys are fetched, so each refusal below is
    // the token's own.
    let good = mint(&issuer, json!({"aud": AUDIENCE}), None);
    assert_eq!(post(&gateway, Some(&good), None, &initialize()).status, 200);

    let none = post(&gateway, None, None, &initialize());
    assert_eq!(none.status, 401);
    let challenge = none.header("www-authenticate").unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(METADATA), "{challenge}");
    assert!(challenge.contains("scope=\"mcp:read\""), "{challenge}");
    assert!(
        !challenge.contains("error="),
        "no token, no error code: {challenge}"
    );

    let bad = [
        (
            "expired",
            mint(&issuer, json!({"aud": AUDIENCE, "exp": 1000}), None),
        ),
        (
            "another audience",
            mint(&issuer, json!({"aud": "https://other.test/mcp"}), None),
        ),
        ("no audience", mint(&issuer, json!({"aud": null}), None)),
        (
            "another issuer",
            mint(
                &issuer,
                json!({"aud": AUDIENCE, "iss": "https://evil.test"}),
                None,
            ),
        ),
        (
            "alg none",
            mint(&issuer, json!({"aud": AUDIENCE}), Some("alg-none")),
        ),
        (
            "HS256 keyed with the public key",
            mint(&issuer, json!({"aud": AUDIENCE}), Some("hs256-public-key")),
        ),
        (
            "unknown kid",
            mint(&issuer, json!({"aud": AUDIENCE}), Some("unknown-kid")),
        ),
        ("garbage", "abc.def.ghi".to_owned()),
        ("opaque", "0123456789abcdef0123456789abcdef".to_owned()),
        ("oversized", format!("{good}{}", "A".repeat(9000))),
    ];
    for (what, token) in bad {
        let refused = post(&gateway, Some(&token), None, &initialize());
        assert_eq!(refused.status, 401, "{what}: {}", refused.body);
        assert_eq!(refused.header("mcp-session-id"), None, "{what}");
        let challenge = refused.header("www-authenticate").unwrap_or_default();
        assert!(challenge.contains(METADATA), "{what}: {challenge}");
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
    }
    // The good token still works: no refusal above spoiled the keys.
    assert_eq!(post(&gateway, Some(&good), None, &initialize()).status, 200);
}

/// An opaque token of `claims`' `sub` and `aud`, kept by the test
/// authorization server (for its introspection to answer about).
fn mint_opaque(issuer: &HttpServer, claims: Value) -> String {
    minted(issuer, &json!({ "claims": claims, "opaque": true }))
}

/// `issuer`'s counters.
fn issuer_stats(issuer: &HttpServer) -> Value {
    let address = issuer.1.trim_start_matches("http://");
    let response = exchange(address, "GET", "/auth/stats", &[], "");
    serde_json::from_str(&response.body).unwrap()
}

/// A gateway that asks `issuer` about opaque tokens as a client it
/// registers there (with `secret` instead of its own, when given).
fn introspecting_gateway(
    name: &str,
    issuer: &HttpServer,
    secret: Option<&str>,
) -> (Sandbox, Gateway) {
    use std::os::unix::fs::PermissionsExt as _;
    let address = issuer.1.trim_start_matches("http://");
    let registered = exchange(
        address,
        "POST",
        "/register",
        &["content-type: application/json".to_owned()],
        &json!({"token_endpoint_auth_method": "client_secret_basic",
                "grant_types": ["client_credentials"]})
        .to_string(),
    );
    assert!(registered.status < 300, "{}", registered.body);
    let client: Value = serde_json::from_str(&registered.body).unwrap();
    let sandbox = Sandbox::new(name);
    let file = sandbox.work().join("introspection.secret");
    let secret = secret.unwrap_or_else(|| client["client_secret"].as_str().unwrap());
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let gateway = issuer_gateway(
        &sandbox,
        issuer,
        &[
            "--introspection-client-id",
            client["client_id"].as_str().unwrap(),
            "--introspection-secret-file",
            file.to_str().unwrap(),
        ],
    );
    (sandbox, gateway)
}

#[test]
fn opaque_tokens_are_asked_about_at_the_issuer_and_the_answer_kept() {
    let issuer = HttpServer::start(&["--auth"]);
    let (_sandbox, gateway) = introspecting_gateway("users-opaque", &issuer, None);
    let alice = mint_opaque(&issuer, json!({"sub": "alice", "aud": AUDIENCE}));
    let session = open_session(&gateway, &alice);
    let listed = post(&gateway, Some(&alice), Some(&session), &list_tools());
    assert_eq!(listed.status, 200, "{}", listed.body);
    // Asked once: the answer is kept (by the token's hash) for the
    // session's later requests.
    assert_eq!(issuer_stats(&issuer)["introspected"], 1);
    // A JWT is still checked here, never sent to the issuer.
    let jwt = mint(&issuer, json!({"sub": "bob", "aud": AUDIENCE}), None);
    assert_eq!(post(&gateway, Some(&jwt), None, &initialize()).status, 200);
    assert_eq!(issuer_stats(&issuer)["introspected"], 1);
    // Alice's session is hers: Bob's opaque token does not reach it.
    let bob = mint_opaque(&issuer, json!({"sub": "bob", "aud": AUDIENCE}));
    let stolen = post(&gateway, Some(&bob), Some(&session), &list_tools());
    assert_eq!(stolen.status, 404, "{}", stolen.body);

    // Refused, each with the challenge: an opaque token for another
    // resource, one the issuer never issued, one it ended, a user-less one.
    let other = mint_opaque(
        &issuer,
        json!({"sub": "carol", "aud": "https://other.test/mcp"}),
    );
    let ended = mint_opaque(&issuer, json!({"sub": "dave", "aud": AUDIENCE}));
    let address = issuer.1.trim_start_matches("http://");
    assert_eq!(
        exchange(address, "POST", "/auth/expire", &[], "").status,
        200
    );
    let nobody = mint_opaque(&issuer, json!({"sub": "", "aud": AUDIENCE}));
    for (what, token) in [
        ("another audience", other),
        ("never issued", "opaque-0123456789abcdef".to_owned()),
        ("ended", ended),
        ("no subject", nobody),
        ("with a space", "a b".to_owned()),
    ] {
        let refused = post(&gateway, Some(&token), None, &initialize());
        assert_eq!(refused.status, 401, "{what}: {}", refused.body);
        let challenge = refused.header("www-authenticate").unwrap_or_default();
        assert!(challenge.contains(METADATA), "{what}: {challenge}");
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
    }
    // A refusal is kept too: the same bad token again asks nobody.
    let asked = issuer_stats(&issuer)["introspected"].as_u64().unwrap();
    let again = post(
        &gateway,
        Some("opaque-0123456789abcdef"),
        None,
        &initialize(),
    );
    assert_eq!(again.status, 401);
    assert_eq!(
        issuer_stats(&issuer)["introspected"].as_u64().unwrap(),
        asked
    );
}

#[test]
fn a_gateway_the_issuer_refuses_to_answer_refuses_opaque_tokens() {
    let issuer = HttpServer::start(&["--auth"]);
    let (_sandbox, gateway) =
        introspecting_gateway("users-opaque-wrong-secret", &issuer, Some("not-the-secret"));
    let alice = mint_opaque(&issuer, json!({"sub": "alice", "aud": AUDIENCE}));
    let refused = post(&gateway, Some(&alice), None, &initialize());
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(issuer_stats(&issuer)["introspected"], 0);
}

#[test]
fn the_resource_metadata_names_the_audience_and_the_issuer() {
    let issuer = HttpServer::start(&["--auth"]);
    let (_sandbox, gateway) = users_gateway("users-metadata", &issuer);
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = exchange(&gateway.address, "GET", path, &[], "");
        assert_eq!(response.status, 200, "{path}: {}", response.body);
        let document: Value = serde_json::from_str(&response.body).unwrap();
        assert_eq!(document["resource"], AUDIENCE);
        assert_eq!(document["authorization_servers"], json!([issuer.issuer()]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
        assert_eq!(document["scopes_supported"], json!(["mcp:read"]));
    }
}

#[test]
fn an_issuer_excludes_a_static_token() {
    let sandbox = Sandbox::new("users-flags");
    let issuer_flags = ["--issuer", "http://127.0.0.1:9/", "--audience", AUDIENCE];
    let mut with_env = serve(&sandbox, &issuer_flags);
    with_env.env(
        "SWITCHBOARD_TOKEN",
        "test-token-0123456789abcdefghijklmnopqrstuv",
    );
    let output = with_env.stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    // A usage failure (1), said plainly.
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("unset SWITCHBOARD_TOKEN"), "{said}");

    for extra in [&["--no-auth"][..], &["--token-file", "/nonexistent"][..]] {
        let output = serve(&sandbox, &issuer_flags)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{extra:?}: {said}");
        assert!(said.contains("cannot be used with"), "{extra:?}: {said}");
    }
    let output = serve(&sandbox, &["--issuer", "http://127.0.0.1:9/"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("--audience"), "{said}");
}

#[test]
fn the_typescript_sdk_client_discovers_the_issuer_logs_in_and_calls() {
    let test = "the_typescript_sdk_client_discovers_the_issuer_logs_in_and_calls";
    let sdk =
        support::interop::cache().join("npm/node_modules/@modelcontextprotocol/sdk/package.json");
    if !sdk.exists() {
        return support::interop::skip(test, "the TypeScript SDK is not installed");
    }
    // The gateway's own URL is its audience: the SDK checks that the
    // metadata names the URL it connects to; the issuer issues tokens for
    // it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let issuer = HttpServer::start(&["--auth", "--auth-resource", &audience]);
    let sandbox = Sandbox::new("users-ts");
    let _gateway = Gateway::start(serve_at(
        &sandbox,
        &format!("127.0.0.1:{port}"),
        &["--issuer", issuer.issuer(), "--audience", &audience],
    ));
    let mut host = sandbox.host("node");
    host.env("SWITCHBOARD_CACHE", support::interop::cache())
        .env("TS_HOST_OAUTH", "http://127.0.0.1:9/callback")
        .arg(support::interop::root().join("crates/switchboard-testkit/interop/ts_host.mjs"))
        .args([r#"old__echo={"text":"as a user"}"#, "--", &audience]);
    let output = support::interop::finish(host, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let answer: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    assert!(output.status.success(), "{answer}");
    assert_eq!(answer["logged_in"], true, "{answer}");
    assert_eq!(
        answer["calls"]["old__echo"]["content"][0]["text"], "as a user",
        "{answer}"
    );
}
