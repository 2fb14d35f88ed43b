//! MCP Bundles (`.mcpb`) for tests: a good one that really runs (a node
//! MCP server with no dependencies), and hostile ones forged byte by byte
//! as an attacker would, each aimed at one defence of an unpacker.
//!
//! The good bundle is written by a real ZIP writer (the `zip` crate,
//! deflated); every other one by [`raw_zip`], which writes exactly what it
//! is told, lies included: names, declared sizes, Unix modes, ZIP64 records.

use std::io::Write as _;

use zip::CompressionMethod;
use zip::write::{SimpleFileOptions, ZipWriter};

/// The good bundle's name (`manifest.json`'s `name`).
pub const GOOD_BUNDLE_NAME: &str = "switchboard-echo";

/// The good bundle's manifest: a node server whose `api_key` is sensitive
/// and required (passed as env `API_KEY`), `root` a directory defaulting to
/// `${HOME}` (passed as `--root`), `max_results` a number from 1 to 100
/// and `verbose` a boolean (env `MAX_RESULTS`, `VERBOSE`).
pub const GOOD_MANIFEST: &str = r#"{
  "manifest_version": "0.3",
  "name": "switchboard-echo",
  "display_name": "Switchboard echo",
  "version": "1.0.0",
  "description": "Echoes text; tells whether it was given the right key",
  "author": { "name": "switchboard tests" },
  "server": {
    "type": "node",
    "entry_point": "server/index.js",
    "mcp_config": {
      "command": "node",
      "args": ["${__dirname}/server/index.js", "--root", "${user_config.root}"],
      "env": {
        "API_KEY": "${user_config.api_key}",
        "MAX_RESULTS": "${user_config.max_results}",
        "VERBOSE": "${user_config.verbose}"
      }
    }
  },
  "user_config": {
    "api_key": { "type": "string", "title": "API key", "description": "The key", "sensitive": true, "required": true },
    "root": { "type": "directory", "title": "Root", "description": "Where to look", "default": "${HOME}" },
    "max_results": { "type": "number", "title": "Max results", "description": "How many", "default": 10, "min": 1, "max": 100 },
    "verbose": { "type": "boolean", "title": "Verbose", "description": "Say more", "default": false }
  },
  "compatibility": { "platforms": ["darwin", "linux", "win32"], "runtimes": { "node": ">=16.0.0" } }
}
"#;

/// The good bundle's `server/index.js`: an MCP server over stdio
/// (newline-delimited JSON-RPC) with no dependencies. It answers
/// `initialize` (protocol 2025-06-18, tools), `ping`, `tools/list` (`echo`
/// and `has_key`) and `tools/call`; ignores notifications. `has_key`
/// says whether its `key` equals env `API_KEY`.
pub const ECHO_SERVER_JS: &str = r#"'use strict';
// A dependency-free MCP server over stdio for switchboard's tests.
const readline = require('readline');

const tools = [
  {
    name: 'echo',
    description: 'Returns the text it is given',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'has_key',
    description: 'Whether key is the API key this server was started with',
    inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  },
];

function send(message) {
  process.stdout.write(JSON.stringify(Object.assign({ jsonrpc: '2.0' }, message)) + '\n');
}

function text(s) {
  return { content: [{ type: 'text', text: s }] };
}

function call(params) {
  const args = (params && params.arguments) || {};
  switch (params && params.name) {
    case 'echo':
      return text(String(args.text === undefined ? '' : args.text));
    case 'has_key':
      return text(String(process.env.API_KEY !== undefined && process.env.API_KEY === args.key));
    default:
      return null;
  }
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    send({ id: null, error: { code: -32700, message: 'parse error' } });
    return;
  }
  if (msg === null || typeof msg !== 'object' || msg.id === undefined || msg.id === null) return;
  const id = msg.id;
  switch (msg.method) {
    case 'initialize':
      send({ id, result: {
        protocolVersion: '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'switchboard-echo', version: '1.0.0' },
      } });
      return;
    case 'ping':
      send({ id, result: {} });
      return;
    case 'tools/list':
      send({ id, result: { tools } });
      return;
    case 'tools/call': {
      const result = call(msg.params);
      if (result === null) {
        send({ id, error: { code: -32602, message: 'unknown tool' } });
      } else {
        send({ id, result });
      }
      return;
    }
    default:
      send({ id, error: { code: -32601, message: 'method not found' } });
  }
});
// At the end of stdin nothing is left to wait for, and node exits once
// stdout is flushed (an explicit exit could cut a pending write).
"#;

