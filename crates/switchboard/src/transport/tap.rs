//! Every message a connection carries, shown to an observer as it goes:
//! what a protocol view (the console's) or a trace is built on. A
//! [`Tapped`] connector wraps another and hands each whole message, in
//! either direction, to a [`Tap`] before the engine (or the peer) gets it.
//! The tap sees bytes as they are on the wire, unparsed; it must be quick
//! (it runs on the connection's own path) and cannot change or hold a
//! message. Set one with
//! [`ClientBuilder::tap`](crate::ClientBuilder::tap).

use std::sync::Arc;

use super::{
    BoxFuture, Connection, Connector, Incoming, MessageSink, MessageStream, Sent,
    ServerEnvironment, TransportError,
};

/// Which way a message went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From this end (the client, on a client's connection) to the peer.
    Sent,
    /// From the peer to this end.
    Received,
}

/// Shown every message of a connection (see the module docs).
pub trait Tap: Send + Sync + 'static {
    /// One whole serialized JSON-RPC message, as sent or received.
    fn message(&self, direction: Direction, message: &[u8]);
}

impl<F: Fn(Direction, &[u8]) + Send + Sync + 'static> Tap for F {
    fn message(&self, direction: Direction, message: &[u8]) {
        self(direction, message);
    }
}

/// A connector whose connections show every message to a [`Tap`].
pub struct Tapped {
    inner: Arc<dyn Connector>,
    tap: Arc<dyn Tap>,
}

impl std::fmt::Debug for Tapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tapped")
            .field("inner", &self.inner.describe())
            .finish_non_exhaustive()
    }
}

impl Tapped {
    /// `inner`'s connections (and its fallback's), shown to `tap`.
    pub fn new(inner: Arc<dyn Connector>, tap: Arc<dyn Tap>) -> Self {
        Self { inner, tap }
    }
}

/// `connection` with every message it carries shown to `tap`: a server's
/// side of a connection as well as a client's ([`Direction::Sent`] is
/// always what this end sent).
pub fn tap_connection(connection: Connection, tap: Arc<dyn Tap>) -> Connection {
    Connection {
        sink: Arc::new(TappedSink {
            inner: connection.sink,
            tap: tap.clone(),
        }),
        stream: Box::new(TappedStream {
            inner: connection.stream,
            tap,
        }),
        stderr: connection.stderr,
    }
}

impl Connector for Tapped {
    fn connect(&self) -> BoxFuture<'_, Result<Connection, TransportError>> {
        Box::pin(async move {
            let connection = self.inner.connect().await?;
            Ok(tap_connection(connection, self.tap.clone()))
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn transport_name(&self) -> &'static str {
        self.inner.transport_name()
    }

    fn is_remote(&self) -> bool {
        self.inner.is_remote()
    }

    fn remembered_era(&self) -> Option<switchboard_types::Era> {
        self.inner.remembered_era()
    }

    fn remember(&self, era: switchboard_types::Era, transport: &'static str) {
        self.inner.remember(era, transport);
    }

    fn fallback(&self) -> Option<Arc<dyn Connector>> {
        let fallback = self.inner.fallback()?;
        Some(Arc::new(Tapped::new(fallback, self.tap.clone())))
    }

    fn environment(&self) -> Option<ServerEnvironment> {
        self.inner.environment()
    }
}

struct TappedSink {
    inner: Arc<dyn MessageSink>,
    tap: Arc<dyn Tap>,
}

impl MessageSink for TappedSink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        self.tap.message(Direction::Sent, message);
        self.inner.send(message)
    }

    fn send_owned(&self, message: Vec<u8>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.tap.message(Direction::Sent, &message);
        self.inner.send_owned(message)
    }

    fn send_request<'a>(
        &'a self,
        message: &'a [u8],
    ) -> BoxFuture<'a, Result<Sent, TransportError>> {
        self.tap.message(Direction::Sent, message);
        Box::pin(async move {
            let sent = self.inner.send_request(message).await?;
            if let Sent::Answer(answer) = &sent {
                self.tap.message(Direction::Received, answer);
            }
            Ok(sent)
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }
}

struct TappedStream {
    inner: Box<dyn MessageStream>,
    tap: Arc<dyn Tap>,
}

impl MessageStream for TappedStream {
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move {
            let incoming = self.inner.recv().await?;
            if let Some(
                Incoming::Message(message)
                | Incoming::Answer { message, .. }
                | Incoming::Related { message, .. },
            ) = &incoming
            {
                self.tap.message(Direction::Received, message);
            }
            Ok(incoming)
        })
    }

    fn is_single_pipe(&self) -> bool {
        self.inner.is_single_pipe()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[tokio::test]
    async fn both_directions_are_shown_whole_and_in_order() {
        let (client, mut peer) = crate::transport::memory::pair();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let tapped = Tapped::new(
            Arc::new(client.into_connector()),
            Arc::new(move |direction, message: &[u8]| {
                log.lock()
                    .unwrap()
                    .push((direction, String::from_utf8_lossy(message).into_owned()));
            }),
        );
        let mut connection = tapped.connect().await.unwrap();
        connection.sink.send(br#"{"a":1}"#).await.unwrap();
        assert_eq!(peer.recv().await.unwrap(), br#"{"a":1}"#);
        peer.send(r#"{"b":2}"#).await.unwrap();
        let got = connection.stream.recv().await.unwrap().unwrap();
        assert_eq!(got.into_message().unwrap(), br#"{"b":2}"#);
        assert_eq!(
            *seen.lock().unwrap(),
            [
                (Direction::Sent, r#"{"a":1}"#.to_owned()),
                (Direction::Received, r#"{"b":2}"#.to_owned()),
            ]
        );
    }
}
