//! A per-session folder for media and blobs a provider cannot take inline.
//!
//! Tool results may carry audio a provider cannot hear, a PDF or a zip a
//! provider cannot read, or more text than the result budget allows. Rather
//! than drop them, [`results`](crate::results) writes them here and tells
//! the model the path, so an application (or a file-reading tool) can get
//! at them.
//!
//! Each [`MediaStore`] owns one new folder, `session-<unix millis>-<pid>-<n>`,
//! under a base the application picks ([`MediaStore::temp`] uses
//! `<temp dir>/switchboard-media`). Files in it are named
//! `<n>-<hint>.<ext>`: a per-store sequence number, the caller's hint with
//! everything but `[A-Za-z0-9._-]` replaced (so a hint taken from a URI or
//! a tool name can never climb out of the folder), and an extension for the
//! MIME type. Files are created with `create_new`, so nothing is ever
//! overwritten. Nothing here deletes the folder: what the model was told
//! about stays readable after the session ends.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Longest sanitized hint kept in a file name, in bytes.
const MAX_HINT: usize = 48;

/// Folders made by this process, so two stores made in the same
/// millisecond differ.
static SESSIONS: AtomicU64 = AtomicU64::new(0);

/// Where results' binary content is written; one folder per session.
#[derive(Debug)]
pub struct MediaStore {
    dir: PathBuf,
    /// The next file's sequence number.
    next: AtomicUsize,
}

impl MediaStore {
    /// A new folder of its own under `base` (created, unique per session).
    ///
    /// # Errors
    ///
    /// When `base` or the session folder cannot be created.
    pub fn session(base: impl AsRef<Path>) -> io::Result<Self> {
        let base = base.as_ref();
        fs::create_dir_all(base)?;
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let pid = std::process::id();
        loop {
            let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("session-{millis}-{pid}-{n}"));
            // `create_dir`, not `create_dir_all`: an existing folder (another
            // process with a reused pid) must not be shared.
            match fs::create_dir(&dir) {
                Ok(()) => {
                    return Ok(Self {
                        dir,
                        next: AtomicUsize::new(1),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// A new session folder under `<temp dir>/switchboard-media`.
    ///
    /// # Errors
    ///
    /// When the folder cannot be created.
    pub fn temp() -> io::Result<Self> {
        Self::session(std::env::temp_dir().join("switchboard-media"))
    }

    /// The session folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `bytes` to a new file named after `hint` with an extension
    /// for `mime_type`; returns its path.
    ///
    /// # Errors
    ///
    /// When the file cannot be created or written (a partly written file
    /// is removed).
    pub fn save(&self, bytes: &[u8], mime_type: Option<&str>, hint: &str) -> io::Result<PathBuf> {
        let ext = extension(mime_type);
        let mut stem = sanitize(hint);
        // A hint like `report.pdf` already names its extension.
        if let Some(s) = stem.strip_suffix(&format!(".{ext}")) {
            stem = s.to_owned();
        }
        if stem.is_empty() {
            stem = "file".into();
        }
        loop {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let path = self.dir.join(format!("{n}-{stem}.{ext}"));
            let mut file = match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            };
            if let Err(e) = file.write_all(bytes).and_then(|()| file.flush()) {
                drop(file);
                let _ = fs::remove_file(&path);
                return Err(e);
            }
            return Ok(path);
        }
    }
}

/// `hint` reduced to `[A-Za-z0-9._-]`, at most [`MAX_HINT`] bytes, without
/// leading dots (no hidden files, no `..`).
fn sanitize(hint: &str) -> String {
    let mut out = String::new();
    let mut replaced = false;
    for c in hint.chars() {
        if out.len() >= MAX_HINT {
            break;
        }
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
            replaced = false;
        } else if !replaced {
            // One `_` for a run of replaced characters: runs say nothing.
            out.push('_');
            replaced = true;
        }
    }
    let out = out
        .trim_start_matches(['.', '_'])
        .trim_end_matches(['.', '_']);
    out.to_owned()
}

/// The file extension for a MIME type; `bin` when unknown.
pub(crate) fn extension(mime_type: Option<&str>) -> &'static str {
    let Some(mime) = mime_type else {
        return "bin";
    };
    match crate::results::essence(mime).as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/heic" => "heic",
        "image/heif" => "heif",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "image/tiff" => "tiff",
        "image/avif" => "avif",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/aac" => "aac",
        "audio/aiff" | "audio/x-aiff" => "aiff",
        "audio/webm" => "weba",
        "audio/mp4" | "audio/m4a" | "audio/x-m4a" => "m4a",
        "video/mp4" => "mp4",
        "video/webm" => "webm",
        "video/quicktime" => "mov",
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        "application/x-tar" => "tar",
        "application/json" => "json",
        "application/xml" | "text/xml" => "xml",
        "application/octet-stream" => "bin",
        "text/plain" => "txt",
        "text/markdown" => "md",
        "text/html" => "html",
        "text/csv" => "csv",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_cannot_leave_the_folder() {
        assert_eq!(sanitize("../../etc/passwd"), "etc_passwd");
        assert_eq!(sanitize("/abs/path"), "abs_path");
        assert_eq!(sanitize(".."), "");
        assert_eq!(sanitize("a\\b:c"), "a_b_c");
        assert_eq!(sanitize("ok-name_1.txt"), "ok-name_1.txt");
        assert_eq!(sanitize("日本語.pdf"), "pdf");
        assert_eq!(sanitize(&"x".repeat(500)).len(), MAX_HINT);
    }

    #[test]
    fn extensions_follow_the_mime_type() {
        assert_eq!(extension(Some("image/png")), "png");
        assert_eq!(extension(Some("IMAGE/JPEG; q=1")), "jpg");
        assert_eq!(extension(Some("application/x-unknown")), "bin");
        assert_eq!(extension(None), "bin");
    }
}
