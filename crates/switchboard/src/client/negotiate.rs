//! Era negotiation: the `server/discover` probe, `initialize`, the
//! fallbacks between them, and what was negotiated (`ServerSession`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_types::request::{self as rq, Request};
use switchboard_types::{
    DiscoverResult, Era, Implementation, InitializeRequestParams, InitializeResult,
    ProtocolVersion, ServerCapabilities, codes,
};

use super::{ClientBuilder, check_result_type, parse_result, peek_result_type, probe_params};
use crate::engine::{Engine, EngineError, RawResult, RequestOptions};
use crate::error::{Error, Result};
use crate::transport::{Connector, TransportError};

/// A `server/discover` probe that has not been answered yet (see
/// [`ClientBuilder::on_probe_wait`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProbeWait {
    /// The server's name.
    pub server: Arc<str>,
    /// How long the probe has waited so far.
    pub waited: Duration,
    /// How long it waits in all before falling back to `initialize`.
    pub timeout: Duration,
}

impl fmt::Display for ProbeWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "waiting for server `{}` to answer `server/discover` (up to {:?}; session-era servers often do not, and then `initialize` follows)",
            self.server, self.timeout
        )
    }
}

/// Which protocol era to speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EraMode {
    /// Probe with `server/discover` and fall back to `initialize` (default).
    #[default]
    Auto,
    /// Only the stateless era (2026-07-28).
    Modern,
    /// Only the session era (`initialize`).
    Legacy,
}

/// What was negotiated with the server.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerSession {
    /// The transport in use (`stdio`, `streamable-http`, `sse` …), after
    /// any fallback.
    pub transport: &'static str,
    /// The era in use.
    pub era: Era,
    /// The protocol version in use.
    pub protocol_version: ProtocolVersion,
    /// The server's self-description, when it gave one.
    pub server_info: Option<Implementation>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Instructions for the model, when given.
    pub instructions: Option<String>,
    /// The server process was started a second time because it exited when
    /// probed with `server/discover` (older SDKs do).
    pub respawned: bool,
    /// How long negotiation took, from connect to ready.
    pub negotiation_time: Duration,
}

/// What the `server/discover` probe found.
pub(super) enum ProbeOutcome {
    Modern(Box<DiscoverResult>, ProtocolVersion),
    /// Not a modern server (or none we can speak): run `initialize` on the
    /// same connection.
    Legacy,
    /// The server died when probed: start it again and run `initialize`.
    Respawn,
    /// The server answered the `initialize` sent while the probe waited
    /// (see `Negotiator::race`): the session era, on this connection.
    Initialized(Box<ServerSession>),
}

/// What one answer to the probe, or to the `initialize` raced with it, says.
pub(super) enum Step {
    Outcome(ProbeOutcome),
    /// A modern server that refused the version asked: ask again with this one.
    Retry(ProtocolVersion),
}

pub(super) struct Negotiator<'a> {
    pub(super) builder: &'a ClientBuilder,
    pub(super) connector: &'a dyn Connector,
    pub(super) server: Arc<str>,
    pub(super) respawned: bool,
    /// The fallback transport, when negotiation ended on it.
    pub(super) fallback_transport: Option<&'static str>,
}

