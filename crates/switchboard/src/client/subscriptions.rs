//! Change notifications in both eras, and the lists they keep current.
//!
//! - Session era: `resources/subscribe` / `resources/unsubscribe`
//!   ([`Client::subscribe_resource`]); list changes and resource updates
//!   arrive unasked on any stream.
//! - Stateless era (2026-07-28): [`Client::listen`] sends
//!   `subscriptions/listen` with a [`SubscriptionFilter`] and returns a
//!   [`Subscription`] that yields the notifications tagged with its
//!   request id. The server's acknowledgement must be a subset of what was
//!   asked. The listen ends when the server answers it (or sends
//!   `notifications/cancelled` for it) — no re-listen — or when the
//!   [`Subscription`] is dropped (the engine sends `notifications/cancelled`
//!   on stdio; HTTP closes the stream). A listen that breaks otherwise is
//!   re-sent after a bounded exponential backoff
//!   ([`ClientBuilder::relisten_backoff`], [`ClientBuilder::relisten_attempts`]).
//!
//! Every notification, tagged or not, also reaches [`Client::events`], and
//! a watcher task owned by the client applies it to the response cache
//! (`list_changed`, `resources/updated`) and, with
//! [`ClientBuilder::auto_refresh_lists`], fetches the changed list again
//! so that [`Client::tools`] and the other snapshots stay current.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;
use switchboard_types::jsonrpc::RequestId;
use switchboard_types::request::{self as rq, Request};
use switchboard_types::{
    Era, JsonObject, Prompt, Resource, ResourceTemplate, SubscribeRequestParams,
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, Tool, UnsubscribeRequestParams, meta, methods,
};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::task::AbortOnDropHandle;

use super::cache::{CacheConfig, Invalidate, ResponseCache};
use super::{
    Client, ClientBuilder, ClientInner, add_meta, check_result_type, level_from_code,
    peek_result_type,
};
use crate::client::events::{Event, ListKind};
use crate::engine::{Engine, Notice, RequestOptions, ServerNotification};
use crate::error::{Error, Result};

/// How a broken listen is retried.
#[derive(Clone, Debug)]
pub(super) struct ListenConfig {
    /// The first wait; each further consecutive failure doubles it.
    initial_backoff: Duration,
    /// The longest wait.
    max_backoff: Duration,
    /// Consecutive failed listens before the subscription gives up.
    max_attempts: u32,
}

impl Default for ListenConfig {
    fn default() -> Self {
        Self {
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(30),
            max_attempts: 10,
        }
    }
}

impl ListenConfig {
    fn backoff(&self, failures: u32) -> Duration {
        self.initial_backoff
            .saturating_mul(1u32 << failures.saturating_sub(1).min(20))
            .min(self.max_backoff)
    }
}

/// The builder settings of this module and the cache.
#[derive(Clone, Debug, Default)]
pub(super) struct Settings {
    pub(super) cache: CacheConfig,
    listen: ListenConfig,
    auto_refresh: bool,
}

impl Settings {
    pub(super) fn validate(&self) -> Result<()> {
        self.cache.validate()?;
        if self.listen.initial_backoff.is_zero()
            || self.listen.max_backoff < self.listen.initial_backoff
        {
            return Err(Error::Config {
                setting: "relisten_backoff",
                reason: "the initial wait must be greater than zero and at most the longest".into(),
            });
        }
        Ok(())
    }
}

impl ClientBuilder {
    /// After a `list_changed` notification, fetch that list again in the
    /// background so [`Client::tools`], [`Client::prompts`] and
    /// [`Client::resources`] stay current (default off: the snapshots keep
    /// the last list fetched, and only the cache is invalidated). In the
    /// stateless era list changes arrive only through a
    /// [`Client::listen`] subscription that asked for them.
    pub fn auto_refresh_lists(mut self, enabled: bool) -> Self {
        self.subs.auto_refresh = enabled;
        self
    }

    /// The wait before re-sending a `subscriptions/listen` that broke
    /// without the server ending it: `initial`, doubling with each
    /// consecutive failure up to `max` (default 250 ms up to 30 s).
    pub fn relisten_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.subs.listen.initial_backoff = initial;
        self.subs.listen.max_backoff = max;
        self
    }

    /// Consecutive broken listens before a [`Subscription`] gives up
    /// (default 10; 0: never re-listen). A listen the server acknowledged
    /// resets the count.
    pub fn relisten_attempts(mut self, attempts: u32) -> Self {
        self.subs.listen.max_attempts = attempts;
        self
    }
}

/// The tools from the last `tools/list`, with an index by name.
#[derive(Debug, Default)]
pub(super) struct ToolList {
    tools: Option<Arc<[Tool]>>,
    index: std::collections::HashMap<String, usize>,
}

impl ToolList {
    /// The tool named `name` as a handle on the shared list: no copy.
    pub(super) fn entry(&self, name: &str) -> Option<ListedTool> {
        let at = *self.index.get(name)?;
        let tools = self.tools.clone()?;
        (at < tools.len()).then_some(ListedTool { tools, at })
    }

    pub(super) fn set(&mut self, tools: Arc<[Tool]>) {
        self.index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        self.tools = Some(tools);
    }
}

/// One tool of a shared tool list (what the output check's thread gets
/// instead of a copy of the tool).
#[derive(Clone)]
pub(super) struct ListedTool {
    tools: Arc<[Tool]>,
    at: usize,
}

impl std::ops::Deref for ListedTool {
    type Target = Tool;

    fn deref(&self) -> &Tool {
        &self.tools[self.at]
    }
}

