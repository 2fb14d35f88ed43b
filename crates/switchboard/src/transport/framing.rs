//! Newline-delimited JSON framing over any byte stream.
//!
//! The stdio transport frames messages this way ("messages are delimited by
//! newlines, and MUST NOT contain embedded newlines"), and so can anything
//! else that offers an [`AsyncRead`] and an [`AsyncWrite`]: [`io_connection`]
//! links a server running in the same process through a
//! [`tokio::io::duplex`] pipe with the real framing in between.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchboard::transport::TransportError> {
//! use switchboard::transport::framing::{LineReader, LineWriter, io_connection};
//!
//! let (client_side, server_side) = tokio::io::duplex(64 * 1024);
//! let (client_read, client_write) = tokio::io::split(client_side);
//! let (server_read, server_write) = tokio::io::split(server_side);
//! let mut connection = io_connection(client_read, client_write);
//! let mut server_in = LineReader::new(server_read);
//! let mut server_out = LineWriter::new(server_write);
//!
//! connection.sink.send(br#"{"jsonrpc":"2.0","method":"ping","id":1}"#).await?;
//! let request = server_in.read_message().await?.expect("a message");
//! assert_eq!(request, br#"{"jsonrpc":"2.0","method":"ping","id":1}"#);
//!
//! server_out.write_message(br#"{"jsonrpc":"2.0","result":{},"id":1}"#).await.map_err(switchboard::transport::TransportError::Io)?;
//! let response = connection.stream.recv().await?.and_then(|m| m.into_message()).expect("a message");
//! assert_eq!(response, br#"{"jsonrpc":"2.0","result":{},"id":1}"#);
//! # Ok(()) }
//! ```

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::{
    BoxFuture, Connection, Connector, Incoming, MessageSink, MessageStream, TransportError,
};

/// The default largest message a [`LineReader`] accepts: 64 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;

/// The setting named in [`TransportError::MessageTooLarge`].
const MAX_MESSAGE_SIZE_SETTING: &str = "max_message_size";

/// The read buffer starts this small and grows only for long messages.
const INITIAL_BUFFER: usize = 8 * 1024;

/// A buffer grown past this for one long message is given back once it is
/// empty, so one 50 MiB message does not pin 50 MiB for the connection's life.
const SHRINK_BUFFER_ABOVE: usize = 1024 * 1024;

/// Reads newline-delimited messages from a byte stream.
///
/// One buffer is reused for every message. A trailing `\r` is stripped (for
/// servers that write CRLF) and empty lines are skipped. A line longer than
/// the maximum fails as soon as the excess arrives, without buffering the
/// rest of it.
pub struct LineReader<R> {
    reader: R,
    /// Storage; `buf[start..end]` is received and not yet returned, and
    /// `end == buf.len()`: reads append into the spare capacity, so a
    /// growing buffer is never zero-filled first.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// `buf[start..scanned]` is known to hold no newline, so a long message
    /// arriving in many reads is scanned only once.
    scanned: usize,
    max_message_size: usize,
    eof: bool,
    too_large: bool,
}

