//! Era verdicts shared through the database: a server one replica probed
//! is connected by another without a probe, the URL is never kept, and a
//! verdict written, moved or sealed without the state key is not used.
#![cfg(unix)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchboard::transport::http::{HttpTransport, HttpVerdict, forget_verdict};
use switchboard::types::Era;
use switchboard_hub::config::{Dialect, HttpKind, Origin, Scope, ServerConfig, TransportConfig};
use switchboard_hub::hub::VerdictStore;
use switchboard_hub::{Hub, ServerState};
use switchboard_postgres::{PgState, StateKey};

use support::{Sql, database, key};

const WAIT: Duration = Duration::from_secs(60);

fn verdict(era: Era, transport: HttpTransport) -> HttpVerdict {
    HttpVerdict::new(era, transport)
}

#[test]
fn a_verdict_is_seen_by_every_replica_keyed_without_its_url_and_only_under_the_key() {
    let Some((_postgres, url)) = database("verdicts") else {
        return;
    };
    let (one, two) = (
        PgState::connect(&url, key()).unwrap().era_verdicts(),
        PgState::connect(&url, key()).unwrap().era_verdicts(),
    );
    let secret_url = "https://mcp.example/mcp?token=s3cr3t-in-the-url";
    let other_url = "https://other.example/mcp";
    assert_eq!(two.get(secret_url).unwrap(), None);

    one.put(secret_url, verdict(Era::Legacy, HttpTransport::Sse))
        .unwrap();
    assert_eq!(
        two.get(secret_url).unwrap(),
        Some(verdict(Era::Legacy, HttpTransport::Sse))
    );
    // Written over, by the other replica.
    two.put(
        secret_url,
        verdict(Era::Modern, HttpTransport::StreamableHttp),
    )
    .unwrap();
    assert_eq!(
        one.get(secret_url).unwrap(),
        Some(verdict(Era::Modern, HttpTransport::StreamableHttp))
    );
    assert_eq!(one.get(other_url).unwrap(), None);

    // Neither the URL nor its secret is anywhere in the table.
    let sql = Sql::new(&url);
    let kept = sql.strings(
        "SELECT encode(server_key, 'escape') || encode(verdict, 'escape') FROM switchboard_era_verdicts",
    );
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        !kept[0].contains("s3cr3t") && !kept[0].contains("mcp.example"),
        "{kept:?}"
    );

    // A verdict moved to another server's row is not used there.
    one.put(
        other_url,
        verdict(Era::Legacy, HttpTransport::StreamableHttp),
    )
    .unwrap();
    sql.exec(
        "UPDATE switchboard_era_verdicts SET verdict = (SELECT verdict FROM switchboard_era_verdicts \
         ORDER BY since DESC LIMIT 1 OFFSET 1) WHERE since = (SELECT max(since) FROM switchboard_era_verdicts)",
    );
    let (first, second) = (one.get(secret_url).unwrap(), one.get(other_url).unwrap());
    assert!(
        first.is_none() || second.is_none(),
        "a moved verdict was used: {first:?} {second:?}"
    );

    // A byte changed is not used; nor is a verdict sealed under another key.
    sql.exec("UPDATE switchboard_era_verdicts SET verdict = verdict || '\\x00'::bytea");
    assert_eq!(one.get(secret_url).unwrap(), None);
    assert_eq!(one.get(other_url).unwrap(), None);
    let stranger = StateKey::from_hex(&"ab".repeat(32)).unwrap();
    let stranger = PgState::connect(&url, stranger).unwrap().era_verdicts();
    stranger
        .put(secret_url, verdict(Era::Legacy, HttpTransport::Sse))
        .unwrap();
    assert_eq!(one.get(secret_url).unwrap(), None);
    // And its own replica reads it back, keyed by its own digest.
    assert_eq!(
        stranger.get(secret_url).unwrap(),
        Some(verdict(Era::Legacy, HttpTransport::Sse))
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-pg-verdicts-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A hub of one replica: no state file (its verdict would stand in for
/// the shared one), the shared verdicts given.
fn replica(server_url: &str, dir: &Path, verdicts: Arc<dyn VerdictStore>) -> Hub {
    let server = ServerConfig::new(
        "remote",
        TransportConfig::Http {
            url: server_url.into(),
            headers: Default::default(),
            kind: HttpKind::Auto,
        },
        Origin {
            file: dir.join("switchboard.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::User,
        },
    );
    Hub::builder()
        .server(server)
        .persist(false)
        .verdict_store(verdicts)
        .build()
        .unwrap()
}

/// The methods the server has received, in order.
fn received(record: &Path) -> Vec<String> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|message| message["method"].as_str().map(str::to_owned))
        .collect()
}

async fn ready(hub: &Hub) {
    hub.start().await.unwrap();
    let status = hub.status("remote").unwrap();
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_one_replica_probed_is_connected_by_another_without_a_probe() {
    let Some((_postgres, url)) = database("verdicts-hub") else {
        return;
    };
    let dir = scratch("hub");
    let record = dir.join("received.jsonl");
    // A session-era server: an unknown one is asked `server/discover`
    // first, refuses it, then is initialized.
    let (_task, server_url) =
        switchboard_testkit::spawn_http(&["--era", "legacy", "--record", record.to_str().unwrap()])
            .await;
    let state = |key: StateKey| {
        let url = url.clone();
        async move {
            tokio::task::spawn_blocking(move || PgState::connect(&url, key).unwrap())
                .await
                .unwrap()
        }
    };

    let first = replica(
        &server_url,
        &dir,
        Arc::new(state(key()).await.era_verdicts()),
    );
    tokio::time::timeout(WAIT, ready(&first)).await.unwrap();
    let probed = received(&record);
    assert_eq!(
        probed.iter().filter(|m| *m == "server/discover").count(),
        1,
        "{probed:?}"
    );
    first.shutdown().await;

    // Another replica: this process's own memory of the verdict is
    // forgotten, as a new process would start without it.
    forget_verdict(&server_url);
    let second = replica(
        &server_url,
        &dir,
        Arc::new(state(key()).await.era_verdicts()),
    );
    tokio::time::timeout(WAIT, ready(&second)).await.unwrap();
    let after = received(&record);
    let new = &after[probed.len()..];
    assert!(
        new.first().map(String::as_str) == Some("initialize")
            && !new.iter().any(|m| m == "server/discover"),
        "the second replica probed: {new:?}"
    );
    second.shutdown().await;

    // A replica under another state key finds no verdict it can use, and
    // probes.
    forget_verdict(&server_url);
    let stranger = StateKey::from_hex(&"cd".repeat(32)).unwrap();
    let third = replica(
        &server_url,
        &dir,
        Arc::new(state(stranger).await.era_verdicts()),
    );
    tokio::time::timeout(WAIT, ready(&third)).await.unwrap();
    let last = received(&record);
    assert!(
        last[after.len()..].iter().any(|m| m == "server/discover"),
        "{:?}",
        &last[after.len()..]
    );
    third.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
