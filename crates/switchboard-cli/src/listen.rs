//! `serve --http`'s listener settings: where the bearer token comes from
//! (generated at start and written 0600 in a private directory; a file of
//! the user's own, `--token-file`; `SWITCHBOARD_TOKEN`; or none with
//! `--no-auth`), never from the command line, which every local user can
//! read in `/proc/PID/cmdline`; and files holding secrets (the token file,
//! the session key) refused unless they are the user's and closed to
//! everyone else.

use std::path::{Path, PathBuf};

use crate::failure::Failure;

/// The environment variable a token may come from.
pub(crate) const TOKEN_VAR: &str = "SWITCHBOARD_TOKEN";

/// Where the listener's bearer token comes from.
#[derive(Debug)]
pub(crate) enum TokenSource {
    /// Made at start, written to a private file, shown once.
    Generate,
    /// Given (by `--token-file` or the environment).
    Given(String),
    /// `--no-auth`: anyone who reaches the port calls every tool.
    Off,
}

/// What `serve --http` was told about its listener.
pub(crate) struct Listener {
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) token: TokenSource,
    pub(crate) session_key: Option<switchboard::server::http::SessionKey>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) max_connections: Option<usize>,
    /// Hosts as users (`--issuer`): no static token then.
    pub(crate) users: Option<crate::hub::host_auth::HostUsers>,
}

/// The token source from the flags and the environment.
///
/// # Errors
/// A token given on the command line, a token file that is not private or
/// cannot be read, a token too short.
pub(crate) fn token_source(
    on_command_line: Option<&str>,
    token_file: Option<&Path>,
    no_auth: bool,
) -> Result<TokenSource, Failure> {
    if on_command_line.is_some() {
        return Err(Failure::usage(anyhow::anyhow!(
            "--token puts the token on the command line, where every local user can read it \
             (/proc/PID/cmdline): write it to a file only you can read and give \
             --token-file FILE, or set {TOKEN_VAR}; leave both out and a token is generated"
        )));
    }
    if no_auth {
        return Ok(TokenSource::Off);
    }
    let (token, from) = match token_file {
        Some(path) => {
            let text = read_private(path, "token file")?;
            (
                text.trim().to_owned(),
                format!("the token in {}", path.display()),
            )
        }
        None => match std::env::var(TOKEN_VAR) {
            Ok(token) => (token.trim().to_owned(), TOKEN_VAR.to_owned()),
            Err(std::env::VarError::NotPresent) => return Ok(TokenSource::Generate),
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(Failure::usage(anyhow::anyhow!(
                    "{TOKEN_VAR} is not valid UTF-8"
                )));
            }
        },
    };
    switchboard::server::http::check_token(&token)
        .map_err(|why| Failure::usage(anyhow::anyhow!("cannot use {from}: {why}")))?;
    Ok(TokenSource::Given(token))
}

/// Reads a file that holds a secret, after checking that it is a regular
/// file of the current user that no one else may read or write.
///
/// # Errors
/// What is wrong with the file, and the command that fixes it.
pub(crate) fn read_private(path: &Path, what: &str) -> Result<String, Failure> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot read the {what} {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(Failure::usage(anyhow::anyhow!(
            "the {what} {shown} is not a regular file"
        )));
    }
    let uid = rustix::process::getuid().as_raw();
    if meta.uid() != uid {
        return Err(Failure::usage(anyhow::anyhow!(
            "the {what} {shown} belongs to another user (uid {}): use a file of your own \
             (uid {uid})",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "the {what} {shown} is open to other users (mode {mode:03o}): run \
             `chmod 600 {shown}`"
        )));
    }
    std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot read the {what} {shown}: {e}")))
}

/// The directory a generated token is written in: the user's runtime
/// directory, else the state directory.
fn token_dir() -> Option<PathBuf> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_RUNTIME_DIR")
        .or_else(|| absolute("XDG_STATE_HOME"))
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state")))
        .map(|dir| dir.join("switchboard"))
}

/// The token the listener on `port` requires, if any: a generated one is
/// written to `serve-PORT.token` (0600, in a 0700 directory of the
/// user's own, never through a symlink) and shown once on stderr with its
/// path; `--no-auth` is warned about.
///
/// # Errors
/// No randomness, no directory to write it in, or the write failing.
pub(crate) fn token_for(
    source: TokenSource,
    port: u16,
) -> Result<(Option<String>, Option<TokenFile>), Failure> {
    match source {
        TokenSource::Off => {
            eprintln!(
                "warning: --no-auth: no token is required, so any process that reaches this \
                 port (every local user, any sidecar on this network) calls every tool and \
                 reads every resource with your credentials"
            );
            Ok((None, None))
        }
        TokenSource::Given(token) => Ok((Some(token), None)),
        TokenSource::Generate => {
            let token = switchboard::server::http::generate_token()
                .map_err(|e| Failure::usage(anyhow::anyhow!("cannot generate a token: {e}")))?;
            let dir = token_dir().ok_or_else(|| {
                Failure::usage(anyhow::anyhow!(
                    "no directory to write the token in (XDG_RUNTIME_DIR and HOME are unset): \
                     give --token-file FILE or set {TOKEN_VAR}"
                ))
            })?;
            let path = dir.join(format!("serve-{port}.token"));
            write_token(&dir, &path, &token).map_err(|e| {
                Failure::usage(anyhow::anyhow!(
                    "cannot write the token to {}: {e}",
                    path.display()
                ))
            })?;
            eprintln!(
                "token: {token}\n(written to {}, readable by you only; hosts send it as \
                 `Authorization: Bearer TOKEN`)",
                path.display()
            );
            let file = TokenFile {
                path,
                token: token.clone(),
            };
            Ok((Some(token), Some(file)))
        }
    }
}

/// Writes `text` to `name` in switchboard's private runtime directory
/// (0600, in a 0700 directory of the user's own, never through a
/// symlink); the file is removed when the returned guard is dropped.
pub(crate) fn private_runtime_file(name: &str, text: &str) -> std::io::Result<TokenFile> {
    let dir = token_dir().ok_or_else(|| {
        std::io::Error::other("no private directory: XDG_RUNTIME_DIR and HOME are unset")
    })?;
    let path = dir.join(name);
    write_token(&dir, &path, text)?;
    Ok(TokenFile {
        path,
        token: text.trim().to_owned(),
    })
}

impl TokenFile {
    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// A generated token's file: removed when the gateway stops (dropped, as
/// a signal drops the command), unless another run has written its own
/// there since.
pub(crate) struct TokenFile {
    path: PathBuf,
    token: String,
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        let ours = std::fs::read_to_string(&self.path).is_ok_and(|t| t.trim() == self.token);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn write_token(dir: &Path, path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    switchboard_hub::private_file::create_private_dir(dir)?;
    // A token of an earlier run (or anything planted at the name) goes;
    // removing a symlink removes the link, never its target.
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = switchboard_hub::private_file::create_new_private(path)?;
    file.write_all(format!("{token}\n").as_bytes())?;
    file.sync_all()
}