impl<R> fmt::Debug for LineReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineReader")
            .field("buffered", &(self.end - self.start))
            .field("max_message_size", &self.max_message_size)
            .field("eof", &self.eof)
            .finish_non_exhaustive()
    }
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader that accepts messages up to [`DEFAULT_MAX_MESSAGE_SIZE`].
    pub fn new(reader: R) -> Self {
        Self::with_max_message_size(reader, DEFAULT_MAX_MESSAGE_SIZE)
    }

    /// A reader that accepts messages up to `max_message_size` bytes (not
    /// counting the line ending).
    pub fn with_max_message_size(reader: R, max_message_size: usize) -> Self {
        Self {
            reader,
            buf: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            max_message_size,
            eof: false,
            too_large: false,
        }
    }

    /// The largest message this reader accepts, in bytes.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// The next message, without its line ending; `Ok(None)` at the end of
    /// the stream. A last line without a newline is still returned.
    ///
    /// # Errors
    /// [`TransportError::MessageTooLarge`] when a line exceeds the maximum
    /// (then on every later call: the stream has lost its framing), and
    /// [`TransportError::Io`] when reading fails.
    ///
    /// # Cancel safety
    /// Cancel safe: bytes already read stay in the reader, so a dropped
    /// future loses nothing and the next call continues where it left off.
    pub async fn read_message(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        loop {
            if let Some(message) = self.next_buffered()? {
                return Ok(Some(message));
            }
            if self.eof {
                return self.take_unterminated();
            }
            self.fill().await?;
        }
    }

    fn too_large(&mut self) -> TransportError {
        self.too_large = true;
        TransportError::MessageTooLarge {
            limit: self.max_message_size,
            setting: MAX_MESSAGE_SIZE_SETTING,
        }
    }

    /// A complete message from the buffer, if it holds one.
    fn next_buffered(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        if self.too_large {
            return Err(self.too_large());
        }
        loop {
            let Some(offset) = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]) else {
                self.scanned = self.end;
                let pending = self.end - self.start;
                // One byte more than the limit may still be the `\r` of a
                // CRLF; anything beyond cannot fit.
                let allowed = self.max_message_size.saturating_add(1);
                if pending > allowed || (pending == allowed && self.buf[self.end - 1] != b'\r') {
                    return Err(self.too_large());
                }
                return Ok(None);
            };
            let newline = self.scanned + offset;
            let line_start = self.start;
            let mut line_end = newline;
            if line_end > line_start && self.buf[line_end - 1] == b'\r' {
                line_end -= 1;
            }
            self.start = newline + 1;
            self.scanned = self.start;
            if line_end == line_start {
                continue;
            }
            if line_end - line_start > self.max_message_size {
                return Err(self.too_large());
            }
            if line_end - line_start > SHRINK_BUFFER_ABOVE {
                // A large message takes the buffer itself rather than a copy
                // of it; only the few bytes after it move to a new buffer.
                let rest = self.buf[self.start..self.end].to_vec();
                let mut line = std::mem::replace(&mut self.buf, rest);
                line.truncate(line_end);
                line.drain(..line_start);
                self.start = 0;
                self.end = self.buf.len();
                self.scanned = 0;
                return Ok(Some(line));
            }
            return Ok(Some(self.buf[line_start..line_end].to_vec()));
        }
    }

    /// What is left after the end of the stream, as a last message.
    fn take_unterminated(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        let mut line = &self.buf[self.start..self.end];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        let message = (!line.is_empty()).then(|| line.to_vec());
        self.start = self.end;
        self.scanned = self.end;
        match message {
            Some(message) if message.len() > self.max_message_size => Err(self.too_large()),
            message => Ok(message),
        }
    }

    /// Reads more bytes into the buffer, making room first.
    async fn fill(&mut self) -> Result<(), TransportError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
            self.buf.clear();
            if self.buf.capacity() > SHRINK_BUFFER_ABOVE {
                self.buf = Vec::new();
            }
        }
        if self.end == self.buf.capacity() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.buf.truncate(self.end - self.start);
                self.end -= self.start;
                self.scanned -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.capacity() {
                // Never more than the longest acceptable line plus CRLF: a
                // buffer that full without a newline is already an error.
                let cap = self.max_message_size.saturating_add(2).max(self.end + 1);
                let len = (self.buf.capacity() * 2).max(INITIAL_BUFFER).min(cap);
                self.buf.reserve_exact(len - self.end);
            }
        }
        // The only await: everything above leaves `self` consistent, and
        // `read_buf` appends only what it read, so a future dropped here
        // loses nothing.
        let read = self.reader.read_buf(&mut self.buf).await;
        match read {
            Ok(0) => self.eof = true,
            Ok(_) => self.end = self.buf.len(),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(TransportError::Io(error)),
        }
        Ok(())
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.reader
    }

    /// The underlying reader; bytes already buffered are lost.
    pub fn into_inner(self) -> R {
        self.reader
    }
}

/// A large frame written from the caller's bytes: `message` and its
/// newline, `written` bytes of them out so far. Dropped before the end (its
/// call was), it leaves the rest in the writer's buffer, which the next
/// call writes first.
struct Unfinished<'a, W> {
    line: &'a mut LineWriter<W>,
    message: &'a [u8],
    written: usize,
}

impl<W: AsyncWrite + Unpin> Unfinished<'_, W> {
    async fn write(&mut self) -> io::Result<()> {
        let total = self.message.len() + 1;
        while self.written < total {
            let n = match self.message.get(self.written..) {
                Some(rest) if !rest.is_empty() => {
                    let parts = [io::IoSlice::new(rest), io::IoSlice::new(b"\n")];
                    self.line.writer.write_vectored(&parts).await?
                }
                _ => self.line.writer.write(b"\n").await?,
            };
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.written += n;
        }
        Ok(())
    }
}

impl<W> Drop for Unfinished<'_, W> {
    fn drop(&mut self) {
        let total = self.message.len() + 1;
        if self.written >= total {
            return;
        }
        let line = &mut *self.line;
        line.buf.clear();
        line.written = 0;
        if let Some(rest) = self.message.get(self.written..) {
            line.buf.extend_from_slice(rest);
        }
        line.buf.push(b'\n');
    }
}

/// Writes newline-delimited messages to a byte stream.
///
/// Each message goes out with its newline in one write from a reused buffer,
/// and is then flushed. The buffer also makes writes cancel safe: a frame
/// left half-written by a dropped call is finished by the next call, so
/// frames never interleave. A message larger than a megabyte is written
/// from the caller's bytes instead of a copy (with its newline in the same
/// vectored write where the stream takes one); only if its call is dropped
/// midway is what is left of it copied, for the next call to finish.
pub struct LineWriter<W> {
    writer: W,
    /// The current frame: message plus newline.
    buf: Vec<u8>,
    /// How much of `buf` has been written.
    written: usize,
}

impl<W> fmt::Debug for LineWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineWriter")
            .field("unfinished", &(self.buf.len() - self.written))
            .finish_non_exhaustive()
    }
}

impl<W: AsyncWrite + Unpin> LineWriter<W> {
    /// Wraps `writer`.
    pub fn new(writer: W) -> Self {
        Self {
            writer,
            buf: Vec::new(),
            written: 0,
        }
    }

