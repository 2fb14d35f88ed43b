//! `resources/subscribe` and `resources/unsubscribe` for session-era
//! hosts, `subscriptions/listen` for 2026-07-28 ones: each host's
//! subscriptions to the URIs the gateway serves, one hub subscription per
//! backend resource however many hosts share it
//! ([`Hub::subscribe_resource`](crate::hub::Hub::subscribe_resource),
//! renewed across reconnections), and the backend's
//! `notifications/resources/updated` passed to each subscribed host under
//! the URI it subscribed to.
//!
//! A session-era host holds at most [`MAX_SUBSCRIPTIONS_PER_HOST`]; its
//! subscriptions end with its connection. A listen stream takes as many
//! of the URIs it names, and the list changes it asks for (tools,
//! prompts, resources: whenever what the gateway lists may have changed);
//! it ends when the host closes it. At most [`MAX_LISTENS`] streams are
//! open at once; the next is refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard::server::{Peer, Reply, RequestContext};
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::meta::META_SUBSCRIPTION_ID;
use switchboard::types::subscriptions::{
    SubscriptionFilter, SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use switchboard::types::{EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams, codes};
use switchboard::{Event, ListKind};
use tokio_util::sync::CancellationToken;

use super::HubServer;
use super::uris::UriClaims;
use crate::hub::{Hub, HubEvent};

/// The most subscriptions one host connection (or one listen stream)
/// holds at once.
pub const MAX_SUBSCRIPTIONS_PER_HOST: usize = 256;

/// The most `subscriptions/listen` streams open at once, all hosts
/// together.
pub(crate) const MAX_LISTENS: usize = 128;

/// Every host's subscriptions, shared by the gateway's sessions.
#[derive(Clone, Debug, Default)]
pub(crate) struct Subscriptions {
    list: Arc<Mutex<Vec<Subscription>>>,
    listens: Arc<AtomicUsize>,
}

#[derive(Debug)]
struct Subscription {
    /// The host's connection, or a listen stream's own identity.
    peer: Peer,
    /// The URI as the host subscribed to it.
    served: String,
    /// The backend and the URI it wrote.
    server: String,
    uri: String,
    stop: CancellationToken,
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Subscription>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes `peer`'s subscription to `served` (or every one of `peer`'s
    /// when `served` is `None`), and answers the backend resources no one
    /// subscribes to any more.
    fn remove(&self, peer: &Peer, served: Option<&str>) -> Vec<(String, String)> {
        let mut list = self.lock();
        let mut gone = Vec::new();
        list.retain(|s| {
            let this = s.peer.same_connection(peer) && served.is_none_or(|u| u == s.served);
            if this {
                s.stop.cancel();
                gone.push((s.server.clone(), s.uri.clone()));
            }
            !this
        });
        gone.retain(|(server, uri)| !list.iter().any(|s| &s.server == server && &s.uri == uri));
        gone.dedup();
        gone
    }
}

/// The error of a listen stream whose host has gone (it is not sent).
fn gone() -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, "the listening host has gone")
}

/// One open listen stream: counted against [`MAX_LISTENS`], and its
/// resource subscriptions, held under an identity of its own, end with
/// it (the stream ends by being dropped when the host closes it).
struct Listening {
    owner: Peer,
    subscriptions: Subscriptions,
    hub: Hub,
    tasks: tokio_util::task::TaskTracker,
}

impl Listening {
    fn new(server: &HubServer) -> Result<Self, ErrorObject> {
        let listens = &server.subscriptions.listens;
        if listens.fetch_add(1, Ordering::Relaxed) >= MAX_LISTENS {
            listens.fetch_sub(1, Ordering::Relaxed);
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "the gateway has {MAX_LISTENS} subscriptions/listen streams open, the most it \
                     keeps; close one, or retry later"
                ),
            ));
        }
        Ok(Self {
            owner: Peer::default(),
            subscriptions: server.subscriptions.clone(),
            hub: server.hub.clone(),
            tasks: server.tasks.clone(),
        })
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.subscriptions.listens.fetch_sub(1, Ordering::Relaxed);
        let gone = self.subscriptions.remove(&self.owner, None);
        if !gone.is_empty() {
            let hub = self.hub.clone();
            self.tasks
                .spawn(async move { unsubscribe_all(&hub, gone).await });
        }
    }
}

