//! The tool policy as a layer of the hub: `[policy.tools]`
//! ([`ToolPolicy`]) decided in one place, `Hub::check_tool`, for every
//! call whoever makes it — the CLI, the library's [`Hub`] user, the agent,
//! the background session and the gateway — on the (server, tool) pair,
//! never on a hub-wide name that can move.
//!
//! - `deny` (or a tool missing from an allow list): the call fails with
//!   [`HubError::ToolDenied`], naming the server, the tool, the rule and
//!   the file it is written in; [`Hub::tools`] does not list the tool.
//! - `ask`: the caller's [`ToolApprover`] answers — the CLI's question on
//!   the terminal, the gateway's elicitation to its host, the agent's
//!   application callback; given per call ([`Hub::call_asking`]) or for
//!   the hub ([`HubBuilder::tool_approver`](super::HubBuilder::tool_approver)).
//!   With none, the call is refused ([`HubError::ToolNotApproved`]). The
//!   route (the server's slot and the tool's own name) is resolved once,
//!   before the question; the answer lets exactly that call run, and if
//!   the server was replaced or removed while the question was open the
//!   call fails instead of reaching whatever now has the name.
//! - [`ToolAnswer::Always`] is remembered ([`RememberedAllows`]) for the
//!   server's *identity* ([`ServerConfig::state_signature`]): a server
//!   whose configuration changed is asked about again. Remembered allows
//!   are listed and revoked by `switchboard policy`.
//!
//! The policy is live: [`Hub::set_tool_policy`], or the source given to
//! [`HubBuilder::tool_policy_source`](super::HubBuilder::tool_policy_source),
//! read again by [`Hub::reload`].

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard::types::{CallToolResult, JsonObject, RequestOutcome};
use switchboard::{BoxFuture, RequestOptions};

use super::supervisor::Slot;
use super::{CallRound, Hub, HubBuilder, HubError, ServerState};
use crate::config::ServerConfig;
use crate::config::policy::{ToolDecision, ToolPolicy};

/// What the caller's user answers when the policy asks about a call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolAnswer {
    /// Run this call.
    Once,
    /// Run this call, and every later call of this tool of this server
    /// (while its configuration stays the same): remembered in
    /// [`RememberedAllows`].
    Always,
    /// Do not run it; says why (shown to whoever made the call).
    Refuse(String),
}

/// A call the policy asks about.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolAsk {
    /// The server.
    pub server: String,
    /// The tool's own name (as the server lists it).
    pub tool: String,
    /// The arguments the server will get.
    pub arguments: Option<JsonObject>,
    /// The rule that asks, and the file it is written in.
    pub rule: String,
}

impl ToolAsk {
    /// The ask a switchboard gateway's form carries in its `_meta`
    /// ([`TOOL_ASK_META`](crate::hub::TOOL_ASK_META)), when it is that
    /// question.
    pub fn from_form_meta(meta: &JsonObject) -> Option<Self> {
        let ask = meta.get(crate::gateway::TOOL_ASK_META)?;
        let text = |key: &str| Some(ask.get(key)?.as_str()?.to_owned());
        Some(Self {
            server: text("server")?,
            tool: text("tool")?,
            arguments: ask
                .get("arguments")
                .and_then(serde_json::Value::as_object)
                .cloned(),
            rule: text("rule")?,
        })
    }
}

/// Answers the policy's `ask` for the caller (see the module docs). Any
/// `Fn(ToolAsk) -> BoxFuture<'static, ToolAnswer>` is one.
pub trait ToolApprover: Send + Sync {
    /// The user's answer about `ask`.
    fn approve(&self, ask: ToolAsk) -> BoxFuture<'static, ToolAnswer>;
}

impl<F> ToolApprover for F
where
    F: Fn(ToolAsk) -> BoxFuture<'static, ToolAnswer> + Send + Sync,
{
    fn approve(&self, ask: ToolAsk) -> BoxFuture<'static, ToolAnswer> {
        self(ask)
    }
}

/// Reads the tool policy again (on [`Hub::reload`]).
pub(crate) type PolicySource = Arc<dyn Fn() -> Result<ToolPolicy, String> + Send + Sync>;