    /// Writes `message` followed by a newline, and flushes.
    ///
    /// # Errors
    /// [`io::ErrorKind::InvalidInput`] when `message` contains a newline
    /// (the frame would break; nothing is written), or the writer's error.
    ///
    /// # Cancel safety
    /// Cancel safe for the framing: if the future is dropped midway, the
    /// rest of that frame is written first by the next call (the dropped
    /// message itself may or may not reach the peer).
    pub async fn write_message(&mut self, message: &[u8]) -> io::Result<()> {
        if memchr::memchr(b'\n', message).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a newline-delimited message must not contain a newline",
            ));
        }
        self.drain().await?;
        if self.buf.capacity() > SHRINK_BUFFER_ABOVE {
            // What a dropped large frame left is out: not kept.
            self.buf = Vec::new();
            self.written = 0;
        }
        if message.len() > SHRINK_BUFFER_ABOVE {
            let mut frame = Unfinished {
                line: self,
                message,
                written: 0,
            };
            frame.write().await?;
            drop(frame);
            return self.writer.flush().await;
        }
        self.buf.clear();
        self.written = 0;
        self.buf.reserve(message.len() + 1);
        self.buf.extend_from_slice(message);
        self.buf.push(b'\n');
        self.drain().await?;
        if self.buf.capacity() > SHRINK_BUFFER_ABOVE {
            self.buf = Vec::new();
            self.written = 0;
        }
        self.writer.flush().await
    }

    /// Writes `frames` — whole messages, each with its newline — in as few
    /// writes as the stream takes, then flushes. `frames` is left holding
    /// a spare buffer (cleared) for the caller to reuse.
    ///
    /// # Cancel safety
    /// As [`LineWriter::write_message`]: what a dropped call left unwritten
    /// is written first by the next call.
    pub(crate) async fn write_frames(&mut self, frames: &mut Vec<u8>) -> io::Result<()> {
        // The batch is in the buffer before the first await, so a dropped
        // call never loses another sender's frames.
        if self.written < self.buf.len() {
            // What a dropped call left goes first, in the same write.
            self.buf.drain(..self.written);
            self.buf.extend_from_slice(frames);
        } else {
            std::mem::swap(&mut self.buf, frames);
        }
        frames.clear();
        self.written = 0;
        self.drain().await?;
        if self.buf.capacity() > SHRINK_BUFFER_ABOVE {
            self.buf = Vec::new();
            self.written = 0;
        }
        self.writer.flush().await
    }

    /// Writes what is left of the current frame.
    async fn drain(&mut self) -> io::Result<()> {
        while self.written < self.buf.len() {
            let n = self.writer.write(&self.buf[self.written..]).await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.written += n;
        }
        Ok(())
    }

    /// Shuts the writer down (for a pipe: the reader sees end of file).
    ///
    /// # Errors
    /// The writer's error.
    ///
    /// # Cancel safety
    /// Cancel safe as far as the writer's `shutdown` is; calling it again
    /// finishes the job.
    pub async fn shutdown(&mut self) -> io::Result<()> {
        self.writer.shutdown().await
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.writer
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.writer
    }
}

/// Why [`SharedWriter::send`] did not write.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// The writer was taken (the connection is closing).
    Closed,
    /// The stream failed (for this message, or for the batch it was in).
    Io(io::Error),
}

/// Messages queued for the writer task, and how far its writes got.
#[derive(Default)]
struct Queue {
    /// Whole frames not yet handed to the writer.
    frames: Vec<u8>,
    /// Tickets given out; a frame's ticket is the count after it was queued.
    queued: u64,
    /// Every ticket up to this one is written.
    written: u64,
    /// A write failed: every later send fails the same way.
    failed: Option<(io::ErrorKind, String)>,
    /// The writer is being taken: no more sends.
    closed: bool,
}

/// What senders and the writer task share.
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the writer task: frames are queued, or it is to stop.
    work: tokio::sync::Notify,
    /// Moves each time a batch is written (or fails).
    progress: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A [`LineWriter`] owned by a writer task that concurrent senders queue
/// messages for. The task wakes after the senders that woke it have run,
/// and writes every message queued by then in one write: under load N
/// messages cost one syscall (and one wake-up of the peer) instead of N,
/// and a lone sender's message still goes out at once.
pub(crate) struct SharedWriter<W> {
    shared: Arc<Shared>,
    /// The writer until the first send starts the task (so a connection
    /// can be made outside a runtime), and what stops the task.
    idle: Mutex<Option<(LineWriter<W>, CancellationToken)>>,
    task: Mutex<Option<tokio::task::JoinHandle<Option<LineWriter<W>>>>>,
}

