//! What the registry client keeps and fetches besides its pages: answers
//! kept on disk between runs as the registry's cache headers allow, and a
//! package's `.mcpb` bundle downloaded and checked against the
//! registry's `fileSha256`.
//!
//! The disk cache is one file per URL (named by the URL's SHA-256) in a
//! directory only the user can enter; a file is used only when it names
//! the same URL, is no larger than an answer may be, and is not a
//! symlink. A bundle is downloaded only over `https` from a public host,
//! or from the registry's own origin (a private registry serves its
//! bundles itself); each redirect is held to the same rule; it is bounded
//! in size and refused unless its SHA-256 is the one the registry gave.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::{MAX_ANSWER, Package, RegistryClient, RegistryError};

/// The largest bundle downloaded by default
/// ([`RegistryClient::with_max_bundle`] sets another).
pub const MAX_BUNDLE: u64 = 256 * 1024 * 1024;

/// How long a bundle download may take.
pub const BUNDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// A cached answer on disk.
#[derive(Serialize, Deserialize)]
pub(super) struct DiskEntry {
    pub(super) url: String,
    /// Seconds since the epoch until which it is fresh.
    pub(super) fresh_until: u64,
    pub(super) etag: Option<String>,
    pub(super) body: String,
}

/// The disk cache's directory.
#[derive(Clone, Debug)]
pub(super) struct DiskCache {
    dir: PathBuf,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl DiskCache {
    pub(super) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn path(&self, url: &str) -> PathBuf {
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, url.as_bytes());
        let name: String = digest.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.dir.join(format!("{name}.json"))
    }

    /// The entry for `url` and how long it stays fresh (zero: stale).
    pub(super) fn read(&self, url: &str) -> Option<(DiskEntry, Duration)> {
        let path = self.path(url);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > (MAX_ANSWER as u64) * 2 + 4096 {
            return None;
        }
        let bytes = crate::private_file::read_no_follow(&path).ok()?;
        let entry: DiskEntry = serde_json::from_slice(&bytes).ok()?;
        if entry.url != url {
            return None;
        }
        let left = Duration::from_secs(entry.fresh_until.saturating_sub(now()).min(3600));
        Some((entry, left))
    }

    /// Keeps `body` for `url`; a failure only costs the next run a fetch.
    pub(super) fn write(&self, url: &str, body: &[u8], fresh_for: Duration, etag: Option<&str>) {
        let Ok(body) = std::str::from_utf8(body) else {
            return;
        };
        let entry = DiskEntry {
            url: url.to_owned(),
            fresh_until: now() + fresh_for.as_secs(),
            etag: etag.map(str::to_owned),
            body: body.to_owned(),
        };
        let Ok(bytes) = serde_json::to_vec(&entry) else {
            return;
        };
        if crate::private_file::create_private_dir(&self.dir).is_ok() {
            let _ = crate::private_file::write_atomically(&self.path(url), &bytes, false);
        }
    }
}

/// Whether a bundle may be fetched from `url`: `https` to a public host,
/// or the registry's own origin.
fn allowed(url: &reqwest::Url, registry: &reqwest::Url) -> Result<(), String> {
    if url.origin() == registry.origin() {
        return Ok(());
    }
    if url.scheme() != "https" {
        return Err(format!("it is `{}`, not https", url.scheme()));
    }
    if super::plan::private_host(url) {
        return Err("it is on a private or loopback address".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("it holds a user name or password".into());
    }
    Ok(())
}

impl RegistryClient {
    /// `package`'s `.mcpb` bundle, downloaded and checked against its
    /// `fileSha256`.
    ///
    /// # Errors
    /// [`RegistryError::Bundle`] naming the URL and why: not an MCPB
    /// package, no `fileSha256`, a URL or redirect that is not `https` to
    /// a public host (nor the registry's origin), an error status, larger
    /// than the client's limit ([`MAX_BUNDLE`] by default), or a SHA-256
    /// other than the registry's.
    pub async fn download_bundle(&self, package: &Package) -> Result<Vec<u8>, RegistryError> {
        let refused = |reason: String| RegistryError::Bundle {
            url: package.identifier.clone(),
            reason,
        };
        if package.registry_type != "mcpb" {
            return Err(refused(format!(
                "the package is `{}`, not an MCPB bundle",
                package.registry_type
            )));
        }
        let expected = package
            .file_sha256
            .as_deref()
            .map(str::to_ascii_lowercase)
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| {
                refused("the registry gives no valid `fileSha256` to check it against".into())
            })?;
        let url = reqwest::Url::parse(&package.identifier)
            .map_err(|e| refused(format!("not a URL ({e})")))?;
        allowed(&url, &self.base).map_err(refused)?;
        let registry = self.base.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("more than 5 redirects")
            } else if let Err(why) = allowed(attempt.url(), &registry) {
                let to = attempt.url().to_string();
                attempt.error(format!("a redirect to {to}: {why}"))
            } else {
                attempt.follow()
            }
        });
        let http = switchboard::transport::http::reqwest_builder()
            .map_err(|e| refused(e.to_string()))?
            .timeout(BUNDLE_TIMEOUT)
            .redirect(policy)
            .build()
            .map_err(|e| refused(e.to_string()))?;
        let mut response = http.get(url).send().await.map_err(|e| {
            let why = std::error::Error::source(&e).map(ToString::to_string);
            refused(format!(
                "it could not be fetched: {}",
                why.unwrap_or_else(|| e.without_url().to_string())
            ))
        })?;
        if !response.status().is_success() {
            return Err(refused(format!(
                "it answered HTTP {}",
                response.status().as_u16()
            )));
        }
        let limit = self.max_bundle;
        let too_large = || refused(format!("it is larger than {limit} bytes"));
        if response.content_length().is_some_and(|l| l > limit) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        let mut digest = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| refused(format!("the download broke off: {}", e.without_url())))?
        {
            if body.len() as u64 + chunk.len() as u64 > limit {
                return Err(too_large());
            }
            digest.update(&chunk);
            body.extend_from_slice(&chunk);
        }
        let actual: String = digest
            .finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if actual != expected {
            return Err(refused(format!(
                "its SHA-256 is {actual}, not the registry's {expected}: it is not the bundle that was published"
            )));
        }
        Ok(body)
    }
}
