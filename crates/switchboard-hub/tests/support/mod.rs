//! The runner of the hub's process tests (`hub.rs`, `otel.rs`).
//!
//! Their test server is the test binary itself (`hub __testserver …`):
//! a dev-dependency's binaries are not built for another crate's tests,
//! so `main` must see its arguments before any test harness does, hence
//! `harness = false`. The tests are still found the way libtest finds
//! `#[test]`s — never from a hand-kept list: each is an `async fn` marked
//! `#[apply(process_test!)]`, which registers it (`inventory`), and
//! [`main`] runs every registered one through `libtest-mimic` (libtest's
//! filters, `--exact`, `--list`, `--ignored`, `--test-threads`).
//!
//! Each test runs on a fresh two-thread runtime with a 120 s limit. They
//! run one at a time unless `--test-threads` says otherwise: several
//! measure time (startup timeouts, keepalive pings, backoff) with real
//! processes, and two cores shared with other builds make those flaky
//! when the tests crowd each other.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};

#[allow(dead_code)]
pub(crate) mod lists;

/// A registered test: its name and its body.
pub(crate) struct ProcessTest {
    /// The `async fn`'s name, as libtest would show it.
    pub(crate) name: &'static str,
    /// The body, boxed.
    pub(crate) run: fn() -> Pin<Box<dyn Future<Output = ()> + Send>>,
}

inventory::collect!(ProcessTest);

/// Registers the `async fn` it is applied to (`#[apply(process_test!)]`)
/// as a test of this binary.
macro_rules! process_test {
    ($(#[$meta:meta])* async fn $name:ident() $body:block) => {
        $(#[$meta])*
        async fn $name() $body

        ::inventory::submit! {
            $crate::support::ProcessTest {
                name: stringify!($name),
                run: || ::std::boxed::Box::pin($name()),
            }
        }
    };
}
pub(crate) use process_test;

/// The test binary's `main`: the test server when called as
/// `BINARY __testserver FLAGS…`, the list backend of [`lists`] as
/// `BINARY __listserver FLAGS…`, else every registered test.
pub(crate) fn main() {
    serve_if_asked();
    let mut arguments = Arguments::from_args();
    if arguments.test_threads.is_none() {
        arguments.test_threads = Some(1);
    }
    let mut tests: Vec<&'static ProcessTest> = inventory::iter::<ProcessTest>.into_iter().collect();
    tests.sort_by_key(|t| t.name);
    let trials = tests
        .into_iter()
        .map(|test| Trial::test(test.name, move || run(test)))
        .collect();
    libtest_mimic::run(&arguments, trials).exit();
}

/// Becomes the server the command line asks for, if it asks for one
/// (`__testserver` or `__listserver`), and never returns then.
fn serve_if_asked() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("__testserver") => switchboard_testkit::run_stdio_main(args[2..].to_vec()),
        Some("__listserver") => lists::serve(&args[2..]),
        _ => {}
    }
}

/// One test on a fresh multi-threaded runtime, within 120 s.
fn run(test: &ProcessTest) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("building the test's runtime: {e}")))?;
    let outcome = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(120), (test.run)()).await });
    drop(runtime);
    outcome.map_err(|_| Failed::from("timed out after 120 s"))
}

/// The next hub event that `pick` accepts (others are skipped), within
/// 20 s. (Shared by the test binaries; not every one uses it.)
#[allow(dead_code)]
pub(crate) async fn next_matching<T>(
    events: &mut switchboard_hub::HubEvents,
    what: &str,
    mut pick: impl FnMut(&switchboard_hub::HubEvent) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            match events.next().await {
                Some(event) => {
                    if let Some(found) = pick(&event) {
                        return found;
                    }
                }
                None => panic!("the event stream ended before {what}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("no event for {what} within 20 s"))
}

/// Whether process `pid` still runs (a zombie counts as gone: it runs
/// nothing and only waits for its parent to reap it).
#[allow(dead_code)]
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}
