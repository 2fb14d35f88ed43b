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
//! `<temp dir>/switchboard-media-<uid>`). Files in it are named
//! `<n>-<hint>.<ext>`: a per-store sequence number, the caller's hint with
//! everything but `[A-Za-z0-9._-]` replaced (so a hint taken from a URI or
//! a tool name can never climb out of the folder), and an extension for the
//! MIME type. Files are created with `create_new`, so nothing is ever
//! overwritten and a symlink planted at a file's name is never followed.
//! Nothing here deletes the folder: what the model was told about stays
//! readable after the session ends.
//!
//! What a tool returned is the user's business alone: on Unix the session
//! folder is 0700 and its files 0600 from the moment they exist. The temp
//! dir is shared with every user, so [`MediaStore::temp`] uses a folder of
//! the user's own there, and refuses one that is a symlink or belongs to
//! someone else (narrowing a wider mode to 0700).

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
        Self::session_in(base)
    }

    /// A new session folder under `base`, which exists.
    fn session_in(base: &Path) -> io::Result<Self> {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let pid = std::process::id();
        loop {
            let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("session-{millis}-{pid}-{n}"));
            // `create_dir`, not `create_dir_all`: an existing folder (another
            // process with a reused pid) must not be shared.
            match private_dir_builder().create(&dir) {
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

    /// A new session folder under `<temp dir>/switchboard-media-<uid>`
    /// (`switchboard-media` where there are no user ids): a folder of the
    /// current user's own, 0700.
    ///
    /// # Errors
    ///
    /// When the folder cannot be created, or the user's folder is a
    /// symlink, is not a directory or belongs to another user.
    pub fn temp() -> io::Result<Self> {
        Self::session_in(&user_base(&std::env::temp_dir())?)
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
            let mut file = match private_options().open(&path) {
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

/// `parent/switchboard-media-<uid>`, made 0700 when missing; an existing
/// one must be a real directory (not a symlink) owned by the current user,
/// and is narrowed to 0700.
fn user_base(parent: &Path) -> io::Result<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let uid = rustix::process::getuid().as_raw();
        let base = parent.join(format!("switchboard-media-{uid}"));
        match private_dir_builder().create(&base) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let refuse = |why: String| {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "the media folder {} {why}; remove it, or give the session a folder of its own (`MediaStore::session`)",
                    base.display()
                ),
            ))
        };
        let meta = fs::symlink_metadata(&base)?;
        if meta.file_type().is_symlink() {
            return refuse("is a symlink".into());
        }
        if !meta.is_dir() {
            return refuse("is not a directory".into());
        }
        if meta.uid() != uid {
            return refuse(format!("belongs to another user (uid {})", meta.uid()));
        }
        if meta.mode() & 0o777 != 0o700 {
            fs::set_permissions(&base, fs::Permissions::from_mode(0o700))?;
        }
        Ok(base)
    }
    #[cfg(not(unix))]
    {
        let base = parent.join("switchboard-media");
        fs::create_dir_all(&base)?;
        Ok(base)
    }
}

/// Folders only their owner can enter (on Unix).
fn private_dir_builder() -> fs::DirBuilder {
    #[allow(unused_mut)]
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

/// A new file only its owner can read (on Unix), never through a symlink.
fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options
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

    #[cfg(unix)]
    #[test]
    fn the_user_folder_sessions_and_files_are_private_and_symlinks_are_refused() {
        use std::os::unix::fs::{PermissionsExt as _, symlink};
        let mode = |p: &Path| fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
        let parent =
            std::env::temp_dir().join(format!("switchboard-media-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&parent);
        fs::create_dir_all(&parent).unwrap();
        let uid = rustix::process::getuid().as_raw();
        let name = format!("switchboard-media-{uid}");

        // Someone planted a symlink to a folder of theirs: refused.
        let theirs = parent.join("theirs");
        fs::create_dir(&theirs).unwrap();
        symlink(&theirs, parent.join(&name)).unwrap();
        let err = user_base(&parent).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        fs::remove_file(parent.join(&name)).unwrap();

        // A folder left world-readable is narrowed; a new one is 0700.
        fs::create_dir(parent.join(&name)).unwrap();
        fs::set_permissions(parent.join(&name), fs::Permissions::from_mode(0o777)).unwrap();
        let base = user_base(&parent).unwrap();
        assert_eq!(base, parent.join(&name));
        assert_eq!(mode(&base), 0o700);
        let store = MediaStore::session_in(&base).unwrap();
        assert_eq!(mode(store.dir()), 0o700);

        // A symlink planted at the next file's name is not written through.
        let victim = parent.join("victim");
        fs::write(&victim, "untouched").unwrap();
        symlink(&victim, store.dir().join("1-x.txt")).unwrap();
        let saved = store.save(b"secret", Some("text/plain"), "x").unwrap();
        assert_eq!(saved.file_name().unwrap(), "2-x.txt");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(mode(&saved), 0o600);

        // As root, a folder of another user's can be made: refused.
        if uid == 0 {
            fs::remove_dir_all(&base).unwrap();
            fs::create_dir(&base).unwrap();
            std::os::unix::fs::chown(&base, Some(4242), None).unwrap();
            let err = user_base(&parent).unwrap_err();
            assert!(err.to_string().contains("another user"), "{err}");
        }
        fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn extensions_follow_the_mime_type() {
        assert_eq!(extension(Some("image/png")), "png");
        assert_eq!(extension(Some("IMAGE/JPEG; q=1")), "jpg");
        assert_eq!(extension(Some("application/x-unknown")), "bin");
        assert_eq!(extension(None), "bin");
    }
}