/// The hub's policy state.
pub(crate) struct PolicyState {
    pub(crate) policy: RwLock<Arc<ToolPolicy>>,
    pub(crate) approver: Option<Arc<dyn ToolApprover>>,
    pub(crate) remembered: RememberedAllows,
    pub(crate) source: Option<PolicySource>,
}

/// The file name of the remembered allows in switchboard's data
/// directory (beside `approvals.json`).
pub const REMEMBERED_ALLOWS_FILE: &str = "tool-allows.json";

/// Most remembered allows kept (the oldest are forgotten first).
pub const MAX_REMEMBERED_ALLOWS: usize = 4096;
/// How often a call for a tool no server lists may connect a server in
/// `needs-auth` again, to see whether a login made elsewhere let it in.
pub const RECHECK_EVERY: Duration = Duration::from_secs(2);

/// One remembered "always allow".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RememberedAllow {
    /// The server's name.
    pub server: String,
    /// The tool's own name.
    pub tool: String,
    /// The server's identity when it was allowed
    /// ([`ServerConfig::state_signature`]).
    pub identity: String,
    /// When (seconds since the Unix epoch).
    pub since: u64,
}

impl RememberedAllow {
    /// `server`'s `tool`, allowed while the server is `identity`, since
    /// `since` (seconds since the Unix epoch): for an [`AllowStore`] that
    /// reads its own.
    pub fn new(server: &str, tool: &str, identity: &str, since: u64) -> Self {
        Self {
            server: server.to_owned(),
            tool: tool.to_owned(),
            identity: identity.to_owned(),
            since,
        }
    }
}

#[derive(Default, Serialize, Deserialize)]
struct AllowsFile {
    allows: Vec<RememberedAllow>,
}

/// Where remembered allows are kept other than a file or memory: a store
/// several processes share (switchboard-postgres keeps each user's in the
/// database, so an answer given through one gateway replica holds on every
/// other, and a revocation anywhere holds at once). Its methods block, as
/// [`RememberedAllows`]' do; each is read again on every question.
pub trait AllowStore: Send + Sync + std::fmt::Debug {
    /// Every remembered allow, oldest first.
    ///
    /// # Errors
    /// When the store cannot be read.
    fn list(&self) -> io::Result<Vec<RememberedAllow>>;

    /// Keeps `allow`, replacing one of the same server and tool, and
    /// forgetting the oldest beyond [`MAX_REMEMBERED_ALLOWS`].
    ///
    /// # Errors
    /// When the store cannot be written.
    fn remember(&self, allow: RememberedAllow) -> io::Result<()>;

    /// Forgets the allow of `server`'s `tool` (its own name, not a glob);
    /// whether there was one.
    ///
    /// # Errors
    /// When the store cannot be written.
    fn forget(&self, server: &str, tool: &str) -> io::Result<bool>;

    /// Whether `server`, as `identity`, may run `tool` without asking (a
    /// store may answer it without listing everything).
    ///
    /// # Errors
    /// When the store cannot be read.
    fn allows(&self, server: &str, identity: &str, tool: &str) -> io::Result<bool> {
        Ok(self
            .list()?
            .iter()
            .any(|a| a.server == server && a.tool == tool && a.identity == identity))
    }
}

/// The "always allow this tool" answers: in a private file (0600, written
/// whole through [`crate::private_file`], read again on every question so
/// a revocation from another process counts at once), in a shared
/// [`AllowStore`], or in memory only.
#[derive(Clone, Debug)]
pub struct RememberedAllows {
    path: Option<PathBuf>,
    store: Option<Arc<dyn AllowStore>>,
    memory: Arc<Mutex<Vec<RememberedAllow>>>,
}

impl RememberedAllows {
    /// Remembered for this process only.
    pub fn in_memory() -> Self {
        Self {
            path: None,
            store: None,
            memory: Arc::default(),
        }
    }

