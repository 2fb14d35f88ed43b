//! A per-session folder for media and blobs a provider cannot take inline.
//!
//! SKELETON — owned by the results helper.

use std::io;
use std::path::{Path, PathBuf};

/// Where results' binary content is written; one folder per session.
#[derive(Debug)]
pub struct MediaStore {
    dir: PathBuf,
}

impl MediaStore {
    /// A new folder of its own under `base` (created, unique per session).
    pub fn session(base: impl AsRef<Path>) -> io::Result<Self> {
        let _ = base;
        unimplemented!("results helper")
    }

    /// The session folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `bytes` to a new file named after `hint` with an extension
    /// for `mime_type`; returns its path.
    pub fn save(&self, bytes: &[u8], mime_type: Option<&str>, hint: &str) -> io::Result<PathBuf> {
        let _ = (bytes, mime_type, hint);
        unimplemented!("results helper")
    }
}
