//! Opaque access tokens, checked by asking their issuer (RFC 7662 token
//! introspection): what a gateway serving hosts as users does with a
//! bearer token that is not a JWT.
//!
//! The endpoint is the issuer's metadata's `introspection_endpoint`
//! (found as [`crate::access_token`] finds `jwks_uri`, through the same
//! SSRF guard); the resource authenticates with its own client id and
//! secret (`client_secret_basic`). The answer must say `active`, and then
//! holds the same checks a JWT's claims do: `iss` the issuer's (taken to
//! be when the answer leaves it out: the issuer's own endpoint answered),
//! `aud` naming the resource, an `exp` not past, an `nbf` not ahead, a
//! `sub`. A token longer than [`MAX_TOKEN_LEN`] is never sent.
//!
//! Answers are kept, by the token's SHA-256, for at most
//! [`IntrospectorBuilder::cache_for`] (default 60 s) and never past the
//! token's `exp`: a token the issuer revokes is refused at most that long
//! after. Refusals are kept as long, so a host repeating a bad token does
//! not make the gateway ask again each time; at most [`MAX_CACHED`]
//! answers are kept and at most [`MAX_IN_FLIGHT`] questions are open at
//! once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;
use url::Url;

use crate::access_token::{
    MAX_TOKEN_LEN, TokenError, ValidToken, check_claims, issuer_metadata, now, sha256,
};
use crate::grant::{http_client, read_body, shown};
use crate::ssrf::UrlGuard;
use crate::store::Secret;

/// The most answers kept.
pub const MAX_CACHED: usize = 10_000;

/// The most introspection requests open at once.
pub const MAX_IN_FLIGHT: usize = 8;

/// How long the endpoint found is used before the metadata is read again.
const ENDPOINT_FOR: Duration = Duration::from_secs(300);

/// Builds an [`Introspector`].
#[derive(Debug)]
#[must_use]
pub struct IntrospectorBuilder {
    issuer: String,
    audience: String,
    client_id: String,
    client_secret: Secret,
    guard: UrlGuard,
    cache_for: Duration,
}

impl IntrospectorBuilder {
    /// The SSRF guard the issuer's metadata and endpoint are reached
    /// through. Default the strict one (https only, public addresses).
    pub fn guard(mut self, guard: UrlGuard) -> Self {
        self.guard = guard;
        self
    }

    /// How long an answer is kept (never past the token's `exp`). Default
    /// 60 seconds; zero asks every time.
    pub fn cache_for(mut self, cache_for: Duration) -> Self {
        self.cache_for = cache_for;
        self
    }

    /// The introspector.
    ///
    /// # Errors
    /// [`TokenError::Introspection`] when the issuer is not a URL the
    /// guard allows, or no HTTP client can be made.
    pub fn build(self) -> Result<Introspector, TokenError> {
        let issuer = self
            .guard
            .check(&self.issuer, None)
            .map_err(|e| TokenError::Introspection(e.to_string()))?;
        let client =
            http_client(&self.guard).map_err(|e| TokenError::Introspection(e.to_string()))?;
        Ok(Introspector {
            inner: Arc::new(Inner {
                issuer,
                audience: self.audience,
                client_id: self.client_id,
                client_secret: self.client_secret,
                guard: self.guard,
                cache_for: self.cache_for,
                client,
                endpoint: tokio::sync::Mutex::new(None),
                answers: Mutex::default(),
                in_flight: tokio::sync::Semaphore::new(MAX_IN_FLIGHT),
            }),
        })
    }
}

/// Checks opaque access tokens of one issuer meant for one audience by
/// asking the issuer. Cheap to clone; the answers kept are shared.
#[derive(Clone, Debug)]
pub struct Introspector {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    issuer: Url,
    audience: String,
    client_id: String,
    client_secret: Secret,
    guard: UrlGuard,
    cache_for: Duration,
    client: reqwest::Client,
    /// The endpoint, the issuer's id as its metadata writes it, and when
    /// they were read.
    endpoint: tokio::sync::Mutex<Option<(Url, String, Instant)>>,
    /// Answers by the token's SHA-256: the user or the refusal, and until
    /// when.
    answers: Mutex<HashMap<[u8; 32], (Answer, Instant)>>,
    in_flight: tokio::sync::Semaphore,
}

#[derive(Clone, Debug)]
enum Answer {
    Valid(ValidToken),
    Refused(RefusedAs),
}

/// A refusal as kept (the token's fault only; a failure to reach the
/// issuer is not kept).
#[derive(Clone, Copy, Debug)]
enum RefusedAs {
    Inactive,
    Issuer,
    Audience,
    Expired,
    NotYetValid,
    NoSubject,
}

impl RefusedAs {
    fn of(error: &TokenError) -> Option<Self> {
        Some(match error {
            TokenError::Inactive => Self::Inactive,
            TokenError::Issuer => Self::Issuer,
            TokenError::Audience => Self::Audience,
            TokenError::Expired => Self::Expired,
            TokenError::NotYetValid => Self::NotYetValid,
            TokenError::NoSubject => Self::NoSubject,
            _ => return None,
        })
    }

    fn error(self) -> TokenError {
        match self {
            Self::Inactive => TokenError::Inactive,
            Self::Issuer => TokenError::Issuer,
            Self::Audience => TokenError::Audience,
            Self::Expired => TokenError::Expired,
            Self::NotYetValid => TokenError::NotYetValid,
            Self::NoSubject => TokenError::NoSubject,
        }
    }
}

