//! The audit log on PostgreSQL: one ordered, tamper-evident chain every
//! replica appends to (`migrations/0002_audit.sql`).
//!
//! Each record is the JSON line a file log holds (built by the hub's
//! [`AuditLog::shared`], arguments MACed under a salt derived from the
//! state key), numbered from 1, its `prev` the HMAC-SHA256 of the record
//! before it under a key derived from the state key. An append takes the
//! head row's lock (`FOR UPDATE`), so appenders on every replica go in
//! turn and the chain has one order; the head — the last number, its MAC,
//! and a MAC over both — moves in the same transaction.
//!
//! [`PgState::verify_audit`] then finds an edited record (even with the
//! chain recomputed: that needs the key), a removed, inserted or reordered
//! one (the numbers and the links), and a tail removed (the head). The
//! limit: whoever holds the state key can rewrite the chain, and someone
//! with write access to the database who kept an old head row can cut the
//! chain back to it.
//!
//! [`AuditLog::shared`]: switchboard_hub::hub::audit::AuditLog::shared

use serde_json::{Map, Value};
use sqlx::Row as _;
use switchboard_auth::store::StoreError;
use switchboard_hub::hub::audit::{AuditError, AuditStore, GENESIS, mac_eq, mac_hex};

use crate::{PgState, database};

/// Records read at a time when verifying.
const PAGE: i64 = 1000;

/// The chain, as an [`AuditStore`] for the hub's [`AuditLog::shared`].
///
/// [`AuditLog::shared`]: switchboard_hub::hub::audit::AuditLog::shared
#[derive(Clone, Debug)]
pub struct PgAudit {
    state: PgState,
}

impl PgAudit {
    pub(crate) fn new(state: PgState) -> Self {
        Self { state }
    }
}

/// An intact chain.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainVerified {
    /// Records in it.
    pub records: u64,
}

/// Why the chain does not verify; each says at which record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChainError {
    /// The database could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A record is not one of ours.
    #[error("audit record {seq} is not an audit record: {why}")]
    Malformed {
        /// Its number.
        seq: i64,
        /// What is wrong with it.
        why: String,
    },
    /// Numbers are missing (records removed) or out of place.
    #[error(
        "audit record {expected} is missing: the next one is {found} (records were removed, or renumbered)"
    )]
    Gap {
        /// The number that should come next.
        expected: i64,
        /// The one found instead.
        found: i64,
    },
    /// A record's `prev` is not the MAC of the one before it.
    #[error(
        "the audit chain breaks at record {seq}: its `prev` is not the MAC of the record before it (a record was edited, moved or inserted at or just before it)"
    )]
    Broken {
        /// Its number.
        seq: i64,
    },
    /// The head does not name the last record.
    #[error(
        "the audit chain's end is not the one written: the head names record {head} with its MAC, but the chain ends at {last} ({why})"
    )]
    Head {
        /// The number the head names.
        head: i64,
        /// The last record found.
        last: i64,
        /// What differs.
        why: &'static str,
    },
}

/// The head's own MAC: over its number and the last record's MAC.
fn head_tag(key: &[u8], seq: i64, mac: &str) -> String {
    mac_hex(key, format!("head\n{seq}\n{mac}").as_bytes())
}

/// Whether a head of (`seq`, `mac`) carries its own tag (the chain's
/// start needs none: moved back there with records left, the records say
/// so).
fn head_holds(key: &[u8], seq: i64, mac: &str, tag: &str) -> bool {
    if seq == 0 {
        return mac == GENESIS;
    }
    mac_eq(tag, &head_tag(key, seq, mac))
}

fn store_error(error: StoreError) -> AuditError {
    AuditError::Store {
        what: error.to_string(),
        source: Some(Box::new(error)),
    }
}

impl AuditStore for PgAudit {
    fn salt(&self) -> &[u8] {
        self.state.key().audit_salt()
    }

