//! Secrets a server entry refers to as `${secret:SERVER.KEY}`: the values
//! of an installed bundle's `user_config` marked sensitive, kept out of
//! every config file.
//!
//! They live in one file, `secrets.json` in switchboard's data directory,
//! written owner-only and never through a symlink ([`crate::private_file`]);
//! a file another user could read or write, or that belongs to someone
//! else, is refused rather than used. A secret is given only to the server
//! it is named for, and only when that server comes from the user's own
//! files (user, managed or `--config`), never a project's: a cloned
//! repository cannot name `${secret:…}` to have it sent somewhere
//! ([`super::expand`] enforces both).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use super::locations::Locations;

/// Why the secrets file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretsError {
    /// It could not be read or written.
    #[error("the secrets file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// It is not switchboard's JSON.
    #[error("the secrets file {path} is not valid ({reason}); remove it and install again")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Someone else could read or change it.
    #[error("the secrets file {path} {reason}; it is not used (`chmod 600` it if it is yours)")]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// Whose it is or who can read it.
        reason: String,
    },
}

/// The stored secrets, `SERVER.KEY` → value.
#[derive(Clone, Default)]
pub struct Secrets {
    path: PathBuf,
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("path", &self.path)
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Document {
    version: u32,
    secrets: BTreeMap<String, String>,
}

impl Secrets {
    /// Where they are kept for `locations`.
    #[must_use]
    pub fn file(locations: &Locations) -> PathBuf {
        locations.data_dir().join("secrets.json")
    }

    /// The stored secrets (none when there is no file yet).
    ///
    /// # Errors
    /// When the file cannot be read, is not valid, or is not private.
    pub fn load(locations: &Locations) -> Result<Self, SecretsError> {
        Self::load_from(Self::file(locations))
    }

    fn load_from(path: PathBuf) -> Result<Self, SecretsError> {
        let bytes = match crate::private_file::read_no_follow(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Self {
                    path,
                    values: BTreeMap::new(),
                });
            }
            Err(source) => return Err(SecretsError::Io { path, source }),
        };
        check_private(&path)?;
        let document: Document =
            serde_json::from_slice(&bytes).map_err(|e| SecretsError::Invalid {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if document.version != 1 {
            return Err(SecretsError::Invalid {
                path,
                reason: format!("version {} is not known", document.version),
            });
        }
        Ok(Self {
            path,
            values: document.secrets,
        })
    }

    /// The value of `name` (`SERVER.KEY`).
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The names stored for `server` (never the values).
    #[must_use]
    pub fn names_of(&self, server: &str) -> Vec<String> {
        let prefix = format!("{server}.");
        self.values
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .cloned()
            .collect()
    }

    /// Replaces `server`'s secrets with `values` (`KEY` → value).
    pub fn set_server(&mut self, server: &str, values: &BTreeMap<String, String>) {
        self.remove_server(server);
        for (key, value) in values {
            self.values.insert(format!("{server}.{key}"), value.clone());
        }
    }

    /// Forgets `server`'s secrets; how many there were.
    pub fn remove_server(&mut self, server: &str) -> usize {
        let prefix = format!("{server}.");
        let before = self.values.len();
        self.values.retain(|k, _| !k.starts_with(&prefix));
        before - self.values.len()
    }

    /// Writes them back, owner-only and atomically.
    ///
    /// # Errors
    /// When the directory or file cannot be written.
    pub fn save(&self) -> Result<(), SecretsError> {
        let io = |source| SecretsError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            crate::private_file::create_private_dir(dir).map_err(io)?;
        }
        let document = Document {
            version: 1,
            secrets: self.values.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&document).map_err(|e| io(io::Error::other(e)))?;
        crate::private_file::write_atomically(&self.path, &bytes, false).map_err(io)
    }
}

/// Refuses a file another user owns or could read or write.
fn check_private(path: &Path) -> Result<(), SecretsError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::symlink_metadata(path).map_err(|source| SecretsError::Io {
            path: path.to_owned(),
            source,
        })?;
        if meta.uid() != rustix::process::getuid().as_raw() {
            return Err(SecretsError::Unsafe {
                path: path.to_owned(),
                reason: format!("belongs to another user (uid {})", meta.uid()),
            });
        }
        if meta.mode() & 0o077 != 0 {
            return Err(SecretsError::Unsafe {
                path: path.to_owned(),
                reason: format!(
                    "can be read or written by others (mode {:o})",
                    meta.mode() & 0o777
                ),
            });
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_kept_per_server_and_refused_when_others_can_read_them() {
        let dir = std::env::temp_dir().join(format!("sb-secrets-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("data").join("secrets.json");
        let mut secrets = Secrets::load_from(path.clone()).unwrap();
        assert!(secrets.get("pdf.api_key").is_none());
        secrets.set_server(
            "pdf",
            &BTreeMap::from([("api_key".into(), "s3cret".into())]),
        );
        secrets.set_server("pdfx", &BTreeMap::from([("token".into(), "other".into())]));
        secrets.save().unwrap();
        let again = Secrets::load_from(path.clone()).unwrap();
        assert_eq!(again.get("pdf.api_key"), Some("s3cret"));
        assert_eq!(again.names_of("pdf"), ["pdf.api_key"]);
        let mut again = again;
        assert_eq!(again.remove_server("pdf"), 1);
        assert_eq!(again.names_of("pdfx"), ["pdfx.token"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let error = Secrets::load_from(path.clone()).unwrap_err();
            assert!(
                error.to_string().contains("read or written by others"),
                "{error}"
            );
            // A symlink planted at its name is not followed.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            let planted = dir.join("planted.json");
            std::os::unix::fs::symlink(&path, &planted).unwrap();
            assert!(Secrets::load_from(planted).is_err());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
