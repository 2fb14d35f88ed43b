//! `serve --http --issuer URL --audience URL`: hosts as users. Each
//! request's bearer token is a JWT access token of the issuer meant for
//! the gateway (`switchboard_auth::access_token`); its user reaches the
//! gateway's handler, and the gateway serves RFC 9728 metadata naming the
//! issuer, so a host that knows MCP authorization finds where to log in.
//! With `--introspection-client-id`, a token that is not a JWT is asked
//! about at the issuer (RFC 7662, `switchboard_auth::introspection`).
//! The static token (`--token-file`, `SWITCHBOARD_TOKEN`, a generated one)
//! is the one-user case and excludes this.

use std::sync::Arc;

use switchboard::server::HostUser;
use switchboard::server::http::{HostAuth, HttpServeOptions, ResourceMetadata, TokenRefused};
use switchboard::transport::BoxFuture;
use switchboard_auth::access_token::{JwtValidator, TokenAlgorithm};
use switchboard_auth::introspection::Introspector;
use switchboard_auth::ssrf::UrlGuard;
use switchboard_auth::store::Secret;

use crate::failure::Failure;
use crate::listen::TokenSource;

/// `serve`'s flags for hosts as users.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct HostUserArgs {
    /// Hosts as users: every request must carry a JWT access token of
    /// this OAuth issuer (its keys found through its metadata's
    /// jwks_uri), and the gateway serves
    /// /.well-known/oauth-protected-resource naming it. Instead of a
    /// static token; needs --audience.
    #[arg(
        long,
        value_name = "URL",
        requires_all = ["http", "audience"],
        conflicts_with_all = ["token_file", "no_auth"]
    )]
    pub(crate) issuer: Option<String>,
    /// The gateway's own URL as hosts reach it (https://gw.example/mcp):
    /// tokens must name it in `aud`, and the metadata says it is the
    /// resource.
    #[arg(long, value_name = "URL", requires = "issuer")]
    pub(crate) audience: Option<String>,
    /// A scope the gateway's metadata lists (repeatable).
    #[arg(long = "scope", value_name = "SCOPE", requires = "issuer")]
    pub(crate) scopes: Vec<String>,
    /// Where a token names its user's groups (for shared policy rules
    /// given `--group`): a claim's name, or a JSON pointer into the
    /// claims (`/realm_access/roles`); an array of strings or one
    /// space-separated string.
    #[arg(
        long,
        value_name = "CLAIM",
        default_value = "groups",
        requires = "issuer"
    )]
    pub(crate) groups_claim: String,
    /// Opaque (non-JWT) tokens too: asked about at the issuer's
    /// introspection endpoint (RFC 7662) as this client of the issuer;
    /// needs --introspection-secret-file. Answers are kept 60 s at most.
    #[arg(
        long,
        value_name = "ID",
        requires_all = ["issuer", "introspection_secret_file"]
    )]
    pub(crate) introspection_client_id: Option<String>,
    /// The file (yours, 0600) holding that client's secret.
    #[arg(long, value_name = "FILE", requires = "introspection_client_id")]
    pub(crate) introspection_secret_file: Option<std::path::PathBuf>,
}

/// Hosts as users, checked: the issuer's token checks and the metadata.
pub(crate) struct HostUsers {
    validator: Arc<JwtValidator>,
    introspector: Option<Introspector>,
    groups_claim: String,
    metadata: ResourceMetadata,
    /// The issuer is on this machine (reached over plain http).
    loopback: bool,
}

impl HostUsers {
    /// The settings `args` give, if any; `token` is where a static token
    /// would come from, refused beside an issuer unless none was given.
    ///
    /// # Errors
    /// A static token in the environment beside `--issuer`, or an issuer
    /// or audience that is not a usable URL.
    pub(crate) fn from_args(
        args: HostUserArgs,
        token: &TokenSource,
    ) -> Result<Option<Self>, Failure> {
        let HostUserArgs {
            issuer,
            audience,
            scopes,
            introspection_client_id,
            introspection_secret_file,
            groups_claim,
        } = args;
        let (Some(issuer), Some(audience)) = (issuer, audience) else {
            return Ok(None);
        };
        if let TokenSource::Given(_) = token {
            return Err(Failure::usage(anyhow::anyhow!(
                "--issuer makes each host's token a user's, so there is no static token: unset \
                 {} (one user: a static token; users: --issuer)",
                crate::listen::TOKEN_VAR
            )));
        }
        let url = |what: &str, text: &str| {
            url::Url::parse(text)
                .ok()
                .filter(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some())
                .ok_or_else(|| {
                    Failure::usage(anyhow::anyhow!(
                        "{what} {} is not an http(s) URL",
                        crate::term::sanitize::line(text)
                    ))
                })
        };
        let issuer_url = url("--issuer", &issuer)?;
        url("--audience", &audience)?;
        let loopback = match issuer_url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        // An issuer on this machine is reached over plain http as `login`
        // reaches one; any other must be https at a public address.
        let guard = UrlGuard::builder()
            .allow_http_loopback(loopback)
            .build()
            .map_err(|e| Failure::usage(anyhow::anyhow!("{e}")))?;
        let introspector = match (introspection_client_id, introspection_secret_file) {
            (Some(id), Some(file)) => {
                let secret = crate::listen::read_private(&file, "introspection secret file")?;
                let introspector = Introspector::builder(
                    issuer.clone(),
                    audience.clone(),
                    id,
                    Secret::new(secret.trim()),
                )
                .guard(guard.clone())
                .build()
                .map_err(|e| {
                    Failure::usage(anyhow::anyhow!(
                        "cannot use the issuer {} for introspection: {e}",
                        crate::term::sanitize::line(&issuer)
                    ))
                })?;
                Some(introspector)
            }
            _ => None,
        };
        let validator = JwtValidator::builder(issuer.clone(), audience.clone())
            .algorithms(vec![
                TokenAlgorithm::Rs256,
                TokenAlgorithm::Es256,
                TokenAlgorithm::EdDsa,
            ])
            .guard(guard)
            .build()
            .map_err(|e| {
                Failure::usage(anyhow::anyhow!(
                    "cannot use the issuer {}: {e}",
                    crate::term::sanitize::line(&issuer)
                ))
            })?;
        let metadata = ResourceMetadata::new(audience, vec![issuer]).scopes_supported(scopes);
        Ok(Some(Self {
            validator: Arc::new(validator),
            introspector,
            groups_claim,
            metadata,
            loopback,
        }))
    }

