//! Sampling from the command line: declined with the reason, unless a
//! model is configured — `--sampling-url` (an OpenAI-compatible endpoint)
//! or the `[sampling]` table of the user's own switchboard file (any of
//! the four APIs) — in which case each request is shown to the user and
//! sent only with their consent (or `--yes`). A server's own `sampling =
//! {…}` may only narrow: `allow = false` declines its requests without
//! asking, `max_calls` caps them, `model` picks one of the models
//! `[sampling]` allows.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inquire::{Confirm, InquireError};
use switchboard::handlers::BoxFuture;
use switchboard::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use switchboard::types::{ContentBlock, Role};
use switchboard::{HandlerContext, HandlerError, SamplingHandler};
use switchboard_hub::config::{SamplingSettings, ServerSampling};
use switchboard_models::Provider;
use switchboard_models::chat::{ChatClient, ChatError, completions_url};
use switchboard_models::sampling::ModelSampling;

use crate::term::ui::Ui;

/// Where sampling requests go.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// The API.
    pub(crate) provider: Provider,
    /// The API's root URL, as given.
    pub(crate) base: String,
    /// The URL requests go to (for messages).
    pub(crate) url: String,
    pub(crate) model: String,
    /// Other models hints and servers may pick.
    pub(crate) models: Vec<String>,
    /// The API key (never printed).
    pub(crate) key: Option<String>,
    /// The environment variable the key came from, for messages.
    pub(crate) key_env: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("provider", &self.provider)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("models", &self.models)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("key_env", &self.key_env)
            .finish()
    }
}

impl Endpoint {
    /// `--sampling-url`: `base` may be the API root (`…/v1`) or the full
    /// completions URL of an OpenAI-compatible endpoint.
    pub(crate) fn new(base: &str, model: String, key_env: String) -> Self {
        let url = completions_url(base);
        let key = std::env::var(&key_env).ok().filter(|k| !k.is_empty());
        Self {
            provider: Provider::OpenAiChat,
            base: base.to_owned(),
            url,
            model,
            models: Vec::new(),
            key,
            key_env,
        }
    }

    /// The user's `[sampling]` settings, resolved; or why they cannot be.
    pub(crate) fn from_settings(settings: &SamplingSettings) -> Result<Self, String> {
        let provider = match (&settings.provider, &settings.base_url) {
            (Some(provider), _) => Some(provider.as_str()),
            // An endpoint without a provider: an OpenAI-compatible one.
            (None, Some(_)) => Some("openai-chat"),
            (None, None) => None,
        };
        let resolved = crate::providers::resolve(
            provider,
            settings.base_url.clone(),
            settings.key_env.as_deref(),
            settings.model.clone(),
        )
        .map_err(|why| {
            let file = settings
                .source
                .as_ref()
                .map_or_else(String::new, |f| format!(" ({})", f.display()));
            format!("[sampling]{file}: {why}")
        })?;
        let url = switchboard_models::chat::endpoint_url(
            resolved.api.provider,
            &resolved.base,
            &resolved.model,
            false,
        );
        Ok(Self {
            provider: resolved.api.provider,
            base: resolved.base,
            url,
            model: resolved.model,
            models: settings.models.clone(),
            key: resolved.key,
            key_env: resolved.key_env,
        })
    }
}

#[derive(Debug)]
pub(crate) struct CliSampling {
    pub(crate) ui: Arc<Ui>,
    /// Where requests go; `Err`: why there is nowhere (said when one comes).
    pub(crate) endpoint: Result<Endpoint, String>,
    /// The server's own narrowing (`sampling = {…}` in its entry).
    pub(crate) server: ServerSampling,
    /// `--yes`: send without asking.
    pub(crate) preapproved: bool,
    pub(crate) http: reqwest::Client,
    /// `--sampling-max-calls` (or `[sampling] max_calls`): model calls
    /// allowed in this run.
    pub(crate) max_calls: usize,
}

/// The HTTP client for `--sampling-url` ([`CliSampling::http`]), made for
/// every command that connects to a server. Its TLS is the transports'
/// own, whose CA roots are read at the first `https://` request:
/// `reqwest::Client::new()` reads them at once and panics when there are
/// none (`SSL_CERT_FILE` naming a missing or empty file), which failed
/// every command, stdio ones included (exit 101).
pub(crate) fn http_client() -> reqwest::Client {
    // Built from fixed settings with no roots, identity or resolver of
    // its own: what could fail here fails every run, and the test below
    // builds it.
    switchboard::transport::http::reqwest_builder()
        .ok()
        .and_then(|builder| builder.build().ok())
        .expect("an HTTP client with the transports' TLS and no CA roots read builds")
}