impl<W: AsyncWrite + Unpin + Send + 'static> SharedWriter<W> {
    /// Starts the writer task (on the current runtime); it stops, handing
    /// the writer back as it is, once `closing` is cancelled.
    pub(crate) fn new(writer: W, closing: CancellationToken) -> Self {
        Self {
            shared: Arc::new(Shared {
                queue: Mutex::default(),
                work: tokio::sync::Notify::new(),
                progress: tokio::sync::watch::Sender::new(0),
            }),
            idle: Mutex::new(Some((LineWriter::new(writer), closing))),
            task: Mutex::new(None),
        }
    }

    /// Starts the writer task if it is not running yet.
    fn start(&self) {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((writer, closing)) = idle {
            let task = tokio::spawn(write_queued(writer, self.shared.clone(), closing));
            *self.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
        }
    }

    /// Queues `message` and its newline: `Ok` once the writer task has
    /// written it.
    ///
    /// # Cancel safety
    /// A dropped call's message may or may not reach the peer; frames
    /// never interleave.
    pub(crate) async fn send(&self, message: &[u8]) -> Result<(), WriteError> {
        if memchr::memchr(b'\n', message).is_some() {
            return Err(WriteError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a newline-delimited message must not contain a newline",
            )));
        }
        let failed = |(kind, text): &(io::ErrorKind, String)| {
            WriteError::Io(io::Error::new(*kind, text.clone()))
        };
        self.start();
        let mut progress = self.shared.progress.subscribe();
        let ticket = {
            let mut queue = self.shared.queue();
            if queue.closed {
                return Err(WriteError::Closed);
            }
            if let Some(failure) = &queue.failed {
                return Err(failed(failure));
            }
            queue.frames.reserve(message.len() + 1);
            queue.frames.extend_from_slice(message);
            queue.frames.push(b'\n');
            queue.queued += 1;
            queue.queued
        };
        self.shared.work.notify_one();
        loop {
            {
                let queue = self.shared.queue();
                if queue.written >= ticket {
                    return Ok(());
                }
                if let Some(failure) = &queue.failed {
                    return Err(failed(failure));
                }
            }
            if progress.changed().await.is_err() {
                return Err(WriteError::Closed);
            }
        }
    }

    /// Stops the writer task once what is queued is written, and takes the
    /// writer (later sends fail with [`WriteError::Closed`]).
    pub(crate) async fn take(&self) -> Option<LineWriter<W>> {
        self.shared.queue().closed = true;
        if let Some((writer, _)) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Some(writer);
        }
        self.shared.work.notify_one();
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        task.await.ok().flatten()
    }
}

impl<W> Drop for SharedWriter<W> {
    fn drop(&mut self) {
        if let Some(task) = self
            .task
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }
}

/// The writer task: each time it is woken, every queued frame in one
/// write; the writer handed back when it is told to stop.
async fn write_queued<W: AsyncWrite + Unpin>(
    mut writer: LineWriter<W>,
    shared: Arc<Shared>,
    closing: CancellationToken,
) -> Option<LineWriter<W>> {
    let mut batch = Vec::new();
    loop {
        tokio::select! {
            biased;
            () = closing.cancelled() => return Some(writer),
            () = shared.work.notified() => {}
        }
        // Let every sender already woken queue its frame first.
        tokio::task::yield_now().await;
        loop {
            let (last, closed) = {
                let mut queue = shared.queue();
                if queue.frames.is_empty() {
                    (None, queue.closed)
                } else {
                    std::mem::swap(&mut batch, &mut queue.frames);
                    (Some(queue.queued), queue.closed)
                }
            };
            let Some(last) = last else {
                if closed {
                    return Some(writer);
                }
                break;
            };
            // A peer that stopped reading must not keep `close` waiting:
            // the half-written frame goes with the connection.
            let written = tokio::select! {
                biased;
                () = closing.cancelled() => return Some(writer),
                written = writer.write_frames(&mut batch) => written,
            };
            let mut queue = shared.queue();
            match written {
                Ok(()) => queue.written = last,
                Err(error) => {
                    queue.failed = Some((error.kind(), error.to_string()));
                    drop(queue);
                    shared.progress.send_modify(|n| *n += 1);
                    return Some(writer);
                }
            }
            if batch.capacity() > SHRINK_BUFFER_ABOVE {
                batch = Vec::new();
            }
            drop(queue);
            shared.progress.send_modify(|n| *n += 1);
        }
    }
}

/// A one-shot [`Connector`] over any byte stream pair, with newline-delimited
/// framing: for a server in the same process linked by
/// [`tokio::io::duplex`], or a socket you opened yourself.
#[must_use]
pub struct IoConnector<R, W> {
    parts: Mutex<Option<(R, W)>>,
    max_message_size: usize,
}

impl<R, W> fmt::Debug for IoConnector<R, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoConnector")
            .field("max_message_size", &self.max_message_size)
            .finish_non_exhaustive()
    }
}

