//! The SSE parser (`transport::sse::SseParser`).
//!
//! Input: byte 0 picks the event size limit (1..=1024), byte 1 seeds where
//! the stream is cut into chunks; the rest is the stream.
//!
//! Invariants:
//! - no panic;
//! - chunking does not matter: the stream fed in one piece and fed in
//!   pseudo-random pieces (cut anywhere, inside a CRLF or a BOM too) gives
//!   the same events, the same verdict on size and the same last event id;
//! - the limit holds: the text of an event (type, data, id) is no longer
//!   than the limit when the stream is UTF-8; invalid bytes become U+FFFD
//!   (3 bytes each), so never more than 3 × the limit;
//! - an id holding NUL is never taken, and once an event carried an id
//!   there is a last event id.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard::transport::sse::{SseError, SseEvent, SseParser};

struct Run {
    events: Vec<SseEvent>,
    error: Option<SseError>,
    last_event_id: Option<String>,
}

fn run<'a>(limit: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> Run {
    let mut parser = SseParser::new(limit);
    let mut events = Vec::new();
    let mut error = None;
    for chunk in chunks {
        if let Err(e) = parser.feed(chunk, &mut events) {
            // The stream cannot be trusted after this: stop, as the
            // transport does.
            error = Some(e);
            break;
        }
    }
    Run {
        events,
        error,
        last_event_id: parser.last_event_id().map(str::to_owned),
    }
}

/// An empty chunk between the `\r` and the `\n` of a CRLF once made
/// `feed` forget the `\r` and dispatch the event early
/// (fuzz/regressions/sse/empty-chunk-between-cr-and-lf); fixed, so the
/// chunking makes such chunks too.
const EMPTY_CHUNK_AFTER_CR: bool = true;

fn chunks(data: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 0x100;
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        // Empty chunks too: a read may return nothing new.
        let mut n = ((state >> 16) as usize % 9).min(rest.len());
        if n == 0 && !EMPTY_CHUNK_AFTER_CR && out.last().is_some_and(|c: &&[u8]| c.ends_with(b"\r"))
        {
            n = 1;
        }
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
    }
    out
}

fuzz_target!(|input: &[u8]| {
    let [size, seed, data @ ..] = input else {
        return;
    };
    let limit = 1 + usize::from(*size) * 4;
    let whole = run(limit, [data]);
    let pieces = run(limit, chunks(data, *seed));

    assert_eq!(whole.events, pieces.events, "chunking changed the events");
    assert_eq!(whole.error, pieces.error, "chunking changed the verdict");
    if whole.error.is_none() {
        assert_eq!(whole.last_event_id, pieces.last_event_id);
    }

    let utf8 = std::str::from_utf8(data).is_ok();
    // The limit holds on the decoded text, invalid bytes (U+FFFD, 3 bytes
    // each) included; `utf8` only says which kind of input broke it.
    let bound = limit;
    let mut last_id = None;
    for event in &whole.events {
        let text = event.data.len()
            + event.event.as_ref().map_or(0, String::len)
            + event.id.as_ref().map_or(0, String::len);
        assert!(
            text <= bound,
            "an event of {text} bytes passed the {limit}-byte limit (utf8: {utf8})"
        );
        if let Some(id) = &event.id {
            assert!(!id.contains('\0'), "an id holding NUL was taken");
            last_id = Some(id.clone());
        }
    }
    // An id line with no event after it sets the last id too, so the
    // last id may be newer than any event's, but never missing.
    if last_id.is_some() {
        assert!(whole.last_event_id.is_some(), "an event's id was forgotten");
    }
});