/// Model calls made in this run, across every server's client: a server
/// that keeps asking cannot spend the user's model budget without end.
static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Takes one model call from the run's budget; `false` once it is spent.
fn take_call(max: usize) -> bool {
    CALLS
        .fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |n| (n < max).then_some(n + 1),
        )
        .is_ok()
}

/// Model calls made in this run for each server (its `max_calls`).
fn take_server_call(server: &str, max: Option<usize>) -> bool {
    static BY_SERVER: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);
    let Some(max) = max else { return true };
    let mut calls = BY_SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let made = calls
        .get_or_insert_with(HashMap::new)
        .entry(server.to_owned())
        .or_insert(0);
    if *made >= max {
        return false;
    }
    *made += 1;
    true
}

impl SamplingHandler for CliSampling {
    fn create_message(
        &self,
        context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let ui = self.ui.clone();
        let endpoint = self.endpoint.clone();
        let rules = self.server.clone();
        let preapproved = self.preapproved;
        let http = self.http.clone();
        let max_calls = self.max_calls;
        Box::pin(async move {
            let server = context.server.to_string();
            let declined = |message: String| {
                ui.notice(&format!(
                    "declined server `{}`'s sampling request: {message}",
                    crate::term::sanitize::line(&server)
                ));
                Err(HandlerError::Rejected(message))
            };
            let mut endpoint = match endpoint {
                Ok(endpoint) => endpoint,
                Err(why) => return declined(why),
            };
            if rules.allow == Some(false) {
                return declined(format!(
                    "its configuration says `sampling = {{ allow = false }}`; server `{server}` may not use your model"
                ));
            }
            if let Some(model) = &rules.model {
                if *model != endpoint.model && !endpoint.models.contains(model) {
                    return declined(format!(
                        "its configuration asks for model `{model}`, which [sampling] does not allow (add it to `models`)"
                    ));
                }
                endpoint.model = model.clone();
            }
            if !preapproved {
                if let Err(why) = ui.can_prompt() {
                    let message = format!(
                        "server `{server}`'s sampling request was not sent to {}: nobody could \
                         approve it ({}); pass --yes to send sampling requests without asking",
                        endpoint.url,
                        why.reason()
                    );
                    ui.notice(&message);
                    return Err(HandlerError::Rejected(message));
                }
                let summary = summary(&server, &params, &endpoint, ui.styled());
                let question = format!("Send it to {}?", endpoint.url);
                let approved = ui
                    .prompt(move || {
                        eprintln!("{summary}");
                        Confirm::new(&question)
                            .with_default(false)
                            .with_help_message("no declines the request")
                            .prompt()
                    })
                    .await
                    .map_err(HandlerError::Failed)?;
                match approved {
                    Ok(true) => {}
                    Ok(false)
                    | Err(InquireError::OperationCanceled | InquireError::OperationInterrupted) => {
                        return Err(HandlerError::Rejected(
                            "the user declined the sampling request".into(),
                        ));
                    }
                    Err(error) => {
                        return Err(HandlerError::Failed(format!(
                            "the terminal prompt failed: {error}"
                        )));
                    }
                }
            }
            if !take_server_call(&server, rules.max_calls) {
                let message = format!(
                    "server `{server}`'s sampling request was not sent to {}: it already made \
                     {} model calls in this run, its `max_calls`",
                    endpoint.url,
                    rules.max_calls.unwrap_or_default()
                );
                ui.notice(&message);
                return Err(HandlerError::Rejected(message));
            }
            if !take_call(max_calls) {
                let message = format!(
                    "server `{server}`'s sampling request was not sent to {}: this run already \
                     made {max_calls} model calls (--sampling-max-calls)",
                    endpoint.url
                );
                ui.notice(&message);
                return Err(HandlerError::Rejected(message));
            }
            let result = sample(&http, &endpoint, &server, &params).await?;
            let text: usize = result
                .content
                .blocks()
                .iter()
                .filter_map(ContentBlock::as_text)
                .map(str::len)
                .sum();
            ui.notice(&format!(
                "answered server `{}`'s sampling request with {text} bytes of text from \
                 model {}",
                crate::term::sanitize::line(&server),
                crate::term::sanitize::line(&result.model)
            ));
            Ok(result)
        })
    }

    fn supports_tools(&self) -> bool {
        true
    }
}

