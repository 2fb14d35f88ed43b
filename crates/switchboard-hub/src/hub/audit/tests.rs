//! The audit log attacked: each test tampers as someone without the key
//! would, and expects `verify` (or `open`) to say so.

use super::*;

fn call<'a>(session: &'a str, name: &'a str, message: Option<&'a str>) -> AuditEntry<'a> {
    AuditEntry {
        kind: AuditKind::ToolCall,
        session,
        server: Some("s"),
        name,
        arguments: None,
        outcome: "ok",
        message,
        duration: std::time::Duration::from_millis(1),
        bytes: 0,
    }
}

/// A scratch directory with the log's path and options whose secrets
/// are kept inside it.
fn scratch(name: &str) -> (PathBuf, PathBuf, AuditOptions) {
    let dir = std::env::temp_dir().join(format!("sb-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let options = AuditOptions {
        state_dir: Some(dir.join("state")),
        ..AuditOptions::default()
    };
    (dir.join("audit.jsonl"), dir, options)
}

fn write_calls(path: &Path, options: &AuditOptions, n: usize) {
    let log = AuditLog::open(path, options.clone()).unwrap();
    for i in 0..n {
        let name = format!("s__tool{i}");
        log.record(&call("a", &name, None)).unwrap();
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn rewrite(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn an_intact_log_verifies_and_survives_reopening() {
    let (path, dir, options) = scratch("intact");
    write_calls(&path, &options, 3);
    // Reopened, the chain goes on.
    write_calls(&path, &options, 1);
    let verified = verify(&path, &options).unwrap();
    assert_eq!(
        (verified.files, verified.records, verified.dropped),
        (1, 4, 0)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        let state = AuditLog::open(&path, options.clone())
            .unwrap()
            .state_dir()
            .unwrap()
            .to_owned();
        assert_eq!(mode(&state), 0o700);
        for name in ["key", "salt", "anchor"] {
            assert_eq!(mode(&state.join(name)), 0o600, "{name}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_edited_line_breaks_the_chain() {
    let (path, dir, options) = scratch("edit");
    write_calls(&path, &options, 3);
    let mut text = lines(&path);
    text[2] = text[2].replace("s__tool1", "s__tool9");
    rewrite(&path, &text);
    match verify(&path, &options) {
        Err(VerifyError::Broken { line, .. }) => assert_eq!(line, 4),
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding 6: editing a line and recomputing the chain verified.
#[test]
fn an_edited_and_rechained_line_is_caught() {
    let (path, dir, options) = scratch("rechain");
    write_calls(&path, &options, 3);
    let mut prev = String::new();
    let mut out = Vec::new();
    for (i, line) in lines(&path).iter().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if i == 2 {
            v["outcome"] = "error".into();
        }
        // Rechained from the edited line on.
        if i > 2 {
            v["prev"] = prev.clone().into();
        }
        let t = serde_json::to_string(&v).unwrap();
        // Without the key, the best guess: a plain SHA-256 chain.
        prev = sha256_hex(t.as_bytes());
        out.push(t);
    }
    rewrite(&path, &out);
    let error = verify(&path, &options).unwrap_err();
    assert!(
        matches!(error, VerifyError::Broken { line: 4, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("line 4"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding 6: dropping the last lines verified.
#[test]
fn tail_truncation_is_caught() {
    let (path, dir, options) = scratch("tail");
    write_calls(&path, &options, 3);
    let text = lines(&path);
    rewrite(&path, &text[..3]);
    let error = verify(&path, &options).unwrap_err();
    assert!(
        matches!(
            error,
            VerifyError::Truncated {
                lines: 3,
                expected: 4,
                ..
            }
        ),
        "{error}"
    );
    // A writer refuses to go on from a cut log too.
    let refused = AuditLog::open(&path, options.clone()).unwrap_err();
    assert!(matches!(refused, AuditError::Tampered { .. }), "{refused}");
    // The last line replaced by an older one: same count, wrong MAC.
    let mut swapped = text.clone();
    swapped[3] = text[2].clone();
    rewrite(&path, &swapped);
    assert!(verify(&path, &options).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding 6: removing the first lines verified.
#[test]
fn a_removed_head_is_caught() {
    let (path, dir, options) = scratch("head");
    write_calls(&path, &options, 3);
    let text = lines(&path);
    for cut in [1, 2] {
        rewrite(&path, &text[cut..]);
        let error = verify(&path, &options).unwrap_err();
        assert!(
            matches!(
                error,
                VerifyError::HeadRemoved { .. } | VerifyError::Broken { .. }
            ),
            "{cut}: {error}"
        );
    }
    // The header kept, the first record removed.
    let mut kept = vec![text[0].clone()];
    kept.extend_from_slice(&text[2..]);
    rewrite(&path, &kept);
    assert!(matches!(
        verify(&path, &options),
        Err(VerifyError::Broken { line: 2, .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

fn rotating(name: &str, keep: u64) -> (PathBuf, PathBuf, AuditOptions) {
    let (path, dir, mut options) = scratch(name);
    options.max_bytes = 1;
    options.keep = keep;
    (path, dir, options)
}

#[test]
fn rotation_links_files_and_retention_drops_on_purpose() {
    let (path, dir, options) = rotating("rotate", 2);
    // Each record rotates first: files 0..=5, of which 3, 4, 5 are kept.
    write_calls(&path, &options, 5);
    let verified = verify(&path, &options).unwrap();
    assert_eq!(
        (verified.files, verified.records, verified.dropped),
        (3, 3, 3),
        "{verified:?}"
    );
    assert!(!dir.join("audit.jsonl.3").exists());
    let header: Value = serde_json::from_str(&lines(&dir.join("audit.jsonl.2"))[0]).unwrap();
    assert_eq!(
        header["seq"], 3,
        "the oldest kept file says 3 came before it"
    );
    // Reopened with a larger retention, the chain goes on.
    let mut more = options.clone();
    more.keep = 4;
    write_calls(&path, &more, 2);
    assert_eq!(verify(&path, &more).unwrap().files, 5);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_or_cut_rotated_file_is_caught() {
    let (path, dir, options) = rotating("missing", 3);
    write_calls(&path, &options, 4);
    let rotated2 = dir.join("audit.jsonl.2");
    let saved = lines(&rotated2);
    std::fs::remove_file(&rotated2).unwrap();
    let error = verify(&path, &options).unwrap_err();
    assert!(
        matches!(&error, VerifyError::Missing { path, seq: 2 } if *path == rotated2),
        "{error}"
    );
    // The oldest kept one removed: not taken for a retention drop.
    rewrite(&rotated2, &saved);
    std::fs::remove_file(dir.join("audit.jsonl.3")).unwrap();
    assert!(matches!(
        verify(&path, &options),
        Err(VerifyError::Missing { seq: 1, .. })
    ));
    let (path, dir, options) = rotating("cut", 3);
    write_calls(&path, &options, 4);
    let rotated1_lines = lines(&dir.join("audit.jsonl.1"));
    rewrite(&dir.join("audit.jsonl.1"), &rotated1_lines[..1]);
    let error = verify(&path, &options).unwrap_err();
    assert!(
        matches!(
            &error,
            VerifyError::Truncated {
                lines: 1,
                expected: 2,
                ..
            }
        ),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding 6: a host flushed another's records out through two rotations
/// with 8 oversized calls.
#[test]
fn oversized_calls_do_not_push_out_another_hosts_records() {
    let (path, dir, mut options) = scratch("oversized");
    options.max_bytes = 1 << 20;
    options.keep = 1;
    let log = AuditLog::open(&path, options.clone()).unwrap();
    log.record(&call("host-a", "s__t", None)).unwrap();
    let big = "x".repeat(1 << 20);
    let args = json!({"blob": big}).as_object().unwrap().clone();
    for _ in 0..8 {
        let mut entry = call("host-b", &big, Some(&big));
        entry.arguments = Some(&args);
        log.record(&entry).unwrap();
    }
    let mut all = std::fs::read_to_string(&path).unwrap();
    all += &std::fs::read_to_string(dir.join("audit.jsonl.1")).unwrap_or_default();
    assert!(all.contains("host-a"), "host A's record was pushed out");
    for line in lines(&path) {
        assert!(line.len() <= options.max_record_bytes, "{}", line.len());
    }
    assert!(all.contains("more bytes]"), "a cut field says so");
    drop(log);
    verify(&path, &options).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding 6: two writers broke the chain. The second is refused while
/// the first lives, and takes over once it is gone.
#[test]
fn a_second_writer_is_refused_and_the_chain_holds() {
    let (path, dir, options) = scratch("two");
    let one = AuditLog::open(&path, options.clone()).unwrap();
    let refused = AuditLog::open(&path, options.clone()).unwrap_err();
    assert!(matches!(refused, AuditError::Busy { .. }), "{refused}");
    assert!(refused.to_string().contains("another gateway"), "{refused}");
    // Through another name for the same file too.
    let other_name = dir.join(".").join("audit.jsonl");
    assert!(matches!(
        AuditLog::open(&other_name, options.clone()),
        Err(AuditError::Busy { .. })
    ));
    one.record(&call("a", "s__t", None)).unwrap();
    drop(one);
    let two = AuditLog::open(&path, options.clone()).unwrap();
    two.record(&call("b", "s__t", None)).unwrap();
    assert_eq!(verify(&path, &options).unwrap().records, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding 6: a log file created by another user was used.
#[cfg(unix)]
#[test]
fn files_of_another_user_are_refused() {
    let (path, dir, options) = scratch("foreign");
    let nobody = 65534;
    std::fs::write(&path, "").unwrap();
    std::os::unix::fs::chown(&path, Some(nobody), Some(nobody)).unwrap();
    let error = AuditLog::open(&path, options.clone()).unwrap_err();
    assert!(
        matches!(error, AuditError::Foreign { uid, .. } if uid == nobody),
        "{error}"
    );
    std::fs::remove_file(&path).unwrap();
    // A log that verified, then one of its files handed to another user.
    write_calls(&path, &options, 1);
    std::os::unix::fs::chown(&path, Some(nobody), Some(nobody)).unwrap();
    let error = verify(&path, &options).unwrap_err();
    assert!(
        error.to_string().contains("belongs to another user"),
        "{error}"
    );
    // A directory of another user.
    let theirs = dir.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(nobody), Some(nobody)).unwrap();
    assert!(matches!(
        AuditLog::open(theirs.join("audit.jsonl"), options.clone()),
        Err(AuditError::Foreign { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn an_exposed_key_and_a_symlink_are_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let (path, dir, options) = scratch("exposed");
    let state = {
        let log = AuditLog::open(&path, options.clone()).unwrap();
        log.state_dir().unwrap().to_owned()
    };
    std::fs::set_permissions(state.join("key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(
        AuditLog::open(&path, options.clone()),
        Err(AuditError::Exposed { .. })
    ));
    let target = dir.join("elsewhere");
    std::fs::write(&target, "").unwrap();
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(AuditLog::open(&link, options).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding 6: arguments hashed alike in every log (and confirmable).
#[test]
fn equal_arguments_in_two_logs_are_not_linkable() {
    let (_, dir, options) = scratch("salt");
    let args = json!({"q": "guessable"}).as_object().unwrap().clone();
    let mut macs = Vec::new();
    for name in ["one.jsonl", "two.jsonl"] {
        let path = dir.join(name);
        let log = AuditLog::open(&path, options.clone()).unwrap();
        let mut entry = call("a", "s__t", None);
        entry.arguments = Some(&args);
        log.record(&entry).unwrap();
        let v: Value = serde_json::from_str(&lines(&path)[1]).unwrap();
        assert!(!v.to_string().contains("guessable"));
        macs.push(v["args_mac"].clone());
    }
    assert_ne!(macs[0], macs[1], "equal arguments hash alike across logs");
    assert_ne!(macs[0], Value::from(sha256_hex(b"{\"q\":\"guessable\"}")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_kind_is_recorded() {
    let (path, dir, options) = scratch("kinds");
    let log = Arc::new(AuditLog::open(&path, options.clone()).unwrap());
    let audit = (log, Arc::<str>::from("http-1"));
    for kind in [
        AuditKind::ResourceRead,
        AuditKind::PromptGet,
        AuditKind::Elicitation,
        AuditKind::Sampling,
        AuditKind::Policy,
        AuditKind::Login,
    ] {
        note(Some(&audit), kind, Some("s"), "x", "ok", None);
    }
    let kinds: Vec<String> = lines(&path)[1..]
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "resource_read",
            "prompt_get",
            "elicitation",
            "sampling",
            "policy",
            "login"
        ]
    );
    assert_eq!(verify(&path, &options).unwrap().records, 6);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A crash can leave the anchor's last line half written: the line before
/// it is in force, and the log's later (keyed) lines are not tampering.
#[test]
fn a_cut_anchor_line_is_a_crash_not_tampering() {
    let (path, dir, options) = scratch("crash");
    let state = {
        let log = AuditLog::open(&path, options.clone()).unwrap();
        for _ in 0..3 {
            log.record(&call("a", "s__t", None)).unwrap();
        }
        log.state_dir().unwrap().to_owned()
    };
    let anchor = std::fs::read(state.join("anchor")).unwrap();
    let upto = anchor[..anchor.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap();
    std::fs::write(state.join("anchor"), &anchor[..upto + 10]).unwrap();
    let verified = verify(&path, &options).unwrap();
    assert_eq!((verified.records, verified.unanchored), (3, 1));
    write_calls(&path, &options, 1);
    assert_eq!(verify(&path, &options).unwrap().unanchored, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_anchor_file_stays_bounded() {
    let (path, dir, options) = scratch("anchor-size");
    let log = AuditLog::open(&path, options.clone()).unwrap();
    let limit = ANCHOR_LINES as usize;
    for _ in 0..limit + 10 {
        log.record(&call("a", "s__t", None)).unwrap();
    }
    let anchor = std::fs::read_to_string(log.state_dir().unwrap().join("anchor")).unwrap();
    assert!(anchor.lines().count() < limit, "{}", anchor.lines().count());
    drop(log);
    assert_eq!(verify(&path, &options).unwrap().unanchored, 0);
    let _ = std::fs::remove_dir_all(&dir);
}
