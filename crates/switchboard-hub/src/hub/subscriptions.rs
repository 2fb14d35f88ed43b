//! Change notifications through the hub, in both eras: resource
//! subscriptions that outlive reconnections, and, for servers of the
//! 2026-07-28 revision (which send nothing unasked), a
//! `subscriptions/listen` for the list changes each declares.
//!
//! Whatever a server sends reaches the hub's events as
//! [`HubEvent::Server`](super::HubEvent::Server) (the client gives every
//! notification, tagged with a listen or not, to its event stream); the
//! listens here only ask for them. Each listen is drained by a task of the
//! hub and ends with its connection, or when unsubscribed.

use switchboard::types::SubscriptionFilter;
use switchboard::types::request::{self as rq, Request};
use switchboard::types::version::Era;
use switchboard::{Client, Subscription, SubscriptionEvent};
use tokio_util::sync::CancellationToken;

use super::supervisor::Slot;
use super::{Hub, HubError, Shared};

impl Hub {
    /// Asks `server` for `notifications/resources/updated` about `uri`;
    /// they arrive as [`HubEvent::Server`](super::HubEvent::Server) with
    /// [`Event::ResourceUpdated`](switchboard::Event::ResourceUpdated).
    /// Session era: `resources/subscribe`; 2026-07-28: a
    /// `subscriptions/listen` for the URI, acknowledged before this
    /// returns. The subscription is renewed after every reconnection until
    /// [`Hub::unsubscribe_resource`]. Subscribing twice is one
    /// subscription.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::Unavailable`] when it is
    /// not ready; [`HubError::CapabilityMissing`] unless it declared
    /// `resources.subscribe`; [`HubError::Request`] when it refused.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request; nothing is recorded.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), HubError> {
        let slot = self.slot(server)?;
        let client = self.client(server)?;
        let method = rq::Subscribe::METHOD;
        if !declares_subscribe(&client) {
            return Err(HubError::CapabilityMissing {
                server: server.into(),
                capability: "resources.subscribe",
                method,
            });
        }
        if slot.subscriptions().contains_key(uri) {
            return Ok(());
        }
        let listen = subscribe(&self.inner.shared, &client, uri, &slot.connection())
            .await
            .map_err(|source| HubError::Request {
                server: server.into(),
                method,
                source: Box::new(source),
            })?;
        slot.subscriptions().insert(uri.to_owned(), listen);
        Ok(())
    }

    /// Stops the updates [`Hub::subscribe_resource`] asked for (an
    /// unknown `uri` is no error). The subscription is forgotten even
    /// when the server cannot be told (it is not ready).
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::Request`] when a ready
    /// session-era server refused `resources/unsubscribe`.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request; the subscription is
    /// forgotten already.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), HubError> {
        let slot = self.slot(server)?;
        let Some(listen) = slot.subscriptions().remove(uri) else {
            return Ok(());
        };
        match listen {
            Some(listen) => listen.cancel(),
            None => {
                if let Ok(client) = self.client(server) {
                    client
                        .unsubscribe_resource(uri)
                        .await
                        .map_err(|source| HubError::Request {
                            server: server.into(),
                            method: rq::Unsubscribe::METHOD,
                            source: Box::new(source),
                        })?;
                }
            }
        }
        Ok(())
    }
}

fn declares_subscribe(client: &Client) -> bool {
    client
        .capabilities()
        .resources
        .as_ref()
        .is_some_and(|r| r.subscribe == Some(true))
}

/// Subscribes `client` to `uri`: the listen's stop for the stateless era,
/// `None` for the session era.
async fn subscribe(
    shared: &Shared,
    client: &Client,
    uri: &str,
    connection: &CancellationToken,
) -> Result<Option<CancellationToken>, switchboard::Error> {
    if client.era() != Era::Modern {
        client.subscribe_resource(uri).await?;
        return Ok(None);
    }
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec![uri.to_owned()]),
        ..Default::default()
    };
    let listen = client.listen(filter).await?;
    let stop = connection.child_token();
    drain(shared, listen, stop.clone(), "resource subscription");
    Ok(Some(stop))
}

/// Drains `listen` (its notifications reach the client's events anyway)
/// until it ends or `stop` fires, which ends it.
fn drain(shared: &Shared, mut listen: Subscription, stop: CancellationToken, what: &'static str) {
    shared.tasks.spawn(async move {
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                event = listen.next() => match event {
                    Some(SubscriptionEvent::Ended(Some(error))) => {
                        tracing::warn!(%error, "the server's {what} (subscriptions/listen) ended");
                        break;
                    }
                    Some(SubscriptionEvent::Ended(None)) | None => {
                        tracing::debug!("the server ended its {what} (subscriptions/listen)");
                        break;
                    }
                    Some(_) => {}
                },
            }
        }
    });
}

/// On a new connection: renews `slot`'s resource subscriptions, and asks a
/// 2026-07-28 server for the list changes it declares. A failure is
/// logged; the server stays ready.
pub(crate) async fn restore(shared: &Shared, slot: &Slot, client: &Client) {
    let connection = slot.connection();
    if client.era() == Era::Modern {
        let caps = client.capabilities();
        let filter = SubscriptionFilter {
            tools_list_changed: caps
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
                .filter(|&on| on),
            prompts_list_changed: caps
                .prompts
                .as_ref()
                .and_then(|p| p.list_changed)
                .filter(|&on| on),
            resources_list_changed: caps
                .resources
                .as_ref()
                .and_then(|r| r.list_changed)
                .filter(|&on| on),
            ..Default::default()
        };
        let wanted = filter.tools_list_changed.is_some()
            || filter.prompts_list_changed.is_some()
            || filter.resources_list_changed.is_some();
        if wanted {
            match client.listen(filter).await {
                Ok(listen) => drain(shared, listen, connection.child_token(), "list changes"),
                Err(error) => {
                    tracing::warn!(%error, "could not listen for list changes");
                }
            }
        }
    }
    let uris: Vec<String> = slot.subscriptions().keys().cloned().collect();
    for uri in uris {
        let renewed = subscribe(shared, client, &uri, &connection).await;
        let mut subscriptions = slot.subscriptions();
        // Unsubscribed meanwhile: leave it so.
        let Some(entry) = subscriptions.get_mut(&uri) else {
            if let Ok(Some(stop)) = renewed {
                stop.cancel();
            }
            continue;
        };
        match renewed {
            Ok(listen) => *entry = listen,
            Err(error) => {
                tracing::warn!(uri, %error, "could not renew a resource subscription");
            }
        }
    }
}