/// The good bundle: [`GOOD_MANIFEST`], `server/index.js`
/// ([`ECHO_SERVER_JS`]) and a README, deflated by a real ZIP writer.
pub fn good_node_bundle() -> Vec<u8> {
    let mut zip = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let file = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .unix_permissions(0o644);
    let add = |zip: &mut ZipWriter<_>, name: &str, body: &str| {
        zip.start_file(name, file).expect("zip entry");
        zip.write_all(body.as_bytes()).expect("zip write");
    };
    add(&mut zip, "manifest.json", GOOD_MANIFEST);
    zip.add_directory("server/", SimpleFileOptions::default())
        .expect("zip directory");
    add(&mut zip, "server/index.js", ECHO_SERVER_JS);
    add(
        &mut zip,
        "README.md",
        "# switchboard-echo\n\nA test bundle.\n",
    );
    zip.finish().expect("zip finish").into_inner()
}

/// One entry of [`raw_zip`], written as given.
#[derive(Debug, Clone)]
pub struct RawEntry {
    /// The name, byte for byte (no checks).
    pub name: Vec<u8>,
    /// The stored bytes (already deflated when `method` is 8).
    pub data: Vec<u8>,
    /// 0 stored, 8 deflate.
    pub method: u16,
    /// The CRC-32 declared.
    pub crc: u32,
    /// The uncompressed size declared (in both headers).
    pub size: u64,
    /// The Unix mode (file type and permissions), in the external attributes.
    pub mode: u32,
}

impl RawEntry {
    /// A stored regular file (mode 0644), its size and CRC true.
    pub fn file(name: &str, data: &[u8]) -> Self {
        Self {
            name: name.as_bytes().to_vec(),
            data: data.to_vec(),
            method: 0,
            crc: crc32(data),
            size: data.len() as u64,
            mode: 0o100_644,
        }
    }

    /// A symbolic link to `target` (mode `S_IFLNK | 0777`, the target as
    /// its data, as Info-ZIP writes them).
    pub fn symlink(name: &str, target: &str) -> Self {
        Self {
            mode: 0o120_777,
            ..Self::file(name, target.as_bytes())
        }
    }

    /// The same entry with another Unix mode.
    pub fn with_mode(self, mode: u32) -> Self {
        Self { mode, ..self }
    }
}

