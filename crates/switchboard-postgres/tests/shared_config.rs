//! The shared servers' document: kept sealed, versioned, announced to
//! every replica, and refused (an error, never "no servers") when it was
//! written, changed or re-versioned without the state key.
#![cfg(unix)]

mod support;

use std::sync::mpsc;
use std::time::Duration;

use switchboard_postgres::{MAX_SHARED_CONFIG, PgState, StateKey};

use support::{Sql, database, key};

const DOCUMENT: &str =
    "[servers.extra]\ncommand = \"mcp-extra\"\nenv = { TOKEN = \"s3cr3t-token\" }\n";

#[test]
fn the_shared_servers_are_versioned_sealed_announced_and_refused_when_tampered() {
    let Some((_postgres, url)) = database("shared-config") else {
        return;
    };
    let (one, two) = (
        PgState::connect(&url, key()).unwrap(),
        PgState::connect(&url, key()).unwrap(),
    );
    assert_eq!(two.shared_config().unwrap(), None);

    // The other replica hears of every change.
    let (heard, hear) = mpsc::channel();
    two.watch_config(move || heard.send(()).is_ok());
    hear.recv_timeout(Duration::from_secs(10))
        .expect("the watch starts by saying anything may have changed");

    assert_eq!(one.set_shared_config(Some(DOCUMENT)).unwrap(), 1);
    hear.recv_timeout(Duration::from_secs(2))
        .expect("the push is announced");
    let read = two.shared_config().unwrap().unwrap();
    assert_eq!((read.text.as_str(), read.version), (DOCUMENT, 1));

    // Sealed: neither the command nor the secret is in the table.
    let sql = Sql::new(&url);
    let kept = sql.strings("SELECT encode(document, 'escape') FROM switchboard_shared_config");
    assert!(
        !kept[0].contains("s3cr3t") && !kept[0].contains("mcp-extra"),
        "{kept:?}"
    );

    // A changed byte, a changed version, a document of another key: each
    // an error that says so, not an empty document.
    sql.exec("UPDATE switchboard_shared_config SET document = document || '\\x00'::bytea");
    let error = two.shared_config().unwrap_err().to_string();
    assert!(error.contains("cannot be used"), "{error}");
    assert_eq!(one.set_shared_config(Some(DOCUMENT)).unwrap(), 2);
    sql.exec("UPDATE switchboard_shared_config SET version = 7");
    assert!(two.shared_config().is_err());
    let stranger = PgState::connect(&url, StateKey::from_hex(&"ab".repeat(32)).unwrap()).unwrap();
    stranger
        .set_shared_config(Some("[servers.evil]\ncommand = \"sh\"\n"))
        .unwrap();
    assert!(two.shared_config().is_err());

    // Pushed again with the key; too large refused, nothing written;
    // cleared, announced.
    let version = one.set_shared_config(Some(DOCUMENT)).unwrap();
    assert_eq!(two.shared_config().unwrap().unwrap().version, version);
    let huge = "#".repeat(MAX_SHARED_CONFIG + 1);
    assert!(one.set_shared_config(Some(&huge)).is_err());
    assert_eq!(two.shared_config().unwrap().unwrap().version, version);
    while hear.try_recv().is_ok() {}
    assert_eq!(one.set_shared_config(None).unwrap(), version + 1);
    hear.recv_timeout(Duration::from_secs(2))
        .expect("the clearing is announced");
    assert_eq!(two.shared_config().unwrap(), None);
}
