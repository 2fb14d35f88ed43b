//! An abandoned `outputSchema` check stops burning CPU (issue 28, finding
//! 10b).
//!
//! A hostile server's schema has catastrophic patterns and its result
//! thousands of strings that make every match run to the backtracking
//! limit. [`OutputValidator::validate_within`] stops waiting at its budget;
//! the check it abandons must stop too, within the regex match it is in,
//! rather than run on its blocking thread for seconds (minutes in a debug
//! build).
//!
//! What is measured is the process's CPU time in the 3 s after the checks
//! were abandoned. A match cannot be interrupted, so up to two of them
//! (one per running check, [`switchboard::schema::MAX_RUNNING_CHECKS`]) may
//! still end in that window; what one costs is measured first, on this
//! machine and build, and the allowance is three times that plus 100 ms.
//! Before the fix, in the debug build `cargo test` makes, the timed-out
//! checks spent 5.96 s in the window (two checks, each on a core all
//! along) against an allowance of 1.48 s; with it, 0.16 s, and the dropped
//! ones 0.36 s, all of it in the first 0.3 s (the matches under way).
//!
//! A binary of its own (`harness = false`) because the CPU time is the
//! whole process's (`/proc/self/stat`): nothing else may run in it
//! meanwhile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::schema::{OutputMismatch, OutputValidator};
use switchboard::types::tools::{CallToolResult, Tool};

/// How long the process's CPU time is watched once the checks were
/// abandoned. A check that went on would cost about this much for each
/// core it got.
const WINDOW: Duration = Duration::from_secs(3);

/// How many strings the hostile result holds.
const STRINGS: usize = 3000;

/// Exponential for a backtracking engine; the lookahead and the
/// backreference keep fancy-regex from handing it to a linear one.
const CATASTROPHIC: &str = "^(a|a)*(?=b)\\1c";

/// `assert!` that returns the failure instead of panicking inside the
/// runtime (see `main`).
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(format!($($message)+));
        }
    };
}

fn main() {
    #[cfg(target_os = "linux")]
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let outcome = runtime.block_on(async {
            let allowed = allowance();
            timed_out_checks_stop(allowed).await?;
            dropped_checks_stop(allowed).await
        });
        // Checks that went on would hold the runtime's drop until they end,
        // for minutes: a failure is reported at once instead.
        runtime.shutdown_background();
        if let Err(failure) = outcome {
            panic!("{failure}");
        }
        println!("output_check_cpu: ok");
    }
}

/// The process's CPU time so far, user and system, every thread's (fields
/// 14 and 15 of `/proc/self/stat`, in clock ticks of 1/100 s: `USER_HZ` is
/// 100 in Linux's ABI).
#[cfg(target_os = "linux")]
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name, field 2, is in parentheses and may hold spaces.
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // `after_name` starts at field 3.
    let ticks = |field: usize| fields[field - 3].parse::<u64>().unwrap();
    Duration::from_millis((ticks(14) + ticks(15)) * 10)
}

/// The most CPU the process may spend in [`WINDOW`] once the checks were
/// abandoned: the two matches still running may end, and a check of one
/// hostile string (a match for `is_valid`, another for the violations)
/// costs about two; three times that, plus 100 ms.
#[cfg(target_os = "linux")]
fn allowance() -> Duration {
    let tool: Tool = serde_json::from_value(json!({
        "name": "one", "inputSchema": {"type": "object"},
        "outputSchema": {"type": "string", "pattern": CATASTROPHIC}
    }))
    .unwrap();
    let one: CallToolResult =
        serde_json::from_value(json!({"content": [], "structuredContent": hostile(0)})).unwrap();
    let validator = OutputValidator::new();
    // Compiled once beforehand, so that only the matches are measured.
    let _ = validator
        .validate(&tool, &structured(json!("")))
        .unwrap_err();
    let started = cpu();
    let mismatch = validator.validate(&tool, &one).unwrap_err();
    let check = cpu() - started;
    assert_eq!(mismatch.violations()[0].keyword, "pattern", "{mismatch}");
    let allowed = check * 3 + Duration::from_millis(100);
    println!("one hostile string costs {check:?} of CPU to check: {allowed:?} allowed");
    allowed
}

#[cfg(target_os = "linux")]
fn structured(value: Value) -> CallToolResult {
    serde_json::from_value(json!({"content": [], "structuredContent": value})).unwrap()
}

/// The `i`th of the strings that reach the backtracking limit; distinct,
/// since a match the engine could not finish is not tried again on the
/// same string.
#[cfg(target_os = "linux")]
fn hostile(i: usize) -> String {
    format!("{}{i}", "a".repeat(40))
}

