//! Servers that come and go while the hub runs: [`Hub::add`],
//! [`Hub::remove`], [`Hub::enable`], [`Hub::disable`], [`Hub::restart`]
//! and [`Hub::reload`] (seed 003's `addMcpServer`/`removeMcpServer`, seed
//! 002's enable/disable/reconnect).
//!
//! The server list is replaced, never edited in place, under one lock
//! that serialises the changes (a reload and an `add` never interleave);
//! readers (calls, listings) take a snapshot and never wait for a change.
//! A server that goes (removed, disabled, or changed by a reload) is
//! stopped gracefully and waited for before its replacement starts, so a
//! local server never runs twice. Each change is an event:
//! [`HubEvent::ServerAdded`], [`HubEvent::ServerRemoved`],
//! [`HubEvent::ServerChanged`], [`HubEvent::Reloaded`], and the state
//! changes of the servers involved.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use switchboard::Roots;
use tokio::task::JoinSet;

use super::supervisor::Slot;
use super::{Hub, HubError, HubEvent, ServerState};
use crate::config::ServerConfig;

/// What [`Hub::reload`] (or [`Hub::apply`]) did, by server name, each in
/// the new configuration order (`removed`: the old one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadReport {
    /// New servers, started (when the hub runs and they may start).
    pub added: Vec<String>,
    /// Servers no longer configured, stopped.
    pub removed: Vec<String>,
    /// Servers whose configuration changed: stopped, then started with
    /// the new one.
    pub changed: Vec<String>,
    /// Servers whose configuration is the same: untouched, their
    /// connection kept.
    pub unchanged: Vec<String>,
    /// The tool policy changed ([`HubBuilder::tool_policy_source`](super::HubBuilder::tool_policy_source)).
    pub policy_changed: bool,
}

impl Hub {
    /// Adds a server (already expanded: runnable) after the others. When
    /// the hub has started, the server starts too and this waits until it
    /// is ready or has failed; before [`Hub::start`] it is `pending` and
    /// starts with the others. A disabled or unapproved server is only
    /// listed. Emits [`HubEvent::ServerAdded`].
    ///
    /// # Errors
    /// [`HubError::ServerExists`] for a name the hub has;
    /// [`HubError::Unavailable`] when the hub was shut down.
    ///
    /// # Cancel safety
    /// Dropping the future after the server was added stops waiting; the
    /// server keeps starting.
    pub async fn add(&self, config: ServerConfig) -> Result<ServerState, HubError> {
        let shared = &self.inner.shared;
        let guard = shared.changes.lock().await;
        self.refuse_after_shutdown(&config.name)?;
        if shared.find(&config.name).is_some() {
            return Err(HubError::ServerExists {
                server: config.name,
            });
        }
        let name = config.name.clone();
        let slot = Slot::new(config, shared.store.as_ref());
        shared
            .slots
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(slot.clone());
        shared.update_routes();
        shared.emit(HubEvent::ServerAdded {
            server: name.clone(),
        });
        tracing::info!(server = %name, "server added");
        let started = self.start_if_running(&slot);
        drop(guard);
        Ok(match started {
            true => settled(&slot).await,
            false => slot.view.borrow().state.clone(),
        })
    }

