//! The PostgreSQL state store against a real PostgreSQL the test starts
//! (`switchboard_testkit::postgres`): credentials per user, a refresh two
//! replicas make at once, tampered and foreign rows, SQL-looking values,
//! pending logins taken once and only by their user, migrations run by
//! replicas starting together.
#![cfg(unix)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::json;
use switchboard_auth::pending::{PendingLogin, PendingStore};
use switchboard_auth::store::{CredentialKey, CredentialStore, Secret, StoredCredentials};
use switchboard_postgres::{PgState, StateKey};

mod support;

use support::{SCHEMA, Sql, database, key};

fn credentials(resource: &str, access: &str, refresh: &str) -> StoredCredentials {
    let mut stored = StoredCredentials::new(resource, "https://as.example", "client-1");
    stored.access_token = Some(Secret::new(access));
    stored.refresh_token = Some(Secret::new(refresh));
    stored
}

fn login(state: &str, begun: SystemTime) -> PendingLogin {
    let begun_ms = begun
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    serde_json::from_value(json!({
        "state": state,
        "verifier": "verifier-of-".to_owned() + state,
        "server_url": "https://mcp.example/mcp",
        "issuer": "https://as.example",
        "issuer_known": true,
        "iss_required": false,
        "resource": "https://mcp.example/mcp",
        "token_endpoint": "https://as.example/token",
        "auth_method": "none",
        "client_id": "client-1",
        "client_secret": null,
        "scope": null,
        "redirect_uri": "https://gateway.example/oauth/callback",
        "begun_ms": begun_ms,
    }))
    .expect("a pending login")
}

#[test]
fn each_user_sees_only_their_own_credentials_and_they_survive_a_restart() {
    let Some((postgres, url)) = database("credentials") else {
        return;
    };
    let key_of = CredentialKey::new("https://mcp.example/mcp", "https://as.example");
    {
        let state = PgState::connect(&url, key()).unwrap();
        assert_eq!(state.schema_version().unwrap(), SCHEMA);
        let alice = state.credentials("alice");
        let bob = state.credentials("bob");
        alice
            .save(
                &key_of,
                &credentials("https://mcp.example/mcp", "a-access", "a-refresh"),
            )
            .unwrap();
        assert!(bob.load(&key_of).unwrap().is_none(), "bob sees alice's");
        bob.save(
            &key_of,
            &credentials("https://mcp.example/mcp", "b-access", "b-refresh"),
        )
        .unwrap();
        assert_eq!(
            alice
                .load(&key_of)
                .unwrap()
                .unwrap()
                .access_token
                .unwrap()
                .expose(),
            "a-access"
        );
    }
    // Another process (a replica, or this one restarted) with the key.
    let again = PgState::connect(&url, key()).unwrap();
    let alice = again.credentials("alice");
    assert_eq!(
        alice
            .load(&key_of)
            .unwrap()
            .unwrap()
            .refresh_token
            .unwrap()
            .expose(),
        "a-refresh"
    );
    alice.delete(&key_of).unwrap();
    assert!(alice.load(&key_of).unwrap().is_none());
    assert_eq!(
        again
            .credentials("bob")
            .load(&key_of)
            .unwrap()
            .unwrap()
            .access_token
            .unwrap()
            .expose(),
        "b-access"
    );
    // What the database holds is sealed: no token in it.
    let dump = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "runuser -u postgres -- pg_dump -h {} -U postgres switchboard 2>/dev/null || pg_dump -h {} -U postgres switchboard",
            postgres.socket_dir().display(),
            postgres.socket_dir().display()
        ))
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.contains("switchboard_credentials"), "{dump:.300}");
    assert!(
        !dump.contains("b-access") && !dump.contains("b-refresh"),
        "a token in the clear"
    );
}