    fn append(&self, record: Map<String, Value>) -> Result<(), AuditError> {
        let pool = self.state.pool();
        let key = *self.state.key().audit_key();
        self.state
            .run(async move {
                let mut tx = pool
                    .begin()
                    .await
                    .map_err(|e| database("begin an audit append", e))?;
                let head = sqlx::query(
                    "SELECT seq, mac, tag FROM switchboard_audit_head WHERE id = 1 FOR UPDATE",
                )
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| database("lock the audit chain's head", e))?;
                let (seq, mac, tag): (i64, String, String) = (head.get(0), head.get(1), head.get(2));
                if !head_holds(&key, seq, &mac, &tag) {
                    return Err(StoreError::backend(
                        "the PostgreSQL audit chain's head does not carry its MAC under this state key: it was changed by hand, or this replica has another state key; nothing more is appended to it (run `switchboard audit verify --database`)",
                        None,
                    ));
                }
                let mut record = record;
                record.insert("prev".into(), Value::String(mac));
                let text = serde_json::to_string(&Value::Object(record))
                    .expect("a JSON object always serializes");
                let seq = seq + 1;
                let mac = mac_hex(&key, text.as_bytes());
                sqlx::query("INSERT INTO switchboard_audit (seq, record) VALUES ($1, $2)")
                    .bind(seq)
                    .bind(&text)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| database("append an audit record", e))?;
                sqlx::query(
                    "UPDATE switchboard_audit_head SET seq = $1, mac = $2, tag = $3 WHERE id = 1",
                )
                .bind(seq)
                .bind(&mac)
                .bind(head_tag(&key, seq, &mac))
                .execute(&mut *tx)
                .await
                .map_err(|e| database("move the audit chain's head", e))?;
                tx.commit()
                    .await
                    .map_err(|e| database("commit an audit record", e))
            })
            .map_err(store_error)
    }

    fn describe(&self) -> String {
        "the PostgreSQL audit chain".to_owned()
    }
}

impl PgState {
    /// The audit chain, to write through the hub's `AuditLog::shared`.
    pub fn audit(&self) -> PgAudit {
        PgAudit::new(self.clone())
    }

    /// Checks the whole audit chain: numbers from 1 without a gap, each
    /// record's `prev` the MAC of the one before, the head naming the last.
    ///
    /// # Errors
    /// [`ChainError`]: where the chain does not hold, or the database
    /// could not be read.
    pub fn verify_audit(&self) -> Result<ChainVerified, ChainError> {
        let pool = self.pool();
        let key = *self.key().audit_key();
        self.run(async move {
            // One snapshot: appends made meanwhile are not half seen.
            let mut tx = pool
                .begin()
                .await
                .map_err(|e| database("begin reading the audit chain", e))?;
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .execute(&mut *tx)
                .await
                .map_err(|e| database("read the audit chain in one snapshot", e))?;
            let head = sqlx::query("SELECT seq, mac, tag FROM switchboard_audit_head WHERE id = 1")
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| database("read the audit chain's head", e))?;
            let mut walked = Walk::new(key);
            loop {
                let rows = sqlx::query(
                    "SELECT seq, record FROM switchboard_audit WHERE seq > $1 ORDER BY seq LIMIT $2",
                )
                .bind(walked.last)
                .bind(PAGE)
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| database("read the audit chain", e))?;
                if rows.is_empty() {
                    break;
                }
                for row in rows {
                    if let Err(broken) = walked.next(row.get(0), row.get(1)) {
                        return Ok(Err(broken));
                    }
                }
            }
            let head = head.map(|h| {
                (
                    h.get::<i64, _>(0),
                    h.get::<String, _>(1),
                    h.get::<String, _>(2),
                )
            });
            Ok(walked.end(head))
        })?
    }
}

/// The chain walked so far.
struct Walk {
    key: [u8; 32],
    last: i64,
    mac: String,
}

impl Walk {
    fn new(key: [u8; 32]) -> Self {
        Self {
            key,
            last: 0,
            mac: GENESIS.to_owned(),
        }
    }

    fn next(&mut self, seq: i64, record: String) -> Result<(), ChainError> {
        if seq != self.last + 1 {
            return Err(ChainError::Gap {
                expected: self.last + 1,
                found: seq,
            });
        }
        let parsed: Value = serde_json::from_str(&record).map_err(|e| ChainError::Malformed {
            seq,
            why: e.to_string(),
        })?;
        let prev =
            parsed
                .get("prev")
                .and_then(Value::as_str)
                .ok_or_else(|| ChainError::Malformed {
                    seq,
                    why: "no `prev`".into(),
                })?;
        if !mac_eq(prev, &self.mac) {
            return Err(ChainError::Broken { seq });
        }
        self.last = seq;
        self.mac = mac_hex(&self.key, record.as_bytes());
        Ok(())
    }

    fn end(self, head: Option<(i64, String, String)>) -> Result<ChainVerified, ChainError> {
        let Some((seq, mac, tag)) = head else {
            return Err(ChainError::Head {
                head: 0,
                last: self.last,
                why: "the head row is gone",
            });
        };
        let broken = |why| ChainError::Head {
            head: seq,
            last: self.last,
            why,
        };
        if !head_holds(&self.key, seq, &mac, &tag) {
            return Err(broken("the head was changed by hand"));
        }
        if seq != self.last {
            return Err(broken(if seq > self.last {
                "records were removed from the end"
            } else {
                "records were added past the head"
            }));
        }
        if !mac_eq(&mac, &self.mac) {
            return Err(broken("the last record was edited"));
        }
        Ok(ChainVerified {
            records: u64::try_from(self.last).unwrap_or(0),
        })
    }
}
