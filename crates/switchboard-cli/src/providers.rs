//! The four model APIs as the CLI names them (`openai`, `openai-chat`,
//! `anthropic`, `gemini`): each one's usual key and base URL variables,
//! public endpoint and a current model — what `agent` and the `[sampling]`
//! settings resolve to an endpoint.

use switchboard_models::Provider;

/// One API as the command line names it.
pub(crate) struct Api {
    pub(crate) name: &'static str,
    pub(crate) provider: Provider,
    keys: &'static [&'static str],
    base_var: &'static str,
    base: &'static str,
    model: Option<&'static str>,
}

const APIS: [Api; 4] = [
    Api {
        name: "anthropic",
        provider: Provider::Anthropic,
        keys: &["ANTHROPIC_API_KEY"],
        base_var: "ANTHROPIC_BASE_URL",
        base: "https://api.anthropic.com",
        model: Some("claude-sonnet-4-5"),
    },
    Api {
        name: "gemini",
        provider: Provider::Gemini,
        keys: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        base_var: "GOOGLE_GEMINI_BASE_URL",
        base: "https://generativelanguage.googleapis.com",
        model: Some("gemini-2.5-flash"),
    },
    Api {
        name: "openai",
        provider: Provider::OpenAiResponses,
        keys: &["OPENAI_API_KEY"],
        base_var: "OPENAI_BASE_URL",
        base: "https://api.openai.com/v1",
        model: Some("gpt-5-mini"),
    },
    Api {
        name: "openai-chat",
        provider: Provider::OpenAiChat,
        keys: &["OPENAI_API_KEY"],
        base_var: "OPENAI_BASE_URL",
        base: "https://api.openai.com/v1",
        model: None,
    },
];

/// The names `--provider` and `[sampling] provider` take.
pub(crate) const PROVIDERS: [&str; 4] = ["openai", "openai-chat", "anthropic", "gemini"];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// An endpoint, resolved.
pub(crate) struct Endpoint {
    pub(crate) api: &'static Api,
    /// The API's root URL.
    pub(crate) base: String,
    pub(crate) model: String,
    /// The API key (never printed).
    pub(crate) key: Option<String>,
    /// The variable it is read from, for messages.
    pub(crate) key_env: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("api", &self.api.name)
            .field("base", &self.base)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("key_env", &self.key_env)
            .finish()
    }
}

/// The endpoint `provider` (else the first whose key is set, in the order
/// anthropic, gemini, openai), `base_url` (else the provider's variable,
/// else its public API), `key_env` (else the provider's variables) and
/// `model` (else the provider's current one) say; or what to set.
pub(crate) fn resolve(
    provider: Option<&str>,
    base_url: Option<String>,
    key_env: Option<&str>,
    model: Option<String>,
) -> Result<Endpoint, String> {
    let api = match provider {
        Some(name) => APIS
            .iter()
            .find(|api| api.name == name)
            .ok_or_else(|| format!("the provider is one of {}", PROVIDERS.join(", ")))?,
        None => APIS
            .iter()
            .find(|api| api.keys.iter().any(|key| env(key).is_some()))
            .ok_or_else(|| {
                format!(
                    "which model? Set ANTHROPIC_API_KEY, GEMINI_API_KEY or OPENAI_API_KEY, or say \
                     --provider {} (with --base-url for a local server such as Ollama)",
                    PROVIDERS.join("|")
                )
            })?,
    };
    let (key, key_env) = match key_env {
        Some(name) => (env(name), name.to_owned()),
        None => (
            api.keys.iter().find_map(|key| env(key)),
            api.keys.join(" or "),
        ),
    };
    let base = base_url
        .or_else(|| env(api.base_var))
        .unwrap_or_else(|| api.base.to_owned());
    if key.is_none() && base == api.base {
        return Err(format!(
            "{} needs an API key: set {key_env} (or give a base URL for an endpoint that needs none)",
            api.base
        ));
    }
    let model = model
        .or_else(|| api.model.map(str::to_owned))
        .ok_or_else(|| {
            format!(
                "the provider {} needs a model: --model NAME (or `model` in [sampling]), the \
                 name the server knows it by",
                api.name
            )
        })?;
    Ok(Endpoint {
        api,
        base,
        model,
        key,
        key_env,
    })
}