#[test]
fn two_replicas_refreshing_one_token_at_once_store_one_rotation() {
    let Some((_postgres, url)) = database("rotation") else {
        return;
    };
    let key_of = CredentialKey::new("https://mcp.example/mcp", "https://as.example");
    let a = PgState::connect(&url, key()).unwrap();
    let b = PgState::connect(&url, key()).unwrap();
    a.credentials("alice")
        .save(
            &key_of,
            &credentials("https://mcp.example/mcp", "old", "r0"),
        )
        .unwrap();
    let rotations = Arc::new(AtomicUsize::new(0));
    // Each replica refreshes as a client does: only if the refresh token
    // it finds is the one it was going to use; the other sees the new one.
    let refresh =
        |state: PgState, who: &'static str, rotations: Arc<AtomicUsize>, key_of: CredentialKey| {
            std::thread::spawn(move || {
                state
                    .credentials("alice")
                    .update(&key_of, &mut |current| {
                        let mut current = current?;
                        if current.refresh_token.as_ref().map(Secret::expose) == Some("r0") {
                            // Slow, so the other one waits on the lock.
                            std::thread::sleep(Duration::from_millis(300));
                            rotations.fetch_add(1, Ordering::SeqCst);
                            current.refresh_token = Some(Secret::new(format!("r1-{who}")));
                            current.access_token = Some(Secret::new(format!("new-{who}")));
                        }
                        Some(current)
                    })
                    .unwrap();
            })
        };
    let one = refresh(a.clone(), "a", rotations.clone(), key_of.clone());
    let two = refresh(b.clone(), "b", rotations.clone(), key_of.clone());
    one.join().unwrap();
    two.join().unwrap();
    assert_eq!(rotations.load(Ordering::SeqCst), 1, "both rotated");
    let stored = a.credentials("alice").load(&key_of).unwrap().unwrap();
    let refresh_token = stored.refresh_token.unwrap().expose().to_owned();
    assert!(refresh_token.starts_with("r1-"), "{refresh_token}");
    assert_eq!(
        b.credentials("alice")
            .load(&key_of)
            .unwrap()
            .unwrap()
            .refresh_token
            .unwrap()
            .expose(),
        refresh_token
    );
}

#[test]
fn a_tampered_or_moved_row_and_another_key_are_refused() {
    let Some((_postgres, url)) = database("tampered") else {
        return;
    };
    let key_of = CredentialKey::new("https://mcp.example/mcp", "https://as.example");
    let state = PgState::connect(&url, key()).unwrap();
    state
        .credentials("alice")
        .save(
            &key_of,
            &credentials("https://mcp.example/mcp", "a-access", "a-refresh"),
        )
        .unwrap();
    let sql = Sql::new(&url);
    // Alice's sealed row copied under bob: it does not open as bob's.
    sql.exec(
        "INSERT INTO switchboard_credentials (user_id, resource, issuer, sealed) \
         SELECT 'bob', resource, issuer, sealed FROM switchboard_credentials WHERE user_id = 'alice'",
    );
    let moved = state.credentials("bob").load(&key_of).unwrap_err();
    assert!(moved.to_string().contains("cannot be used"), "{moved}");
    // A byte of alice's changed.
    sql.exec(
        "UPDATE switchboard_credentials SET sealed = overlay(sealed placing '\\x00'::bytea from 20 for 1) \
         WHERE user_id = 'alice'",
    );
    let changed = state.credentials("alice").load(&key_of).unwrap_err();
    assert!(changed.to_string().contains("changed"), "{changed}");
    // A refresh over it changes nothing.
    assert!(
        state
            .credentials("alice")
            .update(&key_of, &mut |_| Some(credentials(
                "https://mcp.example/mcp",
                "x",
                "y"
            )))
            .is_err()
    );
    // An update answers what is stored now (what a refresh hands on), as
    // the file and keyring stores do.
    let fresh = credentials("https://mcp.example/mcp", "d2", "d2");
    let now = state
        .credentials("dave")
        .update(&key_of, &mut |_| Some(fresh.clone()))
        .unwrap();
    assert_eq!(now.as_ref(), Some(&fresh));
    let gone = state
        .credentials("dave")
        .update(&key_of, &mut |_| None)
        .unwrap();
    assert_eq!(gone, None);
    // A replica with another key reads nothing it can use.
    state
        .credentials("carol")
        .save(&key_of, &credentials("https://mcp.example/mcp", "c", "c"))
        .unwrap();
    let (other, _) = StateKey::generate().unwrap();
    let stranger = PgState::connect(&url, other).unwrap();
    assert!(stranger.credentials("carol").load(&key_of).is_err());
}