/// The last list of each other kind, as fetched.
#[derive(Default)]
struct Lists {
    prompts: Option<Arc<[Prompt]>>,
    resources: Option<Arc<[Resource]>>,
    templates: Option<Arc<[ResourceTemplate]>>,
}

fn bit(kind: ListKind) -> u8 {
    match kind {
        ListKind::Tools => 1,
        ListKind::Prompts => 2,
        ListKind::Resources => 4,
    }
}

/// What the watcher task and the request path share.
struct Watch {
    rx: Mutex<Option<mpsc::Receiver<Notice>>>,
    cache: Arc<ResponseCache>,
    /// Lists changed since they were last refreshed (bits of [`bit`]).
    dirty: AtomicU8,
    refresh: Notify,
    auto_refresh: bool,
}

impl Watch {
    /// Applies everything queued, without waiting.
    fn drain(&self) {
        let mut rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        let Some(receiver) = rx.as_mut() else {
            return;
        };
        while let Ok(notification) = receiver.try_recv() {
            self.apply(&notification);
        }
    }

    fn apply(&self, notice: &Notice) {
        let notification = match notice {
            Notice::Notification(notification) => notification,
            Notice::Lagged(_) => {
                // Something was missed: nothing cached can be trusted.
                self.cache.invalidate(Invalidate::All);
                self.mark_dirty(
                    bit(ListKind::Tools) | bit(ListKind::Prompts) | bit(ListKind::Resources),
                );
                return;
            }
        };
        match Event::from_notification(notification.clone()) {
            Event::ListChanged(kind) => {
                self.cache.invalidate(Invalidate::List(kind));
                self.mark_dirty(bit(kind));
            }
            Event::ResourceUpdated { uri } => self.cache.invalidate(Invalidate::Read(&uri)),
            _ => {}
        }
    }

    fn mark_dirty(&self, bits: u8) {
        self.dirty.fetch_or(bits, Ordering::AcqRel);
        if self.auto_refresh {
            self.refresh.notify_one();
        }
    }
}