/// A tool whose every string, value or property name, is checked against
/// a catastrophic pattern.
#[cfg(target_os = "linux")]
fn hostile_tool() -> Arc<Tool> {
    let tool = json!({
        "name": "evil",
        "inputSchema": {"type": "object"},
        "outputSchema": {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "string", "pattern": CATASTROPHIC}}
            },
            "patternProperties": {"^(a|a)*(?=b)\\1d": {"type": "string"}}
        }
    });
    Arc::new(serde_json::from_value(tool).unwrap())
}

/// [`STRINGS`] hostile strings as items, as many as property names.
#[cfg(target_os = "linux")]
fn hostile_result() -> Arc<CallToolResult> {
    let items: Vec<Value> = (0..STRINGS).map(|i| Value::from(hostile(i))).collect();
    let mut content = serde_json::Map::new();
    content.insert("items".into(), Value::from(items));
    for i in 0..STRINGS {
        content.insert(hostile(i), Value::from("x"));
    }
    Arc::new(structured(Value::Object(content)))
}

/// CPU spent during [`WINDOW`] from now.
#[cfg(target_os = "linux")]
async fn cpu_over_window() -> Duration {
    let before = cpu();
    tokio::time::sleep(WINDOW).await;
    cpu() - before
}

/// An honest check on `validator` gets a slot and finishes: the abandoned
/// checks gave theirs back. Lookahead and backreferences still work.
#[cfg(target_os = "linux")]
async fn honest_checks_run(validator: &OutputValidator) -> Result<(), String> {
    let honest: Tool = serde_json::from_value(json!({
        "name": "honest", "inputSchema": {"type": "object"},
        "outputSchema": {"type": "string", "pattern": "^(?=a)(a+)b\\1$"}
    }))
    .unwrap();
    let honest = Arc::new(honest);
    let budget = Duration::from_secs(5);
    let passed = validator
        .validate_within(honest.clone(), Arc::new(structured(json!("aabaa"))), budget)
        .await;
    ensure!(passed.is_ok(), "an honest match: {passed:?}");
    let failed = validator
        .validate_within(honest, Arc::new(structured(json!("aaba"))), budget)
        .await;
    ensure!(
        matches!(&failed, Err(mismatch) if mismatch.violations()[0].keyword == "pattern"),
        "an honest mismatch: {failed:?}"
    );
    Ok(())
}

/// Three calls past their budget, as the issue measured them.
#[cfg(target_os = "linux")]
async fn timed_out_checks_stop(allowed: Duration) -> Result<(), String> {
    let validator = OutputValidator::new();
    let tool = hostile_tool();
    let result = hostile_result();
    let budget = Duration::from_millis(100);
    for call in 0..3 {
        let started = Instant::now();
        let outcome = validator
            .validate_within(tool.clone(), result.clone(), budget)
            .await;
        let waited = started.elapsed();
        ensure!(
            matches!(outcome, Err(OutputMismatch::OverBudget { .. })),
            "call {call}: {outcome:?}"
        );
        ensure!(
            waited < budget + Duration::from_secs(1),
            "call {call} waited {waited:?}"
        );
    }
    let spent = cpu_over_window().await;
    println!("timed-out checks: {spent:?} of CPU in the {WINDOW:?} after the third call returned");
    ensure!(
        spent < allowed,
        "the abandoned checks went on: {spent:?} of CPU in {WINDOW:?} (allowed {allowed:?})"
    );
    honest_checks_run(&validator).await
}

/// Checks whose callers gave up before the budget: dropping the future
/// abandons the check, which stops as well.
#[cfg(target_os = "linux")]
async fn dropped_checks_stop(allowed: Duration) -> Result<(), String> {
    let validator = OutputValidator::new();
    let tool = hostile_tool();
    let result = hostile_result();
    for call in 0..2 {
        let started = cpu();
        let check =
            validator.validate_within(tool.clone(), result.clone(), Duration::from_secs(600));
        let running = async {
            // Until the check has visibly started: the process spends CPU.
            while cpu() - started < Duration::from_millis(50) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::select! {
            outcome = check => return Err(format!("call {call}: the check finished: {outcome:?}")),
            () = running => {}
        }
    }
    let spent = cpu_over_window().await;
    println!("dropped checks: {spent:?} of CPU in the {WINDOW:?} after they were dropped");
    ensure!(
        spent < allowed,
        "the abandoned checks went on: {spent:?} of CPU in {WINDOW:?} (allowed {allowed:?})"
    );
    honest_checks_run(&validator).await
}