#[test]
fn values_that_look_like_sql_are_only_values() {
    let Some((_postgres, url)) = database("sql") else {
        return;
    };
    let state = PgState::connect(&url, key()).unwrap();
    let user = "alice'; DROP TABLE switchboard_credentials; --";
    let resource = "https://mcp.example/mcp?q=' OR '1'='1";
    let key_of = CredentialKey::new(resource, "https://as.example/\"; DELETE FROM x; --");
    let mut stored = credentials(resource, "$1 $2 \\x00", "');--");
    stored.issuer = key_of.issuer.clone();
    state.credentials(user).save(&key_of, &stored).unwrap();
    assert_eq!(
        state
            .credentials(user)
            .load(&key_of)
            .unwrap()
            .unwrap()
            .access_token
            .unwrap()
            .expose(),
        "$1 $2 \\x00"
    );
    assert!(state.credentials("alice").load(&key_of).unwrap().is_none());
    let pending = state.pending(user);
    pending
        .put(
            login(
                "s'; DROP TABLE switchboard_pending_logins; --",
                SystemTime::now(),
            ),
            SystemTime::UNIX_EPOCH,
        )
        .unwrap();
    assert_eq!(pending.count().unwrap(), 1);
    assert!(
        pending
            .take("s'; DROP TABLE switchboard_pending_logins; --")
            .unwrap()
            .is_some()
    );
}

#[test]
fn a_pending_login_is_taken_once_and_only_by_its_user() {
    let Some((_postgres, url)) = database("pending") else {
        return;
    };
    let a = PgState::connect(&url, key()).unwrap();
    let b = PgState::connect(&url, key()).unwrap();
    let now = SystemTime::now();
    a.pending("alice")
        .put(login("state-1", now), now - Duration::from_secs(600))
        .unwrap();
    // Another user's callback with alice's state: nothing, and alice's
    // login is still there.
    assert!(b.pending("bob").take("state-1").unwrap().is_none());
    assert_eq!(b.pending("alice").count().unwrap(), 1);
    // Finished on the other replica, once; the replay finds nothing.
    let taken = b.pending("alice").take("state-1").unwrap().unwrap();
    assert_eq!(taken.state(), "state-1");
    assert_eq!(taken.server_url(), "https://mcp.example/mcp");
    assert!(a.pending("alice").take("state-1").unwrap().is_none());
    // Logins begun before the expiry go when the next is kept.
    a.pending("alice")
        .put(
            login("old", now - Duration::from_secs(3600)),
            now - Duration::from_secs(7200),
        )
        .unwrap();
    a.pending("alice")
        .put(login("new", now), now - Duration::from_secs(600))
        .unwrap();
    assert!(a.pending("alice").take("old").unwrap().is_none());
    assert!(a.pending("alice").take("new").unwrap().is_some());
}

#[test]
fn replicas_starting_together_migrate_the_schema_once() {
    let Some((_postgres, url)) = database("migrate") else {
        return;
    };
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PgState::connect(&url, key()).map(|s| s.schema_version()))
        })
        .collect();
    for start in starts {
        assert_eq!(start.join().unwrap().unwrap().unwrap(), SCHEMA);
    }
}

