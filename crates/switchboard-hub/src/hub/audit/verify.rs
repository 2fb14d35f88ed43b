//! Checking a log: every file from the oldest kept to the current one,
//! each line's `prev` against the MAC of the line before, each header
//! against the file before it, the current file against the anchor.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::files::{self, Anchor};
use super::{AuditError, AuditOptions, GENESIS, mac_eq, mac_hex, rotated};

/// An intact log.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// Files checked (the current one and the rotated ones kept).
    pub files: u64,
    /// Records in them (lines other than headers).
    pub records: u64,
    /// Older files removed by the retention setting.
    pub dropped: u64,
    /// Lines past the anchor, written by the key's holder but not yet
    /// anchored (a crash between the two writes, or a write under way).
    pub unanchored: u64,
}

/// Why a log does not verify; each says which file and line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The log's files, key or anchor could not be used.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// A line is not one of ours.
    #[error("{}: line {line} is not an audit record: {why}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: u64,
        /// What is wrong with it.
        why: String,
    },
    /// A line's `prev` is not the MAC of the line before it.
    #[error(
        "{}: the chain breaks at line {line}: its `prev` is not the MAC of the line before it (a line was edited, removed, inserted or moved at or just before it)",
        path.display()
    )]
    Broken {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: u64,
    },
    /// A file does not start with its header.
    #[error("{}: its head was removed: {why}", path.display())]
    HeadRemoved {
        /// The file.
        path: PathBuf,
        /// What line 1 is instead.
        why: String,
    },
    /// A file has fewer lines than recorded after it.
    #[error(
        "{}: its tail was cut: it has {lines} lines, but {expected} were written",
        path.display()
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Lines found.
        lines: u64,
        /// Lines written (the anchor's or the next file's header's count).
        expected: u64,
    },
    /// A file's end is not what was recorded after it.
    #[error(
        "{}: line {line} is not the line written there (its MAC differs from the one recorded {by}): it was edited",
        path.display()
    )]
    Edited {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: u64,
        /// Where it was recorded.
        by: &'static str,
    },
    /// A rotated file the retention keeps is gone.
    #[error(
        "{} is missing: file number {seq} of the log, within the retention, was removed",
        path.display()
    )]
    Missing {
        /// Where it should be.
        path: PathBuf,
        /// Its sequence number.
        seq: u64,
    },
}

/// What one file holds.
pub(super) struct Walked {
    /// Lines, the header included.
    pub(super) lines: u64,
    /// The last line's MAC.
    pub(super) mac: String,
    /// The MAC of line `at`, when asked.
    at: Option<String>,
    /// The header's `prev`, and its `prev_file` (seq, lines, mac).
    header_prev: String,
    prev_file: Option<(u64, u64, String)>,
}

fn field<'a>(record: &'a Value, name: &str) -> Option<&'a str> {
    record.get(name).and_then(Value::as_str)
}

/// Walks one file's chain: line 1 the header of file number `seq`, each
/// next line's `prev` the MAC of the one before.
fn walk(
    path: &Path,
    bytes: &[u8],
    key: &[u8],
    seq: u64,
    at: Option<u64>,
) -> Result<Walked, VerifyError> {
    let mut lines = bytes.split(|b| *b == b'\n').peekable();
    let mut walked: Option<Walked> = None;
    let mut number = 0;
    while let Some(line) = lines.next() {
        if line.is_empty() && lines.peek().is_none() {
            break;
        }
        number += 1;
        let malformed = |why: String| VerifyError::Malformed {
            path: path.to_owned(),
            line: number,
            why,
        };
        let record: Value = serde_json::from_slice(line).map_err(|e| malformed(e.to_string()))?;
        let prev = field(&record, "prev").ok_or_else(|| malformed("no `prev`".into()))?;
        let is_header = field(&record, "kind") == Some("header");
        match &mut walked {
            None => {
                if !is_header {
                    return Err(VerifyError::HeadRemoved {
                        path: path.to_owned(),
                        why: "line 1 is not the file's header".into(),
                    });
                }
                let found = record.get("seq").and_then(Value::as_u64);
                if found != Some(seq) {
                    return Err(VerifyError::HeadRemoved {
                        path: path.to_owned(),
                        why: format!(
                            "line 1 is the header of file number {}, not {seq} (files renamed or replaced)",
                            found.map_or_else(|| "?".to_owned(), |n| n.to_string())
                        ),
                    });
                }
                let prev_file = record.get("prev_file").and_then(|p| {
                    Some((
                        p.get("seq")?.as_u64()?,
                        p.get("lines")?.as_u64()?,
                        field(p, "mac")?.to_owned(),
                    ))
                });
                walked = Some(Walked {
                    lines: 0,
                    mac: String::new(),
                    at: None,
                    header_prev: prev.to_owned(),
                    prev_file,
                });
            }
            Some(walked) => {
                if is_header {
                    return Err(malformed("a header inside the file".into()));
                }
                if !mac_eq(prev, &walked.mac) {
                    return Err(VerifyError::Broken {
                        path: path.to_owned(),
                        line: number,
                    });
                }
            }
        }
        let walked = walked.as_mut().expect("set above");
        walked.lines = number;
        walked.mac = mac_hex(key, line);
        if at == Some(number) {
            walked.at = Some(walked.mac.clone());
        }
    }
    walked.ok_or_else(|| VerifyError::HeadRemoved {
        path: path.to_owned(),
        why: "the file is empty".into(),
    })
}

