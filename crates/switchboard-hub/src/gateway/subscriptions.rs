//! `resources/subscribe` and `resources/unsubscribe` for session-era
//! hosts: each host's subscriptions to the URIs the gateway serves, one
//! hub subscription per backend resource however many hosts share it
//! ([`Hub::subscribe_resource`](crate::hub::Hub::subscribe_resource),
//! renewed across reconnections), and the backend's
//! `notifications/resources/updated` passed to each subscribed host under
//! the URI it subscribed to.
//!
//! A host holds at most [`MAX_SUBSCRIPTIONS_PER_HOST`]; its subscriptions
//! end with its connection.

use std::sync::{Arc, Mutex};

use switchboard::Event;
use switchboard::server::{Peer, Reply, RequestContext};
use switchboard::types::jsonrpc::ErrorObject;
use switchboard::types::{EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams, codes};
use tokio_util::sync::CancellationToken;

use super::HubServer;
use super::uris::UriClaims;
use crate::hub::{Hub, HubEvent};

/// The most subscriptions one host connection holds at once.
pub const MAX_SUBSCRIPTIONS_PER_HOST: usize = 256;

/// Every host's subscriptions, shared by the gateway's sessions.
#[derive(Clone, Debug, Default)]
pub(crate) struct Subscriptions {
    list: Arc<Mutex<Vec<Subscription>>>,
}

#[derive(Debug)]
struct Subscription {
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
            let (server, uri) = this.resolve(&served).await.ok_or_else(|| {
                ErrorObject::new(
                    codes::RESOURCE_NOT_FOUND,
                    format!("Resource not found: {served} (no server of this gateway lists it)"),
                )
            })?;
            let subscriptions = &this.subscriptions;
            {
                let list = subscriptions.lock();
                let mine = list.iter().filter(|s| s.peer.same_connection(&cx.peer));
                let mut count = 0;
                for s in mine {
                    if s.served == served {
                        return Ok(EmptyResult::default());
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
                this.hub
                    .subscribe_resource(&server, &uri)
                    .await
                    .map_err(|error| ErrorObject::new(codes::INVALID_PARAMS, error.to_string()))?;
            }
            let stop = CancellationToken::new();
            subscriptions.lock().push(Subscription {
                peer: cx.peer.clone(),
                served: served.clone(),
                server: server.clone(),
                uri: uri.clone(),
                stop: stop.clone(),
            });
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