#[test]
fn an_always_allow_holds_on_every_replica_for_its_user_only_until_revoked_anywhere() {
    use switchboard_hub::hub::RememberedAllows;
    let Some((_postgres, url)) = database("allows") else {
        return;
    };
    let (first, second) = (
        PgState::connect(&url, key()).unwrap(),
        PgState::connect(&url, key()).unwrap(),
    );
    let on =
        |state: &PgState, user: &str| RememberedAllows::shared(Arc::new(state.tool_allows(user)));
    // Alice answers "always" through the first replica: the second lets
    // her call run, not Bob's, and not a server whose identity changed.
    on(&first, "alice")
        .remember("gh", "id-1", "delete_repo")
        .unwrap();
    assert!(on(&second, "alice").allows("gh", "id-1", "delete_repo"));
    assert!(!on(&second, "bob").allows("gh", "id-1", "delete_repo"));
    assert!(!on(&second, "alice").allows("gh", "id-2", "delete_repo"));
    assert!(!on(&second, "alice").allows("gh", "id-1", "create_repo"));
    // "always" again replaces, never duplicates.
    on(&second, "alice")
        .remember("gh", "id-1", "delete_repo")
        .unwrap();
    on(&second, "alice").remember("gh", "id-1", "fork").unwrap();
    on(&second, "bob").remember("gh", "id-1", "fork").unwrap();
    assert_eq!(on(&first, "alice").list().unwrap().len(), 2);
    assert_eq!(first.all_tool_allows(None).unwrap().len(), 3);
    // Revoked through the second replica (a glob): the first asks again
    // on its very next question, as nothing is cached.
    assert_eq!(on(&second, "alice").revoke("gh", "del*").unwrap(), 1);
    assert!(!on(&first, "alice").allows("gh", "id-1", "delete_repo"));
    assert!(on(&first, "alice").allows("gh", "id-1", "fork"));
    // An operator's revocation for every user.
    assert_eq!(first.revoke_tool_allows(None, "gh", "fork").unwrap(), 2);
    assert!(first.all_tool_allows(None).unwrap().is_empty());

    // Written or changed without the key, a row allows nothing.
    on(&first, "carol").remember("gh", "id-1", "fork").unwrap();
    let sql = Sql::new(&url);
    sql.exec(
        "INSERT INTO switchboard_tool_allows (user_id, server, tool, identity, seal) \
         SELECT 'mallory', server, tool, identity, seal FROM switchboard_tool_allows WHERE user_id = 'carol'",
    );
    assert!(!on(&second, "mallory").allows("gh", "id-1", "fork"));
    sql.exec("UPDATE switchboard_tool_allows SET tool = 'delete_repo' WHERE user_id = 'carol'");
    assert!(!on(&second, "carol").allows("gh", "id-1", "delete_repo"));
    assert!(on(&second, "carol").list().unwrap().is_empty());
    let (other, _) = StateKey::generate().unwrap();
    let stranger = PgState::connect(&url, other).unwrap();
    on(&stranger, "dave")
        .remember("gh", "id-1", "fork")
        .unwrap();
    assert!(!on(&first, "dave").allows("gh", "id-1", "fork"));

    // Values that look like SQL are only values.
    let user = "eve'; DROP TABLE switchboard_tool_allows; --";
    let tool = "x' OR '1'='1";
    on(&first, user).remember("s$1", "id'--", tool).unwrap();
    assert!(on(&second, user).allows("s$1", "id'--", tool));
    assert!(!on(&second, "eve").allows("s$1", "id'--", tool));
    // Names beyond the schema's bounds are refused with a reason.
    let long = "t".repeat(513);
    let refused = on(&first, "alice")
        .remember("gh", "id-1", &long)
        .unwrap_err();
    assert!(refused.to_string().contains("1 to 512"), "{refused}");
}

#[test]
fn a_shared_rule_names_everyone_a_user_or_a_group_and_each_is_its_own() {
    use switchboard_postgres::{RuleKind, RuleScope};
    let Some((_postgres, url)) = database("rule-scopes") else {
        return;
    };
    let state = PgState::connect(&url, key()).unwrap();
    let group = RuleScope::Group("ops'; DROP TABLE switchboard_policy_rules; --".to_owned());
    let user = RuleScope::User("user:with:colons".to_owned());
    for scope in [&RuleScope::Everyone, &group, &user] {
        assert!(
            state
                .add_policy_rule(RuleKind::Deny, "gh/*", scope)
                .unwrap()
        );
    }
    // The same rule again is not new; each scope is a rule of its own.
    assert!(
        !state
            .add_policy_rule(RuleKind::Deny, "gh/*", &group)
            .unwrap()
    );
    let rules = state.policy_rules().unwrap();
    let scopes: Vec<&RuleScope> = rules.iter().map(|r| &r.scope).collect();
    assert_eq!(scopes, [&RuleScope::Everyone, &group, &user]);
    // Whom each holds for.
    let ops = ["ops'; DROP TABLE switchboard_policy_rules; --".to_owned()];
    assert!(group.holds_for(Some(("anyone", &ops))));
    assert!(!group.holds_for(Some(("anyone", &[]))));
    assert!(!group.holds_for(None));
    assert!(user.holds_for(Some(("user:with:colons", &[]))));
    assert!(!user.holds_for(Some(("user", &[]))));
    assert!(RuleScope::Everyone.holds_for(None));
    // Removing one scope's leaves the others.
    assert!(
        state
            .remove_policy_rule(RuleKind::Deny, "gh/*", &group)
            .unwrap()
    );
    assert!(
        !state
            .remove_policy_rule(RuleKind::Deny, "gh/*", &group)
            .unwrap()
    );
    assert_eq!(state.policy_rules().unwrap().len(), 2);
    // An empty or control-character name is refused, nothing written.
    for bad in [
        RuleScope::Group(String::new()),
        RuleScope::User("a\nb".to_owned()),
    ] {
        assert!(state.add_policy_rule(RuleKind::Ask, "gh/*", &bad).is_err());
    }
    assert_eq!(state.policy_rules().unwrap().len(), 2);
}