impl<R, W> IoConnector<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A connector that hands out one connection over `reader` and `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            parts: Mutex::new(Some((reader, writer))),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }

    /// The largest message accepted from the peer (default 64 MiB).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }
}

impl<R, W> Connector for IoConnector<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    fn connect(&self) -> BoxFuture<'_, Result<Connection, TransportError>> {
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner()).take();
        let max_message_size = self.max_message_size;
        Box::pin(async move {
            let (reader, writer) = parts.ok_or(TransportError::AlreadyConnected)?;
            Ok(framed_connection(reader, writer, max_message_size))
        })
    }

    fn describe(&self) -> String {
        "in-process server over a byte stream".to_owned()
    }

    fn transport_name(&self) -> &'static str {
        "in-process"
    }
}

/// A [`Connection`] over `reader` and `writer` with newline-delimited
/// framing and the default maximum message size. The peer closing its side
/// is [`TransportError::Closed`]; [`MessageSink::close`] shuts `writer` down.
pub fn io_connection<R, W>(reader: R, writer: W) -> Connection
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    framed_connection(reader, writer, DEFAULT_MAX_MESSAGE_SIZE)
}

/// This process's stdin and stdout as a [`Connection`]: a server's side of
/// stdio. When they are pipes (a host spawned the server), they are read
/// and written without blocking threads; tokio's `stdin()`/`stdout()` hand
/// every read and write to a thread of the blocking pool, a thread hop per
/// message each way. Otherwise (a terminal, a file) through those. Nothing
/// else in the process may use stdin or stdout then (they are made
/// non-blocking).
pub fn stdio_connection() -> Connection {
    #[cfg(all(unix, feature = "stdio"))]
    {
        use std::os::fd::AsFd as _;
        use std::os::unix::fs::FileTypeExt as _;
        // Both pipes, or neither is touched (making one non-blocking and
        // reading it on a blocking thread would fail).
        let pipe = |fd: std::os::fd::BorrowedFd<'_>| {
            let fd = fd.try_clone_to_owned().ok()?;
            let file = std::fs::File::from(fd);
            file.metadata()
                .ok()
                .filter(|m| m.file_type().is_fifo())
                .map(|_| std::os::fd::OwnedFd::from(file))
        };
        if let (Some(input), Some(output)) = (
            pipe(std::io::stdin().as_fd()),
            pipe(std::io::stdout().as_fd()),
        ) && let (Ok(reader), Ok(writer)) = (
            tokio::net::unix::pipe::Receiver::from_owned_fd(input),
            tokio::net::unix::pipe::Sender::from_owned_fd(output),
        ) {
            return io_connection(reader, writer);
        }
    }
    io_connection(tokio::io::stdin(), tokio::io::stdout())
}

fn framed_connection<R, W>(reader: R, writer: W, max_message_size: usize) -> Connection
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let closing = CancellationToken::new();
    Connection {
        sink: Arc::new(IoSink {
            writer: SharedWriter::new(writer, closing.clone()),
            closing: closing.clone(),
        }),
        stream: Box::new(IoStream {
            reader: LineReader::with_max_message_size(reader, max_message_size),
            closing,
        }),
        stderr: None,
    }
}

struct IoSink<W> {
    writer: SharedWriter<W>,
    closing: CancellationToken,
}

impl<W: AsyncWrite + Send + Unpin + 'static> MessageSink for IoSink<W> {
    fn send<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if self.closing.is_cancelled() {
                return Err(TransportError::ClosedByClient);
            }
            // A write blocked on a peer that stopped reading must not keep
            // `close` waiting for the writer.
            tokio::select! {
                biased;
                written = self.writer.send(message) => written.map_err(|error| match error {
                    WriteError::Closed => TransportError::ClosedByClient,
                    WriteError::Io(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                        TransportError::Closed { stderr_tail: String::new() }
                    }
                    WriteError::Io(error) => TransportError::Io(error),
                }),
                () = self.closing.cancelled() => Err(TransportError::ClosedByClient),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.closing.cancel();
            let writer = self.writer.take().await;
            if let Some(mut writer) = writer {
                let _ = writer.shutdown().await;
            }
        })
    }
}

struct IoStream<R> {
    reader: LineReader<R>,
    closing: CancellationToken,
}

impl<R: AsyncRead + Send + Unpin + 'static> MessageStream for IoStream<R> {
    fn is_single_pipe(&self) -> bool {
        true
    }

    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Incoming>, TransportError>> {
        Box::pin(async move {
            if self.closing.is_cancelled() {
                return Ok(None);
            }
            tokio::select! {
                biased;
                () = self.closing.cancelled() => Ok(None),
                read = self.reader.read_message() => match read {
                    Ok(Some(message)) => Ok(Some(Incoming::Message(message))),
                    _ if self.closing.is_cancelled() => Ok(None),
                    Ok(None) => Err(TransportError::Closed { stderr_tail: String::new() }),
                    Err(error) => Err(error),
                },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::io::IoSlice;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use tokio::io::ReadBuf;

    use super::*;

    /// Yields its chunks one read at a time, as a pipe might.
    struct Chunks(VecDeque<Vec<u8>>);

    impl Chunks {
        fn new<const N: usize>(chunks: [&[u8]; N]) -> Self {
            Self(chunks.iter().map(|c| c.to_vec()).collect())
        }
    }

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if let Some(mut chunk) = self.0.pop_front() {
                let n = chunk.len().min(buf.remaining());
                buf.put_slice(&chunk[..n]);
                if n < chunk.len() {
                    self.0.push_front(chunk.split_off(n));
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    async fn read_all(reader: &mut LineReader<impl AsyncRead + Unpin>) -> Vec<Vec<u8>> {
        let mut messages = Vec::new();
        while let Some(message) = reader.read_message().await.expect("read") {
            messages.push(message);
        }
        messages
    }

    #[tokio::test]
    async fn messages_split_across_reads_are_joined() {
        let mut reader = LineReader::new(Chunks::new([
            b"{\"a\"",
            b":1}\n{\"b\":",
            b"2}",
            b"\n",
            b"{\"c\":3}\n{\"d\"",
            b":4}\n",
        ]));
        assert_eq!(
            read_all(&mut reader).await,
            [&b"{\"a\":1}"[..], b"{\"b\":2}", b"{\"c\":3}", b"{\"d\":4}"]
        );
    }

    #[tokio::test]
    async fn crlf_is_stripped_and_empty_lines_skipped() {
        let mut reader = LineReader::new(Chunks::new([
            b"\n\r\none\r",
            b"\n\n\ntwo\r\n",
            b"a\rb\n",
            b"last\r",
        ]));
        assert_eq!(
            read_all(&mut reader).await,
            [&b"one"[..], b"two", b"a\rb", b"last"]
        );
    }

    #[tokio::test]
    async fn many_messages_in_one_read() {
        let input: Vec<u8> = (0..1000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let mut reader = LineReader::new(&input[..]);
        let messages = read_all(&mut reader).await;
        assert_eq!(messages.len(), 1000);
        assert_eq!(messages[999], b"999");
    }

    #[tokio::test]
    async fn over_long_line_names_the_limit() {
        let mut reader = LineReader::with_max_message_size(Chunks::new([b"ok\n0123456789A\n"]), 10);
        assert_eq!(reader.read_message().await.unwrap().unwrap(), b"ok");
        let error = reader.read_message().await.unwrap_err();
        assert!(
            matches!(
                error,
                TransportError::MessageTooLarge {
                    limit: 10,
                    setting: "max_message_size"
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("10-byte"), "{error}");
        assert!(error.to_string().contains("max_message_size"), "{error}");
        // The framing is lost for good.
        assert!(matches!(
            reader.read_message().await,
            Err(TransportError::MessageTooLarge { .. })
        ));
    }

    #[tokio::test]
    async fn line_at_the_limit_is_accepted() {
        let mut reader = LineReader::with_max_message_size(
            Chunks::new([b"0123456789\n", b"abcdefghij\r\n", b"ABCDE", b"FGHIJ"]),
            10,
        );
        assert_eq!(
            read_all(&mut reader).await,
            [&b"0123456789"[..], b"abcdefghij", b"ABCDEFGHIJ"]
        );
    }

    #[tokio::test]
    async fn over_long_line_fails_before_its_end_arrives() {
        // The writer never finishes the line: the error must come from what
        // already exceeds the limit, not wait for the newline.
        let (mut tx, rx) = tokio::io::duplex(1 << 20);
        tx.write_all(&[b'x'; 5000]).await.unwrap();
        let mut reader = LineReader::with_max_message_size(rx, 1000);
        let read = tokio::time::timeout(Duration::from_secs(5), reader.read_message()).await;
        assert!(matches!(
            read,
            Ok(Err(TransportError::MessageTooLarge { limit: 1000, .. }))
        ));
        // Only about the limit was buffered, not all 5000 bytes.
        assert!(reader.buf.len() <= 1002, "{}", reader.buf.len());
        drop(tx);
    }

    #[tokio::test]
    async fn unterminated_line_over_the_limit_at_eof_fails() {
        let mut reader = LineReader::with_max_message_size(&b"0123456789A"[..], 10);
        assert!(matches!(
            reader.read_message().await,
            Err(TransportError::MessageTooLarge { .. })
        ));
    }

    #[tokio::test]
    async fn dropped_read_loses_nothing() {
        let (mut tx, rx) = tokio::io::duplex(1024);
        let mut reader = LineReader::new(rx);
        tx.write_all(b"{\"partial\":").await.unwrap();
        let first = tokio::time::timeout(Duration::from_millis(50), reader.read_message()).await;
        assert!(
            first.is_err(),
            "no full line yet: the read must still be pending"
        );
        tx.write_all(b"true}\n{\"next\":1").await.unwrap();
        let second = tokio::time::timeout(Duration::from_millis(50), reader.read_message()).await;
        assert_eq!(second.unwrap().unwrap().unwrap(), b"{\"partial\":true}");
        let third = tokio::time::timeout(Duration::from_millis(50), reader.read_message()).await;
        assert!(third.is_err());
        tx.write_all(b"}\n").await.unwrap();
        drop(tx);
        assert_eq!(read_all(&mut reader).await, [b"{\"next\":1}"]);
    }

    #[tokio::test]
    async fn large_message_grows_then_releases_the_buffer() {
        let big = vec![b'a'; 3 * SHRINK_BUFFER_ABOVE];
        let mut input = big.clone();
        input.extend_from_slice(b"\nsmall\n");
        let mut reader =
            LineReader::new(Chunks(input.chunks(100_000).map(<[u8]>::to_vec).collect()));
        assert_eq!(reader.read_message().await.unwrap().unwrap(), big);
        assert_eq!(reader.read_message().await.unwrap().unwrap(), b"small");
        assert_eq!(reader.read_message().await.unwrap(), None);
        assert!(reader.buf.len() <= SHRINK_BUFFER_ABOVE);
    }

    #[tokio::test]
    async fn a_large_crlf_line_is_handed_over_whole_with_what_follows_kept() {
        let big = vec![b'b'; SHRINK_BUFFER_ABOVE + 123];
        let mut input = b"first\n".to_vec();
        input.extend_from_slice(&big);
        input.extend_from_slice(b"\r\nnext\r\nla");
        let mut chunks: Vec<Vec<u8>> = vec![input];
        chunks.push(b"st".to_vec());
        let mut reader = LineReader::new(Chunks(chunks.into()));
        assert_eq!(reader.read_message().await.unwrap().unwrap(), b"first");
        assert_eq!(reader.read_message().await.unwrap().unwrap(), big);
        assert_eq!(reader.read_message().await.unwrap().unwrap(), b"next");
        assert_eq!(reader.read_message().await.unwrap().unwrap(), b"last");
        assert_eq!(reader.read_message().await.unwrap(), None);
    }

    /// Records every write call.
    struct Recorder {
        vectored: bool,
        calls: Vec<Vec<u8>>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.calls.push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            let n = all.len();
            self.calls.push(all);
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            self.vectored
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Records every write; holds them all (pending) while its gate is shut.
    #[derive(Clone, Default)]
    struct Gated {
        open: Arc<std::sync::atomic::AtomicBool>,
        waiting: Arc<Mutex<Vec<std::task::Waker>>>,
        calls: Arc<Mutex<Vec<Vec<u8>>>>,
    }

    impl Gated {
        fn open(&self) {
            self.open.store(true, std::sync::atomic::Ordering::SeqCst);
            for waker in self.waiting.lock().unwrap().drain(..) {
                waker.wake();
            }
        }

        fn calls(&self) -> Vec<Vec<u8>> {
            self.calls.lock().unwrap().clone()
        }
    }

    impl AsyncWrite for Gated {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            if !self.open.load(std::sync::atomic::Ordering::SeqCst) {
                self.waiting.lock().unwrap().push(cx.waker().clone());
                return Poll::Pending;
            }
            self.calls.lock().unwrap().push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Yields until `writer` has `n` messages queued (an event, not a time).
    async fn queued(writer: &SharedWriter<Gated>, n: u64) {
        while writer.shared.queue().queued < n {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn messages_queued_during_a_write_go_out_together_in_one_write() {
        let gate = Gated::default();
        let writer = Arc::new(SharedWriter::new(gate.clone(), CancellationToken::new()));
        let mut senders = tokio::task::JoinSet::new();
        for i in 0..20 {
            let sender = writer.clone();
            senders.spawn(async move { sender.send(format!("{{\"n\":{i}}}").as_bytes()).await });
            // The first one holds the writer before the others queue.
            if i == 0 {
                queued(&writer, 1).await;
                while gate.waiting.lock().unwrap().is_empty() {
                    tokio::task::yield_now().await;
                }
            }
        }
        queued(&writer, 20).await;
        gate.open();
        while let Some(sent) = senders.join_next().await {
            assert!(sent.unwrap().is_ok());
        }
        let calls = gate.calls();
        assert_eq!(
            calls.len(),
            2,
            "one write for the first, one for the 19 queued"
        );
        let text = String::from_utf8(calls.concat()).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        let mut expected: Vec<String> = (0..20).map(|i| format!("{{\"n\":{i}}}")).collect();
        expected.sort_unstable();
        assert_eq!(lines, expected);
    }

    #[tokio::test]
    async fn a_dropped_sender_loses_no_other_senders_message() {
        let gate = Gated::default();
        let writer = Arc::new(SharedWriter::new(gate.clone(), CancellationToken::new()));
        let first = {
            let writer = writer.clone();
            tokio::spawn(async move { writer.send(b"first").await })
        };
        queued(&writer, 1).await;
        while gate.waiting.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let mut others = tokio::task::JoinSet::new();
        for word in ["b", "c", "d"] {
            let writer = writer.clone();
            others.spawn(async move { writer.send(word.as_bytes()).await });
        }
        queued(&writer, 4).await;
        // The first sender gives up while its batch is being written.
        first.abort();
        let _ = first.await;
        gate.open();
        while let Some(sent) = others.join_next().await {
            assert!(sent.unwrap().is_ok());
        }
        let text = String::from_utf8(gate.calls().concat()).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        assert_eq!(lines, ["b", "c", "d", "first"], "{text:?}");
        // Once the writer is taken (closing), sends are refused.
        let broken = SharedWriter::new(tokio::io::sink(), CancellationToken::new());
        assert!(broken.send(b"ok").await.is_ok());
        drop(broken.take().await);
        assert!(matches!(broken.send(b"x").await, Err(WriteError::Closed)));
    }

    #[tokio::test]
    async fn writer_sends_message_and_newline_in_one_write() {
        for vectored in [true, false] {
            let mut writer = LineWriter::new(Recorder {
                vectored,
                calls: Vec::new(),
            });
            writer.write_message(b"{\"a\":1}").await.unwrap();
            writer.write_message(b"{}").await.unwrap();
            assert_eq!(
                writer.get_ref().calls,
                [&b"{\"a\":1}\n"[..], b"{}\n"],
                "vectored: {vectored}"
            );
        }
    }

    #[tokio::test]
    async fn writer_refuses_embedded_newline() {
        let mut writer = LineWriter::new(Recorder {
            vectored: true,
            calls: Vec::new(),
        });
        let error = writer.write_message(b"{\n}").await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert!(writer.get_ref().calls.is_empty());
    }

    #[tokio::test]
    async fn a_dropped_write_is_finished_by_the_next_one() {
        let (a, b) = tokio::io::duplex(16);
        let mut writer = LineWriter::new(a);
        let mut reader = LineReader::new(b);
        let first = vec![b'x'; 1000];
        // Nobody reads yet: the write fills the pipe, then is dropped.
        let dropped =
            tokio::time::timeout(Duration::from_millis(20), writer.write_message(&first)).await;
        assert!(dropped.is_err(), "the write must have been interrupted");
        let ((), read) = tokio::join!(
            async {
                writer.write_message(b"second").await.unwrap();
                drop(writer);
            },
            read_all(&mut reader),
        );
        assert_eq!(
            read,
            [first, b"second".to_vec()],
            "frames must not interleave"
        );
    }

    #[tokio::test]
    async fn a_large_message_is_written_uncopied_and_a_dropped_one_finished_next() {
        let (a, b) = tokio::io::duplex(4096);
        let mut writer = LineWriter::new(a);
        let mut reader = LineReader::new(b);
        let large: Vec<u8> = (0..3 * SHRINK_BUFFER_ABOVE)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        // Nobody reads yet: the write fills the pipe, then is dropped.
        let dropped =
            tokio::time::timeout(Duration::from_millis(20), writer.write_message(&large)).await;
        assert!(dropped.is_err(), "the write must have been interrupted");
        assert!(
            writer.buf.len() < large.len(),
            "only what was left is kept: {}",
            writer.buf.len()
        );
        let ((), read) = tokio::join!(
            async {
                writer.write_message(&large).await.unwrap();
                writer.write_message(b"second").await.unwrap();
                assert!(writer.buf.capacity() <= SHRINK_BUFFER_ABOVE, "nothing kept");
                drop(writer);
            },
            read_all(&mut reader),
        );
        assert_eq!(read, [large.clone(), large, b"second".to_vec()]);
    }

    #[tokio::test]
    async fn writer_and_reader_round_trip_through_a_pipe() {
        let (a, b) = tokio::io::duplex(16);
        let mut writer = LineWriter::new(a);
        let mut reader = LineReader::new(b);
        let message = vec![b'z'; 10_000];
        let (written, read) = tokio::join!(
            async {
                writer.write_message(&message).await.unwrap();
                writer.write_message(b"second").await.unwrap();
                drop(writer);
            },
            read_all(&mut reader),
        );
        let () = written;
        assert_eq!(read, [message, b"second".to_vec()]);
    }

    fn linked() -> (
        Connection,
        LineReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
        LineWriter<tokio::io::WriteHalf<tokio::io::DuplexStream>>,
    ) {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (client_read, client_write) = tokio::io::split(client);
        let (server_read, server_write) = tokio::io::split(server);
        (
            io_connection(client_read, client_write),
            LineReader::new(server_read),
            LineWriter::new(server_write),
        )
    }

    #[tokio::test]
    async fn io_connection_round_trip_and_close() {
        let (mut connection, mut server_in, mut server_out) = linked();
        connection.sink.send(b"{\"id\":1}").await.unwrap();
        assert_eq!(
            server_in.read_message().await.unwrap().unwrap(),
            b"{\"id\":1}"
        );
        server_out.write_message(b"{\"id\":2}").await.unwrap();
        assert_eq!(
            connection
                .stream
                .recv()
                .await
                .unwrap()
                .unwrap()
                .into_message()
                .unwrap(),
            b"{\"id\":2}"
        );

        connection.sink.close().await;
        connection.sink.close().await;
        // The server sees the end of its input, and we see our own close.
        assert_eq!(server_in.read_message().await.unwrap(), None);
        assert!(connection.stream.recv().await.unwrap().is_none());
        assert!(matches!(
            connection.sink.send(b"{}").await,
            Err(TransportError::ClosedByClient)
        ));
    }

    #[tokio::test]
    async fn io_connection_reports_the_peer_going_away() {
        let (mut connection, server_in, server_out) = linked();
        drop((server_in, server_out));
        assert!(matches!(
            connection.stream.recv().await,
            Err(TransportError::Closed { .. })
        ));
        assert!(connection.sink.send(b"{}").await.is_err());
    }

    #[tokio::test]
    async fn io_connector_connects_once() {
        let (a, _b) = tokio::io::duplex(64);
        let (read, write) = tokio::io::split(a);
        let connector = IoConnector::new(read, write).max_message_size(100);
        assert!(connector.connect().await.is_ok());
        assert!(matches!(
            connector.connect().await,
            Err(TransportError::AlreadyConnected)
        ));
    }
}