    /// `options` checking hosts' tokens as these settings say.
    pub(crate) fn apply(&self, mut options: HttpServeOptions) -> HttpServeOptions {
        options.bearer_token = None;
        options
            .host_auth(self.checker())
            .resource_metadata(self.metadata.clone())
    }

    /// What checks a token of the issuer and names its user.
    pub(crate) fn checker(&self) -> Validated {
        Validated {
            jwt: self.validator.clone(),
            introspector: self.introspector.clone(),
        }
    }

    /// The gateway's own URL as hosts reach it (`--audience`).
    pub(crate) fn audience(&self) -> &str {
        &self.metadata.resource
    }

    /// Where a token names its user's groups (`--groups-claim`).
    pub(crate) fn groups_claim(&self) -> &str {
        &self.groups_claim
    }

    /// Whether the issuer is on this machine, reached over plain http.
    pub(crate) fn issuer_on_loopback(&self) -> bool {
        self.loopback
    }
}

/// The most groups read from one token.
pub(crate) const MAX_GROUPS: usize = 256;

/// The longest group name read.
pub(crate) const MAX_GROUP_LEN: usize = 256;

/// The groups `claims` name at `claim` (a name, or a JSON pointer): at
/// most [`MAX_GROUPS`], each of at most [`MAX_GROUP_LEN`] bytes; the rest
/// are not read.
pub(crate) fn groups_in(claims: &serde_json::Value, claim: &str) -> Vec<String> {
    let found = if claim.starts_with('/') {
        claims.pointer(claim)
    } else {
        claims.get(claim)
    };
    let names: Vec<&str> = match found {
        Some(serde_json::Value::Array(items)) => {
            items.iter().filter_map(serde_json::Value::as_str).collect()
        }
        Some(serde_json::Value::String(text)) => text.split_whitespace().collect(),
        _ => Vec::new(),
    };
    names
        .into_iter()
        .filter(|name| !name.is_empty() && name.len() <= MAX_GROUP_LEN)
        .take(MAX_GROUPS)
        .map(str::to_owned)
        .collect()
}

/// A [`HostAuth`] of JWT access tokens, checked here, and, with an
/// introspector, of opaque ones, asked about at the issuer.
pub(crate) struct Validated {
    jwt: Arc<JwtValidator>,
    introspector: Option<Introspector>,
}

impl HostAuth for Validated {
    fn check<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<HostUser, TokenRefused>> {
        Box::pin(async move {
            // A JWT is three dot-separated parts; anything else is opaque.
            let checked = match &self.introspector {
                Some(introspector) if token.matches('.').count() != 2 => {
                    introspector.validate(token).await
                }
                _ => self.jwt.validate(token).await,
            };
            match checked {
                Ok(valid) => Ok(HostUser::new(
                    valid.sub,
                    serde_json::Value::Object(valid.claims),
                )),
                Err(refused) if refused.is_invalid_token() => {
                    Err(TokenRefused(refused.to_string()))
                }
                Err(unreachable) => {
                    tracing::warn!("cannot check a host's token: {unreachable}");
                    Err(TokenRefused(
                        "the gateway cannot reach its issuer to check the token".to_owned(),
                    ))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::groups_in;

    #[test]
    fn groups_are_read_from_a_claim_or_a_pointer_and_bounded() {
        let claims = json!({
            "groups": ["ops", "", 7, "dev"],
            "scope_groups": "a b  c",
            "realm_access": {"roles": ["admin"]},
            "many": (0..300).map(|n| n.to_string()).collect::<Vec<_>>(),
            "long": ["x".repeat(257), "ok"],
        });
        assert_eq!(groups_in(&claims, "groups"), ["ops", "dev"]);
        assert_eq!(groups_in(&claims, "scope_groups"), ["a", "b", "c"]);
        assert_eq!(groups_in(&claims, "/realm_access/roles"), ["admin"]);
        assert_eq!(groups_in(&claims, "many").len(), 256);
        assert_eq!(groups_in(&claims, "long"), ["ok"]);
        assert!(groups_in(&claims, "absent").is_empty());
        assert!(groups_in(&json!({"groups": {"ops": true}}), "groups").is_empty());
    }
}
