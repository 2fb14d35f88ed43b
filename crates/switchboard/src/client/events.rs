//! One ordered stream of what a server tells the client.
//!
//! [`Client::events`](crate::Client::events) returns an [`EventStream`]:
//! every notification the connection receives, typed, in arrival order —
//! progress, log messages, list changes, resource updates, task status,
//! elicitation completions, anything else raw — and finally
//! [`Event::Closed`] when the connection ends. Each stream has its own
//! bounded buffer ([`ClientBuilder::notification_buffer`](crate::ClientBuilder::notification_buffer));
//! a consumer that falls behind is told how many events it missed with
//! [`Event::Lagged`], never silently.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;
use switchboard_types::elicitation::ElicitationCompleteNotificationParams;
use switchboard_types::notifications::ProgressNotificationParams;
use switchboard_types::tasks::TaskStatusNotificationParams;
use switchboard_types::{LoggingMessageNotificationParams, methods};
use tokio::sync::mpsc;

use crate::engine::{Notice, ServerNotification};
use crate::transport::TransportError;

/// Which list changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListKind {
    /// `notifications/tools/list_changed`.
    Tools,
    /// `notifications/prompts/list_changed`.
    Prompts,
    /// `notifications/resources/list_changed`.
    Resources,
}

/// Something the server said, in arrival order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Event {
    /// `notifications/progress` (also delivered to the request's own
    /// progress callback).
    Progress(ProgressNotificationParams),
    /// `notifications/message`: a log line.
    Log(LoggingMessageNotificationParams),
    /// A `list_changed` notification.
    ListChanged(ListKind),
    /// `notifications/resources/updated`: the resource at `uri` changed.
    ResourceUpdated {
        /// The resource.
        uri: String,
    },
    /// `notifications/tasks/status` (2025-11-25) or `notifications/tasks`
    /// (2026-07-28 tasks extension).
    TaskStatus(Box<TaskStatusNotificationParams>),
    /// `notifications/elicitation/complete`: a URL-mode elicitation finished.
    ElicitationComplete(ElicitationCompleteNotificationParams),
    /// Any other notification, or a known one whose params did not parse.
    Notification(ServerNotification),
    /// This many events were dropped because the stream's buffer was full.
    Lagged(u64),
    /// The connection ended; `None` when the client closed it.
    Closed(Option<Arc<TransportError>>),
}

impl Event {
    /// Types a notification.
    pub fn from_notification(notification: ServerNotification) -> Event {
        fn parse<T: DeserializeOwned>(n: &ServerNotification) -> Option<T> {
            let raw = n.params.as_deref().map_or("{}", |p| p.get());
            serde_json::from_str(raw).ok()
        }
        let typed = match notification.method.as_str() {
            methods::NOTIFICATION_PROGRESS => parse(&notification).map(Event::Progress),
            methods::NOTIFICATION_MESSAGE => parse(&notification).map(Event::Log),
            methods::NOTIFICATION_TOOLS_LIST_CHANGED => Some(Event::ListChanged(ListKind::Tools)),
            methods::NOTIFICATION_PROMPTS_LIST_CHANGED => {
                Some(Event::ListChanged(ListKind::Prompts))
            }
            methods::NOTIFICATION_RESOURCES_LIST_CHANGED => {
                Some(Event::ListChanged(ListKind::Resources))
            }
            methods::NOTIFICATION_RESOURCES_UPDATED => {
                #[derive(serde::Deserialize)]
                struct Updated {
                    uri: String,
                }
                parse::<Updated>(&notification).map(|u| Event::ResourceUpdated { uri: u.uri })
            }
            methods::NOTIFICATION_TASKS_STATUS | "notifications/tasks" => {
                parse(&notification).map(|p| Event::TaskStatus(Box::new(p)))
            }
            methods::NOTIFICATION_ELICITATION_COMPLETE => {
                parse(&notification).map(Event::ElicitationComplete)
            }
            _ => None,
        };
        typed.unwrap_or(Event::Notification(notification))
    }
}

type ClosedReason = Box<dyn Fn() -> Option<Arc<TransportError>> + Send + Sync>;

/// The ordered event stream of one connection. Implements
/// [`futures_core::Stream`]; [`EventStream::next`] is the same without a
/// combinator crate. Ends after [`Event::Closed`].
pub struct EventStream {
    rx: mpsc::Receiver<Notice>,
    closed_reason: ClosedReason,
    done: bool,
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl EventStream {
    pub(crate) fn new(rx: mpsc::Receiver<Notice>, closed_reason: ClosedReason) -> Self {
        Self {
            rx,
            closed_reason,
            done: false,
        }
    }

    /// The next event; `None` after [`Event::Closed`].
    ///
    /// # Cancel safety
    /// Cancel safe: no event is lost if the future is dropped.
    pub async fn next(&mut self) -> Option<Event> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            // A gap is reported where it happened.
            Poll::Ready(Some(Notice::Lagged(missed))) => Poll::Ready(Some(Event::Lagged(missed))),
            Poll::Ready(Some(Notice::Notification(notification))) => {
                Poll::Ready(Some(Event::from_notification(notification)))
            }
            Poll::Ready(None) => {
                self.done = true;
                let reason = (self.closed_reason)()
                    .filter(|r| !matches!(**r, TransportError::ClosedByClient));
                Poll::Ready(Some(Event::Closed(reason)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl futures_core::Stream for EventStream {
    type Item = Event;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.get_mut().poll_event(cx)
    }
}
