//! Where config files live: the home and project directories, the
//! platform's config directories and the environment, gathered once so
//! that tests never touch the real home.
//!
//! The standard files, per dialect (`~` is [`Locations::home`], `CONFIG`
//! the platform config directory: `$XDG_CONFIG_HOME` or `~/.config` on
//! Linux, `~/Library/Application Support` on macOS, `%APPDATA%` on
//! Windows; `ROOT` the project root, `CWD` the working directory):
//!
//! | dialect | scope | file |
//! |---|---|---|
//! | switchboard | managed | `/etc/switchboard/managed.toml` (macOS `/Library/Application Support/switchboard/managed.toml`, Windows `%ProgramData%\switchboard\managed.toml`) |
//! | switchboard | local | `ROOT/switchboard.local.toml` |
//! | switchboard | project | `ROOT/switchboard.toml` |
//! | switchboard | user | `CONFIG/switchboard/config.toml` |
//! | Claude Code | managed | `/etc/claude-code/managed-mcp.json` (macOS `/Library/Application Support/ClaudeCode/managed-mcp.json`, Windows `C:\ProgramData\ClaudeCode\managed-mcp.json`); its policy in `managed-settings.json` beside it |
//! | Claude Code | local | `~/.claude.json` → `projects.<CWD>.mcpServers`, then `projects.<ROOT>.mcpServers` |
//! | Claude Code | project | `.mcp.json` in `CWD` and each parent up to `/` (nearer wins) |
//! | Claude Code | user | `~/.claude.json` → `mcpServers` |
//! | Claude Desktop | user | `CONFIG/Claude/claude_desktop_config.json` |
//! | VS Code | project | `ROOT/.vscode/mcp.json` |
//! | VS Code | user | `CONFIG/Code/User/mcp.json` |
//! | Cursor | project | `ROOT/.cursor/mcp.json` |
//! | Cursor | user | `~/.cursor/mcp.json` |
//! | Codex | project | `ROOT/.codex/config.toml` (Codex reads it for trusted projects) |
//! | Codex | user | `$CODEX_HOME/config.toml`, default `~/.codex/config.toml` |
//! | Gemini CLI | project | `ROOT/.gemini/settings.json` |
//! | Gemini CLI | user | `~/.gemini/settings.json` |
//! | goose | user | `$GOOSE_CONFIG_DIR` or `~/.config/goose/config.yaml` (Linux and macOS), `%APPDATA%\Block\goose\config\config.yaml` (Windows) |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::model::{Dialect, Scope};

/// The operating system whose conventions decide the standard paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Os {
    /// Linux and other Unix-likes (XDG).
    Linux,
    /// macOS.
    MacOs,
    /// Windows.
    Windows,
}

impl Os {
    /// The OS this program was built for.
    pub fn current() -> Self {
        if cfg!(target_os = "macos") {
            Self::MacOs
        } else if cfg!(windows) {
            Self::Windows
        } else {
            Self::Linux
        }
    }
}

/// The home and project directories, the OS and the environment variables
/// the loader and the expander read. Built from the process with
/// [`Locations::from_process`], or by hand in tests.
#[derive(Clone, Debug)]
pub struct Locations {
    home: PathBuf,
    cwd: PathBuf,
    project_root: PathBuf,
    os: Os,
    env: BTreeMap<String, String>,
    managed_dir: Option<PathBuf>,
}

impl Locations {
    /// Locations for `home` and working directory `cwd` on this OS, with
    /// no environment variables; the project root is the nearest ancestor
    /// of `cwd` holding `.git`, or `cwd`.
    pub fn new(home: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        let project_root = find_project_root(&cwd);
        Self {
            home: home.into(),
            cwd,
            project_root,
            os: Os::current(),
            env: BTreeMap::new(),
            managed_dir: None,
        }
    }

