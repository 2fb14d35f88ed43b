//! A scripted session-era backend for list tests, run by the test binary
//! itself (`BINARY __listserver FLAGS…`): large pages of tools, resources,
//! prompts or resource templates, written item by item straight to stdout
//! (the backend never holds a page, so a test process that measures its
//! own memory measures the hub's alone), and a flood of
//! `notifications/tools/list_changed`.
//!
//! Flags: `--tools BYTES`, `--resources BYTES`, `--prompts BYTES`,
//! `--templates BYTES` (how large each `…/list` answer is: items are added
//! until the response line has at least that many bytes; 0, the default,
//! lists one small item); `--flood N` (after answering the first
//! `tools/list`, N `notifications/tools/list_changed`, then a log line
//! `flood sent`); `--grow BYTES` (a `tools/call`, of any name, makes the
//! tools page that large from then on, and is answered, then followed by
//! `notifications/tools/list_changed`); `--record FILE` (appends each
//! request's method, as a line, before answering it).

use std::io::{BufRead, Write};

use serde_json::{Value, json};

/// A list the backend serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tools,
    Resources,
    Prompts,
    Templates,
}

impl Kind {
    pub(crate) const ALL: [Kind; 4] =
        [Kind::Tools, Kind::Resources, Kind::Prompts, Kind::Templates];

    /// The flag that sizes it, without `--`.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Resources => "resources",
            Kind::Prompts => "prompts",
            Kind::Templates => "templates",
        }
    }

    /// The method that lists it.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Kind::Tools => "tools/list",
            Kind::Resources => "resources/list",
            Kind::Prompts => "prompts/list",
            Kind::Templates => "resources/templates/list",
        }
    }

    /// The result's field holding the items.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Resources => "resources",
            Kind::Prompts => "prompts",
            Kind::Templates => "resourceTemplates",
        }
    }

    /// Item `index`: about a kilobyte for a tool (a nested input schema
    /// with fields this crate does not know, as real servers send: the
    /// tool of `switchboard`'s `tests/list_memory.rs`, one in 64 with a
    /// `_meta` of its own), a few hundred bytes for the others.
    pub(crate) fn item(self, index: usize) -> Value {
        match self {
            Kind::Tools => {
                let mut tool = json!({
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
                });
                // Some tools say more about themselves, which the gateway
                // keeps beside what it adds.
                if index % 64 == 1 {
                    tool["_meta"] = json!({"vendor/owner": "catalogue-team"});
                }
                tool
            }
            Kind::Resources => json!({
                "uri": format!("file:///catalogue/items/{index}.json"),
                "name": format!("item_{index}"),
                "title": format!("Catalogue item {index}"),
                "description": "One item of the catalogue, with its prices and stock, as JSON.",
                "mimeType": "application/json",
                "annotations": {"audience": ["user", "assistant"], "priority": 0.5},
                "size": 1234
            }),
            Kind::Prompts => json!({
                "name": format!("prompt_{index}"),
                "title": format!("Prompt number {index}"),
                "description": "Writes a short review of a catalogue item for the shop's front page.",
                "arguments": [
                    {"name": "item", "description": "The item to review", "required": true},
                    {"name": "tone", "description": "How the review should sound", "required": false}
                ]
            }),
            Kind::Templates => json!({
                "uriTemplate": format!("file:///catalogue/{index}/{{id}}.json"),
                "name": format!("items_{index}"),
                "title": format!("Items of shelf {index}"),
                "description": "The items of one shelf of the catalogue, by id, as JSON.",
                "mimeType": "application/json"
            }),
        }
    }
}

/// Writes the response line (without its newline) to `id`'s `kind` list
/// request: items until the line has at least `bytes` bytes (one item for
/// 0). Returns the line's length and how many items it holds.
pub(crate) fn write_page(
    out: &mut impl Write,
    id: &str,
    kind: Kind,
    bytes: usize,
) -> std::io::Result<(usize, usize)> {
    let mut out = Counted { out, written: 0 };
    write!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"{}":["#,
        kind.field()
    )?;
    let suffix = b"]}}";
    let mut count = 0;
    loop {
        if count > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, &kind.item(count))?;
        count += 1;
        if out.written + suffix.len() >= bytes {
            break;
        }
    }
    out.write_all(suffix)?;
    Ok((out.written, count))
}

/// A writer that counts what goes through it.
struct Counted<W> {
    out: W,
    written: usize,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(data)?;
        self.written += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The length of `kind`'s response line for `bytes`, and its item count,
/// with an id of `id`'s length, without building it.
pub(crate) fn page_size(id: &str, kind: Kind, bytes: usize) -> (usize, usize) {
    write_page(&mut std::io::sink(), id, kind, bytes).expect("a sink takes anything")
}

/// The backend: serves stdin/stdout until stdin ends, then exits.
pub(crate) fn serve(args: &[String]) -> ! {
    let mut sizes = [0usize; 4];
    let mut flood = 0usize;
    let mut grow = None;
    let mut record = None;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().expect("every flag takes a value");
        match flag.trim_start_matches("--") {
            "flood" => flood = value.parse().expect("--flood N"),
            "grow" => grow = Some(value.parse().expect("--grow BYTES")),
            "record" => record = Some(value.clone()),
            name => {
                let kind = Kind::ALL
                    .into_iter()
                    .position(|k| k.flag() == name)
                    .unwrap_or_else(|| panic!("unknown flag {flag}"));
                sizes[kind] = value.parse().expect("a size in bytes");
            }
        }
    }
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut tools_listed = 0;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        #[derive(serde::Deserialize)]
        struct Message {
            id: Option<Value>,
            method: Option<String>,
        }
        let Ok(message) = serde_json::from_str::<Message>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (message.id, message.method) else {
            continue;
        };
        if let Some(file) = &record {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .expect("the record file");
            writeln!(file, "{method}").expect("recorded");
        }
        let id = id.to_string();
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id.parse::<Value>().unwrap(), "result": result});
        match method.as_str() {
            "initialize" => {
                let result = json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {"listChanged": true}, "resources": {}, "prompts": {}},
                    "serverInfo": {"name": "lists", "version": "1"}
                });
                serde_json::to_writer(&mut out, &answer(result)).unwrap();
            }
            "ping" => serde_json::to_writer(&mut out, &answer(json!({}))).unwrap(),
            "tools/call" => {
                let result = json!({"content": [{"type": "text", "text": "done"}]});
                serde_json::to_writer(&mut out, &answer(result)).unwrap();
                if let Some(bytes) = grow.take() {
                    sizes[0] = bytes;
                    out.write_all(
                        b"\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}",
                    )
                    .unwrap();
                }
            }
            listing => match Kind::ALL.into_iter().position(|k| k.method() == listing) {
                Some(at) => {
                    write_page(&mut out, &id, Kind::ALL[at], sizes[at]).unwrap();
                }
                None => {
                    let error = json!({"jsonrpc": "2.0", "id": id.parse::<Value>().unwrap(),
                        "error": {"code": -32601, "message": format!("Method not found: {method}")}});
                    serde_json::to_writer(&mut out, &error).unwrap();
                }
            },
        }
        out.write_all(b"\n").unwrap();
        if method == "tools/list" {
            tools_listed += 1;
            if tools_listed == 1 && flood > 0 {
                let changed =
                    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n";
                for _ in 0..flood {
                    out.write_all(changed).unwrap();
                }
                out.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"flood sent\"}}\n").unwrap();
            }
        }
        out.flush().unwrap();
    }
    std::process::exit(0);
}
