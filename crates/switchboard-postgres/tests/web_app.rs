//! A web application's users on the shared database: two instances of
//! `Users` in one process, each with its own `PgState`, as two replicas of
//! an application would be. A login begun on one finishes on the other, the
//! first hears of it and connects the server too, and after both restart
//! the user's server comes back without a new login. A replayed callback,
//! another user's callback and user ids that look like SQL are refused or
//! kept as plain values, and nothing is lost; a user's URL on the
//! application's own network is refused.

mod support;

use std::sync::Arc;
use std::time::Duration;

use switchboard_hub::hub::users::{Added, Users, UsersBuilder};
use switchboard_hub::{Hub, HubError, ServerState};
use switchboard_postgres::PgState;

use support::{Sql, database, key};

/// The one text column of each row `query` selects, read as an attacker
/// with access to the database would (off the runtime: `Sql` blocks).
fn rows(url: &str, query: &str) -> Vec<String> {
    tokio::task::block_in_place(|| Sql::new(url).strings(query))
}

const WAIT: Duration = Duration::from_secs(60);

/// The test MCP server with its authorization server (which approves at
/// once), on a loopback port of this process.
async fn auth_server() -> String {
    switchboard_testkit::spawn_http(&["--auth"]).await.1
}

/// One instance of the application: its own connection to the database.
async fn instance(url: &str) -> Users {
    instance_with(url, |users| users).await
}

/// [`instance`] with more settings.
async fn instance_with(url: &str, settings: impl FnOnce(UsersBuilder) -> UsersBuilder) -> Users {
    let url = url.to_owned();
    let state = tokio::task::spawn_blocking(move || PgState::connect(&url, key()).unwrap())
        .await
        .unwrap();
    let users = Users::builder(Arc::new(state))
        .client_name("switchboard-web-test")
        .redirect_uri("http://127.0.0.1:9/callback")
        .allow_http_loopback(true)
        .startup_timeout(WAIT);
    settings(users).build().unwrap()
}

/// Plays the user's browser: opens the authorization URL (the test
/// authorization server approves at once) and returns where it sends the
/// browser back to, the application's callback.
async fn approve(authorization_url: &url::Url) -> String {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = client.get(authorization_url.clone()).send().await.unwrap();
    assert_eq!(answer.status(), 302, "{authorization_url}");
    answer.headers()["location"].to_str().unwrap().to_owned()
}

/// Begins a login for `user` on `users`: the server's name and the URL
/// the browser comes back with.
async fn begin(users: &Users, user: &str, mcp: &str) -> (String, String) {
    match users.add_server_for(user, mcp).await.unwrap() {
        Added::NeedsAuth {
            server,
            authorization_url,
        } => (server, approve(&authorization_url).await),
        other => panic!("expected a login for {user}, got {other:?}"),
    }
}