    /// The real process: `$HOME` (`%USERPROFILE%`), the current directory
    /// and the whole environment.
    ///
    /// # Errors
    /// When neither the home directory nor the current directory can be
    /// found, saying which.
    pub fn from_process() -> Result<Self, String> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let home = env
            .get("HOME")
            .or_else(|| env.get("USERPROFILE"))
            .filter(|h| !h.is_empty())
            .ok_or("neither HOME nor USERPROFILE is set: cannot find the user's config files")?;
        let cwd = std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?;
        Ok(Self::new(home.clone(), cwd).with_env(env))
    }

    /// Replaces the environment variables.
    #[must_use]
    pub fn with_env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = env;
        self
    }

    /// Sets one environment variable.
    #[must_use]
    pub fn with_var(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Uses the conventions of `os` for the standard paths.
    #[must_use]
    pub fn with_os(mut self, os: Os) -> Self {
        self.os = os;
        self
    }

    /// Sets the project root (default: found from the working directory).
    #[must_use]
    pub fn with_project_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.project_root = root.into();
        self
    }

    /// Looks for managed (administrator) files in `dir` instead of the
    /// system directories (for tests and packagers).
    #[must_use]
    pub fn with_managed_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.managed_dir = Some(dir.into());
        self
    }

    /// The user's home directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The project root (`${workspaceFolder}`).
    pub fn project_root(&self) -> &Path {
        &self.project_root
    }

    /// The OS whose conventions apply.
    pub fn os(&self) -> Os {
        self.os
    }

    /// An environment variable, `None` when unset.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    fn var_path(&self, name: &str) -> Option<PathBuf> {
        self.var(name).filter(|v| !v.is_empty()).map(PathBuf::from)
    }

    /// The platform's per-user config directory.
    pub fn config_dir(&self) -> PathBuf {
        match self.os {
            Os::Linux => self
                .var_path("XDG_CONFIG_HOME")
                .unwrap_or_else(|| self.home.join(".config")),
            Os::MacOs => self.home.join("Library/Application Support"),
            Os::Windows => self
                .var_path("APPDATA")
                .unwrap_or_else(|| self.home.join("AppData").join("Roaming")),
        }
    }

    fn system_dir(&self, linux: &str, macos: &str, windows: &str) -> PathBuf {
        if let Some(dir) = &self.managed_dir {
            return dir.clone();
        }
        match self.os {
            Os::Linux => PathBuf::from(linux),
            Os::MacOs => PathBuf::from(macos),
            Os::Windows => self
                .var_path("ProgramData")
                .unwrap_or_else(|| PathBuf::from(r"C:\ProgramData"))
                .join(windows),
        }
    }

    /// switchboard's user file.
    pub fn switchboard_user_file(&self) -> PathBuf {
        self.config_dir().join("switchboard").join("config.toml")
    }

    /// switchboard's project file.
    pub fn switchboard_project_file(&self) -> PathBuf {
        self.project_root.join("switchboard.toml")
    }

    /// switchboard's local (per project, not checked in) file.
    pub fn switchboard_local_file(&self) -> PathBuf {
        self.project_root.join("switchboard.local.toml")
    }

    /// switchboard's managed file.
    pub fn switchboard_managed_file(&self) -> PathBuf {
        self.system_dir(
            "/etc/switchboard",
            "/Library/Application Support/switchboard",
            "switchboard",
        )
        .join("managed.toml")
    }

    /// Claude Code's managed `managed-mcp.json`.
    pub fn claude_code_managed_file(&self) -> PathBuf {
        self.claude_code_managed_dir().join("managed-mcp.json")
    }

    /// Claude Code's managed `managed-settings.json` (its MCP policy).
    pub fn claude_code_managed_settings(&self) -> PathBuf {
        self.claude_code_managed_dir().join("managed-settings.json")
    }

    fn claude_code_managed_dir(&self) -> PathBuf {
        self.system_dir(
            "/etc/claude-code",
            "/Library/Application Support/ClaudeCode",
            "ClaudeCode",
        )
    }

    /// The managed files that, when present, are the only source.
    pub fn managed_files(&self) -> Vec<(PathBuf, Dialect)> {
        vec![
            (self.switchboard_managed_file(), Dialect::Switchboard),
            (self.claude_code_managed_file(), Dialect::ClaudeCode),
        ]
    }

    /// `~/.claude.json`.
    pub fn claude_json(&self) -> PathBuf {
        self.home.join(".claude.json")
    }

    /// Every `.mcp.json` from the project's top down to the working
    /// directory (farthest first, so a nearer file overrides it). The walk
    /// up from the working directory stops at the nearest directory holding
    /// `.git` or at the home directory, whichever comes first, and never
    /// goes above it: a `.mcp.json` planted in a shared parent (`/tmp`,
    /// `/`) is not read. Outside the home directory and any repository,
    /// only the working directory's file is read.
    pub fn mcp_json_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut top_found = false;
        for dir in self.cwd.ancestors() {
            files.push(dir.join(".mcp.json"));
            // A project root set by hand counts as one, as does a
            // repository's top and the home directory.
            if (dir == self.project_root && dir != self.cwd)
                || dir == self.home
                || dir.join(".git").exists()
            {
                top_found = true;
                break;
            }
        }
        if !top_found {
            files.truncate(1);
        }
        files.reverse();
        files
    }

    /// switchboard's per-user cache directory (what can be fetched again):
    /// `$XDG_CACHE_HOME/switchboard` (else `~/.cache/switchboard`) on Linux,
    /// `~/Library/Caches/switchboard` on macOS, `%LOCALAPPDATA%\switchboard`
    /// on Windows.
    pub fn cache_dir(&self) -> PathBuf {
        match self.os {
            Os::Linux => self
                .var_path("XDG_CACHE_HOME")
                .unwrap_or_else(|| self.home.join(".cache")),
            Os::MacOs => self.home.join("Library/Caches"),
            Os::Windows => self
                .var_path("LOCALAPPDATA")
                .unwrap_or_else(|| self.home.join("AppData").join("Local")),
        }
        .join("switchboard")
    }

    /// switchboard's per-user data directory, where it keeps approvals and
    /// state: `$XDG_DATA_HOME/switchboard` (else `~/.local/share/switchboard`)
    /// on Linux, `~/Library/Application Support/switchboard` on macOS,
    /// `%APPDATA%\switchboard` on Windows.
    pub fn data_dir(&self) -> PathBuf {
        match self.os {
            Os::Linux => self
                .var_path("XDG_DATA_HOME")
                .unwrap_or_else(|| self.home.join(".local/share"))
                .join("switchboard"),
            Os::MacOs | Os::Windows => self.config_dir().join("switchboard"),
        }
    }

    /// The file that remembers which project servers the user approved.
    pub fn approvals_file(&self) -> PathBuf {
        self.data_dir().join("approvals.json")
    }

    /// Whether `file` is one the user controls wherever they work (in the
    /// home directory's config locations), as opposed to one that comes
    /// with a project: `~/.claude.json` holds Claude Code's local scope
    /// but is the user's own file.
    pub fn is_user_file(&self, file: &Path) -> bool {
        // Working in the home directory, a project's `.codex/config.toml`
        // or `.cursor/mcp.json` is the user's own file of that client.
        file == self.claude_json()
            || self
                .every_standard_file()
                .iter()
                .any(|(f, _, scope)| *scope == Scope::User && f == file)
            || file.parent() == Some(self.home.as_path())
                && file.file_name().is_some_and(|n| n == ".claude.json")
    }

    /// Every standard file except the managed ones, with its dialect and
    /// scope, in a fixed order. `~/.claude.json` appears once (user);
    /// its per-project sections are read from the same file.
    pub fn standard_files(&self) -> Vec<(PathBuf, Dialect, Scope)> {
        let mut files = self.every_standard_file();
        // The same file can be reached twice (cwd = home); read it once.
        let mut seen = std::collections::BTreeSet::new();
        files.retain(|(f, _, _)| seen.insert(f.clone()));
        files
    }

    /// [`standard_files`](Self::standard_files) before a file reached
    /// twice is dropped.
    fn every_standard_file(&self) -> Vec<(PathBuf, Dialect, Scope)> {
        use Dialect::*;
        let root = &self.project_root;
        let mut files = vec![
            (self.switchboard_local_file(), Switchboard, Scope::Local),
            (self.switchboard_project_file(), Switchboard, Scope::Project),
            (self.switchboard_user_file(), Switchboard, Scope::User),
        ];
        files.extend(
            self.mcp_json_files()
                .into_iter()
                .map(|f| (f, ClaudeCode, Scope::Project)),
        );
        files.push((self.claude_json(), ClaudeCode, Scope::User));
        files.push((root.join(".vscode/mcp.json"), VsCode, Scope::Project));
        files.push((
            self.config_dir().join("Code/User/mcp.json"),
            VsCode,
            Scope::User,
        ));
        files.push((root.join(".cursor/mcp.json"), Cursor, Scope::Project));
        files.push((self.home.join(".cursor/mcp.json"), Cursor, Scope::User));
        files.push((root.join(".gemini/settings.json"), Gemini, Scope::Project));
        files.push((self.home.join(".gemini/settings.json"), Gemini, Scope::User));
        let codex_home = self
            .var_path("CODEX_HOME")
            .unwrap_or_else(|| self.home.join(".codex"));
        files.push((root.join(".codex/config.toml"), Codex, Scope::Project));
        files.push((codex_home.join("config.toml"), Codex, Scope::User));
        let goose = match (self.var_path("GOOSE_CONFIG_DIR"), self.os) {
            (Some(dir), _) => dir,
            (None, Os::Windows) => self.config_dir().join(r"Block\goose\config"),
            (None, _) => self.home.join(".config/goose"),
        };
        files.push((goose.join("config.yaml"), Goose, Scope::User));
        files.push((
            self.config_dir()
                .join("Claude")
                .join("claude_desktop_config.json"),
            ClaudeDesktop,
            Scope::User,
        ));
        files
    }
}