/// This module's per-client state (a field of `ClientInner`).
pub(super) struct State {
    pub(super) cache: Arc<ResponseCache>,
    lists: Mutex<Lists>,
    watch: Arc<Watch>,
    listen: ListenConfig,
    ack_timeout: Duration,
    watcher: Mutex<Option<AbortOnDropHandle<()>>>,
    /// The listen tasks; each also dies with its [`Subscription`].
    listeners: Mutex<JoinSet<()>>,
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl State {
    /// Subscribes to `engine`'s notifications at once, so none is missed
    /// before the watcher starts.
    pub(super) fn new(engine: &Engine, settings: &Settings, ack_timeout: Duration) -> Self {
        let cache = Arc::new(ResponseCache::new(settings.cache.clone()));
        let rx = engine.subscribe_marking_gaps();
        Self {
            watch: Arc::new(Watch {
                rx: Mutex::new(Some(rx)),
                cache: cache.clone(),
                dirty: AtomicU8::new(0),
                refresh: Notify::new(),
                auto_refresh: settings.auto_refresh,
            }),
            cache,
            lists: Mutex::new(Lists::default()),
            listen: settings.listen.clone(),
            ack_timeout,
            watcher: Mutex::new(None),
            listeners: Mutex::new(JoinSet::new()),
        }
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, Lists> {
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set_prompts(&self, prompts: Arc<[Prompt]>) {
        self.lists().prompts = Some(prompts);
    }

    pub(super) fn set_resources(&self, resources: Arc<[Resource]>) {
        self.lists().resources = Some(resources);
    }

    pub(super) fn set_templates(&self, templates: Arc<[ResourceTemplate]>) {
        self.lists().templates = Some(templates);
    }
}

/// Watches the connection's notifications for the client's lifetime.
async fn watch(watch: Arc<Watch>, client: Weak<ClientInner>) {
    loop {
        let next = std::future::poll_fn(|cx| {
            let mut rx = watch.rx.lock().unwrap_or_else(|e| e.into_inner());
            match rx.as_mut() {
                Some(receiver) => receiver.poll_recv(cx),
                None => Poll::Ready(None),
            }
        });
        tokio::select! {
            notification = next => match notification {
                Some(notification) => {
                    watch.apply(&notification);
                }
                None => return,
            },
            () = watch.refresh.notified(), if watch.auto_refresh => {}
        }
        let dirty = watch.dirty.load(Ordering::Acquire);
        if !watch.auto_refresh || dirty == 0 {
            continue;
        }
        let Some(inner) = client.upgrade() else {
            return;
        };
        let client = Client { inner };
        // Taken before fetching: a change during the fetch marks it again.
        let dirty = watch.dirty.swap(0, Ordering::AcqRel);
        client.refresh_lists(dirty).await;
    }
}

impl Client {
    /// Starts the watcher task (once, right after connecting).
    pub(super) fn start_watching(&self) {
        let state = &self.inner.subs;
        let task = tokio::spawn(watch(state.watch.clone(), Arc::downgrade(&self.inner)));
        *state.watcher.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(AbortOnDropHandle::new(task));
    }

    /// Applies notifications that arrived but were not yet seen, so a
    /// request right after a `list_changed` is not answered from the cache.
    pub(super) fn sync_notifications(&self) {
        self.inner.subs.watch.drain();
    }

    /// Fetches the lists in `dirty` again. A failure is logged, not
    /// retried: the next change, or the next explicit list call, fetches
    /// it (the cache entry is already invalidated).
    async fn refresh_lists(&self, dirty: u8) {
        let caps = self.capabilities();
        if dirty & bit(ListKind::Tools) != 0
            && caps.tools.is_some()
            && let Err(error) = self.list_tools_shared().await
        {
            self.refresh_failed("tools", &error);
        }
        if dirty & bit(ListKind::Prompts) != 0
            && caps.prompts.is_some()
            && let Err(error) = self.list_prompts_shared().await
        {
            self.refresh_failed("prompts", &error);
        }
        if dirty & bit(ListKind::Resources) != 0 && caps.resources.is_some() {
            if let Err(error) = self.list_resources_shared().await {
                self.refresh_failed("resources", &error);
            }
            // Templates only when the application has asked for them.
            let had_templates = self.inner.subs.lists().templates.is_some();
            if had_templates && let Err(error) = self.list_resource_templates_shared().await {
                self.refresh_failed("resource templates", &error);
            }
        }
    }

    fn refresh_failed(&self, what: &str, error: &Error) {
        tracing::debug!(server = %self.server_name(), %error, "refreshing the {what} list failed");
    }

    /// The tools from the last [`Client::list_tools`] (or automatic
    /// refresh); `None` before the first. May lag behind the server
    /// unless [`ClientBuilder::auto_refresh_lists`] is on.
    pub fn tools(&self) -> Option<Arc<[Tool]>> {
        self.inner
            .tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .tools
            .clone()
    }

    /// The prompts from the last [`Client::list_prompts`] (see [`Client::tools`]).
    pub fn prompts(&self) -> Option<Arc<[Prompt]>> {
        self.inner.subs.lists().prompts.clone()
    }

    /// The resources from the last [`Client::list_resources`] (see [`Client::tools`]).
    pub fn resources(&self) -> Option<Arc<[Resource]>> {
        self.inner.subs.lists().resources.clone()
    }

    /// The templates from the last [`Client::list_resource_templates`]
    /// (see [`Client::tools`]).
    pub fn resource_templates(&self) -> Option<Arc<[ResourceTemplate]>> {
        self.inner.subs.lists().templates.clone()
    }

    /// Asks for `notifications/resources/updated` about `uri` (session
    /// era); they arrive on [`Client::events`].
    ///
    /// # Errors
    /// [`Error::NotInThisEra`] on a 2026-07-28 connection (use
    /// [`Client::listen`]); [`Error::CapabilityMissing`] unless the server
    /// declared `resources.subscribe`; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request; the server may or may not
    /// have subscribed.
    pub async fn subscribe_resource(&self, uri: impl Into<String>) -> Result<()> {
        self.require_subscribe(rq::Subscribe::METHOD)?;
        let params = SubscribeRequestParams {
            uri: uri.into(),
            meta: None,
        };
        self.request::<rq::Subscribe>(&params, RequestOptions::default())
            .await
            .map(drop)
    }

    /// Stops the updates [`Client::subscribe_resource`] asked for.
    ///
    /// # Errors
    /// As [`Client::subscribe_resource`].
    ///
    /// # Cancel safety
    /// As [`Client::subscribe_resource`].
    pub async fn unsubscribe_resource(&self, uri: impl Into<String>) -> Result<()> {
        self.require_subscribe(rq::Unsubscribe::METHOD)?;
        let params = UnsubscribeRequestParams {
            uri: uri.into(),
            meta: None,
        };
        self.request::<rq::Unsubscribe>(&params, RequestOptions::default())
            .await
            .map(drop)
    }

    fn require_subscribe(&self, method: &'static str) -> Result<()> {
        self.require_legacy(method)?;
        let declared = self
            .capabilities()
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true));
        self.require("resources.subscribe", method, declared)
    }

    /// Opens a `subscriptions/listen` stream (stateless era) and waits for
    /// the server's acknowledgement, which may grant less than `filter`
    /// asked ([`Subscription::acknowledged`]). The subscription keeps the
    /// connection open while it lives; dropping it ends the listen.
    ///
    /// The first listen is not retried: if it breaks before the server
    /// acknowledges it, that is the error. Later breaks are re-listened
    /// ([`SubscriptionEvent::Interrupted`], [`SubscriptionEvent::Resumed`]).
    ///
    /// # Errors
    /// [`Error::NotInThisEra`] on a session-era connection (use
    /// [`Client::subscribe_resource`]); [`Error::Protocol`] when the
    /// acknowledgement grants more than was asked; [`Error::Timeout`] when
    /// no acknowledgement comes within the request timeout;
    /// [`Error::ResponseLost`] when the stream breaks first; as
    /// [`Client::request`] when the server refuses.
    ///
    /// # Cancel safety
    /// Dropping the future ends the listen.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription> {
        if self.era() != Era::Modern {
            return Err(Error::NotInThisEra {
                server: self.inner.engine.server().clone(),
                method: rq::SubscriptionsListen::METHOD,
                version: self.protocol_version().clone(),
            });
        }
        let (tx, events) = mpsc::channel(self.inner.engine.notification_buffer());
        let (first_tx, first_rx) = oneshot::channel();
        let abort = {
            let mut listeners = self
                .inner
                .subs
                .listeners
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            while listeners.try_join_next().is_some() {}
            listeners.spawn(run_listen(self.clone(), filter, tx, first_tx))
        };
        // Ends the task if this future is dropped before it is handed out.
        let guard = AbortOnDrop(abort);
        let (id, acknowledged) = first_rx.await.map_err(|_| Error::Disconnected {
            server: self.inner.engine.server().clone(),
            reason: self
                .connection_error()
                .unwrap_or_else(|| Arc::new(crate::transport::TransportError::ClosedByClient)),
        })??;
        Ok(Subscription {
            id,
            acknowledged,
            events,
            _task: guard,
        })
    }