/// Waits (on the hub's events) until `server` is ready in `hub`.
async fn ready(hub: &Hub, server: &str) {
    let mut events = hub.events();
    tokio::time::timeout(WAIT, async {
        loop {
            if hub.status(server).unwrap().state == ServerState::Ready {
                return;
            }
            if events.next().await.is_none() {
                panic!("the hub is gone");
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{server} never became ready: {:?}", hub.status(server)));
}

/// Calls `server`'s echo tool in `users`' hub for `user`.
async fn echo(users: &Users, user: &str, server: &str) -> String {
    let hub = users.hub(user).await.unwrap();
    let args = serde_json::json!({"text": user}).as_object().cloned();
    let result = hub
        .call_tool(&format!("{server}__echo"), args)
        .await
        .unwrap();
    serde_json::to_string(&result.content).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_begun_on_one_instance_finishes_on_another_and_outlives_both() {
    let Some((_postgres, url)) = database("web_app_login") else {
        return;
    };
    let mcp = auth_server().await;
    let (first, second) = (instance(&url).await, instance(&url).await);

    let (server, callback) = begin(&first, "alice", &mcp).await;
    let alice_on_first = first.hub("alice").await.unwrap();
    assert!(
        matches!(
            alice_on_first.status(&server).unwrap().state,
            ServerState::NeedsAuth { .. }
        ),
        "{:?}",
        alice_on_first.status(&server)
    );

    // The browser comes back to the other instance, which never saw
    // alice: her server comes from the database, the login from its table.
    let (finished, state) = second.finish_login("alice", &callback).await.unwrap();
    assert_eq!(
        (finished.as_str(), state),
        (server.as_str(), ServerState::Ready)
    );
    assert!(echo(&second, "alice", &server).await.contains("alice"));
    // The first instance is told and connects too.
    ready(&alice_on_first, &server).await;
    assert!(echo(&first, "alice", &server).await.contains("alice"));

    // The same callback again finds no login, and breaks nothing.
    let replayed = second.finish_login("alice", &callback).await.unwrap_err();
    assert!(matches!(replayed, HubError::Login { .. }), "{replayed:?}");
    assert!(echo(&second, "alice", &server).await.contains("alice"));

    // Both instances restart: the server comes back with the stored
    // tokens, and adding it again finds it ready under the same name.
    first.shutdown().await;
    second.shutdown().await;
    drop((first, second, alice_on_first));
    let (first, second) = (instance(&url).await, instance(&url).await);
    let alice = first.hub("alice").await.unwrap();
    assert_eq!(alice.status(&server).unwrap().state, ServerState::Ready);
    match second.add_server_for("alice", &mcp).await.unwrap() {
        Added::Ready { server: again } => assert_eq!(again, server),
        other => panic!("expected the server ready, got {other:?}"),
    }
    assert!(echo(&second, "alice", &server).await.contains("alice"));
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_callback_finishes_nothing_and_each_user_has_their_own_tokens() {
    let Some((_postgres, url)) = database("web_app_users") else {
        return;
    };
    let mcp = auth_server().await;
    let (first, second) = (instance(&url).await, instance(&url).await);

    let (server, alices) = begin(&first, "alice", &mcp).await;
    // Bob brings alice's callback to the other instance: no login of his.
    let stolen = second.finish_login("bob", &alices).await.unwrap_err();
    assert!(matches!(stolen, HubError::Login { .. }), "{stolen:?}");
    assert_eq!(
        rows(
            &url,
            "SELECT user_id FROM switchboard_credentials WHERE user_id = 'bob'"
        ),
        Vec::<String>::new()
    );
    // Alice's login was not used up by it.
    second.finish_login("alice", &alices).await.unwrap();
    assert!(echo(&second, "alice", &server).await.contains("alice"));

    // Bob logs in for himself, and gets tokens of his own.
    let (bobs_server, bobs) = begin(&second, "bob", &mcp).await;
    first.finish_login("bob", &bobs).await.unwrap();
    assert!(echo(&first, "bob", &bobs_server).await.contains("bob"));
    let holders = rows(
        &url,
        "SELECT user_id FROM switchboard_credentials ORDER BY user_id",
    );
    assert_eq!(holders, ["alice", "bob"]);
    let mut sealed = rows(
        &url,
        "SELECT encode(sealed, 'hex') FROM switchboard_credentials ORDER BY user_id",
    );
    sealed.dedup();
    assert_eq!(sealed.len(), 2, "one sealed value per user");

    // A callback that is no authorization response says so.
    let error = second
        .finish_login(
            "bob",
            "http://127.0.0.1:9/callback?error=access_denied&state=x",
        )
        .await
        .unwrap_err();
    let said = std::error::Error::source(&error).unwrap().to_string();
    assert!(said.contains("access_denied"), "{said}");
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_ids_that_look_like_sql_are_only_ids_and_idle_hubs_are_let_go() {
    let Some((_postgres, url)) = database("web_app_sql") else {
        return;
    };
    let mcp = auth_server().await;
    let sly = "alice'); DROP TABLE switchboard_user_servers; --";
    let users = instance_with(&url, |users| users.idle_limit(Duration::from_millis(200))).await;

    let (server, callback) = begin(&users, sly, &mcp).await;
    users.finish_login(sly, &callback).await.unwrap();
    assert!(echo(&users, sly, &server).await.contains("DROP TABLE"));
    assert_eq!(
        rows(&url, "SELECT user_id FROM switchboard_user_servers"),
        [sly]
    );
    assert_eq!(
        rows(&url, "SELECT user_id FROM switchboard_credentials"),
        [sly]
    );

    // Unused for the idle limit, the hub is shut down; the next use makes
    // it again from the database, logged in.
    tokio::time::timeout(WAIT, async {
        while users.loaded() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the idle hub was never let go");
    assert!(echo(&users, sly, &server).await.contains("DROP TABLE"));

    // Ids and URLs that cannot be used are refused before the database
    // (and before any connection).
    for (user, server_url) in [
        ("", mcp.as_str()),
        ("a\nb", mcp.as_str()),
        ("alice", "http://example.com/mcp"),
        ("alice", "https://user:pw@example.com/mcp"),
        ("alice", "not a url"),
        // The application's own network is not a user's to reach.
        ("alice", "https://10.0.0.7/mcp"),
        ("alice", "https://169.254.169.254/latest/meta-data"),
        ("alice", "https://[fd00::1]/mcp"),
        ("alice", "https://0xc0a80001/mcp"),
    ] {
        let refused = users.add_server_for(user, server_url).await.unwrap_err();
        assert!(matches!(refused, HubError::Config { .. }), "{refused:?}");
    }
    // A server that cannot be reached is said so, and not kept.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let failed = users.add_server_for(sly, &gone).await.unwrap_err();
    assert!(matches!(failed, HubError::Unavailable { .. }), "{failed:?}");
    assert_eq!(
        rows(&url, "SELECT url FROM switchboard_user_servers"),
        [mcp.as_str()]
    );
    users.shutdown().await;
}
