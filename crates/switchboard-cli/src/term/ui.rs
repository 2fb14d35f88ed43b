//! What the server says while a request runs (progress, log messages), and
//! the terminal it shares with the prompts that answer the server.
//!
//! Everything here goes to stderr, so stdout keeps only the result. With a
//! terminal on stderr (and no `--json`), progress is a bar and log messages
//! are printed above it. Otherwise each event is one line: plain text, or
//! one JSON object per line with `--json` (`{"progress": …}`, `{"log": …}`,
//! `{"notice": …}`).

use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use switchboard::Event;
use switchboard::types::LoggingMessageNotificationParams;
use switchboard::types::notifications::ProgressNotificationParams;

/// Progress values are floats; the bar counts in thousandths.
const SCALE: f64 = 1000.0;

/// Why nobody can be asked, when nobody can.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoPrompt {
    /// `--no-input`.
    Flag,
    /// stdin is not a terminal.
    Stdin,
    /// stderr (where prompts are drawn) is not a terminal.
    Stderr,
}

impl NoPrompt {
    /// Why, and how to allow it.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            NoPrompt::Flag => "--no-input was given",
            NoPrompt::Stdin => {
                "stdin is not a terminal, so nobody can answer; run switchboard in an \
                 interactive terminal to answer (--no-input declines without this notice)"
            }
            NoPrompt::Stderr => {
                "stderr is not a terminal, so a prompt could not be shown; keep stderr on \
                 the terminal to answer (--no-input declines without this notice)"
            }
        }
    }
}

#[derive(Debug)]
pub(crate) struct Ui {
    json: bool,
    /// A bar on a terminal, rather than lines.
    fancy: bool,
    /// Whether prompts can be shown, or why not.
    can_prompt: Result<(), NoPrompt>,
    state: Mutex<State>,
    /// One prompt at a time.
    prompt_turn: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct State {
    bar: Option<ProgressBar>,
    /// A prompt owns the terminal: lines wait, the bar is hidden.
    prompting: bool,
    held: Vec<String>,
    last: Option<ProgressNotificationParams>,
}

impl Ui {
    pub(crate) fn new(json: bool, no_input: bool) -> Arc<Self> {
        let stderr_tty = std::io::stderr().is_terminal();
        let can_prompt = if no_input {
            Err(NoPrompt::Flag)
        } else if !std::io::stdin().is_terminal() {
            Err(NoPrompt::Stdin)
        } else if !stderr_tty {
            Err(NoPrompt::Stderr)
        } else {
            Ok(())
        };
        Arc::new(Self {
            json,
            fancy: stderr_tty && !json,
            can_prompt,
            state: Mutex::new(State::default()),
            prompt_turn: tokio::sync::Mutex::new(()),
        })
    }

    pub(crate) fn can_prompt(&self) -> Result<(), NoPrompt> {
        self.can_prompt
    }

    /// ANSI styling only when a person reads stderr, and never with
    /// `NO_COLOR` set to anything (<https://no-color.org>).
    pub(crate) fn styled(&self) -> bool {
        self.fancy && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shows one event of the request in flight.
    pub(crate) fn event(&self, event: &Event) {
        match event {
            Event::Progress(progress) => self.progress(progress),
            Event::Log(log) => self.log(log),
            Event::Lagged(missed) => self.notice(&format!(
                "{missed} progress or log messages were dropped (the terminal fell behind)"
            )),
            _ => {}
        }
    }

    fn progress(&self, progress: &ProgressNotificationParams) {
        if !self.fancy {
            let line = if self.json {
                json!({ "progress": progress }).to_string()
            } else {
                let mut line = format!("progress: {}", fraction(progress));
                if let Some(message) = &progress.message {
                    line.push(' ');
                    line.push_str(message);
                }
                line
            };
            self.line(line);
            return;
        }
        let mut state = self.state();
        state.last = Some(progress.clone());
        if state.prompting {
            return;
        }
        let bar = state.bar.get_or_insert_with(new_bar);
        draw(bar, progress);
    }

    fn log(&self, log: &LoggingMessageNotificationParams) {
        let line = if self.json {
            json!({ "log": log }).to_string()
        } else {
            let data = match &log.data {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            match &log.logger {
                Some(logger) => format!("[{}] {logger}: {data}", log.level),
                None => format!("[{}] {data}", log.level),
            }
        };
        self.line(line);
    }

    /// Something switchboard itself tells the user (a declined ask, …).
    pub(crate) fn notice(&self, text: &str) {
        let line = if self.json {
            json!({ "notice": text }).to_string()
        } else {
            format!("switchboard: {text}")
        };
        self.line(line);
    }

    fn line(&self, line: String) {
        // Log data and progress messages are the server's words; a JSON
        // line's strings are escaped the same way (still valid JSON).
        let line = if self.json {
            crate::term::sanitize::json(line)
        } else {
            crate::term::sanitize::term(&line).into_owned()
        };
        let mut state = self.state();
        if state.prompting {
            state.held.push(line);
        } else if let Some(bar) = &state.bar {
            bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    /// Runs a blocking prompt with the terminal to itself: the bar is
    /// hidden and lines wait until it is done.
    pub(crate) async fn prompt<T: Send + 'static>(
        &self,
        ask: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        let _turn = self.prompt_turn.lock().await;
        {
            let mut state = self.state();
            state.prompting = true;
            if let Some(bar) = state.bar.take() {
                bar.finish_and_clear();
            }
        }
        // Undone even if the request is dropped while the prompt is open.
        let _done = PromptDone(self);
        tokio::task::spawn_blocking(ask)
            .await
            .map_err(|e| format!("the prompt failed: {e}"))
    }

    /// Clears the bar before the result is printed.
    pub(crate) fn finish(&self) {
        let mut state = self.state();
        if let Some(bar) = state.bar.take() {
            bar.finish_and_clear();
        }
        state.last = None;
    }
}

/// Gives the terminal back: held lines are printed, the bar comes back.
struct PromptDone<'a>(&'a Ui);

impl Drop for PromptDone<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.prompting = false;
        for line in std::mem::take(&mut state.held) {
            eprintln!("{line}");
        }
        if let Some(last) = state.last.clone() {
            draw(state.bar.get_or_insert_with(new_bar), &last);
        }
    }
}

fn new_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

fn draw(bar: &ProgressBar, progress: &ProgressNotificationParams) {
    match progress.total.filter(|t| *t > 0.0) {
        Some(total) => {
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{bar:30.cyan/blue}] {percent:>3}% {prefix} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_length((total * SCALE) as u64);
            bar.set_position((progress.progress.min(total) * SCALE) as u64);
        }
        None => {
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.unset_length();
        }
    }
    bar.set_prefix(fraction(progress));
    bar.set_message(
        crate::term::sanitize::line(progress.message.as_deref().unwrap_or_default()).into_owned(),
    );
}

/// `3/5`, or `3` without a total.
fn fraction(progress: &ProgressNotificationParams) -> String {
    match progress.total {
        Some(total) => format!("{}/{}", number(progress.progress), number(total)),
        None => number(progress.progress),
    }
}

fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_drop_needless_decimals() {
        let progress: ProgressNotificationParams =
            serde_json::from_value(json!({"progressToken": 1, "progress": 2.0, "total": 5.0}))
                .unwrap();
        assert_eq!(fraction(&progress), "2/5");
        let progress: ProgressNotificationParams =
            serde_json::from_value(json!({"progressToken": 1, "progress": 0.25})).unwrap();
        assert_eq!(fraction(&progress), "0.25");
    }
}