impl Introspector {
    /// An introspector of tokens issued by `issuer` for `audience` (the
    /// resource's URL), asking as the client `client_id` with
    /// `client_secret`.
    pub fn builder(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Secret,
    ) -> IntrospectorBuilder {
        IntrospectorBuilder {
            issuer: issuer.into(),
            audience: audience.into(),
            client_id: client_id.into(),
            client_secret,
            guard: UrlGuard::default(),
            cache_for: Duration::from_secs(60),
        }
    }

    /// The user `token` stands for, once the issuer says it is active and
    /// every check holds.
    ///
    /// # Errors
    /// What is wrong with the token ([`TokenError::is_invalid_token`]),
    /// or that the issuer's introspection cannot be used.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the question; nothing is kept.
    pub async fn validate(&self, token: &str) -> Result<ValidToken, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLarge);
        }
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::Malformed);
        }
        let key = sha256(token);
        if let Some(answer) = self.kept(&key) {
            return answer;
        }
        let _turn = self
            .inner
            .in_flight
            .acquire()
            .await
            .map_err(|_| TokenError::Introspection("the introspector is closed".to_owned()))?;
        // Another request may have asked about the same token meanwhile.
        if let Some(answer) = self.kept(&key) {
            return answer;
        }
        let (endpoint, issuer) = self.endpoint().await?;
        let answer = self.ask(&endpoint, token).await?;
        let checked = match answer.get("active") {
            Some(Value::Bool(true)) => {
                let mut claims = answer;
                claims
                    .entry("iss")
                    .or_insert_with(|| Value::String(issuer.clone()));
                check_claims(claims, &issuer, &self.inner.audience, now())
            }
            _ => Err(TokenError::Inactive),
        };
        self.keep(key, &checked);
        checked
    }

    /// The answer kept for `key`, if still good.
    fn kept(&self, key: &[u8; 32]) -> Option<Result<ValidToken, TokenError>> {
        let answers = self.inner.answers.lock().unwrap_or_else(|e| e.into_inner());
        let (answer, until) = answers.get(key)?;
        if *until <= Instant::now() {
            return None;
        }
        Some(match answer {
            Answer::Valid(valid) => Ok(valid.clone()),
            Answer::Refused(refused) => Err(refused.error()),
        })
    }

    fn keep(&self, key: [u8; 32], checked: &Result<ValidToken, TokenError>) {
        let answer = match checked {
            Ok(valid) => Answer::Valid(valid.clone()),
            Err(error) => match RefusedAs::of(error) {
                Some(refused) => Answer::Refused(refused),
                None => return,
            },
        };
        let mut keep_for = self.inner.cache_for;
        if let Ok(valid) = checked
            && let Some(exp) = valid.claims.get("exp").and_then(Value::as_u64)
        {
            keep_for = keep_for.min(Duration::from_secs(exp.saturating_sub(now())));
        }
        if keep_for.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut answers = self.inner.answers.lock().unwrap_or_else(|e| e.into_inner());
        if answers.len() >= MAX_CACHED {
            answers.retain(|_, (_, until)| *until > now);
            if answers.len() >= MAX_CACHED {
                answers.clear();
            }
        }
        answers.insert(key, (answer, now + keep_for));
    }

    /// The introspection endpoint and the issuer's id, from its metadata
    /// (read again every [`ENDPOINT_FOR`]).
    async fn endpoint(&self) -> Result<(Url, String), TokenError> {
        let mut found = self.inner.endpoint.lock().await;
        if let Some((url, issuer, at)) = &*found
            && at.elapsed() < ENDPOINT_FOR
        {
            return Ok((url.clone(), issuer.clone()));
        }
        let inner = &*self.inner;
        let metadata = issuer_metadata(&inner.client, &inner.issuer)
            .await
            .map_err(TokenError::Introspection)?;
        let endpoint = metadata.introspection_endpoint.as_deref().ok_or_else(|| {
            TokenError::Introspection(
                "the issuer's metadata has no introspection_endpoint".to_owned(),
            )
        })?;
        let endpoint = inner
            .guard
            .check(endpoint, Some(&inner.issuer))
            .map_err(|e| TokenError::Introspection(e.to_string()))?;
        *found = Some((endpoint.clone(), metadata.issuer.clone(), Instant::now()));
        Ok((endpoint, metadata.issuer))
    }

    /// The issuer's answer about `token` (RFC 7662 §2.1).
    async fn ask(&self, endpoint: &Url, token: &str) -> Result<Map<String, Value>, TokenError> {
        let inner = &*self.inner;
        let form = |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect();
        let (id, secret): (String, String) =
            (form(&inner.client_id), form(inner.client_secret.expose()));
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let response = inner
            .client
            .post(endpoint.clone())
            .basic_auth(id, Some(secret))
            .header(reqwest::header::ACCEPT, "application/json")
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await
            .map_err(|e| {
                TokenError::Introspection(format!("{}: {}", shown(endpoint), e.without_url()))
            })?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Err(TokenError::Introspection(format!(
                "{} refused the gateway's client credentials ({status}): check its client id \
                 and secret",
                shown(endpoint)
            )));
        }
        if !status.is_success() {
            return Err(TokenError::Introspection(format!(
                "{} answered {status}",
                shown(endpoint)
            )));
        }
        let body = read_body(response, endpoint)
            .await
            .map_err(|e| TokenError::Introspection(e.to_string()))?;
        serde_json::from_slice(&body).map_err(|e| {
            TokenError::Introspection(format!(
                "{} answered what is not a JSON object: {e}",
                shown(endpoint)
            ))
        })
    }
}
