//! What the result and message tests share: tiny media payloads, base64,
//! and media folders of their own that are removed afterwards.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use switchboard_models::{MediaStore, ResultOptions};

/// The first bytes of each kind: enough for type sniffing, tiny in snapshots.
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
pub const WAV: &[u8] = b"RIFF\x24\0\0\0WAVEfmt ";
pub const PDF: &[u8] = b"%PDF-1.4\n%%EOF\n";
pub const ZIP: &[u8] = b"PK\x03\x04\x14\0\0\0\x08\0";

pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// A fresh base folder under the system temp dir, unique to this test.
pub fn temp_base(test: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "switchboard-models-{test}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Options with a media store under a fresh base, removed when dropped.
pub struct Scratch {
    pub options: ResultOptions,
    pub base: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

pub fn with_store(test: &str) -> Scratch {
    let base = temp_base(test);
    let store = Arc::new(MediaStore::session(&base).unwrap());
    Scratch {
        options: ResultOptions::default().media(Some(store)),
        base,
    }
}

/// `value` with the session folder written `[media]`, for stable snapshots.
pub fn redact(value: Value, options: &ResultOptions) -> Value {
    let Some(store) = &options.media else {
        return value;
    };
    let dir = store.dir().to_str().unwrap();
    let text = value.to_string().replace(dir, "[media]");
    serde_json::from_str(&text).unwrap()
}
