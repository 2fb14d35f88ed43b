//! MCP Bundles (`.mcpb`, formerly `.dxt`): a ZIP archive with a
//! `manifest.json` at its top that says how to run the server inside.
//!
//! A bundle is a file from the internet, so the archive is judged whole
//! before anything is written: [`read_manifest`] and [`unpack`] first read
//! the central directory and refuse an archive that is too big (its own
//! size, the sizes its entries declare, their number), has an entry whose
//! name could land outside the bundle directory (`..`, an absolute path, a
//! drive letter, a backslash, a NUL or control character, two names that
//! differ only in case), a link, an encrypted entry or one compressed with
//! anything but deflate, local headers that disagree with the central
//! directory (two readers would see two different archives), or a
//! manifest that is invalid or runs something other than the bundle's own
//! files (a shell, inline code such as `node -e` or `python -c`, a program
//! or script outside the bundle, a `${…}` MCPB does not define). Only then
//! does [`unpack`] make its directory (owner-only) and write each file new
//! (`create_new`, never through a link), counting the bytes that actually
//! come out of the decompressor: an entry that inflates past the size it
//! declared stops the extraction, and on any error the directory is
//! removed.
//!
//! [`entry`] turns an unpacked bundle and the user's answers into the
//! command to run, with `${__dirname}`, `${HOME}` and friends replaced and
//! sensitive answers kept out of it (as `${secret:…}` references).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Cursor, Read, Write};
use std::path::{Path, PathBuf};

use zip::{CompressionMethod, ZipArchive};

use self::command::run_targets;

mod command;
mod entry;
mod manifest;
#[cfg(test)]
mod tests;

pub use entry::{Entry, entry};
pub use manifest::{Manifest, PlatformOverride, ServerSpec, UserConfig};

/// What a bundle may cost; a bundle over any of these is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The archive's own size (default 512 MiB).
    pub archive_bytes: u64,
    /// The sum of the unpacked files' sizes (default 2 GiB).
    pub unpacked_bytes: u64,
    /// The number of entries, directories included (default 20 000).
    pub files: usize,
    /// The size of `manifest.json` (default 1 MiB).
    pub manifest_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            archive_bytes: 512 << 20,
            unpacked_bytes: 2 << 30,
            files: 20_000,
            manifest_bytes: 1 << 20,
        }
    }
}

