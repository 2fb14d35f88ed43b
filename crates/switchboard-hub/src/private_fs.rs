//! Files only the user can read: switchboard's approvals and state.
//!
//! The directory is created 0700 (and tightened to 0700 when it exists
//! with wider permissions); a file is written to a fresh temporary file
//! created 0600 with `create_new` (so a symlink or file planted at that
//! name is never followed or reused), then renamed over the target. A
//! read never follows a symlink at the final path. On other platforms the
//! same calls run without the Unix modes.

use std::io::{self, Read as _, Write as _};
use std::path::Path;

/// Creates `dir` (and its parents) for private files: 0700, owned by
/// this user, not a symlink.
///
/// # Errors
/// When it cannot be created, is a symlink, or belongs to another user.
pub(crate) fn private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let meta = std::fs::symlink_metadata(dir)?;
        if !meta.is_dir() {
            return Err(io::Error::other(format!(
                "{} is not a directory (a symlink?); remove it and try again",
                dir.display()
            )));
        }
        if meta.uid() != current_uid() {
            return Err(io::Error::other(format!(
                "{} belongs to another user; remove it or set XDG_DATA_HOME",
                dir.display()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// The user id this process runs as.
#[cfg(unix)]
pub(crate) fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Writes `bytes` to `path` atomically, 0600 from the first byte, in a
/// private directory.
///
/// # Errors
/// When the directory or the file cannot be written.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("a private file needs a directory"))?;
    private_dir(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for attempt in 0..16u32 {
        let temp = dir.join(format!(
            ".{name}.{}.{}.{attempt}.tmp",
            std::process::id(),
            nanos()
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        let mut file = match options.open(&temp) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        return written;
    }
    Err(io::Error::other(format!(
        "cannot create a temporary file in {}",
        dir.display()
    )))
}

/// Reads `path` without following a symlink there; `Ok(None)` when it
/// does not exist.
///
/// # Errors
/// When it exists and cannot be read (a symlink is refused).
pub(crate) fn read_private(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-private-fs-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn files_are_0600_in_a_0700_directory() {
        let root = scratch("modes");
        let dir = root.join("data/switchboard");
        let file = dir.join("approvals.json");
        write_private(&file, b"{}").unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&file), 0o600);
        // A directory made too open is tightened.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        write_private(&file, b"{\"a\":1}").unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(read_private(&file).unwrap().unwrap(), b"{\"a\":1}");
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn a_planted_symlink_is_neither_followed_nor_written_through() {
        let root = scratch("symlink");
        let dir = root.join("data");
        private_dir(&dir).unwrap();
        let victim = root.join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        let file = dir.join("approvals.json");
        std::os::unix::fs::symlink(&victim, &file).unwrap();
        // Reading refuses the link.
        assert!(read_private(&file).is_err());
        // Writing replaces the link itself; the target is untouched.
        write_private(&file, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(!std::fs::symlink_metadata(&file).unwrap().is_symlink());
        assert_eq!(mode(&file), 0o600);
        // A symlinked directory is refused.
        let linked = root.join("linked");
        std::os::unix::fs::symlink(&root, &linked).unwrap();
        assert!(private_dir(&linked).is_err());
        let _ = std::fs::remove_dir_all(root);
    }
}
