//! Newline-delimited framing (`transport::framing::LineReader`/`LineWriter`).
//!
//! Input: byte 0 picks the maximum message size (1..=256, so the limit is
//! reached often), byte 1 seeds the sizes of the reads the peer's bytes
//! arrive in; the rest is the byte stream.
//!
//! Invariants:
//! - no panic, and every call returns (the reader never spins);
//! - the reader yields exactly what a plain model yields: the stream split
//!   at `\n`, one trailing `\r` dropped, empty lines skipped, the last line
//!   kept without its newline, and `MessageTooLarge` (then on every later
//!   call) at the first line longer than the maximum — whatever the read
//!   sizes;
//! - so no yielded message is longer than the maximum, empty, or holds a
//!   `\n`;
//! - a yielded message written by `LineWriter` and read back is the same
//!   message (unless it ends in `\r`, which the reader strips as a CRLF's),
//!   and `LineWriter` refuses a message holding a `\n` without writing.
#![no_main]

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use switchboard::transport::TransportError;
use switchboard::transport::framing::{LineReader, LineWriter};
use tokio::io::{AsyncRead, ReadBuf};

/// Hands out `data` in reads of pseudo-random sizes (some of them zero
/// bytes long are skipped: zero means end of stream to the reader).
struct ChunkedReader<'a> {
    data: &'a [u8],
    seed: u32,
}

impl AsyncRead for ChunkedReader<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.seed = self.seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let want = 1 + (self.seed >> 16) as usize % 17;
        let n = want.min(self.data.len()).min(buf.remaining());
        let (head, rest) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

/// Runs a future whose I/O is always ready.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1_000 {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
    panic!("a read over an always-ready reader did not complete");
}

/// What the reader must yield: messages, then `Err(())` for too large.
fn model(data: &[u8], max: usize) -> (Vec<Vec<u8>>, bool) {
    let mut out = Vec::new();
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.last() == Some(&b'\n') {
        lines.pop();
    }
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        if line.len() > max {
            return (out, true);
        }
        out.push(line.to_vec());
    }
    (out, false)
}

fuzz_target!(|input: &[u8]| {
    let [size, seed, data @ ..] = input else {
        return;
    };
    let max = 1 + usize::from(*size);
    let (expected, expect_too_large) = model(data, max);

    let mut reader = LineReader::with_max_message_size(
        ChunkedReader {
            data,
            seed: u32::from(*seed),
        },
        max,
    );
    let mut got = Vec::new();
    let mut too_large = false;
    // Each call consumes at least one byte or ends the stream, so this
    // bound is never reached by a reader that makes progress.
    for _ in 0..=data.len() + 1 {
        match block_on(reader.read_message()) {
            Ok(Some(message)) => {
                assert!(!message.is_empty(), "an empty message was yielded");
                assert!(message.len() <= max, "a message longer than the maximum");
                assert!(!message.contains(&b'\n'), "a message holds a newline");
                got.push(message);
            }
            Ok(None) => break,
            Err(TransportError::MessageTooLarge { limit, .. }) => {
                assert_eq!(limit, max);
                too_large = true;
                // The stream lost its framing: every later call fails too.
                assert!(matches!(
                    block_on(reader.read_message()),
                    Err(TransportError::MessageTooLarge { .. })
                ));
                break;
            }
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    assert_eq!(got, expected, "messages differ from the model");
    assert_eq!(too_large, expect_too_large, "too-large verdict differs");

    // Write what was read, read it back.
    let mut wire = Vec::new();
    let mut writer = LineWriter::new(&mut wire);
    let mut written = Vec::new();
    for message in &got {
        if message.last() == Some(&b'\r') {
            continue;
        }
        block_on(writer.write_message(message)).expect("writing to a Vec");
        written.push(message.clone());
    }
    if data.contains(&b'\n') {
        let error = block_on(writer.write_message(data)).expect_err("a newline was written");
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }
    drop(writer);
    let mut back = LineReader::with_max_message_size(
        ChunkedReader {
            data: &wire,
            seed: u32::from(*seed) ^ 0x5a5a,
        },
        max,
    );
    let mut reread = Vec::new();
    while let Some(message) = block_on(back.read_message()).expect("reading back") {
        reread.push(message);
    }
    assert_eq!(reread, written, "a written message read back differently");
});
