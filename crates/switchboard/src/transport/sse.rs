//! An incremental Server-Sent Events parser (the WHATWG event-stream format)
//! with a bound on event size.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field; `None` means the default type, `message`.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The `id:` field of this event, if it had one.
    pub id: Option<String>,
    /// A `retry:` reconnection delay in milliseconds, if given.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// The event type, defaulting to `message`.
    pub fn kind(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// Why the stream could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// One event grew past the limit.
    #[error(
        "an SSE event exceeded the {limit}-byte limit (raise it with the `max_event_size` setting)"
    )]
    EventTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// Feeds on byte chunks, yields complete events.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the line being read.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a following `\n` belongs to it.
    after_cr: bool,
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    retry: Option<u64>,
    /// Bytes in the event being built, for the limit.
    size: usize,
    max_event_size: usize,
    /// The last event id seen (it persists across events, per the spec).
    last_event_id: Option<String>,
}

impl SseParser {
    /// A parser that refuses events larger than `max_event_size` bytes.
    pub fn new(max_event_size: usize) -> Self {
        Self {
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: None,
            data: String::new(),
            has_data: false,
            id: None,
            retry: None,
            size: 0,
            max_event_size,
            last_event_id: None,
        }
    }

    /// The id of the last event that set one, for `Last-Event-ID`.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Parses `chunk`, appending every completed event to `out`.
    ///
    /// # Errors
    /// [`SseError::EventTooLarge`] when an event passes the limit; the
    /// stream cannot be trusted after that.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        // An empty chunk says nothing about whether a `\n` follows a `\r`.
        if chunk.is_empty() {
            return Ok(());
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            self.grow(end)?;
            self.line.extend_from_slice(&chunk[..end]);
            let line = std::mem::take(&mut self.line);
            // A byte-order mark may open the stream (split across chunks,
            // so only a whole first line can be checked).
            let content = if self.started {
                &line[..]
            } else {
                self.started = true;
                line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line)
            };
            let processed = self.process_line(content, out);
            if let Err(error) = processed {
                self.line = line;
                return Err(error);
            }
            self.line = line;
            self.line.clear();
            let crlf = chunk[end] == b'\r';
            chunk = &chunk[end + 1..];
            if crlf {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.grow(chunk.len())?;
        self.line.extend_from_slice(chunk);
        Ok(())
    }

    fn grow(&mut self, bytes: usize) -> Result<(), SseError> {
        self.size += bytes;
        if self.size > self.max_event_size {
            Err(SseError::EventTooLarge {
                limit: self.max_event_size,
            })
        } else {
            Ok(())
        }
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            // A comment: servers send them as keep-alives.
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.event = Some(value.into_owned()),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"id" if !value.contains('\0') => {
                self.id = Some(value.clone().into_owned());
                self.last_event_id = Some(value.into_owned());
            }
            b"retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        // The limit holds on what is kept: each invalid byte was replaced by
        // a three-byte U+FFFD, so decoded text can outgrow the bytes counted.
        let kept = self.data.len()
            + self.event.as_ref().map_or(0, String::len)
            + self.id.as_ref().map_or(0, String::len);
        if kept > self.max_event_size {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_size,
            });
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = SseEvent {
            event: self.event.take(),
            data: std::mem::take(&mut self.data),
            id: self.id.take(),
            retry: self.retry.take(),
        };
        let had_data = std::mem::replace(&mut self.has_data, false);
        self.size = 0;
        // An event with no data is not dispatched, but its id and retry
        // still matter (a priming event carries only an id).
        if had_data || event.id.is_some() || event.retry.is_some() {
            out.push(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new(1024);
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn parses_fields_comments_and_multiline_data() {
        let events = parse_all(&[
            b": keepalive\n\nevent: message\nid: 7\ndata: {\"a\":\ndata: 1}\n\nretry: 500\n\n",
        ]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].kind(), "message");
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[0].data, "{\"a\":\n1}");
        assert_eq!(events[1].retry, Some(500));
        assert_eq!(events[1].data, "");
    }

    #[test]
    fn handles_any_split_and_line_ending() {
        let text = b"\xEF\xBB\xBFid: 1\r\ndata: x\r\n\r\ndata:y\r\rdata: z\n\n";
        let whole = parse_all(&[text]);
        for split in 0..text.len() {
            let (a, b) = text.split_at(split);
            assert_eq!(parse_all(&[a, b]), whole, "split at {split}");
        }
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].data, "x");
        assert_eq!(whole[1].data, "y");
        assert_eq!(whole[2].data, "z");
    }

    #[test]
    fn a_priming_event_is_kept_for_its_id_and_ids_persist() {
        let mut parser = SseParser::new(1024);
        let mut out = Vec::new();
        parser.feed(b"id: prime-1\ndata:\n\n", &mut out).unwrap();
        assert_eq!(out[0].data, "");
        assert_eq!(parser.last_event_id(), Some("prime-1"));
        parser.feed(b"data: no id\n\n", &mut out).unwrap();
        assert_eq!(out[1].id, None);
        assert_eq!(parser.last_event_id(), Some("prime-1"));
    }

    #[test]
    fn the_limit_holds_on_decoded_text() {
        // 13 bytes on the wire, but 7 invalid bytes decode to 21 bytes.
        let mut parser = SseParser::new(16);
        let mut out = Vec::new();
        let fed = parser.feed(b"data: \xff\xff\xff\xff\xff\xff\xff\n\n", &mut out);
        assert_eq!(fed, Err(SseError::EventTooLarge { limit: 16 }), "{out:?}");
        assert!(out.iter().all(|e| e.data.len() <= 16), "{out:?}");
        // Across many lines of one event, too.
        let mut parser = SseParser::new(16);
        let mut out = Vec::new();
        let mut fed = Ok(());
        for _ in 0..3 {
            fed = fed.and(parser.feed(b"data: \xff\xff\xff\n", &mut out));
        }
        fed = fed.and(parser.feed(b"\n", &mut out));
        assert!(fed.is_err(), "{out:?}");
    }

    #[test]
    fn an_empty_chunk_does_not_split_a_crlf() {
        let events = parse_all(&[b"data: a\r", b"", b"\ndata: b\r\n\r\n"]);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].data, "a\nb");
    }

    #[test]
    fn events_are_bounded() {
        let mut parser = SseParser::new(16);
        let mut out = Vec::new();
        let error = parser
            .feed(b"data: 0123456789abcdefghij\n\n", &mut out)
            .unwrap_err();
        assert_eq!(error, SseError::EventTooLarge { limit: 16 });
        assert!(error.to_string().contains("max_event_size"));
        // Size is per event: many small events are fine.
        let mut parser = SseParser::new(16);
        for _ in 0..100 {
            parser.feed(b"data: 0123\n\n", &mut out).unwrap();
        }
    }
}