/// Checks the current file against its anchor; where it ends. Used when a
/// writer opens the log.
pub(super) fn check_current(
    path: &Path,
    bytes: &[u8],
    key: &[u8],
    anchor: &Anchor,
) -> Result<Walked, AuditError> {
    let tampered = |e: VerifyError| AuditError::Tampered {
        path: path.to_owned(),
        why: e.to_string(),
    };
    let walked = walk(path, bytes, key, anchor.seq, Some(anchor.lines)).map_err(tampered)?;
    against_anchor(path, &walked, anchor).map_err(tampered)?;
    Ok(walked)
}

fn against_anchor(path: &Path, walked: &Walked, anchor: &Anchor) -> Result<(), VerifyError> {
    if walked.lines < anchor.lines {
        return Err(VerifyError::Truncated {
            path: path.to_owned(),
            lines: walked.lines,
            expected: anchor.lines,
        });
    }
    if !walked.at.as_deref().is_some_and(|m| mac_eq(m, &anchor.mac)) {
        return Err(VerifyError::Edited {
            path: path.to_owned(),
            line: anchor.lines,
            by: "in the anchor",
        });
    }
    Ok(())
}

/// Checks the log at `path` (the current file; its rotated files beside
/// it) with the key and anchor kept for it (`options.state_dir`).
///
/// # Errors
/// [`VerifyError`] naming what does not hold and where: a missing key or
/// anchor, a file of another user, a missing rotated file, a removed head,
/// a broken chain, an edited line, a cut tail.
pub fn verify(path: &Path, options: &AuditOptions) -> Result<Verified, VerifyError> {
    let path = files::resolve(path)?;
    let dir = files::state_dir(options.state_dir.as_deref(), &path)?;
    let key = files::secret(&dir, "key", false)?;
    let anchor = Anchor::load(&dir, &key)?.ok_or_else(|| AuditError::NoState {
        path: dir.join("anchor"),
    })?;
    let mut before: Option<(PathBuf, u64, Walked)> = None;
    let mut records = 0;
    for seq in anchor.oldest..=anchor.seq {
        let file = rotated(&path, anchor.seq - seq);
        let bytes = files::read_own(&file)?.ok_or_else(|| VerifyError::Missing {
            path: file.clone(),
            seq,
        })?;
        let current = seq == anchor.seq;
        let walked = walk(&file, &bytes, &key, seq, current.then_some(anchor.lines))?;
        match &before {
            Some((previous, prev_seq, prev)) => {
                let Some((link_seq, link_lines, link_mac)) = &walked.prev_file else {
                    return Err(VerifyError::HeadRemoved {
                        path: file,
                        why: "its header names no file before it".into(),
                    });
                };
                if link_seq != prev_seq || !mac_eq(&walked.header_prev, link_mac) {
                    return Err(VerifyError::Broken {
                        path: file,
                        line: 1,
                    });
                }
                if prev.lines < *link_lines {
                    return Err(VerifyError::Truncated {
                        path: previous.clone(),
                        lines: prev.lines,
                        expected: *link_lines,
                    });
                }
                if prev.lines > *link_lines || !mac_eq(&prev.mac, link_mac) {
                    return Err(VerifyError::Edited {
                        path: previous.clone(),
                        line: prev.lines,
                        by: "in the next file's header",
                    });
                }
            }
            None if seq == 0 && (walked.prev_file.is_some() || walked.header_prev != GENESIS) => {
                return Err(VerifyError::Broken {
                    path: file,
                    line: 1,
                });
            }
            None => {}
        }
        if current {
            against_anchor(&file, &walked, &anchor)?;
        }
        records += walked.lines - 1;
        before = Some((file, seq, walked));
    }
    let unanchored = before.map_or(0, |(_, _, w)| w.lines - anchor.lines);
    Ok(Verified {
        files: anchor.seq - anchor.oldest + 1,
        records,
        dropped: anchor.oldest,
        unanchored,
    })
}
