//! Peak memory of the gateway (`HubServer` over a `Hub`) for one large
//! list page of one backend (issue 28, finding 10a), for each list kind.
//!
//! A binary of its own (`harness = false`) that runs each case in a fresh
//! process of itself (`gateway_list_memory __measure KIND ERA`), so that
//! each peak is that case's alone: `VmHWM` is reset through
//! `/proc/self/clear_refs` once the hub is ready (its backend connected,
//! its lists still small), and read again once the hub has the backend's
//! large list (tools only: the hub keeps them, and writes them to its
//! state file) and once a host connected in memory has the gateway's
//! answer. The backend is this binary too (`__listserver`,
//! `support/lists.rs`), in a process of its own that writes its page item
//! by item: every byte measured is the hub's, its client's, the gateway's
//! or the host's copy of the answer as the transport hands it over. The
//! cost of a case is the peak resident size over the resident size before
//! the page.
//!
//! The goal, asserted for every kind: at most four times the page.
//! Measured in the debug profile (the one `cargo test` uses): tools 3.5
//! times (the hub keeps the parsed tools, 2.4 times the page, and the
//! gateway's answer is one copy of their text), resources 2.2, prompts
//! 2.7 and templates 2.2 times (the gateway writes them from the
//! backend's own text, `Client::list_raw`, parsing one entry at a time:
//! the page and the answer). Before, the gateway cost 24.4 times a page
//! of tools (9.4 times while the hub read it), and 13.7, 16.3 and 12.7
//! times one of resources, prompts and templates; with the lists parsed
//! and unknown members as map trees, still 4.8, 4.1, 5.7 and 5.2 times.
//! For the kept tool list, serving it costs at most one copy of the
//! answer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use switchboard::server::ServeOptions;
use switchboard::transport::memory::{self, MemoryEnd};
use switchboard::types::Implementation;
use switchboard_hub::hub::Hub;
use switchboard_hub::{Dialect, HubEvent, Origin, Scope, ServerConfig, TransportConfig};

#[allow(dead_code)]
#[path = "support/lists.rs"]
mod lists;

use lists::{Kind, page_size};

const PAGE_BYTES: usize = 16 * 1024 * 1024;
/// The id the hub's client gives its first `tools/list` (or the first
/// list of another kind): only its length matters, for the page's size.
const ID: &str = "1";

fn status(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kib: usize = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__listserver") {
        lists::serve(&args[2..]);
    }
    if args.get(1).map(String::as_str) == Some("__measure") {
        let kind = Kind::ALL
            .into_iter()
            .find(|k| k.flag() == args[2])
            .expect("a list kind");
        measure(kind, args[3] == "modern");
        return;
    }
    if !Path::new("/proc/self/clear_refs").exists() {
        eprintln!("gateway_list_memory: no /proc/self/clear_refs; skipped");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let cases = [
        (Kind::Tools, "legacy"),
        (Kind::Tools, "modern"),
        (Kind::Resources, "legacy"),
        (Kind::Prompts, "legacy"),
        (Kind::Templates, "legacy"),
    ];
    let mut failed = Vec::new();
    for (kind, era) in cases {
        let status = Command::new(&exe)
            .args(["__measure", kind.flag(), era])
            .status()
            .unwrap();
        if !status.success() {
            failed.push(format!("{} ({era} host)", kind.flag()));
        }
    }
    assert!(failed.is_empty(), "over the limit or failed: {failed:?}");
}

/// The backend: a large page of `kind`; for tools only once it was
/// called (the hub lists tools as it connects).
fn backend(kind: Kind) -> ServerConfig {
    let exe = std::env::current_exe().unwrap();
    let flag = match kind {
        Kind::Tools => "--grow".to_owned(),
        other => format!("--{}", other.flag()),
    };
    let args = vec!["__listserver".to_owned(), flag, PAGE_BYTES.to_string()];
    ServerConfig::new(
        "big",
        TransportConfig::Stdio {
            command: exe.to_string_lossy().into_owned(),
            args,
            env: BTreeMap::new(),
            cwd: None,
        },
        Origin {
            file: PathBuf::from("/tests/gateway_list_memory.toml"),
            dialect: Dialect::Switchboard,
            scope: Scope::Explicit,
        },
    )
}