/// A ZIP archive of `entries`, in order: local header and data each, then
/// the central directory; ZIP64 fields for an entry whose size or offset
/// needs them and ZIP64 end records past 65 535 entries.
pub fn raw_zip(entries: &[RawEntry]) -> Vec<u8> {
    const MAX32: u64 = 0xFFFF_FFFF;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for e in entries {
        let offset = out.len() as u64;
        let compressed = e.data.len() as u64;
        let big = e.size >= MAX32 || compressed >= MAX32 || offset >= MAX32;
        let version: u16 = if big { 45 } else { 20 };
        let name_len = u16::try_from(e.name.len()).expect("name too long");
        // Local header: ZIP64 sizes both in the extra field when needed.
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend(version.to_le_bytes());
        out.extend(0x0800u16.to_le_bytes()); // names are UTF-8
        out.extend(e.method.to_le_bytes());
        out.extend([0, 0, 0x21, 0]); // 1980-01-01 00:00
        out.extend(e.crc.to_le_bytes());
        let (c32, u32_) = if big {
            (MAX32, MAX32)
        } else {
            (compressed, e.size)
        };
        out.extend((c32 as u32).to_le_bytes());
        out.extend((u32_ as u32).to_le_bytes());
        out.extend(name_len.to_le_bytes());
        out.extend(if big { 20u16 } else { 0 }.to_le_bytes());
        out.extend(&e.name);
        if big {
            out.extend(1u16.to_le_bytes());
            out.extend(16u16.to_le_bytes());
            out.extend(e.size.to_le_bytes());
            out.extend(compressed.to_le_bytes());
        }
        out.extend(&e.data);
        // Central header: all three ZIP64 fields when any is needed.
        central.extend(0x0201_4b50u32.to_le_bytes());
        central.extend(((3u16 << 8) | 63).to_le_bytes()); // made by Unix
        central.extend(version.to_le_bytes());
        central.extend(0x0800u16.to_le_bytes());
        central.extend(e.method.to_le_bytes());
        central.extend([0, 0, 0x21, 0]);
        central.extend(e.crc.to_le_bytes());
        let off32 = if big { MAX32 } else { offset };
        central.extend((c32 as u32).to_le_bytes());
        central.extend((u32_ as u32).to_le_bytes());
        central.extend(name_len.to_le_bytes());
        central.extend(if big { 28u16 } else { 0 }.to_le_bytes());
        central.extend([0; 6]); // comment length, disk, internal attributes
        central.extend((e.mode << 16).to_le_bytes());
        central.extend((off32 as u32).to_le_bytes());
        central.extend(&e.name);
        if big {
            central.extend(1u16.to_le_bytes());
            central.extend(24u16.to_le_bytes());
            central.extend(e.size.to_le_bytes());
            central.extend(compressed.to_le_bytes());
            central.extend(offset.to_le_bytes());
        }
    }
    let cd_offset = out.len() as u64;
    let cd_size = central.len() as u64;
    out.extend(central);
    let count = entries.len() as u64;
    let zip64 = count >= 0xFFFF || cd_offset >= MAX32;
    if zip64 {
        let record = out.len() as u64;
        out.extend(0x0606_4b50u32.to_le_bytes());
        out.extend(44u64.to_le_bytes());
        out.extend(((3u16 << 8) | 63).to_le_bytes());
        out.extend(45u16.to_le_bytes());
        out.extend([0; 8]); // this disk, the central directory's disk
        out.extend(count.to_le_bytes());
        out.extend(count.to_le_bytes());
        out.extend(cd_size.to_le_bytes());
        out.extend(cd_offset.to_le_bytes());
        out.extend(0x0706_4b50u32.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend(record.to_le_bytes());
        out.extend(1u32.to_le_bytes());
    }
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0; 4]);
    let count16 = if zip64 { 0xFFFF } else { count as u16 };
    out.extend(count16.to_le_bytes());
    out.extend(count16.to_le_bytes());
    out.extend((cd_size.min(MAX32) as u32).to_le_bytes());
    out.extend((cd_offset.min(MAX32) as u32).to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

/// A manifest like [`GOOD_MANIFEST`]'s (a node server, entry point
/// `server/index.js`, no settings) with `mcp_config` as given (JSON).
pub fn manifest_with_config(mcp_config: &str) -> String {
    format!(
        r#"{{"manifest_version": "0.3", "name": "forged", "version": "1.0.0",
  "author": {{"name": "attacker"}},
  "server": {{"type": "node", "entry_point": "server/index.js", "mcp_config": {mcp_config}}}}}"#
    )
}

/// A stored bundle of `manifest` and `server/index.js` ([`ECHO_SERVER_JS`])
/// followed by `extra` entries.
pub fn bundle_with(manifest: &str, extra: Vec<RawEntry>) -> Vec<u8> {
    let mut entries = vec![
        RawEntry::file("manifest.json", manifest.as_bytes()),
        RawEntry::file("server/index.js", ECHO_SERVER_JS.as_bytes()),
    ];
    entries.extend(extra);
    raw_zip(&entries)
}

/// The good manifest and server, then a file named `name` (`../../evil`,
/// `/abs/evil`, `..\evil`…): zip-slip.
pub fn zip_slip_bundle(name: &str) -> Vec<u8> {
    bundle_with(GOOD_MANIFEST, vec![RawEntry::file(name, b"pwned\n")])
}