/// Why a bundle was not read, unpacked or made runnable. Entry names and
/// text from the manifest are shown escaped (`escape_debug`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// Reading or writing the bundle's files failed.
    #[error("bundle: {what}")]
    Io {
        /// What was being done, and to which path.
        what: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Not a ZIP archive, a damaged one, or one using what bundles do not
    /// use (encryption, a compression method other than deflate).
    #[error("not a bundle switchboard can read: {reason}")]
    NotZip {
        /// What is wrong with it.
        reason: String,
    },
    /// Too big: the archive, an entry's or all entries' declared sizes,
    /// or the bytes an entry actually inflated to.
    #[error("refused bundle: {what} is {size} bytes, over the limit of {limit}")]
    TooLarge {
        /// What was measured.
        what: String,
        /// Its size (for an entry that lied, the bytes seen so far).
        size: u64,
        /// The limit (for an entry that lied, the size it declared).
        limit: u64,
    },
    /// More entries than [`Limits::files`].
    #[error("refused bundle: it has {count} entries, over the limit of {limit}")]
    TooManyFiles {
        /// The number the archive declares.
        count: u64,
        /// The limit.
        limit: usize,
    },
    /// An entry's name could be written outside the bundle directory or
    /// clash with another's.
    #[error("refused bundle: entry `{name}` {reason}")]
    UnsafePath {
        /// The entry's name, escaped.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// A symbolic link (or Windows reparse point) entry.
    #[error("refused bundle: entry `{name}` is a link, and bundles may not contain links")]
    Link {
        /// The entry's name, escaped.
        name: String,
    },
    /// No `manifest.json` at the top of the archive.
    #[error("not an MCP bundle: the archive has no manifest.json at its top")]
    NoManifest,
    /// The manifest is invalid or of an unsupported kind.
    #[error("invalid bundle manifest: {0}")]
    Manifest(String),
    /// The manifest asks for something refused (a shell, inline code, a
    /// program outside the bundle, another platform).
    #[error("refused bundle: {0}")]
    Refused(String),
    /// An answer to a `user_config` setting is missing or invalid.
    #[error("bundle setting `{key}`: {reason}")]
    Answer {
        /// The setting, escaped.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

impl BundleError {
    fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }

    fn not_zip(reason: impl std::fmt::Display) -> Self {
        Self::NotZip {
            reason: reason.to_string(),
        }
    }
}

/// An unpacked bundle: its directory and its manifest.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The directory it was unpacked into (absolute).
    pub dir: PathBuf,
    /// Its manifest, validated.
    pub manifest: Manifest,
}

impl Bundle {
    /// The bundle [`unpack`]ed into `dir` earlier: its `manifest.json` read
    /// again (never through a link) and validated.
    ///
    /// # Errors
    /// When the manifest cannot be read, is over [`Limits::manifest_bytes`]
    /// or is invalid.
    pub fn open(dir: &Path) -> Result<Self, BundleError> {
        let path = dir.join(MANIFEST);
        let bytes = crate::private_file::read_no_follow(&path)
            .map_err(BundleError::io(format!("reading {}", path.display())))?;
        let limit = Limits::default().manifest_bytes;
        if bytes.len() > limit {
            return Err(too_large("manifest.json", bytes.len() as u64, limit as u64));
        }
        let dir = std::path::absolute(dir)
            .map_err(BundleError::io(format!("resolving {}", dir.display())))?;
        Ok(Self {
            manifest: Manifest::parse(&bytes)?,
            dir,
        })
    }
}

const MANIFEST: &str = "manifest.json";
/// The file type bits of a Unix mode, and the types that matter here.
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;
/// Windows' FILE_ATTRIBUTE_REPARSE_POINT (its symlinks and junctions).
const REPARSE_POINT: u32 = 0x400;

/// Reads the manifest of `archive` (for showing before installing), after
/// the same checks of the whole archive as [`unpack`]; writes nothing.
///
/// # Errors
/// Everything [`unpack`] refuses before writing.
pub fn read_manifest(archive: &[u8], limits: &Limits) -> Result<Manifest, BundleError> {
    Ok(Checked::new(archive, limits)?.manifest)
}

/// Unpacks `archive` into `into`, which must not exist: everything is
/// checked from the central directory before anything is written (see the
/// module docs); `into` is then made owner-only (0700) and each file
/// written new, never through a link, executable (0755) only when the
/// archive says so (never setuid, setgid or sticky). The bytes actually
/// inflated are counted against each entry's declared size and the
/// limits. On any error `into` is removed.
///
/// # Errors
/// [`BundleError`]: the archive's refusals, or an I/O error writing.
pub fn unpack(archive: &[u8], into: &Path, limits: &Limits) -> Result<Bundle, BundleError> {
    let mut checked = Checked::new(archive, limits)?;
    if fs::symlink_metadata(into).is_ok() {
        return Err(BundleError::Io {
            what: format!("unpacking into {}", into.display()),
            source: io::Error::new(io::ErrorKind::AlreadyExists, "it already exists"),
        });
    }
    let dir = std::path::absolute(into)
        .map_err(BundleError::io(format!("resolving {}", into.display())))?;
    crate::private_file::create_private_dir(&dir)
        .map_err(BundleError::io(format!("creating {}", dir.display())))?;
    match checked.extract(&dir, limits) {
        Ok(()) => Ok(Bundle {
            dir,
            manifest: checked.manifest,
        }),
        Err(e) => {
            // `remove_dir_all` never follows links, and the tree holds
            // only what this call wrote.
            let _ = fs::remove_dir_all(&dir);
            Err(e)
        }
    }
}

/// One entry, judged: where it goes (`/`-separated, relative) and how.
#[derive(Debug)]
struct Planned {
    index: usize,
    path: String,
    is_dir: bool,
    executable: bool,
}

/// An archive that passed every check that needs no writing.
struct Checked<'a> {
    zip: ZipArchive<Cursor<&'a [u8]>>,
    planned: Vec<Planned>,
    manifest: Manifest,
}