    /// Remembered in `path` (e.g. [`REMEMBERED_ALLOWS_FILE`] in the data
    /// directory).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Some(path.into()),
            store: None,
            memory: Arc::default(),
        }
    }

    /// Remembered in `store` (shared with other processes).
    pub fn shared(store: Arc<dyn AllowStore>) -> Self {
        Self {
            path: None,
            store: Some(store),
            memory: Arc::default(),
        }
    }

    /// The file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Every remembered allow, oldest first.
    ///
    /// # Errors
    /// When the file cannot be read or is not a list of allows.
    pub fn list(&self) -> io::Result<Vec<RememberedAllow>> {
        if let Some(store) = &self.store {
            return store.list();
        }
        let Some(path) = &self.path else {
            return Ok(self
                .memory
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone());
        };
        let bytes = match crate::private_file::read_no_follow(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let file: AllowsFile = serde_json::from_slice(&bytes).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a list of remembered allows: {e}", path.display()),
            )
        })?;
        Ok(file.allows)
    }

    /// Holds the file's lock (`FILE.lock`, 0600, never through a symlink)
    /// across a read-modify-write, so a revocation in one process and a
    /// remembered allow in another cannot undo each other.
    fn locked(&self) -> io::Result<Option<std::fs::File>> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::private_file::create_private_dir(dir)?;
        }
        let mut lock_path = path.clone().into_os_string();
        lock_path.push(".lock");
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        let file = options.open(std::path::PathBuf::from(lock_path))?;
        fs4::FileExt::lock(&file)?;
        Ok(Some(file))
    }

    fn store(&self, allows: Vec<RememberedAllow>) -> io::Result<()> {
        let Some(path) = &self.path else {
            *self.memory.lock().unwrap_or_else(|e| e.into_inner()) = allows;
            return Ok(());
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::private_file::create_private_dir(dir)?;
        }
        let bytes = serde_json::to_vec_pretty(&AllowsFile { allows }).map_err(io::Error::other)?;
        crate::private_file::write_atomically(path, &bytes, false)
    }

    /// Remembers that `server` (as `identity`) may run `tool` without
    /// asking.
    ///
    /// # Errors
    /// When the file cannot be read or written.
    pub fn remember(&self, server: &str, identity: &str, tool: &str) -> io::Result<()> {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let allow = RememberedAllow::new(server, tool, identity, since);
        if let Some(store) = &self.store {
            return store.remember(allow);
        }
        let _lock = self.locked()?;
        let mut allows = self.list()?;
        allows.retain(|a| !(a.server == server && a.tool == tool));
        allows.push(allow);
        let excess = allows.len().saturating_sub(MAX_REMEMBERED_ALLOWS);
        allows.drain(..excess);
        self.store(allows)
    }

    /// Forgets the allows of `server` whose tool matches `tool` (a glob,
    /// `*` for all of the server's); how many were forgotten.
    ///
    /// # Errors
    /// When the file cannot be read or written.
    pub fn revoke(&self, server: &str, tool: &str) -> io::Result<usize> {
        if let Some(store) = &self.store {
            let mut revoked = 0;
            for allow in store.list()? {
                if allow.server == server
                    && crate::config::policy::glob_match(tool, &allow.tool)
                    && store.forget(&allow.server, &allow.tool)?
                {
                    revoked += 1;
                }
            }
            return Ok(revoked);
        }
        let _lock = self.locked()?;
        let mut allows = self.list()?;
        let before = allows.len();
        allows
            .retain(|a| !(a.server == server && crate::config::policy::glob_match(tool, &a.tool)));
        let revoked = before - allows.len();
        if revoked > 0 {
            self.store(allows)?;
        }
        Ok(revoked)
    }

    /// Whether `server`, as `identity`, may run `tool` without asking. An
    /// unreadable file remembers nothing (the user is asked).
    pub fn allows(&self, server: &str, identity: &str, tool: &str) -> bool {
        let answer = match &self.store {
            Some(store) => store.allows(server, identity, tool),
            None => self.list().map(|allows| {
                allows
                    .iter()
                    .any(|a| a.server == server && a.tool == tool && a.identity == identity)
            }),
        };
        match answer {
            Ok(allowed) => allowed,
            Err(error) => {
                tracing::warn!(%error, "the remembered tool allows cannot be read; asking");
                false
            }
        }
    }
}

/// The tool policy's settings of the hub.
impl HubBuilder {
    /// The tool policy (`[policy.tools]`) every call through the hub
    /// follows (see [the module](self)): denied tools are refused and not listed,
    /// `ask` tools are asked about through the caller's approver.
    pub fn tool_policy(mut self, policy: ToolPolicy) -> Self {
        self.tool_policy = policy;
        self
    }

