//! Files that may hold server details (names, URLs, tool lists): readable
//! by their owner only, written whole, never through a planted symlink.
//!
//! A file is written to a temporary file beside it that is created with
//! `create_new` and mode 0600 from the start (so no other user can open it
//! at any moment, and a symlink planted at its name is never followed),
//! then renamed over the file (`rename` replaces a symlink at the final
//! name, it does not write through it). Directories made for such files
//! are 0700.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::Path;

/// Temporary names tried before giving up: each is taken only when no
/// file (or symlink) has it.
const TEMP_ATTEMPTS: u32 = 64;

/// Makes `dir` (and missing parents, each 0700) and makes sure it is a
/// directory owned by the current user that no one else can enter: a
/// wider mode is narrowed to 0700.
///
/// # Errors
/// When it cannot be created, is not a directory, belongs to another user
/// or its mode cannot be fixed.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let meta = fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        if meta.uid() != rustix::process::getuid().as_raw() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} belongs to another user (uid {}); remove it or choose another directory",
                    dir.display(),
                    meta.uid()
                ),
            ));
        }
        if meta.mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

/// Creates `path` as a new file, mode 0600 on Unix, failing when anything
/// (a file, a symlink) is already there.
///
/// # Errors
/// `AlreadyExists` when the name is taken; any other open error.
pub fn create_new_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // `create_new` (O_EXCL) already refuses a symlink at the final
        // component; O_NOFOLLOW says so twice.
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Reads `path` unless it is a symlink (then an error, on Unix).
///
/// # Errors
/// When it cannot be opened or read, or is a symlink.
pub fn read_no_follow(path: &Path) -> io::Result<Vec<u8>> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
    let mut file = options.open(path)?;
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut file, &mut bytes)?;
    Ok(bytes)
}

/// Replaces `path` with `bytes` atomically through a private temporary
/// file beside it (see the module docs). The new file is 0600, or, with
/// `keep_mode`, has the mode of the file it replaces when there is one.
/// The directory must exist.
///
/// # Errors
/// When no temporary name is free, or creating, writing or renaming fails
/// (the temporary file is removed).
pub fn write_atomically(path: &Path, bytes: &[u8], keep_mode: bool) -> io::Result<()> {
    write_atomically_with(path, keep_mode, |file| file.write_all(bytes))
}

/// [`write_atomically`] with the contents written by `write` into the
/// temporary file (a large document serialized straight into it, never
/// whole in memory).
pub(crate) fn write_atomically_with(
    path: &Path,
    keep_mode: bool,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let pid = std::process::id();
    let (tmp, mut file) = 'found: {
        for n in 0..TEMP_ATTEMPTS {
            let tmp = dir.join(format!(".{name}.{pid}.{n}.tmp"));
            match create_new_private(&tmp) {
                Ok(file) => break 'found (tmp, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "no free temporary name beside {} (remove its stale `.{name}.*.tmp` files)",
                path.display()
            ),
        ));
    };
    let result = (|| {
        write(&mut file)?;
        if keep_mode
            && let Ok(meta) = fs::symlink_metadata(path)
            && meta.is_file()
        {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::PathBuf;

    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-private-file-{tag}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_are_0600_in_0700_directories_and_planted_symlinks_are_not_followed() {
        let root = temp_dir("modes");
        let dir = root.join("a/b");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&root.join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700, "a wider mode is narrowed");

        let victim = root.join("victim");
        fs::write(&victim, "untouched").unwrap();
        let file = dir.join("f.json");
        let pid = std::process::id();
        for n in 0..4 {
            std::os::unix::fs::symlink(&victim, dir.join(format!(".f.json.{pid}.{n}.tmp")))
                .unwrap();
        }
        write_atomically(&file, b"one", false).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(fs::read_to_string(&file).unwrap(), "one");
        assert_eq!(mode(&file), 0o600);

        // A symlink at the final name is replaced, not written through,
        // and never read.
        fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(&victim, &file).unwrap();
        assert!(read_no_follow(&file).is_err());
        write_atomically(&file, b"two", false).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
        assert!(fs::symlink_metadata(&file).unwrap().is_file());
        assert_eq!(fs::read_to_string(&file).unwrap(), "two");

        // `keep_mode` keeps the mode of the file replaced.
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        write_atomically(&file, b"three", true).unwrap();
        assert_eq!(mode(&file), 0o644);
        write_atomically(&file, b"four", false).unwrap();
        assert_eq!(mode(&file), 0o600);
        fs::remove_dir_all(&root).unwrap();
    }
}
