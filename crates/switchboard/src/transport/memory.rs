//! An in-memory message pair: the engine's test bench, and a way to link a
//! server in the same process without any framing.

use std::sync::Mutex;

use tokio::sync::mpsc;

use switchboard_types::jsonrpc::RequestId;

use super::{
    BoxFuture, Connection, Connector, Incoming, MessageSink, MessageStream, TransportError,
};

/// Capacity of each direction, in messages.
const CAPACITY: usize = 1024;

/// One end of an in-memory pair.
#[derive(Debug)]
pub struct MemoryEnd {
    tx: mpsc::Sender<Incoming>,
    rx: mpsc::Receiver<Incoming>,
}

/// Two linked ends: what one sends, the other receives.
pub fn pair() -> (MemoryEnd, MemoryEnd) {
    let (a_tx, b_rx) = mpsc::channel(CAPACITY);
    let (b_tx, a_rx) = mpsc::channel(CAPACITY);
    (
        MemoryEnd { tx: a_tx, rx: a_rx },
        MemoryEnd { tx: b_tx, rx: b_rx },
    )
}

impl MemoryEnd {
    /// Sends one message to the other end.
    ///
    /// # Errors
    /// [`TransportError::Closed`] when the other end is gone.
    pub async fn send(&self, message: impl Into<Vec<u8>>) -> Result<(), TransportError> {
        self.report(Incoming::Message(message.into())).await
    }

    /// Hands the other end's connection what a transport reports about a
    /// request of its (an [`Incoming::Lost`] answer, say), as a network
    /// transport would: for tests of what the engine and the client make
    /// of it.
    ///
    /// # Errors
    /// [`TransportError::Closed`] when the other end is gone.
    pub async fn report(&self, incoming: Incoming) -> Result<(), TransportError> {
        self.tx
            .send(incoming)
            .await
            .map_err(|_| TransportError::Closed {
                stderr_tail: String::new(),
            })
    }

    /// Reports to the other end's connection that the answer to request
    /// `id` was lost ([`Incoming::Lost`]).
    ///
    /// # Errors
    /// [`TransportError::Closed`] when the other end is gone.
    pub async fn lose_response(
        &self,
        id: RequestId,
        why: impl Into<String>,
    ) -> Result<(), TransportError> {
        self.report(Incoming::Lost {
            id,
            why: why.into(),
        })
        .await
    }

    /// Receives the next message; `None` when the other end is gone. A
    /// report the other end made with [`MemoryEnd::report`] is for an
    /// engine, and skipped here.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Incoming::Message(message) = self.rx.recv().await? {
                return Some(message);
            }
        }
    }

    /// Turns this end into a [`Connection`] for the client.
    pub fn into_connection(self) -> Connection {
        Connection {
            sink: std::sync::Arc::new(MemorySink {
                tx: Mutex::new(Some(self.tx)),
            }),
            stream: Box::new(MemoryStream { rx: self.rx }),
            stderr: None,
        }
    }

    /// Turns this end into a one-shot [`Connector`].
    pub fn into_connector(self) -> MemoryConnector {
        MemoryConnector {
            end: Mutex::new(Some(self)),
        }
    }
}

struct MemorySink {
    tx: Mutex<Option<mpsc::Sender<Incoming>>>,
}

impl MessageSink for MemorySink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        self.send_owned(message.to_vec())
    }

    fn send_owned(&self, message: Vec<u8>) -> BoxFuture<'_, Result<(), TransportError>> {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Box::pin(async move {
            let tx = tx.ok_or(TransportError::ClosedByClient)?;
            tx.send(Incoming::Message(message))
                .await
                .map_err(|_| TransportError::Closed {
                    stderr_tail: String::new(),
                })
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        Box::pin(async {})
    }
}

struct MemoryStream {
    rx: mpsc::Receiver<Incoming>,
}

impl MessageStream for MemoryStream {
    fn is_single_pipe(&self) -> bool {
        true
    }

    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move {
            self.rx
                .recv()
                .await
                .map(Some)
                .ok_or(TransportError::Closed {
                    stderr_tail: String::new(),
                })
        })
    }
}

/// A connector that hands out one in-memory connection, once.
#[derive(Debug)]
pub struct MemoryConnector {
    end: Mutex<Option<MemoryEnd>>,
}

impl Connector for MemoryConnector {
    fn connect(&self) -> BoxFuture<'_, Result<Connection, TransportError>> {
        let end = self.end.lock().unwrap_or_else(|e| e.into_inner()).take();
        Box::pin(async move {
            end.map(MemoryEnd::into_connection)
                .ok_or(TransportError::AlreadyConnected)
        })
    }

    fn describe(&self) -> String {
        "in-memory server".to_owned()
    }

    fn transport_name(&self) -> &'static str {
        "in-memory"
    }
}