    /// Where [`Hub::reload`] reads the tool policy again (it replaces
    /// [`HubBuilder::tool_policy`] on each reload).
    pub fn tool_policy_source(
        mut self,
        source: impl Fn() -> Result<ToolPolicy, String> + Send + Sync + 'static,
    ) -> Self {
        self.policy_source = Some(Arc::new(source));
        self
    }

    /// Who answers the policy's `ask` for calls that bring no approver
    /// of their own ([`Hub::call_asking`]). Without one, such calls are
    /// refused.
    pub fn tool_approver(mut self, approver: impl ToolApprover + 'static) -> Self {
        self.tool_approver = Some(Arc::new(approver));
        self
    }

    /// Where "always allow" answers are kept (default: in memory, for
    /// this hub's life).
    pub fn remembered_allows(mut self, remembered: RememberedAllows) -> Self {
        self.remembered = Some(remembered);
        self
    }
}

impl PolicyState {
    pub(crate) fn new(
        policy: ToolPolicy,
        approver: Option<Arc<dyn ToolApprover>>,
        remembered: Option<RememberedAllows>,
        source: Option<PolicySource>,
    ) -> Self {
        Self {
            policy: RwLock::new(Arc::new(policy)),
            approver,
            remembered: remembered.unwrap_or_else(RememberedAllows::in_memory),
            source,
        }
    }