/// A link `server/lib` → `target`, then a file `server/lib/pwned` that an
/// unpacker following links would write into `target`.
pub fn symlink_bundle(target: &str) -> Vec<u8> {
    bundle_with(
        GOOD_MANIFEST,
        vec![
            RawEntry::symlink("server/lib", target),
            RawEntry::file("server/lib/pwned", b"pwned\n"),
        ],
    )
}

/// A tiny archive with an empty `server/big.bin` that declares `size`
/// bytes (in its central directory and local header alike).
pub fn declared_size_bundle(size: u64) -> Vec<u8> {
    let mut big = RawEntry::file("server/big.bin", b"");
    big.size = size;
    bundle_with(GOOD_MANIFEST, vec![big])
}

/// The good manifest and server and `files` more empty files.
pub fn many_files_bundle(files: usize) -> Vec<u8> {
    let empty = RawEntry::file("", b"");
    let extra = (0..files)
        .map(|i| RawEntry {
            name: format!("f/{i}").into_bytes(),
            ..empty.clone()
        })
        .collect();
    bundle_with(GOOD_MANIFEST, extra)
}

/// `server/zeros.bin`: `real` zero bytes, deflated (about 13 bits per 258
/// bytes), declaring `declared` bytes (and the CRC of the real ones). With
/// `declared < real`, the lie a decompression bomb tells.
pub fn zeros_bundle(real: u64, declared: u64) -> Vec<u8> {
    let zeros = RawEntry {
        name: b"server/zeros.bin".to_vec(),
        data: deflate_zeros(real),
        method: 8,
        crc: crc32_zeros(real),
        size: declared,
        mode: 0o100_644,
    };
    bundle_with(GOOD_MANIFEST, vec![zeros])
}

/// A raw deflate stream of `n` zero bytes in one fixed-Huffman block: a
/// literal zero, then matches of 258 at distance 1, then literals.
pub fn deflate_zeros(n: u64) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        len: u32,
    }
    impl Bits {
        fn put(&mut self, value: u32, bits: u32) {
            self.acc |= u64::from(value) << self.len;
            self.len += bits;
            while self.len >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.len -= 8;
            }
        }
        /// A Huffman code: most significant bit first.
        fn code(&mut self, code: u32, bits: u32) {
            self.put(code.reverse_bits() >> (32 - bits), bits);
        }
    }
    let mut bits = Bits {
        out: Vec::new(),
        acc: 0,
        len: 0,
    };
    bits.put(1, 1); // the final block
    bits.put(1, 2); // fixed Huffman codes
    let literal_zero = |bits: &mut Bits| bits.code(0x30, 8);
    let mut left = n;
    if left > 0 {
        literal_zero(&mut bits);
        left -= 1;
    }
    while left >= 258 {
        bits.code(0xC5, 8); // length 258 (code 285)
        bits.code(0, 5); // distance 1
        left -= 258;
    }
    for _ in 0..left {
        literal_zero(&mut bits);
    }
    bits.code(0, 7); // end of block
    if bits.len > 0 {
        bits.out.push(bits.acc as u8);
    }
    bits.out
}

/// CRC-32 (the ZIP one) of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    crc32_update(0xFFFF_FFFF, data) ^ 0xFFFF_FFFF
}

fn crc32_zeros(n: u64) -> u32 {
    let block = [0u8; 4096];
    let mut crc = 0xFFFF_FFFF;
    let mut left = n;
    while left > 0 {
        let take = left.min(block.len() as u64) as usize;
        crc = crc32_update(crc, &block[..take]);
        left -= take as u64;
    }
    crc ^ 0xFFFF_FFFF
}

fn crc32_update(mut crc: u32, data: &[u8]) -> u32 {
    let table: [u32; 256] = std::array::from_fn(|i| {
        (0..8).fold(i as u32, |c, _| {
            if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            }
        })
    });
    for &b in data {
        crc = table[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
}
