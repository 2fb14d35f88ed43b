//! An in-memory message pair: the engine's test bench, and a way to link a
//! server in the same process without any framing.

use std::sync::Mutex;

use tokio::sync::mpsc;

use super::{BoxFuture, Connection, Connector, MessageSink, MessageStream, TransportError};

/// Capacity of each direction, in messages.
const CAPACITY: usize = 1024;

/// One end of an in-memory pair.
#[derive(Debug)]
pub struct MemoryEnd {
    tx: mpsc::Sender<Vec<u8>>,
    rx: mpsc::Receiver<Vec<u8>>,
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
        self.tx
            .send(message.into())
            .await
            .map_err(|_| TransportError::Closed {
                stderr_tail: String::new(),
            })
    }

    /// Receives the next message; `None` when the other end is gone.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        self.rx.recv().await
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
    tx: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
}

impl MessageSink for MemorySink {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Box::pin(async move {
            let tx = tx.ok_or(TransportError::ClosedByClient)?;
            tx.send(message.to_vec())
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
    rx: mpsc::Receiver<Vec<u8>>,
}

impl MessageStream for MemoryStream {
    fn is_single_pipe(&self) -> bool {
        true
    }

    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Vec<u8>>, TransportError>> {
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
