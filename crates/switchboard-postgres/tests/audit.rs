//! The audit chain on a real PostgreSQL the test starts: replicas
//! appending at once make one chain, and every way of changing it behind
//! the gateways' backs — an edited, removed, swapped or added record, a
//! cut tail, a head moved by hand, another key — is found and said.
#![cfg(unix)]

use std::sync::Arc;

use serde_json::json;
use switchboard_hub::hub::audit::{AuditEntry, AuditKind, AuditLog, AuditOptions};
use switchboard_postgres::{ChainError, PgState, StateKey};
use switchboard_testkit::postgres::Postgres;

mod support;

use support::{Sql, key};

fn log(state: &PgState) -> AuditLog {
    AuditLog::shared(Arc::new(state.audit()), AuditOptions::default())
}

fn call(log: &AuditLog, session: &str, name: &str) {
    let arguments = json!({"path": "/etc/passwd"});
    let entry = AuditEntry {
        arguments: arguments.as_object(),
        ..AuditEntry::event(AuditKind::ToolCall, session, Some("fs"), name, "ok", None)
    };
    log.record(&entry).unwrap();
}

/// `records` calls on a chain in database `name` of `postgres`.
fn chain(postgres: &Postgres, name: &str, records: usize) -> (PgState, String) {
    let url = postgres.database(name);
    let state = PgState::connect(&url, key()).unwrap();
    let log = log(&state);
    for n in 0..records {
        call(&log, "host-1", &format!("read_{n}"));
    }
    (state, url)
}