    pub(crate) fn current(&self) -> Arc<ToolPolicy> {
        self.policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Hub {
    /// The server slot behind the hub-wide tool `name`, and the tool's own
    /// name there.
    fn routed(&self, name: &str) -> Result<(Arc<Slot>, String), HubError> {
        self.routes()
            .get(name)
            .map(|r| (r.slot.clone(), r.tool().name.clone()))
            .ok_or_else(|| HubError::UnknownTool { name: name.into() })
    }

    /// [`Hub::routed`], for a name no server lists giving the servers that
    /// may be about to list it their chance first: one still connecting
    /// is waited for, and one waiting for a login is connected again, in
    /// case the login was made elsewhere — in another process, or on
    /// another replica sharing the store — and the news has not reached
    /// this hub yet (each such server at most once per
    /// [`RECHECK_EVERY`], so that a host calling names that do not exist
    /// cannot make the hub hammer a server).
    async fn routed_settled(&self, name: &str) -> Result<(Arc<Slot>, String), HubError> {
        let unknown = match self.routed(name) {
            Ok(found) => return Ok(found),
            Err(unknown) => unknown,
        };
        // Spawned and not aborted with the caller: a restart cut off
        // midway (a host that gave up on its call) would leave the server
        // stopped.
        let mut waits = Vec::new();
        for slot in self.inner.shared.slots() {
            let state = slot.view.borrow().state.clone();
            match state {
                ServerState::Connecting | ServerState::Reconnecting { .. } => {
                    waits.push(tokio::spawn(async move {
                        super::changes::settled(&slot).await;
                    }));
                }
                ServerState::NeedsAuth { .. } => {
                    {
                        let mut last = slot.rechecked.lock().unwrap_or_else(|e| e.into_inner());
                        if last.is_some_and(|at| at.elapsed() < RECHECK_EVERY) {
                            continue;
                        }
                        *last = Some(std::time::Instant::now());
                    }
                    let (hub, server) = (self.clone(), slot.config.name.clone());
                    waits.push(tokio::spawn(async move {
                        let _ = hub.restart(&server).await;
                    }));
                }
                _ => {}
            }
        }
        if waits.is_empty() {
            return Err(unknown);
        }
        tracing::debug!(
            tool = name,
            servers = waits.len(),
            "an unknown tool: waiting for the servers coming up first"
        );
        for wait in waits {
            let _ = wait.await;
        }
        self.routed(name).map_err(|_| unknown)
    }

    /// [`Hub::call_tool_with`] whose policy `ask` is answered by
    /// `approver` (else the hub's [`HubBuilder::tool_approver`]).
    ///
    /// # Errors
    /// As [`Hub::call_tool`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (or the question).
    pub async fn call_tool_asking(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: RequestOptions,
        approver: Option<Arc<dyn ToolApprover>>,
    ) -> Result<CallToolResult, HubError> {
        let (slot, tool) = self.routed_settled(name).await?;
        self.call_slot(&slot, &tool, arguments, options, approver.as_ref(), None)
            .await
            .and_then(|outcome| whole(&slot.config.name, &tool, outcome))
    }

    /// One round of [`Hub::call_tool_asking`]: with a 2026-07-28 server
    /// (that does not offer the tasks extension), its `input_required`
    /// result is handed back for the caller to answer — and `round`
    /// carries the answers and the server's `requestState` of the round
    /// before — instead of being answered by the client's handlers. A
    /// session-era server's call is answered whole, as by
    /// [`Hub::call_tool_asking`].
    ///
    /// # Errors
    /// As [`Hub::call_tool`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (or the question).
    pub async fn call_tool_round(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        round: &CallRound,
        options: RequestOptions,
        approver: Option<Arc<dyn ToolApprover>>,
    ) -> Result<RequestOutcome<CallToolResult>, HubError> {
        let (slot, tool) = self.routed_settled(name).await?;
        self.call_slot(
            &slot,
            &tool,
            arguments,
            options,
            approver.as_ref(),
            Some(round),
        )
        .await
    }

    /// [`Hub::call_with`] whose policy `ask` is answered by `approver`
    /// (else the hub's [`HubBuilder::tool_approver`]; with neither, the
    /// call is refused).
    ///
    /// # Errors
    /// As [`Hub::call`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call (or the question).
    pub async fn call_asking(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        options: RequestOptions,
        approver: Option<Arc<dyn ToolApprover>>,
    ) -> Result<CallToolResult, HubError> {
        let slot = self.slot(server)?;
        self.call_slot(&slot, tool, arguments, options, approver.as_ref(), None)
            .await
            .and_then(|outcome| whole(server, tool, outcome))
    }

    /// The tool policy in force now.
    pub fn tool_policy(&self) -> Arc<ToolPolicy> {
        self.inner.shared.policy.current()
    }

    /// Replaces the tool policy; the next call, and the next
    /// [`Hub::tools`], follow it. Whether it changed.
    pub fn set_tool_policy(&self, policy: ToolPolicy) -> bool {
        let mut current = self
            .inner
            .shared
            .policy
            .policy
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let changed = **current != policy;
        *current = Arc::new(policy);
        changed
    }

    /// The remembered "always allow" answers this hub reads and writes.
    pub fn remembered_allows(&self) -> &RememberedAllows {
        &self.inner.shared.policy.remembered
    }

    /// Reads the policy source ([`HubBuilder::tool_policy_source`]) again,
    /// if the hub has one, and puts what it says in force; whether the
    /// policy changed.
    ///
    /// # Errors
    /// [`HubError::Reload`] when the source failed (the policy in force
    /// is kept).
    pub fn reload_tool_policy(&self) -> Result<bool, HubError> {
        let Some(source) = self.inner.shared.policy.source.clone() else {
            return Ok(false);
        };
        let policy = source().map_err(|reason| HubError::Reload { reason })?;
        Ok(self.set_tool_policy(policy))
    }

    /// [`Hub::check_tool`] for the server named `server`.
    pub(crate) async fn check_tool_named(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<&JsonObject>,
        approver: Option<&Arc<dyn ToolApprover>>,
    ) -> Result<(), HubError> {
        let slot = self
            .inner
            .shared
            .find(server)
            .ok_or_else(|| HubError::UnknownServer {
                server: server.to_owned(),
            })?;
        self.check_tool(&slot, tool, arguments, approver).await
    }

    /// What the policy says of `server`'s `tool` without asking anyone:
    /// for listings.
    pub(crate) fn tool_denied(&self, policy: &ToolPolicy, server: &str, tool: &str) -> bool {
        matches!(policy.decide(server, tool), ToolDecision::Deny(_))
    }

    /// The one place a call's policy decision is made: `Ok` lets the call
    /// of `slot`'s `tool` run; a denied call, or an `ask` refused (by
    /// `approver`, else the hub's, else for want of one), is the error
    /// to give back. After an answer, `slot` must still be the hub's
    /// server of that name (it was not replaced or removed meanwhile).
    pub(crate) async fn check_tool(
        &self,
        slot: &Arc<Slot>,
        tool: &str,
        arguments: Option<&JsonObject>,
        approver: Option<&Arc<dyn ToolApprover>>,
    ) -> Result<(), HubError> {
        let state = &self.inner.shared.policy;
        let config: &ServerConfig = &slot.config;
        let server = config.name.as_str();
        let refused = |reason: String| HubError::ToolNotApproved {
            server: server.to_owned(),
            tool: tool.to_owned(),
            reason,
        };
        let rule = match state.current().decide(server, tool) {
            ToolDecision::Allow => return Ok(()),
            ToolDecision::Deny(reason) => {
                return Err(HubError::ToolDenied {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    reason,
                });
            }
            ToolDecision::Ask(rule) => rule,
        };
        let identity = config.state_signature();
        if state.remembered.allows(server, &identity, tool) {
            return Ok(());
        }
        let Some(approver) = approver.or(state.approver.as_ref()) else {
            return Err(refused(format!(
                "the policy asks first ({rule}) and nobody can be asked here; allow it in \
                 [policy.tools], or call it where it can be asked (a terminal)"
            )));
        };
        let answer = approver
            .approve(ToolAsk {
                server: server.to_owned(),
                tool: tool.to_owned(),
                arguments: arguments.cloned(),
                rule: rule.clone(),
            })
            .await;
        let always = match answer {
            ToolAnswer::Once => false,
            ToolAnswer::Always => true,
            ToolAnswer::Refuse(why) => return Err(refused(why)),
        };
        // The question may have been open a while: the answer is for the
        // server it was about, not whatever has its name now.
        let current = self.inner.shared.find(server);
        if !current.is_some_and(|now| Arc::ptr_eq(&now, slot)) {
            return Err(refused(
                "the server was reloaded or removed while the question was open, so the \
                 allowed call was not made; call it again"
                    .to_owned(),
            ));
        }
        if always && let Err(error) = state.remembered.remember(server, &identity, tool) {
            tracing::warn!(server, tool, %error, "could not remember the allow; allowed once");
        }
        Ok(())
    }
}

/// A call sent without a [`CallRound`] is answered whole: anything else
/// is the server breaking the protocol.
fn whole(
    server: &str,
    tool: &str,
    outcome: RequestOutcome<CallToolResult>,
) -> Result<CallToolResult, HubError> {
    match outcome {
        RequestOutcome::Complete(result) => Ok(result),
        _ => Err(HubError::Call {
            server: server.into(),
            tool: tool.into(),
            source: Box::new(switchboard::Error::Protocol {
                server: server.into(),
                detail: "a call answered whole came back unfinished".into(),
            }),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_allows_are_kept_per_identity_and_revoked() {
        let dir = std::env::temp_dir().join(format!("sb-allows-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let allows = RememberedAllows::at(dir.join("data").join(REMEMBERED_ALLOWS_FILE));
        assert!(!allows.allows("gh", "id1", "delete"));
        allows.remember("gh", "id1", "delete").unwrap();
        allows.remember("gh", "id1", "list").unwrap();
        assert!(allows.allows("gh", "id1", "delete"));
        // A changed server is another identity.
        assert!(!allows.allows("gh", "id2", "delete"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(allows.path().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(allows.revoke("gh", "delete").unwrap(), 1);
        assert!(!allows.allows("gh", "id1", "delete"));
        assert_eq!(allows.list().unwrap().len(), 1);
        assert_eq!(allows.revoke("gh", "*").unwrap(), 1);
        assert!(allows.list().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn two_processes_remembering_at_once_lose_nothing() {
        // Two handles on one file stand for two processes: each
        // read-modify-write must see the other's, or an allow (or a
        // revocation) is silently undone.
        let dir = std::env::temp_dir().join(format!("sb-allows-race-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join(REMEMBERED_ALLOWS_FILE);
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let allows = RememberedAllows::at(&path);
                std::thread::spawn(move || {
                    for tool in 0..40 {
                        allows
                            .remember("s", "id", &format!("w{writer}-t{tool}"))
                            .unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        assert_eq!(RememberedAllows::at(&path).list().unwrap().len(), 80);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