    /// Stops a server (gracefully: see [`Hub::shutdown`]) and takes it out
    /// of the hub; its tools leave the list. Emits
    /// [`HubEvent::ServerRemoved`] once it has stopped.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future may leave the server out of
    /// the list but still stopping.
    pub async fn remove(&self, server: &str) -> Result<(), HubError> {
        let shared = &self.inner.shared;
        let _guard = shared.changes.lock().await;
        let slot = self.slot(server)?;
        shared
            .slots
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|s| !Arc::ptr_eq(s, &slot));
        shared.update_routes();
        slot.stop().await;
        shared.emit(HubEvent::ServerRemoved {
            server: server.into(),
        });
        tracing::info!(server, "server removed");
        Ok(())
    }

    /// Enables a disabled server and, when the hub has started, starts it
    /// and waits until it is ready or has failed. An enabled server is
    /// left as it is. Its counters start again from zero.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::Unavailable`] when the hub
    /// was shut down.
    ///
    /// # Cancel safety
    /// Dropping the future stops waiting; the server keeps starting.
    pub async fn enable(&self, server: &str) -> Result<ServerState, HubError> {
        self.set_enabled(server, true).await
    }

    /// Stops a server and keeps it in the hub, `disabled` (its tools leave
    /// the list) until [`Hub::enable`]. A disabled server is left as it
    /// is.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::Unavailable`] when the hub
    /// was shut down.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future may leave the server stopped
    /// but not yet marked disabled.
    pub async fn disable(&self, server: &str) -> Result<(), HubError> {
        self.set_enabled(server, false).await.map(drop)
    }

    async fn set_enabled(&self, server: &str, enabled: bool) -> Result<ServerState, HubError> {
        let shared = &self.inner.shared;
        let guard = shared.changes.lock().await;
        self.refuse_after_shutdown(server)?;
        let old = self.slot(server)?;
        if old.config.enabled == enabled {
            return Ok(old.view.borrow().state.clone());
        }
        old.stop().await;
        let mut config = old.config.clone();
        config.enabled = enabled;
        let slot = Slot::new(config, shared.store.as_ref());
        self.replace(&old, slot.clone());
        let state = slot.view.borrow().state.clone();
        slot.set_state(shared, state);
        tracing::info!(server, enabled, "server switched");
        let started = self.start_if_running(&slot);
        drop(guard);
        Ok(match started {
            true => settled(&slot).await,
            false => slot.view.borrow().state.clone(),
        })
    }

    /// Starts `server` afresh and waits until it is ready or has failed:
    /// a running server's connection is closed first (a local server's
    /// process stopped), one that is not running (failed, needs
    /// authorization and the user has logged in since, never started) is
    /// started. Its state changes are the events.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::Unavailable`] for a
    /// disabled or unapproved server, or a hub that was shut down.
    ///
    /// # Cancel safety
    /// Dropping the future while the old connection closes may leave the
    /// server stopped; after that it keeps starting.
    pub async fn restart(&self, server: &str) -> Result<ServerState, HubError> {
        let shared = &self.inner.shared;
        let guard = shared.changes.lock().await;
        let slot = self.slot(server)?;
        if !slot.config.enabled
            || !slot.config.trust.allows_start()
            || self.inner.cancel.is_cancelled()
        {
            return Err(HubError::Unavailable {
                server: server.into(),
                state: slot.view.borrow().state.clone(),
            });
        }
        slot.stop().await;
        slot.claim_first_start();
        self.run(&slot);
        drop(guard);
        Ok(settled(&slot).await)
    }

    /// Reads the servers again from the [`HubBuilder::config_source`]
    /// and applies the difference ([`Hub::apply`]).
    ///
    /// [`HubBuilder::config_source`]: super::HubBuilder::config_source
    ///
    /// # Errors
    /// [`HubError::Config`] when the hub has no config source;
    /// [`HubError::Reload`] when the source failed (nothing changes); as
    /// [`Hub::apply`].
    ///
    /// # Cancel safety
    /// As [`Hub::apply`].
    pub async fn reload(&self) -> Result<ReloadReport, HubError> {
        let Some(source) = self.inner.shared.settings.source.clone() else {
            return Err(HubError::Config {
                setting: "config_source",
                reason: "the hub was built without one (HubBuilder::config_source)".into(),
            });
        };
        let servers = source().map_err(|reason| HubError::Reload { reason })?;
        // The policy first: a rule added with a server holds from its
        // start.
        let policy_changed = self.reload_tool_policy()?;
        let mut report = self.apply(servers).await?;
        report.policy_changed = policy_changed;
        Ok(report)
    }

    /// Makes the hub's servers `servers`, in that order: a server whose
    /// configuration is equal to the running one's keeps its connection
    /// (and its process); a changed one is stopped and started with the
    /// new configuration; a new one is added and one no longer listed is
    /// removed. The servers that go are stopped (all at once) before any
    /// new one starts; then this waits until every started server is
    /// ready or has failed. Emits [`HubEvent::ServerRemoved`],
    /// [`HubEvent::ServerChanged`] and [`HubEvent::ServerAdded`] for each,
    /// then [`HubEvent::Reloaded`].
    ///
    /// # Errors
    /// [`HubError::Config`] for two servers of one name (nothing changes);
    /// [`HubError::Unavailable`] when the hub was shut down.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future while old servers stop leaves
    /// the old list with some servers stopped.
    pub async fn apply(&self, servers: Vec<ServerConfig>) -> Result<ReloadReport, HubError> {
        let shared = &self.inner.shared;
        let mut names = HashSet::new();
        for server in &servers {
            if !names.insert(server.name.clone()) {
                return Err(HubError::Config {
                    setting: "servers",
                    reason: format!("two servers are named `{}`", server.name),
                });
            }
        }
        let guard = shared.changes.lock().await;
        if self.inner.cancel.is_cancelled() {
            return Err(HubError::Unavailable {
                server: "*".into(),
                state: ServerState::Stopped,
            });
        }
        let old = shared.slots();
        let mut report = ReloadReport::default();
        let mut going = Vec::new();
        let mut fresh = Vec::new();
        let mut list = Vec::with_capacity(servers.len());
        for config in servers {
            match old.iter().find(|s| s.config.name == config.name) {
                Some(slot) if slot.config == config => {
                    report.unchanged.push(config.name);
                    list.push(slot.clone());
                }
                found => {
                    match found {
                        Some(slot) => {
                            report.changed.push(config.name.clone());
                            going.push(slot.clone());
                        }
                        None => report.added.push(config.name.clone()),
                    }
                    let slot = Slot::new(config, shared.store.as_ref());
                    fresh.push(slot.clone());
                    list.push(slot);
                }
            }
        }
        for slot in &old {
            if !names.contains(&slot.config.name) {
                report.removed.push(slot.config.name.clone());
                going.push(slot.clone());
            }
        }
        // What goes is out of the routes before it stops, so no new call
        // reaches it.
        *shared.slots.write().unwrap_or_else(|e| e.into_inner()) = list;
        shared.update_routes();
        let mut stopping = JoinSet::new();
        for slot in going {
            stopping.spawn(async move { slot.stop().await });
        }
        while let Some(stopped) = stopping.join_next().await {
            if let Err(error) = stopped
                && error.is_panic()
            {
                std::panic::resume_unwind(error.into_panic());
            }
        }
        for server in &report.removed {
            shared.emit(HubEvent::ServerRemoved {
                server: server.clone(),
            });
        }
        for server in &report.changed {
            shared.emit(HubEvent::ServerChanged {
                server: server.clone(),
            });
        }
        for server in &report.added {
            shared.emit(HubEvent::ServerAdded {
                server: server.clone(),
            });
        }
        let started: Vec<_> = fresh
            .into_iter()
            .filter(|slot| self.start_if_running(slot))
            .collect();
        drop(guard);
        for slot in &started {
            settled(slot).await;
        }
        tracing::info!(
            added = report.added.len(),
            removed = report.removed.len(),
            changed = report.changed.len(),
            unchanged = report.unchanged.len(),
            "configuration applied"
        );
        shared.emit(HubEvent::Reloaded(report.clone()));
        Ok(report)
    }

    /// The roots the hub offers every server ([`HubBuilder::roots`]);
    /// [`Roots::set`] on them tells every connected server.
    ///
    /// [`HubBuilder::roots`]: super::HubBuilder::roots
    pub fn roots(&self) -> Option<Roots> {
        self.inner.shared.settings.roots.clone()
    }

    /// Puts `new` where `old` is in the server list and rebuilds the
    /// routes.
    fn replace(&self, old: &Arc<Slot>, new: Arc<Slot>) {
        let shared = &self.inner.shared;
        {
            let mut slots = shared.slots.write().unwrap_or_else(|e| e.into_inner());
            if let Some(place) = slots.iter_mut().find(|s| Arc::ptr_eq(s, old)) {
                *place = new;
            }
        }
        shared.update_routes();
    }

    /// Starts `slot` when the hub has started and it may start; whether
    /// it did.
    fn start_if_running(&self, slot: &Arc<Slot>) -> bool {
        let shared = &self.inner.shared;
        if !shared.started.load(Ordering::Acquire)
            || self.inner.cancel.is_cancelled()
            || !slot.config.enabled
            || !slot.config.trust.allows_start()
        {
            return false;
        }
        slot.claim_first_start();
        self.run(slot);
        true
    }

    fn refuse_after_shutdown(&self, server: &str) -> Result<(), HubError> {
        match self.inner.cancel.is_cancelled() {
            true => Err(HubError::Unavailable {
                server: server.into(),
                state: ServerState::Stopped,
            }),
            false => Ok(()),
        }
    }
}

/// The state `slot` settles in (ready, failed …) once it is done starting.
pub(crate) async fn settled(slot: &Slot) -> ServerState {
    let mut rx = slot.view.subscribe();
    rx.wait_for(|v| v.state.is_settled())
        .await
        .map(|v| v.state.clone())
        .unwrap_or(ServerState::Stopped)
}