fn find_project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_paths_follow_xdg() {
        let l = Locations::new("/home/u", "/work/p")
            .with_os(Os::Linux)
            .with_project_root("/work/p");
        assert_eq!(
            l.switchboard_user_file(),
            PathBuf::from("/home/u/.config/switchboard/config.toml")
        );
        let l = l.with_var("XDG_CONFIG_HOME", "/xdg");
        let files = l.standard_files();
        assert!(files.contains(&(
            PathBuf::from("/xdg/Code/User/mcp.json"),
            Dialect::VsCode,
            Scope::User
        )));
        assert!(files.contains(&(
            PathBuf::from("/home/u/.codex/config.toml"),
            Dialect::Codex,
            Scope::User
        )));
    }

    #[test]
    fn mac_paths_use_application_support() {
        let l = Locations::new("/Users/u", "/p").with_os(Os::MacOs);
        assert!(l.standard_files().contains(&(
            PathBuf::from("/Users/u/Library/Application Support/Claude/claude_desktop_config.json"),
            Dialect::ClaudeDesktop,
            Scope::User
        )));
        assert_eq!(
            l.claude_code_managed_file(),
            PathBuf::from("/Library/Application Support/ClaudeCode/managed-mcp.json")
        );
    }

    #[test]
    fn a_project_file_that_is_also_the_users_own_counts_as_the_users() {
        let l = Locations::new("/home/u", "/home/u").with_project_root("/home/u");
        assert!(l.is_user_file(Path::new("/home/u/.codex/config.toml")));
        assert!(l.is_user_file(Path::new("/home/u/.claude.json")));
        assert!(!l.is_user_file(Path::new("/home/u/.mcp.json")));
        let l = Locations::new("/home/u", "/home/u/p").with_project_root("/home/u/p");
        assert!(!l.is_user_file(Path::new("/home/u/p/.codex/config.toml")));
    }

    #[test]
    fn mcp_json_is_read_from_the_project_root_down_never_above() {
        let l = Locations::new("/home/u", "/home/u/a/b").with_project_root("/home/u/a");
        assert_eq!(
            l.mcp_json_files(),
            vec![
                PathBuf::from("/home/u/a/.mcp.json"),
                PathBuf::from("/home/u/a/b/.mcp.json")
            ]
        );
        // No repository: up to the home directory, not above it.
        let l = Locations::new("/home/u", "/home/u/x/y").with_project_root("/home/u/x/y");
        assert_eq!(
            l.mcp_json_files(),
            vec![
                PathBuf::from("/home/u/.mcp.json"),
                PathBuf::from("/home/u/x/.mcp.json"),
                PathBuf::from("/home/u/x/y/.mcp.json")
            ]
        );
        // Outside the home and any repository: the working directory only
        // (never `/tmp/.mcp.json` or `/.mcp.json`).
        let l = Locations::new("/home/u", "/tmp/a/b").with_project_root("/tmp/a/b");
        assert_eq!(
            l.mcp_json_files(),
            vec![PathBuf::from("/tmp/a/b/.mcp.json")]
        );
    }
}