impl Negotiator<'_> {
    pub(super) async fn open(&self) -> Result<Engine> {
        self.open_with(self.connector).await
    }

    pub(super) async fn open_with(&self, connector: &dyn Connector) -> Result<Engine> {
        let connection = connector
            .connect()
            .await
            .map_err(|source| Error::Transport {
                server: self.server.clone(),
                source: Box::new(source),
            })?;
        Ok(Engine::start(
            self.server.clone(),
            connection,
            self.builder.engine.clone(),
            self.builder.handler.clone(),
        ))
    }

    /// `initialize`, and when a Streamable HTTP endpoint refuses it outright
    /// (400, 404, 405), the same on the connector's fallback transport.
    pub(super) async fn initialize_or_fall_back(
        &mut self,
        engine: Engine,
    ) -> Result<(Engine, ServerSession)> {
        match self.initialize(&engine).await {
            Ok(session) => Ok((engine, session)),
            Err(error) => {
                let refused = matches!(&error, Error::Transport { source, .. }
                    if matches!(source.http_status(), Some(400 | 404 | 405)));
                match self.connector.fallback() {
                    Some(fallback) if refused => {
                        tracing::debug!(server = %self.server, %error, "Streamable HTTP refused; trying the legacy HTTP+SSE transport");
                        engine.close().await;
                        let engine = self.open_with(&*fallback).await?;
                        let session = self.initialize(&engine).await?;
                        self.fallback_transport = Some(fallback.transport_name());
                        Ok((engine, session))
                    }
                    _ => Err(error),
                }
            }
        }
    }

    pub(super) async fn negotiate(&mut self) -> Result<(Engine, ServerSession)> {
        let engine = self.open().await?;
        match self.builder.mode {
            EraMode::Legacy => self.initialize_or_fall_back(engine).await,
            EraMode::Modern => match self.probe(&engine, true).await? {
                ProbeOutcome::Modern(discover, version) => {
                    Ok((engine, modern_session(*discover, version)))
                }
                ProbeOutcome::Legacy | ProbeOutcome::Respawn | ProbeOutcome::Initialized(_) => Err(Error::WrongEra {
                    server: self.server.clone(),
                    detail: "it lists only session-era protocol versions; use the auto or legacy era mode".into(),
                }),
            },
            EraMode::Auto => {
                if self.builder.era_hint == Some(Era::Legacy) {
                    match self.initialize(&engine).await {
                        Ok(session) => return Ok((engine, session)),
                        // The remembered verdict no longer holds: probe afresh.
                        Err(error) if error.is_server_error() => {
                            tracing::debug!(server = %self.server, %error, "remembered legacy verdict failed; probing");
                        }
                        Err(error) => return Err(error),
                    }
                }
                match self.probe(&engine, false).await? {
                    ProbeOutcome::Modern(discover, version) => {
                        Ok((engine, modern_session(*discover, version)))
                    }
                    ProbeOutcome::Legacy if self.connector.is_remote() => {
                        self.initialize_or_fall_back(engine).await
                    }
                    ProbeOutcome::Legacy => match self.initialize(&engine).await {
                        Ok(session) => Ok((engine, session)),
                        // A modern server after all: -32022 is a modern
                        // error, whatever the probe heard.
                        Err(error) if modern_version_refused(&error).is_some() => {
                            tracing::debug!(server = %self.server, %error, "`initialize` refused by a modern server; probing again");
                            match self.probe(&engine, true).await? {
                                ProbeOutcome::Modern(discover, version) => {
                                    Ok((engine, modern_session(*discover, version)))
                                }
                                _ => Err(error),
                            }
                        }
                        Err(error) => Err(error),
                    },
                    ProbeOutcome::Initialized(session) => Ok((engine, *session)),
                    ProbeOutcome::Respawn => {
                        engine.close().await;
                        drop(engine);
                        self.respawned = true;
                        let engine = self.open().await?;
                        let session = self.initialize(&engine).await?;
                        Ok((engine, session))
                    }
                }
            }
        }
    }

    /// Awaits the probe, saying once that it waits when it takes longer than
    /// [`ClientBuilder::probe_notice_after`].
    pub(super) async fn noticed<T>(
        &self,
        engine: &Engine,
        probe: impl std::future::Future<Output = T>,
    ) -> T {
        let mut probe = std::pin::pin!(probe);
        let after = self.builder.probe_notice_after;
        tokio::select! {
            biased;
            outcome = &mut probe => return outcome,
            () = tokio::time::sleep(after) => {}
        }
        let wait = ProbeWait {
            server: self.server.clone(),
            waited: after,
            timeout: self.wait_bound(engine),
        };
        tracing::info!(server = %self.server, "{wait}");
        if let Some(callback) = &self.builder.on_probe_wait {
            callback(wait);
        }
        probe.await
    }

    /// Whether the probe races `initialize` on this connection (see
    /// [`Negotiator::race`]): a local server, probed in the auto mode.
    /// Over the network the probe has its own timeout instead, and
    /// silence is an outage.
    fn races(&self, strict: bool) -> bool {
        !strict && !self.connector.is_remote()
    }

    /// How long the probe waits now before `initialize` follows: a process
    /// that has written nothing yet may still be starting.
    fn wait_bound(&self, engine: &Engine) -> Duration {
        match engine.stderr() {
            Some(stderr) if !self.connector.is_remote() && !stderr.has_output() => self
                .builder
                .probe_start_timeout
                .max(self.builder.probe_timeout),
            _ => self.builder.probe_timeout,
        }
    }

    /// Runs out when `initialize` should follow an unanswered probe.
    ///
    /// The wait follows the server's start, not the clock of the request: a
    /// server process is up from its first output (any byte on stderr; an
    /// answer on stdout ends the probe anyway), and from then on it gets
    /// [`ClientBuilder::probe_timeout`]; one that stays silent gets
    /// [`ClientBuilder::probe_start_timeout`] in all. A connection
    /// with no stderr to watch (in memory) starts the clock at once.
    async fn probe_wait(&self, engine: &Engine) {
        let after_output = self.builder.probe_timeout;
        let Some(stderr) = engine.stderr() else {
            return tokio::time::sleep(after_output).await;
        };
        let start_limit = self.builder.probe_start_timeout.max(after_output);
        tokio::select! {
            () = tokio::time::sleep(start_limit) => return,
            () = stderr.first_output() => {}
        }
        tokio::time::sleep(after_output).await;
    }

    /// Sends `server/discover`; `strict` turns every fallback into an error.
    pub(super) async fn probe(&self, engine: &Engine, strict: bool) -> Result<ProbeOutcome> {
        let mut version = ProtocolVersion::LATEST;
        // A -32022 may name a version we speak; retry at most once per version.
        let mut retried_same = false;
        let mut known_modern = false;
        for _ in 0..ProtocolVersion::MODERN.len() + 2 {
            let params = probe_params(
                &version,
                &self.builder.client_info,
                &self.builder.capabilities,
            );
            let id = engine.allocate_id();
            // Only the first probe races `initialize`: one refused with
            // -32022 proved a modern server, which is then asked again.
            let first = !known_modern;
            let step = if first && self.races(strict) {
                // The probe's own timeout is the request timeout, and never
                // less than a start's bound (a short request timeout is for
                // requests, not for a server's start): when it has waited
                // long enough `initialize` follows, but a late answer is
                // still heard.
                let start = self
                    .builder
                    .probe_start_timeout
                    .max(self.builder.probe_timeout)
                    + self.builder.probe_timeout;
                let probe = engine.request(
                    id,
                    rq::Discover::METHOD,
                    Some(&params),
                    RequestOptions::timeout(self.builder.engine.request_timeout.max(start)),
                );
                self.noticed(
                    engine,
                    self.race(engine, probe, &version, &mut retried_same),
                )
                .await?
            } else {
                // Strict, or a modern server asked again, on a local
                // server: nothing to fall back to, so the answer is waited
                // for as long as any request's.
                let options = if (strict || !first) && !self.connector.is_remote() {
                    RequestOptions::default()
                } else {
                    RequestOptions::timeout(self.builder.probe_timeout)
                };
                let outcome = self
                    .noticed(
                        engine,
                        engine.request(id, rq::Discover::METHOD, Some(&params), options),
                    )
                    .await
                    .map_err(Error::from);
                self.judge(outcome, strict, &version, &mut retried_same)?
            };
            match step {
                Step::Outcome(outcome) => return Ok(outcome),
                Step::Retry(next) => {
                    version = next;
                    known_modern = true;
                }
            }
        }
        Err(Error::Protocol {
            server: self.server.clone(),
            detail: "it keeps rejecting the protocol versions it lists as supported".into(),
        })
    }

    /// The probe of a local server in the auto mode: when it has waited
    /// [`Negotiator::probe_wait`], `initialize` is sent on the same
    /// connection while the probe stays pending, and the first answer that
    /// tells the era decides it.
    ///
    /// A server that was still starting reads both in order: a modern one
    /// answers the probe (and, as Python SDK 2.x does, refuses `initialize`
    /// with -32022: the connection is committed to 2026-07-28), so its
    /// `DiscoverResult` makes the connection modern; so does an
    /// `initialize` refused with -32022 listing a modern version (the probe
    /// is asked again with it). A legacy server answers the probe with an
    /// error or not at all, and its `initialize` answer is used.
    async fn race(
        &self,
        engine: &Engine,
        probe: impl std::future::Future<Output = std::result::Result<RawResult, EngineError>>,
        version: &ProtocolVersion,
        retried_same: &mut bool,
    ) -> Result<Step> {
        let mut probe = std::pin::pin!(probe);
        tokio::select! {
            biased;
            answer = &mut probe => {
                return self.judge(answer.map_err(Error::from), false, version, retried_same);
            }
            () = self.probe_wait(engine) => {}
        }
        tracing::debug!(server = %self.server, "no answer to `server/discover` yet; sending `initialize` too, the first answer that tells the era decides");
        let mut initialize = std::pin::pin!(self.initialize(engine));
        // An `initialize` refused for another reason: the answer, unless
        // the probe says modern.
        let mut refused: Option<Error> = None;
        loop {
            tokio::select! {
                biased;
                answer = &mut probe => {
                    let step = self.judge(answer.map_err(Error::from), false, version, retried_same)?;
                    return match (step, refused) {
                        (Step::Outcome(ProbeOutcome::Legacy), Some(error)) => Err(error),
                        (Step::Outcome(ProbeOutcome::Legacy), None) => {
                            let session = initialize.await?;
                            Ok(Step::Outcome(ProbeOutcome::Initialized(Box::new(session))))
                        }
                        (step, _) => Ok(step),
                    };
                }
                answer = &mut initialize, if refused.is_none() => match answer {
                    Ok(session) => {
                        tracing::debug!(server = %self.server, "`initialize` answered before `server/discover`: session era");
                        return Ok(Step::Outcome(ProbeOutcome::Initialized(Box::new(session))));
                    }
                    Err(error) => match modern_version_refused(&error) {
                        Some(next) => {
                            tracing::debug!(server = %self.server, %error, "`initialize` refused by a modern server; probing again");
                            return Ok(Step::Retry(next));
                        }
                        None => refused = Some(error),
                    },
                },
            }
        }
    }

    /// What one answer to `server/discover` says.
    fn judge(
        &self,
        outcome: Result<RawResult>,
        strict: bool,
        version: &ProtocolVersion,
        retried_same: &mut bool,
    ) -> Result<Step> {
        match outcome {
            Ok(raw) => {
                let discover: DiscoverResult = match parse_result(
                    &self.server,
                    rq::Discover::METHOD,
                    raw.get(),
                ) {
                    Ok(discover) => discover,
                    // Some older servers answer any method with an
                    // empty result: that is no DiscoverResult, so no
                    // evidence of a modern server.
                    Err(error) if !strict => {
                        tracing::debug!(server = %self.server, %error, "probe answer is not a DiscoverResult; trying initialize");
                        return Ok(Step::Outcome(ProbeOutcome::Legacy));
                    }
                    Err(error) => return Err(error),
                };
                check_result_type(
                    &self.server,
                    rq::Discover::METHOD,
                    &raw,
                    peek_result_type(&raw).as_deref(),
                )?;
                match best_mutual(&discover.supported_versions, &ProtocolVersion::MODERN) {
                    Some(chosen) => Ok(Step::Outcome(ProbeOutcome::Modern(
                        Box::new(discover),
                        chosen,
                    ))),
                    None if !strict
                        && discover
                            .supported_versions
                            .iter()
                            .any(|v| ProtocolVersion::LEGACY.contains(v)) =>
                    {
                        Ok(Step::Outcome(ProbeOutcome::Legacy))
                    }
                    None => Err(self.no_mutual_version(&discover.supported_versions)),
                }
            }
            Err(Error::Server { error, .. })
                if error.code == codes::UNSUPPORTED_PROTOCOL_VERSION =>
            {
                let supported = supported_versions(error.data.as_ref());
                match best_mutual(&supported, &ProtocolVersion::MODERN) {
                    // A version it lists: retry with it, even when it is
                    // the one just refused (once; a server may refuse a
                    // first request for reasons of its own).
                    Some(chosen) if chosen != *version || !*retried_same => {
                        *retried_same |= chosen == *version;
                        Ok(Step::Retry(chosen))
                    }
                    Some(_) => Err(Error::Protocol {
                        server: self.server.clone(),
                        detail: format!(
                            "it rejected protocol version {version} although it lists it as supported"
                        ),
                    }),
                    None if !strict
                        && supported
                            .iter()
                            .any(|v| ProtocolVersion::LEGACY.contains(v)) =>
                    {
                        Ok(Step::Outcome(ProbeOutcome::Legacy))
                    }
                    None => Err(self.no_mutual_version(&supported)),
                }
            }
            Err(error @ Error::Server { .. })
                if error.code().is_some_and(codes::is_modern_error) =>
            {
                Err(error)
            }
            // Over the network, silence and server errors are outages,
            // not evidence of an older server; credentials are never a
            // reason to try another era or transport.
            Err(error @ (Error::Timeout { .. } | Error::Transport { .. }))
                if self.connector.is_remote() && !is_legacy_evidence(&error) =>
            {
                Err(error)
            }
            Err(error @ Error::Transport { .. }) if is_legacy_evidence(&error) => {
                if strict {
                    return Err(error);
                }
                tracing::debug!(server = %self.server, %error, "HTTP probe refused; trying initialize");
                Ok(Step::Outcome(ProbeOutcome::Legacy))
            }
            Err(error @ (Error::Server { .. } | Error::Timeout { .. })) => {
                if strict {
                    let answer = match &error {
                        Error::Server { error, .. } => format!("answered it with {error}"),
                        _ => "did not answer it in time".to_owned(),
                    };
                    return Err(Error::WrongEra {
                        server: self.server.clone(),
                        detail: format!(
                            "it {answer} `server/discover`, so it does not speak the stateless \
                             protocol (2026-07-28); use the auto or legacy era mode"
                        ),
                    });
                }
                tracing::debug!(server = %self.server, %error, "probe says legacy server");
                Ok(Step::Outcome(ProbeOutcome::Legacy))
            }
            Err(Error::Disconnected { reason, .. })
                if !strict && !matches!(*reason, TransportError::ClosedByClient) =>
            {
                tracing::debug!(server = %self.server, error = %reason, "server died when probed; respawning for initialize");
                Ok(Step::Outcome(ProbeOutcome::Respawn))
            }
            Err(error) => Err(error),
        }
    }

    pub(super) fn no_mutual_version(&self, supported: &[ProtocolVersion]) -> Error {
        Error::UnsupportedVersion {
            server: self.server.clone(),
            requested: ProtocolVersion::LATEST,
            server_version: if supported.is_empty() {
                "none it would name".into()
            } else {
                supported
                    .iter()
                    .map(ProtocolVersion::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            supported: supported_list(),
        }
    }

    pub(super) async fn initialize(&self, engine: &Engine) -> Result<ServerSession> {
        let requested = ProtocolVersion::LATEST_LEGACY;
        let params = InitializeRequestParams {
            protocol_version: requested.clone(),
            capabilities: self.builder.capabilities.clone(),
            client_info: self.builder.client_info.clone(),
            meta: None,
        };
        let params =
            serde_json::value::to_raw_value(&params).map_err(|source| Error::Serialize {
                method: rq::Initialize::METHOD.into(),
                source,
            })?;
        let raw = engine
            .request(
                engine.allocate_id(),
                rq::Initialize::METHOD,
                Some(&params),
                RequestOptions::default(),
            )
            .await?;
        let result: InitializeResult =
            parse_result(&self.server, rq::Initialize::METHOD, raw.get())?;
        if !ProtocolVersion::LEGACY.contains(&result.protocol_version) {
            engine.close().await;
            return Err(Error::UnsupportedVersion {
                server: self.server.clone(),
                requested,
                server_version: result.protocol_version.to_string(),
                supported: supported_list(),
            });
        }
        engine.notify("notifications/initialized", None).await?;
        Ok(ServerSession {
            transport: "",
            era: Era::Legacy,
            protocol_version: result.protocol_version,
            server_info: Some(result.server_info),
            capabilities: result.capabilities,
            instructions: result.instructions,
            respawned: false,
            negotiation_time: Duration::ZERO,
        })
    }
}

/// The `supported` list of a -32022's `data`.
fn supported_versions(data: Option<&Value>) -> Vec<ProtocolVersion> {
    data.and_then(|d| d.get("supported"))
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_default()
}

/// The modern version to probe with when `initialize` was refused with
/// -32022 naming one: the server is modern (Python SDK 2.x refuses
/// `initialize` so on a connection it serves in the stateless era).
fn modern_version_refused(error: &Error) -> Option<ProtocolVersion> {
    match error {
        Error::Server { error, .. } if error.code == codes::UNSUPPORTED_PROTOCOL_VERSION => {
            best_mutual(
                &supported_versions(error.data.as_ref()),
                &ProtocolVersion::MODERN,
            )
        }
        _ => None,
    }
}

/// An HTTP answer to the probe that means "not a modern server": a 4xx
/// other than 401/403 without a modern JSON-RPC error body.
pub(super) fn is_legacy_evidence(error: &Error) -> bool {
    match error {
        Error::Transport { source, .. } => {
            !source.is_auth_required()
                && source
                    .http_status()
                    .is_some_and(|status| (400..500).contains(&status))
        }
        _ => false,
    }
}

pub(super) fn supported_list() -> String {
    ProtocolVersion::KNOWN
        .iter()
        .map(ProtocolVersion::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn modern_session(discover: DiscoverResult, version: ProtocolVersion) -> ServerSession {
    ServerSession {
        transport: "",
        era: Era::Modern,
        protocol_version: version,
        server_info: discover.server_info(),
        capabilities: discover.capabilities,
        instructions: discover.instructions,
        respawned: false,
        negotiation_time: Duration::ZERO,
    }
}

/// The newest version in both lists.
pub(super) fn best_mutual(
    theirs: &[ProtocolVersion],
    ours: &[ProtocolVersion],
) -> Option<ProtocolVersion> {
    theirs.iter().filter(|v| ours.contains(v)).max().cloned()
}
