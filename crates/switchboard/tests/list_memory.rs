//! Peak memory of one 16 MiB `tools/list` page (issue 15).
//!
//! A binary of its own (`harness = false`) so that the peak is this case's
//! alone: `VmHWM` is reset through `/proc/self/clear_refs` once the page is
//! built, and read again after the listing returns.
//!
//! The goal, and what is asserted, is four times the page; the debug
//! profile (the one `cargo test` uses) measures 2.6 times. Where it goes:
//! the page itself, where the engine's result points into it (no copy);
//! the parsed list, which is about one more copy of the text, since every
//! schema is kept as its raw text (`switchboard_types::Schema`) and every
//! member the types do not know as its text too (`switchboard_types::Extra`)
//! rather than map trees; and the `Tool` structs. Before issue 15 the
//! schemas were `serde_json` map trees with `preserve_order` (about 13.7
//! times their text), and the client cost 14 times the page (25.7 times
//! while it also kept a deep copy of the list); with the unknown members
//! as map trees, 3.98 times.

use serde_json::{Value, json};
use switchboard::Client;
use switchboard::transport::memory;

const PAGE_BYTES: usize = 16 * 1024 * 1024;

/// A kilobyte or so of tool: a description and a nested input schema with
/// fields this crate does not know, as real servers send.
fn tool(index: usize) -> Value {
    json!({
        "name": format!("tool_{index}"),
        "title": format!("Tool number {index}"),
        "description": "Looks things up in the catalogue and returns what it found, with prices and stock.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                "filters": {
                    "type": "object",
                    "properties": {
                        "category": {"type": "string", "enum": ["books", "music", "film", "games"]},
                        "inStock": {"type": "boolean"},
                        "price": {"type": "object", "properties": {"min": {"type": "number"}, "max": {"type": "number"}}}
                    },
                    "additionalProperties": false
                }
            },
            "required": ["query"]
        },
        "outputSchema": {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object"}}}},
        "annotations": {"readOnlyHint": true, "openWorldHint": false},
        "x-vendor": {"owner": "catalogue-team", "tags": ["search", "shop"]}
    })
}

/// The response line, with room for any id written in place later.
fn page() -> Vec<u8> {
    let mut line = br#"{"jsonrpc":"2.0","id":0                   ,"result":{"tools":["#.to_vec();
    let mut index = 0;
    while line.len() < PAGE_BYTES {
        if index > 0 {
            line.push(b',');
        }
        serde_json::to_writer(&mut line, &tool(index)).unwrap();
        index += 1;
    }
    line.extend_from_slice(b"]}}");
    line
}

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

fn main() {
    if !std::path::Path::new("/proc/self/clear_refs").exists() {
        eprintln!("list_memory: no /proc/self/clear_refs; skipped");
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client_end, mut server) = memory::pair();
        let connect = Client::builder()
            .name("big")
            .connect(client_end.into_connector());
        let discover = async {
            let request: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}});
            server.send(answer.to_string()).await.unwrap();
        };
        let (client, ()) = tokio::join!(connect, discover);
        let client = client.unwrap();

        let mut line = page();
        let size = line.len();
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        let baseline = status("VmRSS:");

        let list = client.list_tools_shared();
        let serve = async {
            let request: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
            assert_eq!(request["method"], "tools/list");
            let id = request["id"].to_string();
            let at = line.iter().position(|b| *b == b':').unwrap() + 1;
            let at = at + line[at..].iter().position(|b| *b == b':').unwrap() + 1;
            line[at..at + id.len()].copy_from_slice(id.as_bytes());
            server.send(line).await.unwrap();
        };
        let (tools, ()) = tokio::join!(list, serve);
        let tools = tools.unwrap();
        let peak = status("VmHWM:");
        assert!(tools.len() > 10_000, "{}", tools.len());

        // The page itself was resident before the reset; the client's own
        // copies come on top of it.
        let cost = peak.saturating_sub(baseline) + size;
        let mib = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
        println!(
            "list_memory: page {:.1} MiB, {} tools, peak cost {:.1} MiB ({:.2}x the page; baseline RSS {:.1} MiB)",
            mib(size),
            tools.len(),
            mib(cost),
            cost as f64 / size as f64,
            mib(baseline)
        );
        assert!(
            cost <= 4 * size,
            "reading a {:.1} MiB page cost {:.1} MiB, more than 4x its size",
            mib(size),
            mib(cost)
        );
    });
}