    /// The params of a listen, with the per-request `_meta`.
    fn listen_params(&self, filter: &SubscriptionFilter) -> Result<Box<RawValue>> {
        let params = SubscriptionsListenRequestParams {
            notifications: filter.clone(),
            ..Default::default()
        };
        let mut value = serde_json::to_value(&params).map_err(|source| Error::Serialize {
            method: rq::SubscriptionsListen::METHOD.into(),
            source,
        })?;
        if let Some(fields) = &self.inner.modern_meta {
            add_meta(
                &mut value,
                fields.iter().map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        let level = self.inner.log_level.load(Ordering::Relaxed);
        if let Some(level) = level_from_code(level) {
            add_meta(
                &mut value,
                [(meta::META_LOG_LEVEL.to_owned(), Value::from(level.as_str()))],
            );
        }
        serde_json::value::to_raw_value(&value).map_err(|source| Error::Serialize {
            method: rq::SubscriptionsListen::METHOD.into(),
            source,
        })
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Something a [`Subscription`] reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum SubscriptionEvent {
    /// A notification of this subscription: a list change, a resource
    /// update, a task status …
    Event(Event),
    /// The listen broke without the server ending it; it is sent again
    /// after `retry_in`.
    Interrupted {
        /// What broke.
        reason: String,
        /// Consecutive failures so far.
        attempt: u32,
        /// The wait before the next listen.
        retry_in: Duration,
    },
    /// Listening again; what the server now agreed to. Changes during the
    /// gap were missed: the cached lists and reads it covers were
    /// invalidated; fetch again what matters.
    Resumed(SubscriptionFilter),
    /// This many events were dropped because the subscription's buffer was
    /// full.
    Lagged(u64),
    /// The subscription ended: `None` when the server ended it; otherwise
    /// why it failed (the connection died, the server refused a re-listen,
    /// re-listening gave up). Nothing follows.
    Ended(Option<Error>),
}

/// A `subscriptions/listen` stream. Yields [`SubscriptionEvent`]s;
/// implements [`futures_core::Stream`]. Dropping it ends the listen.
pub struct Subscription {
    id: i64,
    acknowledged: SubscriptionFilter,
    events: mpsc::Receiver<SubscriptionEvent>,
    _task: AbortOnDrop,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("acknowledged", &self.acknowledged)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The JSON-RPC id of the first listen (the `subscriptionId` its
    /// notifications carry; a re-listen gets a new one).
    pub fn id(&self) -> i64 {
        self.id
    }

    /// What the server agreed to send on the first listen.
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// The next event; `None` after [`SubscriptionEvent::Ended`].
    ///
    /// # Cancel safety
    /// Cancel safe: no event is lost if the future is dropped.
    pub async fn next(&mut self) -> Option<SubscriptionEvent> {
        self.events.recv().await
    }
}

impl futures_core::Stream for Subscription {
    type Item = SubscriptionEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SubscriptionEvent>> {
        self.get_mut().events.poll_recv(cx)
    }
}

/// How one listen ended.
enum ListenEnd {
    /// The server ended it (a result, or `notifications/cancelled`).
    ByServer,
    /// Broke; worth listening again.
    Dropped(Error, bool),
    /// Not worth retrying.
    Fatal(Error),
}

type FirstAck = oneshot::Sender<Result<(i64, SubscriptionFilter)>>;

async fn run_listen(
    client: Client,
    filter: SubscriptionFilter,
    tx: mpsc::Sender<SubscriptionEvent>,
    first: FirstAck,
) {
    let config = client.inner.subs.listen.clone();
    let mut first = Some(first);
    let mut failures = 0u32;
    loop {
        let end = listen_once(&client, &filter, &tx, &mut first).await;
        let error = match end {
            ListenEnd::ByServer => {
                if let Some(first) = first.take() {
                    let _ = first.send(Err(Error::Protocol {
                        server: client.inner.engine.server().clone(),
                        detail: "it ended `subscriptions/listen` before acknowledging it".into(),
                    }));
                }
                let _ = tx.send(SubscriptionEvent::Ended(None)).await;
                return;
            }
            ListenEnd::Fatal(error) => error,
            ListenEnd::Dropped(error, acknowledged) => {
                if acknowledged {
                    failures = 0;
                }
                failures += 1;
                if first.is_some() || failures > config.max_attempts {
                    error
                } else {
                    let retry_in = config.backoff(failures);
                    tracing::debug!(server = %client.server_name(), %error, ?retry_in, "listen broke; listening again");
                    let _ = tx
                        .send(SubscriptionEvent::Interrupted {
                            reason: error.to_string(),
                            attempt: failures,
                            retry_in,
                        })
                        .await;
                    tokio::time::sleep(retry_in).await;
                    continue;
                }
            }
        };
        match first.take() {
            Some(first) => {
                let _ = first.send(Err(error));
            }
            None => {
                let _ = tx.send(SubscriptionEvent::Ended(Some(error))).await;
            }
        }
        return;
    }
}

/// Far enough away to mean "no timeout"; a listen lives until it ends.
const LISTEN_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);

async fn listen_once(
    client: &Client,
    filter: &SubscriptionFilter,
    tx: &mpsc::Sender<SubscriptionEvent>,
    first: &mut Option<FirstAck>,
) -> ListenEnd {
    let engine = &client.inner.engine;
    let server = engine.server().clone();
    let params = match client.listen_params(filter) {
        Ok(params) => params,
        Err(error) => return ListenEnd::Fatal(error),
    };
    // Subscribed before sending, so the acknowledgement cannot be missed.
    let mut rx = engine.subscribe_marking_gaps();
    let id = engine.allocate_id();
    let request = engine.request(
        id,
        rq::SubscriptionsListen::METHOD,
        Some(&params),
        RequestOptions::timeout(LISTEN_LIFETIME),
    );
    tokio::pin!(request);
    let ack_deadline = tokio::time::sleep(client.inner.subs.ack_timeout);
    tokio::pin!(ack_deadline);
    let mut granted: Option<SubscriptionFilter> = None;
    let mut rx_open = true;
    loop {
        tokio::select! {
            biased;
            notification = rx.recv(), if rx_open => {
                let notification = match notification {
                    Some(Notice::Notification(notification)) => notification,
                    Some(Notice::Lagged(missed)) => {
                        let _ = tx.send(SubscriptionEvent::Lagged(missed)).await;
                        continue;
                    }
                    None => {
                        // The connection died; the request says how.
                        rx_open = false;
                        continue;
                    }
                };
                if notification.method == methods::NOTIFICATION_CANCELLED
                    && cancelled_id(&notification).is_some_and(|c| same_id(&c, id))
                {
                    tracing::debug!(server = %server, id, "the server cancelled the listen");
                    return ListenEnd::ByServer;
                }
                if !tagged_id(&notification).is_some_and(|t| same_id(&t, id)) {
                    continue;
                }
                if notification.method == methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED {
                    let raw = notification.params.as_deref().map_or("{}", |p| p.get());
                    let ack = match serde_json::from_str::<SubscriptionsAcknowledgedNotificationParams>(raw) {
                        Ok(ack) => ack.notifications,
                        Err(error) => return ListenEnd::Fatal(Error::Protocol {
                            server,
                            detail: format!("its subscriptions/acknowledged notification is malformed: {error}"),
                        }),
                    };
                    if let Some(extra) = exceeds(filter, &ack) {
                        return ListenEnd::Fatal(Error::Protocol {
                            server,
                            detail: format!("it acknowledged {extra} on `subscriptions/listen`, which was not asked for"),
                        });
                    }
                    match first.take() {
                        Some(first) => {
                            if first.send(Ok((id, ack.clone()))).is_err() {
                                return ListenEnd::ByServer;
                            }
                        }
                        None => {
                            // Whatever changed during the gap was missed.
                            client.inner.subs.watch.missed(&ack);
                            let _ = tx.send(SubscriptionEvent::Resumed(ack.clone())).await;
                        }
                    }
                    granted = Some(ack);
                    continue;
                }
                let event = Event::from_notification(notification);
                match &granted {
                    Some(ack) if !allows(ack, &event) => {
                        tracing::warn!(server = %server, id, ?event, "dropped a notification the subscription did not ask for");
                    }
                    _ => {
                        if granted.is_none() {
                            tracing::debug!(server = %server, id, "a notification before the acknowledgement");
                        }
                        let _ = tx.send(SubscriptionEvent::Event(event)).await;
                    }
                }
            }
            outcome = &mut request => {
                let acknowledged = granted.is_some();
                return match outcome.map_err(Error::from) {
                    Ok(raw) => match check_result_type(&server, rq::SubscriptionsListen::METHOD, &raw, peek_result_type(&raw).as_deref()) {
                        Ok(()) => ListenEnd::ByServer,
                        Err(error) => ListenEnd::Fatal(error),
                    },
                    Err(error @ (Error::ResponseLost { .. } | Error::Timeout { .. } | Error::Transport { .. })) => {
                        ListenEnd::Dropped(error, acknowledged)
                    }
                    Err(error) => ListenEnd::Fatal(error),
                };
            }
            () = &mut ack_deadline, if granted.is_none() => {
                return ListenEnd::Dropped(Error::Timeout {
                    server,
                    method: format!("{} (acknowledgement)", rq::SubscriptionsListen::METHOD),
                    after: client.inner.subs.ack_timeout,
                }, false);
            }
        }
    }
}

impl Watch {
    /// A re-listen: what its gap may have hidden is stale.
    fn missed(&self, filter: &SubscriptionFilter) {
        let mut bits = 0;
        for (on, kind) in [
            (filter.tools_list_changed, ListKind::Tools),
            (filter.prompts_list_changed, ListKind::Prompts),
            (filter.resources_list_changed, ListKind::Resources),
        ] {
            if on == Some(true) {
                self.cache.invalidate(Invalidate::List(kind));
                bits |= bit(kind);
            }
        }
        for uri in filter.resource_subscriptions.iter().flatten() {
            self.cache.invalidate(Invalidate::Read(uri));
        }
        if bits != 0 {
            self.mark_dirty(bits);
        }
    }
}

fn same_id(theirs: &RequestId, ours: i64) -> bool {
    match theirs {
        RequestId::Number(n) => *n == ours,
        RequestId::String(s) => s.parse::<i64>().is_ok_and(|n| n == ours),
    }
}

fn tagged_id(notification: &ServerNotification) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct Tagged {
        #[serde(rename = "_meta")]
        meta: Option<JsonObject>,
    }
    let raw = notification.params.as_deref()?;
    let tagged: Tagged = serde_json::from_str(raw.get()).ok()?;
    switchboard_types::subscription_id_from_meta(tagged.meta.as_ref())
}

fn cancelled_id(notification: &ServerNotification) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cancelled {
        request_id: RequestId,
    }
    let raw = notification.params.as_deref()?;
    serde_json::from_str::<Cancelled>(raw.get())
        .ok()
        .map(|c| c.request_id)
}

/// The part of `granted` that `asked` did not ask for, named.
fn exceeds(asked: &SubscriptionFilter, granted: &SubscriptionFilter) -> Option<String> {
    for (name, a, g) in [
        (
            "toolsListChanged",
            asked.tools_list_changed,
            granted.tools_list_changed,
        ),
        (
            "promptsListChanged",
            asked.prompts_list_changed,
            granted.prompts_list_changed,
        ),
        (
            "resourcesListChanged",
            asked.resources_list_changed,
            granted.resources_list_changed,
        ),
    ] {
        if g == Some(true) && a != Some(true) {
            return Some(format!("`{name}`"));
        }
    }
    let asked_uris = asked.resource_subscriptions.as_deref().unwrap_or_default();
    for uri in granted.resource_subscriptions.iter().flatten() {
        if !asked_uris.contains(uri) {
            return Some(format!("resource {uri:?}"));
        }
    }
    for (key, value) in granted.extra.to_object() {
        let within = match (&value, asked.extra.value(&key).as_ref()) {
            (Value::Null | Value::Bool(false), _) => true,
            (Value::Array(items), _) if items.is_empty() => true,
            (Value::Array(items), Some(Value::Array(asked))) => {
                items.iter().all(|i| asked.contains(i))
            }
            (_, None) => false,
            (value, Some(asked)) => value == asked,
        };
        if !within {
            return Some(format!("`{key}`"));
        }
    }
    None
}

/// Whether the acknowledged filter covers `event`.
fn allows(granted: &SubscriptionFilter, event: &Event) -> bool {
    match event {
        Event::ListChanged(ListKind::Tools) => granted.tools_list_changed == Some(true),
        Event::ListChanged(ListKind::Prompts) => granted.prompts_list_changed == Some(true),
        Event::ListChanged(ListKind::Resources) => granted.resources_list_changed == Some(true),
        Event::ResourceUpdated { uri } => granted
            .resource_subscriptions
            .iter()
            .flatten()
            .any(|s| s == uri || uri.starts_with(s.as_str())),
        _ => true,
    }
}

/// A scripted 2026-07-28 server over the in-memory pair, for this module's
/// and the cache's tests.
#[cfg(test)]
pub(super) mod script {
    use serde_json::{Value, json};

    use crate::Client;
    use crate::client::ClientBuilder;
    use crate::transport::memory::{self, MemoryEnd};

    pub(crate) async fn recv(peer: &mut MemoryEnd) -> Value {
        serde_json::from_slice(&peer.recv().await.expect("client open")).unwrap()
    }

    pub(crate) async fn reply(peer: &MemoryEnd, request: &Value, result: Value) {
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string())
            .await
            .unwrap();
    }

    pub(crate) async fn fail(peer: &MemoryEnd, request: &Value, code: i64) {
        peer.send(
            json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": "no"}})
                .to_string(),
        )
        .await
        .unwrap();
    }

    /// Answers the next request with `result`; returns the request.
    pub(crate) async fn answer(peer: &mut MemoryEnd, result: Value) -> Value {
        let request = recv(peer).await;
        reply(peer, &request, result).await;
        request
    }

    pub(crate) async fn notify(peer: &MemoryEnd, method: &str, params: Value) {
        peer.send(json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string())
            .await
            .unwrap();
    }

    /// Nothing arrives within 10 ms (of paused time).
    pub(crate) async fn quiet(peer: &mut MemoryEnd) -> bool {
        tokio::time::timeout(std::time::Duration::from_millis(10), peer.recv())
            .await
            .is_err()
    }

    pub(crate) async fn connect(builder: ClientBuilder) -> (Client, MemoryEnd) {
        let (client_end, mut server) = memory::pair();
        let connect = builder
            .name("scripted")
            .connect(client_end.into_connector());
        let discover = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}, "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true}}});
        let (client, _) = tokio::join!(connect, answer(&mut server, discover));
        (client.unwrap(), server)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::script::*;
    use super::*;
    use crate::transport::memory::MemoryEnd;

    fn tools_filter() -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: Some(true),
            resource_subscriptions: Some(vec!["file:///a".into()]),
            ..Default::default()
        }
    }

    fn ack(id: &Value, notifications: Value) -> Value {
        json!({"_meta": {"io.modelcontextprotocol/subscriptionId": id}, "notifications": notifications})
    }

    #[test]
    fn acknowledgement_must_be_a_subset() {
        let asked = tools_filter();
        assert_eq!(exceeds(&asked, &asked), None);
        assert_eq!(exceeds(&asked, &SubscriptionFilter::default()), None);
        let more = SubscriptionFilter {
            prompts_list_changed: Some(true),
            ..Default::default()
        };
        assert_eq!(
            exceeds(&asked, &more).as_deref(),
            Some("`promptsListChanged`")
        );
        let other_uri = SubscriptionFilter {
            resource_subscriptions: Some(vec!["file:///b".into()]),
            ..Default::default()
        };
        assert!(exceeds(&asked, &other_uri).unwrap().contains("file:///b"));
        let mut extra = SubscriptionFilter::default();
        extra.extra.insert("taskStatus", json!(true));
        assert!(exceeds(&asked, &extra).is_some());
        let mut asked_extra = asked.clone();
        asked_extra.extra.insert("taskStatus", json!(true));
        assert_eq!(exceeds(&asked_extra, &extra), None);
    }

    /// Listening must work from `tokio::spawn` on a multi-thread runtime.
    #[test]
    fn listen_futures_are_send() {
        fn assert_send<T: Send>(_: T) {}
        let client: Option<Client> = None;
        if let Some(client) = client {
            assert_send(client.listen(SubscriptionFilter::default()));
            assert_send(client.subscribe_resource("x"));
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_bound() {
        let config = ListenConfig::default();
        assert_eq!(config.backoff(1), Duration::from_millis(250));
        assert_eq!(config.backoff(2), Duration::from_millis(500));
        assert_eq!(config.backoff(3), Duration::from_secs(1));
        assert_eq!(config.backoff(30), Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn an_acknowledgement_granting_more_than_asked_is_a_protocol_error() {
        let (client, mut server) = connect(Client::builder()).await;
        let script = async {
            let listen = recv(&mut server).await;
            assert_eq!(listen["method"], "subscriptions/listen");
            assert_eq!(listen["params"]["notifications"]["toolsListChanged"], true);
            assert_eq!(
                listen["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
            let granted = json!({"toolsListChanged": true, "promptsListChanged": true});
            notify(
                &server,
                "notifications/subscriptions/acknowledged",
                ack(&listen["id"], granted),
            )
            .await;
            // The client gives the listen up.
            let cancel = recv(&mut server).await;
            assert_eq!(cancel["method"], "notifications/cancelled");
            assert_eq!(cancel["params"]["requestId"], listen["id"]);
        };
        let (result, ()) = tokio::join!(client.listen(tools_filter()), script);
        let error = result.unwrap_err();
        assert!(
            matches!(error, Error::Protocol { .. })
                && error.to_string().contains("promptsListChanged"),
            "{error}"
        );

        // Less than asked is fine, and reported.
        let script = async {
            let listen = recv(&mut server).await;
            notify(
                &server,
                "notifications/subscriptions/acknowledged",
                ack(&listen["id"], json!({"toolsListChanged": true})),
            )
            .await;
        };
        let (subscription, ()) = tokio::join!(client.listen(tools_filter()), script);
        let subscription = subscription.unwrap();
        assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
        assert_eq!(subscription.acknowledged().resource_subscriptions, None);
    }

    #[tokio::test(start_paused = true)]
    async fn notifications_are_demultiplexed_by_subscription_id() {
        let (client, mut server) = connect(Client::builder()).await;
        async fn open(server: &mut MemoryEnd, filter: Value) -> Value {
            let listen = recv(server).await;
            notify(
                server,
                "notifications/subscriptions/acknowledged",
                ack(&listen["id"], filter),
            )
            .await;
            listen["id"].clone()
        }
        let (a, a_id) = tokio::join!(
            client.listen(tools_filter()),
            open(&mut server, json!({"toolsListChanged": true}))
        );
        let mut a = a.unwrap();
        let resources = SubscriptionFilter {
            resource_subscriptions: Some(vec!["file:///a".into()]),
            ..Default::default()
        };
        let (b, b_id) = tokio::join!(
            client.listen(resources),
            open(&mut server, json!({"resourceSubscriptions": ["file:///a"]}))
        );
        let mut b = b.unwrap();
        assert_ne!(a_id, b_id);
        assert_eq!(json!(a.id()), a_id);

        let tag = |id: &Value| json!({"io.modelcontextprotocol/subscriptionId": id});
        notify(
            &server,
            "notifications/resources/updated",
            json!({"uri": "file:///a", "_meta": tag(&b_id)}),
        )
        .await;
        notify(
            &server,
            "notifications/tools/list_changed",
            json!({"_meta": tag(&a_id)}),
        )
        .await;
        // Untagged, or another stream's id: for nobody's subscription.
        notify(&server, "notifications/tools/list_changed", json!({})).await;
        notify(
            &server,
            "notifications/tools/list_changed",
            json!({"_meta": tag(&json!(999))}),
        )
        .await;
        // Tagged for `a` but a kind it was not granted: dropped.
        notify(
            &server,
            "notifications/prompts/list_changed",
            json!({"_meta": tag(&a_id)}),
        )
        .await;
        notify(
            &server,
            "notifications/tools/list_changed",
            json!({"_meta": tag(&a_id)}),
        )
        .await;

        for _ in 0..2 {
            match a.next().await {
                Some(SubscriptionEvent::Event(Event::ListChanged(ListKind::Tools))) => {}
                other => panic!("{other:?}"),
            }
        }
        match b.next().await {
            Some(SubscriptionEvent::Event(Event::ResourceUpdated { uri })) => {
                assert_eq!(uri, "file:///a")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(10), a.next())
                .await
                .is_err()
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(10), b.next())
                .await
                .is_err()
        );

        // Dropping a subscription cancels its listen (stdio-style).
        drop(a);
        let cancel = recv(&mut server).await;
        assert_eq!(cancel["method"], "notifications/cancelled");
        assert_eq!(cancel["params"]["requestId"], a_id);
    }

    /// What a network transport reports when `request`'s response stream
    /// breaks.
    fn lost(request: &Value) -> crate::transport::Incoming {
        crate::transport::Incoming::Lost {
            id: serde_json::from_value(request["id"].clone()).unwrap(),
            why: "stream broke".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_listen_is_sent_again_after_a_backoff() {
        let (client, mut server) = connect(
            Client::builder().relisten_backoff(Duration::from_secs(1), Duration::from_secs(4)),
        )
        .await;
        let (sub, first) = tokio::join!(client.listen(tools_filter()), async {
            let listen = recv(&mut server).await;
            notify(
                &server,
                "notifications/subscriptions/acknowledged",
                ack(&listen["id"], json!({"toolsListChanged": true})),
            )
            .await;
            listen
        });
        let mut sub = sub.unwrap();
        // The stream breaks without a result.
        server.report(lost(&first)).await.unwrap();
        match sub.next().await {
            Some(SubscriptionEvent::Interrupted {
                attempt: 1,
                retry_in,
                ..
            }) => assert_eq!(retry_in, Duration::from_secs(1)),
            other => panic!("{other:?}"),
        }
        let started = tokio::time::Instant::now();
        let again = recv(&mut server).await;
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert_eq!(again["method"], "subscriptions/listen");
        assert_ne!(again["id"], first["id"]);
        // Breaks again before acknowledging: the wait doubles.
        server.report(lost(&again)).await.unwrap();
        match sub.next().await {
            Some(SubscriptionEvent::Interrupted {
                attempt: 2,
                retry_in,
                ..
            }) => assert_eq!(retry_in, Duration::from_secs(2)),
            other => panic!("{other:?}"),
        }
        let third = recv(&mut server).await;
        notify(
            &server,
            "notifications/subscriptions/acknowledged",
            ack(&third["id"], json!({"toolsListChanged": true})),
        )
        .await;
        match sub.next().await {
            Some(SubscriptionEvent::Resumed(filter)) => {
                assert_eq!(filter.tools_list_changed, Some(true))
            }
            other => panic!("{other:?}"),
        }
        let tag = json!({"io.modelcontextprotocol/subscriptionId": third["id"]});
        notify(
            &server,
            "notifications/tools/list_changed",
            json!({"_meta": tag}),
        )
        .await;
        assert!(matches!(
            sub.next().await,
            Some(SubscriptionEvent::Event(Event::ListChanged(
                ListKind::Tools
            )))
        ));

        // The server ends it with a result: no re-listen.
        reply(
            &server,
            &third,
            json!({"resultType": "complete", "_meta": tag}),
        )
        .await;
        assert!(matches!(
            sub.next().await,
            Some(SubscriptionEvent::Ended(None))
        ));
        assert!(sub.next().await.is_none());
        assert!(quiet(&mut server).await);
    }

    #[tokio::test(start_paused = true)]
    async fn the_server_may_end_a_listen_with_a_cancellation() {
        let (client, mut server) = connect(Client::builder()).await;
        let (sub, listen) = tokio::join!(client.listen(tools_filter()), async {
            let listen = recv(&mut server).await;
            notify(
                &server,
                "notifications/subscriptions/acknowledged",
                ack(&listen["id"], json!({})),
            )
            .await;
            listen
        });
        let mut sub = sub.unwrap();
        notify(
            &server,
            "notifications/cancelled",
            json!({"requestId": listen["id"], "reason": "shutdown"}),
        )
        .await;
        assert!(matches!(
            sub.next().await,
            Some(SubscriptionEvent::Ended(None))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn re_listening_gives_up_after_the_attempt_cap() {
        let (client, mut server) = connect(Client::builder().relisten_attempts(1)).await;
        let (sub, first) = tokio::join!(client.listen(tools_filter()), async {
            let listen = recv(&mut server).await;
            notify(
                &server,
                "notifications/subscriptions/acknowledged",
                ack(&listen["id"], json!({})),
            )
            .await;
            listen
        });
        let mut sub = sub.unwrap();
        server.report(lost(&first)).await.unwrap();
        assert!(matches!(
            sub.next().await,
            Some(SubscriptionEvent::Interrupted { attempt: 1, .. })
        ));
        let again = recv(&mut server).await;
        server.report(lost(&again)).await.unwrap();
        match sub.next().await {
            Some(SubscriptionEvent::Ended(Some(error))) => {
                assert!(matches!(error, Error::ResponseLost { .. }), "{error}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn list_changed_refreshes_the_list_when_asked_to() {
        let (client, mut server) = connect(Client::builder().auto_refresh_lists(true)).await;
        assert!(client.tools().is_none());
        let (tools, _) = tokio::join!(
            client.list_tools(),
            answer(
                &mut server,
                json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]})
            )
        );
        assert_eq!(tools.unwrap().len(), 1);
        assert_eq!(client.tools().unwrap()[0].name, "a");
        notify(&server, "notifications/tools/list_changed", json!({})).await;
        let refresh = answer(&mut server, json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}, {"name": "b", "inputSchema": {"type": "object"}}]})).await;
        assert_eq!(refresh["method"], "tools/list");
        for _ in 0..100 {
            if client.tools().is_some_and(|t| t.len() == 2) {
                break;
            }
            tokio::task::yield_now().await;
        }
        let names: Vec<_> = client
            .tools()
            .unwrap()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[tokio::test(start_paused = true)]
    async fn without_auto_refresh_the_snapshot_stays() {
        let (client, mut server) = connect(Client::builder()).await;
        let (_, _) = tokio::join!(
            client.list_prompts(),
            answer(&mut server, json!({"prompts": [{"name": "p"}]}))
        );
        notify(&server, "notifications/prompts/list_changed", json!({})).await;
        assert!(quiet(&mut server).await);
        assert_eq!(client.prompts().unwrap()[0].name, "p");
    }

    #[tokio::test(start_paused = true)]
    async fn resources_subscribe_is_a_session_era_method() {
        let (client, _server) = connect(Client::builder()).await;
        let error = client.subscribe_resource("file:///a").await.unwrap_err();
        assert!(matches!(error, Error::NotInThisEra { .. }), "{error}");
    }
}