/// One case, in this process: the hub over the backend with a large
/// `kind` page, as `switchboard serve` runs it (its state file written),
/// and a host of the session era, or of 2026-07-28 when `modern`.
fn measure(kind: Kind, modern: bool) {
    let (size, count) = page_size(ID, kind, PAGE_BYTES);
    let dir = std::env::temp_dir().join(format!(
        "switchboard-gateway-list-memory-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let hub = Hub::builder()
            .server(backend(kind))
            .state_dir(&dir)
            .startup_timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        hub.start().await.unwrap();

        // From here on, what the page costs.
        reset_peak();
        let baseline = status("VmRSS:");
        if kind == Kind::Tools {
            // The backend's tools grow to the page: the hub lists them
            // again, keeps them, and writes them to its state file.
            let mut events = hub.events();
            hub.call("big", "grow", None).await.unwrap();
            while !matches!(
                events.next().await.expect("the hub's events"),
                HubEvent::ToolsChanged { count: listed, .. } if listed == count
            ) {}
            let file = dir.join("hub-state.json");
            tokio::time::timeout(Duration::from_secs(30), async {
                while std::fs::metadata(&file).map_or(0, |m| m.len() as usize) < size / 2 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .expect("the state file written within 30 s");
        }
        let read = status("VmHWM:").saturating_sub(baseline);
        let kept = status("VmRSS:").saturating_sub(baseline);

        reset_peak();
        let (mut host, end) = memory::pair();
        let gateway = switchboard_hub::HubServer::new(
            hub.clone(),
            Implementation::new("switchboard", "test"),
        );
        let served = gateway.serve(end.into_connection(), ServeOptions::default());
        let answer = list(&mut host, kind, modern).await;
        let serving = status("VmHWM:").saturating_sub(baseline);

        let cost = read.max(serving);
        let x = |bytes: usize| bytes as f64 / size as f64;
        println!(
            "gateway_list_memory: {} ({} host): page {:.1} MiB, {count} items, answer {:.1} MiB; peak cost {:.1} MiB ({:.2}x the page): {:.2}x while the hub read it, {:.2}x kept, {:.2}x while the gateway served it",
            kind.flag(),
            if modern { "2026-07-28" } else { "session-era" },
            mib(size),
            mib(answer.len()),
            mib(cost),
            x(cost),
            x(read),
            x(kept),
            x(serving),
        );
        check(&answer, kind, modern, count);
        drop(served);
        hub.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
        let limit = 4.0;
        assert!(
            x(cost) <= limit,
            "a {:.1} MiB {} page cost the gateway {:.1} MiB, more than {limit}x its size",
            mib(size),
            kind.flag(),
            mib(cost)
        );
        // Serving what the hub keeps costs the answer's text, once.
        assert!(
            kind != Kind::Tools || serving.saturating_sub(kept) <= answer.len() * 3 / 2,
            "serving the kept tools cost {:.1} MiB for an answer of {:.1} MiB",
            mib(serving.saturating_sub(kept)),
            mib(answer.len())
        );
    });
}

/// The message of the host's end with `id`, skipping others.
async fn answer_to(host: &mut MemoryEnd, id: u64) -> Vec<u8> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<Value>,
    }
    loop {
        let message = tokio::time::timeout(Duration::from_secs(60), host.recv())
            .await
            .expect("an answer within 60 s")
            .expect("the gateway is still there");
        let parsed: Id = serde_json::from_slice(&message).unwrap();
        if parsed.id == Some(json!(id)) {
            return message;
        }
    }
}

/// Lists `kind` as a host: the session era's handshake first, or
/// 2026-07-28's `_meta` on the request.
async fn list(host: &mut MemoryEnd, kind: Kind, modern: bool) -> Vec<u8> {
    let meta = if modern {
        json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "host", "version": "1"},
        }})
    } else {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "host", "version": "1"}}});
        host.send(initialize.to_string()).await.unwrap();
        answer_to(host, 1).await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        host.send(initialized.to_string()).await.unwrap();
        json!({})
    };
    let request = json!({"jsonrpc": "2.0", "id": 2, "method": kind.method(), "params": meta});
    host.send(request.to_string()).await.unwrap();
    answer_to(host, 2).await
}

/// The answer lists every item under its gateway name or URI, otherwise
/// as the backend wrote it.
fn check(answer: &[u8], kind: Kind, modern: bool, count: usize) {
    #[derive(serde::Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        result: &'a RawValue,
    }
    let answer: Answer<'_> = serde_json::from_slice(answer).unwrap();
    let result: serde_json::Map<String, Value> = {
        // Everything but the items, parsed; the items one by one.
        let mut all: BTreeMap<String, &RawValue> = serde_json::from_str(answer.result.get())
            .unwrap_or_else(|e| panic!("{e}: {}", &answer.result.get()[..200]));
        let items: Vec<&RawValue> = serde_json::from_str(
            all.remove(kind.field())
                .unwrap_or_else(|| panic!("no {} in the answer", kind.field()))
                .get(),
        )
        .unwrap();
        assert_eq!(items.len(), count, "every item listed");
        for (index, item) in items.iter().enumerate() {
            if index < 2 || index == count - 1 || index % 997 == 0 {
                let item: Value = serde_json::from_str(item.get()).unwrap();
                assert_eq!(item, served(kind, index), "item {index}");
            }
        }
        all.into_iter()
            .map(|(k, v)| (k, serde_json::from_str(v.get()).unwrap()))
            .collect()
    };
    if modern {
        assert_eq!(result["resultType"], "complete", "{result:?}");
        assert_eq!(result["ttlMs"], 0, "{result:?}");
        assert_eq!(result["cacheScope"], "private", "{result:?}");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "switchboard"
        );
    } else {
        assert!(result.is_empty(), "{result:?}");
    }
}

/// Item `index` as the gateway serves it.
fn served(kind: Kind, index: usize) -> Value {
    let mut item = kind.item(index);
    match kind {
        Kind::Tools => {
            item["_meta"]["switchboard/origin"] =
                json!({"server": "big", "tool": format!("tool_{index}")});
            item["name"] = json!(format!("big__tool_{index}"));
        }
        Kind::Prompts => item["name"] = json!(format!("big__prompt_{index}")),
        // The one server's URIs and templates as it wrote them; a
        // template named like its tools.
        Kind::Resources => {}
        Kind::Templates => item["name"] = json!(format!("big__items_{index}")),
    }
    item
}