impl<'a> Checked<'a> {
    fn new(archive: &'a [u8], limits: &Limits) -> Result<Self, BundleError> {
        let len = archive.len() as u64;
        if len > limits.archive_bytes {
            return Err(too_large("the archive", len, limits.archive_bytes));
        }
        // Before the ZIP reader allocates an index of every entry.
        let declared = declared_entries(archive);
        if declared > limits.files as u64 {
            return Err(too_many(declared, limits));
        }
        let mut zip = ZipArchive::new(Cursor::new(archive)).map_err(BundleError::not_zip)?;
        if zip.len() > limits.files {
            return Err(too_many(zip.len() as u64, limits));
        }
        let mut planned = Vec::with_capacity(zip.len());
        let mut seen = HashMap::new();
        let mut total: u64 = 0;
        let mut manifest_index = None;
        for index in 0..zip.len() {
            let entry = zip.by_index_data(index).map_err(BundleError::not_zip)?;
            let name = entry.name().map_err(|_| {
                unsafe_path(
                    &String::from_utf8_lossy(entry.name_raw()),
                    "is not valid text",
                )
            })?;
            let attrs = entry.external_attributes();
            if (attrs >> 16) & S_IFMT == S_IFLNK || attrs & REPARSE_POINT != 0 {
                return Err(BundleError::Link { name: shown(&name) });
            }
            if entry.encrypted() {
                return Err(BundleError::not_zip(format!(
                    "entry `{}` is encrypted",
                    shown(&name)
                )));
            }
            if !matches!(
                entry.compression(),
                CompressionMethod::Stored | CompressionMethod::Deflated
            ) {
                return Err(BundleError::not_zip(format!(
                    "entry `{}` is compressed with {}; bundles use deflate or none",
                    shown(&name),
                    entry.compression()
                )));
            }
            let is_dir = name.ends_with('/');
            let path = safe_path(name.strip_suffix('/').unwrap_or(&name))
                .map_err(|reason| unsafe_path(&name, reason))?;
            claim(&mut seen, &path, is_dir).map_err(|reason| unsafe_path(&name, &reason))?;
            total = total.saturating_add(entry.size());
            if total > limits.unpacked_bytes {
                return Err(too_large(
                    &format!("the unpacked size declared up to entry `{}`", shown(&name)),
                    total,
                    limits.unpacked_bytes,
                ));
            }
            if path == MANIFEST && !is_dir {
                manifest_index = Some(index);
            }
            let executable = entry.unix_mode().is_some_and(|m| m & 0o111 != 0);
            planned.push(Planned {
                index,
                path,
                is_dir,
                executable,
            });
        }
        zip.validate_header_consistency().map_err(|e| {
            BundleError::not_zip(format!(
                "its local headers disagree with its central directory ({e})"
            ))
        })?;
        let index = manifest_index.ok_or(BundleError::NoManifest)?;
        let size = zip
            .by_index_data(index)
            .map_err(BundleError::not_zip)?
            .size();
        if size > limits.manifest_bytes as u64 {
            return Err(too_large(MANIFEST, size, limits.manifest_bytes as u64));
        }
        let mut bytes = Vec::new();
        inflate(
            &mut zip,
            index,
            MANIFEST,
            &mut (limits.manifest_bytes as u64),
            &mut bytes,
        )?;
        let manifest = Manifest::parse(&bytes)?;
        let entry_point = &manifest.server.entry_point;
        if !planned.iter().any(|p| !p.is_dir && p.path == *entry_point) {
            return Err(BundleError::Manifest(format!(
                "server.entry_point `{}` is not a file in the bundle",
                shown(entry_point)
            )));
        }
        for target in run_targets(&manifest.server) {
            let exe = format!("{target}.exe");
            if !planned
                .iter()
                .any(|p| !p.is_dir && (p.path == target || p.path == exe))
            {
                return Err(BundleError::Refused(format!(
                    "mcp_config runs `{}`, which is not a file in the bundle",
                    shown(&target)
                )));
            }
        }
        Ok(Self {
            zip,
            planned,
            manifest,
        })
    }