#[test]
fn replicas_appending_at_once_make_one_chain() {
    let Some(postgres) = Postgres::start("audit-replicas") else {
        return;
    };
    let url = postgres.database("switchboard");
    let replicas: Vec<_> = (0..2)
        .map(|_| PgState::connect(&url, key()).unwrap())
        .collect();
    let writers: Vec<_> = (0..4)
        .map(|n| {
            let log = log(&replicas[n % 2]);
            std::thread::spawn(move || {
                for call_n in 0..50 {
                    call(&log, &format!("host-{n}"), &format!("tool_{call_n}"));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    // Either replica, or a third process, finds the one chain whole.
    for replica in &replicas {
        assert_eq!(replica.verify_audit().unwrap().records, 200);
    }
    // The arguments are there as their MAC only, the same on both
    // replicas (one salt from the shared key).
    let sql = Sql::new(&url);
    let macs = sql.strings("SELECT DISTINCT record::json->>'args_mac' FROM switchboard_audit");
    assert_eq!(macs.len(), 1, "{macs:?}");
    assert!(
        sql.strings("SELECT record FROM switchboard_audit WHERE record LIKE '%passwd%'")
            .is_empty()
    );
}

#[test]
fn every_change_behind_the_gateways_backs_is_found() {
    let Some(postgres) = Postgres::start("audit-tampered") else {
        return;
    };
    /// A case: its name, the change made in the database, what is found.
    type Case = (&'static str, &'static str, fn(&ChainError) -> bool);
    let cases: [Case; 6] = [
        (
            "edited",
            "UPDATE switchboard_audit SET record = replace(record, '\"ok\"', '\"deny\"') WHERE seq = 2",
            |e| matches!(e, ChainError::Broken { seq: 3 }),
        ),
        (
            "removed",
            "DELETE FROM switchboard_audit WHERE seq = 2",
            |e| {
                matches!(
                    e,
                    ChainError::Gap {
                        expected: 2,
                        found: 3
                    }
                )
            },
        ),
        (
            "swapped",
            "UPDATE switchboard_audit SET seq = 100 WHERE seq = 2; \
             UPDATE switchboard_audit SET seq = 2 WHERE seq = 3; \
             UPDATE switchboard_audit SET seq = 3 WHERE seq = 100",
            |e| matches!(e, ChainError::Broken { seq: 2 }),
        ),
        ("cut", "DELETE FROM switchboard_audit WHERE seq = 4", |e| {
            matches!(
                e,
                ChainError::Head {
                    head: 4,
                    last: 3,
                    ..
                }
            )
        }),
        (
            // The tail cut and the head moved back to the record before,
            // its MAC read from the cut record's `prev`: the head's own
            // tag cannot be made without the key.
            "head",
            "UPDATE switchboard_audit_head SET seq = 3, \
             mac = (SELECT record::json->>'prev' FROM switchboard_audit WHERE seq = 4) \
             WHERE id = 1; \
             DELETE FROM switchboard_audit WHERE seq = 4",
            |e| matches!(e, ChainError::Head { head: 3, last: 3, why } if why.contains("by hand")),
        ),
        (
            // A record added at the end, linked to the last one's MAC as a
            // forger guesses it: the head does not name it.
            "added",
            "INSERT INTO switchboard_audit (seq, record) \
             SELECT 5, json_build_object('kind', 'tool_call', 'prev', mac)::text \
             FROM switchboard_audit_head",
            |e| {
                matches!(
                    e,
                    ChainError::Head {
                        head: 4,
                        last: 5,
                        ..
                    }
                )
            },
        ),
    ];
    for (name, attack, expected) in cases {
        let (state, url) = chain(&postgres, name, 4);
        assert_eq!(state.verify_audit().unwrap().records, 4, "{name}");
        Sql::new(&url).exec(attack);
        let found = state.verify_audit().unwrap_err();
        assert!(expected(&found), "{name}: {found:?}");
        assert!(found.to_string().contains("record"), "{name}: {found}");
    }
}

#[test]
fn a_head_moved_by_hand_stops_appends_and_another_key_does_not_verify() {
    let Some(postgres) = Postgres::start("audit-head") else {
        return;
    };
    let (state, url) = chain(&postgres, "head", 3);
    // Another key (a replica misconfigured, or a forger): the chain does
    // not verify under it.
    let (other, _) = StateKey::generate().unwrap();
    let stranger = PgState::connect(&url, other).unwrap();
    assert!(matches!(
        stranger.verify_audit().unwrap_err(),
        ChainError::Broken { seq: 2 }
    ));
    // Nor does it append to it.
    let refused = log(&stranger)
        .record(&AuditEntry::event(
            AuditKind::Login,
            "h",
            None,
            "start",
            "ok",
            None,
        ))
        .unwrap_err();
    assert!(
        refused.to_string().contains("another state key"),
        "{refused}"
    );
    // The head set back by hand: appends stop, the chain says why.
    Sql::new(&url).exec("UPDATE switchboard_audit_head SET seq = 2 WHERE id = 1");
    let error = log(&state)
        .record(&AuditEntry::event(
            AuditKind::Login,
            "h",
            None,
            "finish",
            "ok",
            None,
        ))
        .unwrap_err();
    assert!(error.to_string().contains("changed by hand"), "{error}");
    assert!(matches!(
        state.verify_audit().unwrap_err(),
        ChainError::Head { .. }
    ));
}

#[test]
fn values_that_look_like_sql_are_recorded_as_they_are() {
    let Some(postgres) = Postgres::start("audit-sql") else {
        return;
    };
    let url = postgres.database("switchboard");
    let state = PgState::connect(&url, key()).unwrap();
    let log = log(&state);
    let hostile = "x'); DELETE FROM switchboard_audit; DROP TABLE switchboard_audit_head; --";
    log.record(&AuditEntry::event(
        AuditKind::Policy,
        hostile,
        Some(hostile),
        hostile,
        "deny",
        Some(hostile),
    ))
    .unwrap();
    call(&log, "host", "after");
    assert_eq!(state.verify_audit().unwrap().records, 2);
    let sql = Sql::new(&url);
    let names = sql.strings("SELECT record::json->>'name' FROM switchboard_audit ORDER BY seq");
    assert_eq!(names, [hostile, "after"]);
}