/// What a listen stream that agreed to `agreed` (and watches `watched`:
/// backend, its URI, the host's URI) is told of `event`: each
/// notification's method and params.
fn listened(
    agreed: &SubscriptionFilter,
    watched: &[(String, String, String)],
    event: &HubEvent,
    hub: &Hub,
    claims: &UriClaims,
) -> Vec<(&'static str, Value)> {
    let empty = || Value::Object(Default::default());
    let mut said = Vec::new();
    // Whatever changes which servers are up changes every list.
    let every = matches!(
        event,
        HubEvent::StateChanged { .. }
            | HubEvent::ServerAdded { .. }
            | HubEvent::ServerRemoved { .. }
            | HubEvent::Lagged(_)
    );
    let list = |kind: ListKind| {
        every
            || matches!(event, HubEvent::Server { event: Event::ListChanged(k), .. } if *k == kind)
    };
    if agreed.tools_list_changed == Some(true)
        && (every || matches!(event, HubEvent::ToolsChanged { .. }))
    {
        said.push(("notifications/tools/list_changed", empty()));
    }
    if agreed.prompts_list_changed == Some(true) && list(ListKind::Prompts) {
        said.push(("notifications/prompts/list_changed", empty()));
    }
    if agreed.resources_list_changed == Some(true) && list(ListKind::Resources) {
        said.push(("notifications/resources/list_changed", empty()));
    }
    if let HubEvent::Server {
        server: from,
        event: Event::ResourceUpdated { uri: updated },
    } = event
    {
        for (server, uri, served) in watched {
            // The backend may name a sub-resource of the one listened to.
            if from != server || !updated.starts_with(uri.as_str()) {
                continue;
            }
            let updated = if updated == uri {
                served.clone()
            } else {
                claims.now(hub.server_names()).serve(server, updated)
            };
            said.push((
                "notifications/resources/updated",
                serde_json::json!({ "uri": updated }),
            ));
        }
    }
    said
}

/// Ends the hub's subscriptions to `resources` (no host wants them).
async fn unsubscribe_all(hub: &Hub, resources: Vec<(String, String)>) {
    for (server, uri) in resources {
        if let Err(error) = hub.unsubscribe_resource(&server, &uri).await {
            tracing::debug!(%server, %uri, %error, "ending a resource subscription");
        }
    }
}