    fn extract(&mut self, dir: &Path, limits: &Limits) -> Result<(), BundleError> {
        let mut budget = limits.unpacked_bytes;
        for plan in &self.planned {
            let mut target = dir.to_path_buf();
            let mut parts = plan.path.split('/').peekable();
            while let Some(part) = parts.next() {
                target.push(part);
                if parts.peek().is_some() || plan.is_dir {
                    make_dir(&target)?;
                }
            }
            if plan.is_dir {
                continue;
            }
            let mut file = create_file(&target, plan.executable)
                .map_err(BundleError::io(format!("creating {}", target.display())))?;
            inflate(
                &mut self.zip,
                plan.index,
                &plan.path,
                &mut budget,
                &mut file,
            )?;
        }
        Ok(())
    }
}

/// Copies entry `index` out of the archive into `out`, inflating it here
/// rather than in the ZIP reader so that every byte is counted: past the
/// entry's declared size, or past `budget`, it stops before writing the
/// chunk that crossed. Checks the length and CRC at the end.
fn inflate(
    zip: &mut ZipArchive<Cursor<&[u8]>>,
    index: usize,
    name: &str,
    budget: &mut u64,
    out: &mut dyn Write,
) -> Result<(), BundleError> {
    let raw = zip.by_index_raw(index).map_err(BundleError::not_zip)?;
    let (declared, crc) = (raw.size(), raw.crc32());
    let mut reader: Box<dyn Read + '_> = match raw.compression() {
        CompressionMethod::Deflated => Box::new(flate2::read::DeflateDecoder::new(raw)),
        _ => Box::new(raw),
    };
    copy_counted(&mut reader, out, name, declared, budget, crc)
}

/// [`inflate`]'s loop, apart so that a test can feed it a lying reader.
fn copy_counted(
    reader: &mut dyn Read,
    out: &mut dyn Write,
    name: &str,
    declared: u64,
    budget: &mut u64,
    crc: u32,
) -> Result<(), BundleError> {
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0; 64 << 10];
    let mut written: u64 = 0;
    loop {
        let n = reader.read(&mut buf).map_err(|e| {
            BundleError::not_zip(format!("entry `{}` is damaged ({e})", shown(name)))
        })?;
        if n == 0 {
            break;
        }
        written += n as u64;
        if written > declared {
            let what = format!(
                "entry `{}` (inflating past the size it declares)",
                shown(name)
            );
            return Err(too_large(&what, written, declared));
        }
        if written > *budget {
            return Err(too_large("the unpacked files", written, *budget));
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(BundleError::io(format!("writing `{}`", shown(name))))?;
    }
    if written != declared {
        return Err(BundleError::not_zip(format!(
            "entry `{}` ends after {written} of the {declared} bytes it declares",
            shown(name)
        )));
    }
    if hasher.finalize() != crc {
        return Err(BundleError::not_zip(format!(
            "entry `{}` fails its CRC check",
            shown(name)
        )));
    }
    *budget -= written;
    Ok(())
}

