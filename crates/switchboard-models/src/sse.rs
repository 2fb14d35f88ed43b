//! Server-sent events as model APIs stream them: `event:` names, `data:`
//! lines (several joined with `\n`), comments (`:`) and other fields
//! ignored, an event dispatched at its blank line. Fed chunks as they
//! arrive; a line split across chunks is kept until its end comes.

/// An incremental SSE parser.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    /// The bytes of a line not ended yet.
    line: Vec<u8>,
    /// The event being read: its name, and its data lines.
    name: Option<String>,
    data: Option<String>,
}

impl Parser {
    /// The events `chunk` completes, in order: each one's name (if any)
    /// and data. Events without data are dropped, as the SSE spec says.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<(Option<String>, String)> {
        let mut events = Vec::new();
        for &byte in chunk {
            if byte == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if let Some(event) = self.line_done(&line) {
                    events.push(event);
                }
            } else {
                self.line.push(byte);
            }
        }
        events
    }

    /// The last event, when the stream ended without its blank line.
    pub(crate) fn finish(&mut self) -> Option<(Option<String>, String)> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            let _ = self.line_done(&line);
        }
        self.dispatch()
    }

    fn line_done(&mut self, line: &[u8]) -> Option<(Option<String>, String)> {
        if line.is_empty() {
            return self.dispatch();
        }
        let line = String::from_utf8_lossy(line);
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (&*line, ""),
        };
        match field {
            "event" => self.name = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<(Option<String>, String)> {
        let name = self.name.take();
        let data = self.data.take()?;
        Some((name, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let text = "event: a\r\ndata: {\"x\":\ndata: 1}\r\n\r\n: comment\n\ndata: two\n\nevent: lone\n\ndata: tail";
        for cut in 0..text.len() {
            let mut parser = Parser::default();
            let mut events = parser.feed(&text.as_bytes()[..cut]);
            events.extend(parser.feed(&text.as_bytes()[cut..]));
            events.extend(parser.finish());
            assert_eq!(
                events,
                [
                    (Some("a".to_owned()), "{\"x\":\n1}".to_owned()),
                    (None, "two".to_owned()),
                    (None, "tail".to_owned()),
                ],
                "cut at {cut}"
            );
        }
    }
}