/// What is about to be sent, for the user to judge.
fn summary(
    server: &str,
    params: &CreateMessageRequestParams,
    endpoint: &Endpoint,
    styled: bool,
) -> String {
    let mut out = String::new();
    let head = format!(
        "Server `{}` wants model {} to answer {} message(s) (at most {} tokens):",
        crate::term::sanitize::line(server),
        endpoint.model,
        params.messages.len(),
        params.max_tokens
    );
    out.push('\n');
    if styled {
        out.push_str(&format!("\x1b[1m{head}\x1b[0m"));
    } else {
        out.push_str(&head);
    }
    if let Some(system) = &params.system_prompt {
        out.push_str(&format!("\n  system: {}", shorten(system)));
    }
    for message in &params.messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for block in message.content.blocks() {
            let shown = match block {
                ContentBlock::Text(t) => shorten(&t.text),
                ContentBlock::Image(i) => {
                    format!("[image {}]", crate::term::sanitize::line(&i.mime_type))
                }
                ContentBlock::Audio(a) => {
                    format!("[audio {}]", crate::term::sanitize::line(&a.mime_type))
                }
                other => format!(
                    "[{}]",
                    crate::term::sanitize::line(other.kind().unwrap_or("unknown"))
                ),
            };
            out.push_str(&format!("\n  {role}: {shown}"));
        }
    }
    out
}

fn shorten(text: &str) -> String {
    const MAX: usize = 400;
    let one_line = crate::term::sanitize::line(&text.replace('\n', " ⏎ ")).into_owned();
    if one_line.chars().count() > MAX {
        let cut: String = one_line.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

async fn sample(
    http: &reqwest::Client,
    endpoint: &Endpoint,
    server: &str,
    params: &CreateMessageRequestParams,
) -> Result<CreateMessageResult, HandlerError> {
    let failed = |what: String| HandlerError::Failed(format!("the sampling endpoint {what}"));
    let chat = ChatClient::builder(&endpoint.base, &endpoint.model)
        .provider(endpoint.provider)
        .api_key(endpoint.key.clone())
        .timeout(Duration::from_secs(300))
        .http_client(http.clone())
        .build()
        .map_err(|e| failed(format!("{} cannot be used: {e}", endpoint.url)))?;
    // The run's and the server's caps were taken above.
    let sampling = ModelSampling::new(chat)
        .with_models(endpoint.models.clone())
        .with_max_calls(usize::MAX);
    sampling
        .sample_or_model_error(server, params)
        .await
        .map_err(|error| match error {
            Ok(handler) => handler,
            Err(e) => failed(describe(&e, endpoint)),
        })
}

/// A model error as the user reads it: what failed, and what to check.
fn describe(error: &ChatError, endpoint: &Endpoint) -> String {
    let source = std::error::Error::source(error).map_or_else(String::new, |s| s.to_string());
    match error {
        ChatError::Connect { .. } => {
            format!("{} could not be reached: {source}", endpoint.url)
        }
        ChatError::Timeout { after, .. } => format!(
            "{} could not be reached: no answer within {} s",
            endpoint.url,
            after.as_secs()
        ),
        ChatError::Status { status, body, .. } => {
            let hint = if matches!(status, 401 | 403) {
                format!(" (is the key in ${} right?)", endpoint.key_env)
            } else {
                String::new()
            };
            let status = reqwest::StatusCode::from_u16(*status)
                .map_or_else(|_| status.to_string(), |s| s.to_string());
            let detail: String = body.chars().take(300).collect();
            format!("{} answered HTTP {status}{hint}: {detail}", endpoint.url)
        }
        ChatError::Read { .. } => format!("answer could not be read: {source}"),
        ChatError::Json { .. } => {
            format!("answered with something that is not JSON: {source}")
        }
        other => format!("answer could not be read: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampling_client_builds_without_reading_the_ca_roots() {
        let _ = http_client();
    }

    #[test]
    fn the_runs_model_calls_stop_at_the_cap() {
        let before = CALLS.load(std::sync::atomic::Ordering::SeqCst);
        let max = before + 2;
        assert!(take_call(max));
        assert!(take_call(max));
        assert!(!take_call(max));
        assert!(!take_call(max));
    }

    #[test]
    fn the_endpoint_url_takes_a_base_or_the_full_path() {
        let a = Endpoint::new("http://h/v1/", "m".into(), "SB_TEST_NO_SUCH_VAR".into());
        assert_eq!(a.url, "http://h/v1/chat/completions");
        assert!(a.key.is_none());
        let b = Endpoint::new("http://h/v1/chat/completions", "m".into(), "X".into());
        assert_eq!(b.url, "http://h/v1/chat/completions");
        let keyed = Endpoint {
            key: Some("sekrit".into()),
            ..b
        };
        assert!(
            !format!("{keyed:?}").contains("sekrit"),
            "the key is never printed"
        );
    }
}