impl HubServer {
    pub(super) fn subscribe(
        &self,
        params: SubscribeRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        let this = self.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            first_start.await;
            let served = params.uri;
            let Some((server, uri, stop)) = this.add(&cx.peer, &served).await? else {
                return Ok(EmptyResult::default());
            };
            let subscriptions = &this.subscriptions;
            let events = this.hub.events();
            let hub = this.hub.clone();
            let subscriptions = subscriptions.clone();
            this.tasks.spawn(forward_updates(
                events,
                cx.peer,
                (server, uri, served),
                stop,
                hub,
                subscriptions,
                this.uris.clone(),
            ));
            Ok(EmptyResult::default())
        })
    }

    /// Subscribes `peer` (a host's connection, or a listen stream) to the
    /// URI the host knows as `served`: the backend and its URI, and the
    /// subscription's stop; `None` when `peer` holds it already.
    async fn add(
        &self,
        peer: &Peer,
        served: &str,
    ) -> Result<Option<(String, String, CancellationToken)>, ErrorObject> {
        let (server, uri) = self.resolve(served).await.ok_or_else(|| {
            ErrorObject::new(
                codes::RESOURCE_NOT_FOUND,
                format!("Resource not found: {served} (no server of this gateway lists it)"),
            )
        })?;
        let subscriptions = &self.subscriptions;
        {
            let list = subscriptions.lock();
            let mine = list.iter().filter(|s| s.peer.same_connection(peer));
            let mut count = 0;
            for s in mine {
                if s.served == served {
                    return Ok(None);
                }
                count += 1;
            }
            if count >= MAX_SUBSCRIPTIONS_PER_HOST {
                return Err(ErrorObject::new(
                    codes::INVALID_REQUEST,
                    format!(
                        "this connection holds {MAX_SUBSCRIPTIONS_PER_HOST} subscriptions, \
                         the most it may; unsubscribe from one first"
                    ),
                ));
            }
        }
        // Subscribed before it is recorded: a refusal records nothing.
        let shared = subscriptions
            .lock()
            .iter()
            .any(|s| s.server == server && s.uri == uri);
        if !shared {
            self.hub
                .subscribe_resource(&server, &uri)
                .await
                .map_err(|error| ErrorObject::new(codes::INVALID_PARAMS, error.to_string()))?;
        }
        let stop = CancellationToken::new();
        subscriptions.lock().push(Subscription {
            peer: peer.clone(),
            served: served.to_owned(),
            server: server.clone(),
            uri: uri.clone(),
            stop: stop.clone(),
        });
        Ok(Some((server, uri, stop)))
    }

    /// `subscriptions/listen` for a 2026-07-28 host (see the module): the
    /// acknowledgement of what it will get, then each change, all tagged
    /// with the stream's id, until the host closes it (or the hub ends:
    /// then the request is answered).
    pub(super) fn listen(
        &self,
        params: SubscriptionsListenRequestParams,
        cx: RequestContext,
    ) -> Reply<SubscriptionsListenResult> {
        let this = self.clone();
        let first_start = self.first_start();
        Box::pin(async move {
            let id = cx.subscription_id().unwrap_or(Value::Null);
            let listening = Listening::new(&this)?;
            first_start.await;
            // Heard from now on: nothing between the acknowledgement and
            // the first change is missed.
            let mut events = this.hub.events();
            let asked = params.notifications;
            let mut watched = Vec::new();
            for served in asked.resource_subscriptions.iter().flatten() {
                match this.add(&listening.owner, served).await {
                    Ok(Some((server, uri, _))) => watched.push((server, uri, served.clone())),
                    Ok(None) => {}
                    // Left out of the acknowledgement.
                    Err(error) => {
                        tracing::debug!(uri = %served, error = %error.message, "not listened to");
                    }
                }
            }
            let on = |flag: Option<bool>| flag.filter(|on| *on);
            let agreed = SubscriptionFilter {
                tools_list_changed: on(asked.tools_list_changed),
                prompts_list_changed: on(asked.prompts_list_changed),
                resources_list_changed: on(asked.resources_list_changed),
                resource_subscriptions: asked.resource_subscriptions.is_some().then(|| {
                    watched
                        .iter()
                        .map(|(_, _, served)| served.clone())
                        .collect()
                }),
                ..Default::default()
            };
            let tag = serde_json::json!({ META_SUBSCRIPTION_ID: id });
            let ack = serde_json::json!({ "notifications": agreed, "_meta": tag });
            if cx
                .notify("notifications/subscriptions/acknowledged", Some(ack))
                .await
                .is_err()
            {
                return Err(gone());
            }
            let uris = this.uris.clone();
            while let Some(event) = events.next().await {
                for (method, mut params) in listened(&agreed, &watched, &event, &this.hub, &uris) {
                    params["_meta"] = tag.clone();
                    if cx.notify(method, Some(params)).await.is_err() {
                        return Err(gone());
                    }
                }
            }
            Ok(SubscriptionsListenResult {
                meta: Some(tag.as_object().cloned().unwrap_or_default()),
                ..Default::default()
            })
        })
    }

    pub(super) fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        cx: RequestContext,
    ) -> Reply<EmptyResult> {
        let subscriptions = self.subscriptions.clone();
        let hub = self.hub.clone();
        Box::pin(async move {
            let gone = subscriptions.remove(&cx.peer, Some(&params.uri));
            unsubscribe_all(&hub, gone).await;
            Ok(EmptyResult::default())
        })
    }
}

/// Passes `server`'s updates of `uri` to `peer` as `served`, until the
/// subscription is stopped or the host goes away (which ends every one of
/// its subscriptions).
async fn forward_updates(
    mut events: crate::hub::HubEvents,
    peer: Peer,
    (server, uri, served): (String, String, String),
    stop: CancellationToken,
    hub: Hub,
    subscriptions: Subscriptions,
    claims: UriClaims,
) {
    let closed = peer.closed();
    tokio::pin!(closed);
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            () = &mut closed => {
                let gone = subscriptions.remove(&peer, None);
                unsubscribe_all(&hub, gone).await;
                return;
            }
            event = events.next() => event,
        };
        let Some(event) = event else { return };
        let HubEvent::Server {
            server: from,
            event: Event::ResourceUpdated { uri: updated },
        } = event
        else {
            continue;
        };
        // The backend may name a sub-resource of the one subscribed to.
        if from != server || !updated.starts_with(&uri) {
            continue;
        }
        let updated = if updated == uri {
            served.clone()
        } else {
            claims.now(hub.server_names()).serve(&server, &updated)
        };
        let params = serde_json::json!({ "uri": updated });
        if peer
            .notify("notifications/resources/updated", Some(params))
            .await
            .is_err()
        {
            return;
        }
    }
}