/// The number of entries the end-of-central-directory records declare:
/// the largest over every candidate record near the end (the ZIP reader
/// may fall back from one to another), 0 when there is none.
fn declared_entries(archive: &[u8]) -> u64 {
    const EOCD: &[u8] = b"PK\x05\x06";
    let start = archive.len().saturating_sub(22 + (1 << 16));
    let u16_at = |at: usize| {
        archive
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u64_at = |at: usize| {
        let b = archive.get(at..at + 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    };
    let mut most = 0;
    for at in (start..archive.len().saturating_sub(3)).filter(|&at| &archive[at..at + 4] == EOCD) {
        let mut count = u64::from(u16_at(at + 10).unwrap_or(0));
        // ZIP64: a locator just before points at the record with the count.
        if count == 0xFFFF
            && let Some(locator) = at.checked_sub(20)
            && archive[locator..].starts_with(b"PK\x06\x07")
            && let Some(record) = u64_at(locator + 8).and_then(|r| usize::try_from(r).ok())
            && archive
                .get(record..)
                .is_some_and(|r| r.starts_with(b"PK\x06\x06"))
        {
            count = u64_at(record + 32).unwrap_or(u64::MAX);
        }
        most = most.max(count);
    }
    most
}

/// `name` as a relative `/`-separated path that stays inside the bundle
/// directory on every platform, or why not.
pub(crate) fn safe_path(name: &str) -> Result<String, &'static str> {
    if name.is_empty() {
        return Err("has an empty name");
    }
    if name.contains('\0') {
        return Err("contains a NUL byte");
    }
    if name.chars().any(char::is_control) {
        return Err("contains a control character");
    }
    if name.contains('\\') {
        return Err("contains a backslash (a Windows path separator)");
    }
    if name.contains(':') {
        return Err("contains a colon (a drive letter or a Windows stream)");
    }
    if name.starts_with('/') {
        return Err("is an absolute path");
    }
    for part in name.split('/') {
        match part {
            ".." => return Err("climbs out of the bundle directory (`..`)"),
            "" | "." => return Err("has an empty or `.` path component"),
            _ => {}
        }
    }
    Ok(name.to_owned())
}

/// Records `path` (and its parents, as directories) in `seen`, keyed by
/// lowercase so that names differing only in case, which are one file on
/// macOS and Windows, clash everywhere; or why it clashes.
fn claim(seen: &mut HashMap<String, bool>, path: &str, is_dir: bool) -> Result<(), String> {
    let lower = path.to_lowercase();
    let mut end = 0;
    for part in lower.split('/') {
        end += part.len();
        let prefix = &lower[..end];
        let last = end == lower.len();
        let wanted_dir = !last || is_dir;
        match seen.get(prefix) {
            Some(&dir) if dir && wanted_dir => {}
            Some(_) => {
                return Err(format!(
                    "clashes with another entry at `{}` (same name, or differing only in case, or a file where a directory is)",
                    shown(&path[..end])
                ));
            }
            None => {
                seen.insert(prefix.to_owned(), wanted_dir);
            }
        }
        end += 1;
    }
    Ok(())
}

/// Makes directory `path` unless it is already one (never a link).
fn make_dir(path: &Path) -> Result<(), BundleError> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o755);
    match builder.create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => Ok(()),
            _ => Err(BundleError::Io {
                what: format!("creating directory {}", path.display()),
                source: e,
            }),
        },
        Err(e) => Err(BundleError::io(format!(
            "creating directory {}",
            path.display()
        ))(e)),
    }
}

/// A new file (failing if anything, a link included, has the name).
fn create_file(path: &Path, executable: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mode = if executable { 0o755 } else { 0o644 };
        options.mode(mode).custom_flags(libc::O_NOFOLLOW);
    }
    #[cfg(not(unix))]
    let _ = executable;
    options.open(path)
}

/// Text from the archive as it may be shown: escaped, and cut at 200
/// characters.
pub(crate) fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(200)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(200).is_some() {
        out.push('…');
    }
    out
}

fn unsafe_path(name: &str, reason: &str) -> BundleError {
    BundleError::UnsafePath {
        name: shown(name),
        reason: reason.to_owned(),
    }
}

fn too_large(what: &str, size: u64, limit: u64) -> BundleError {
    BundleError::TooLarge {
        what: what.to_owned(),
        size,
        limit,
    }
}

fn too_many(count: u64, limits: &Limits) -> BundleError {
    BundleError::TooManyFiles {
        count,
        limit: limits.files,
    }
}
