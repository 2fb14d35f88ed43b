//! Utilities: completions, the log level and `ping`.

use switchboard_types::request::{self as rq, Request};
use switchboard_types::{
    CompleteRequestParams, CompleteResult, Era, LoggingLevel, SetLevelRequestParams,
};

use super::{Client, level_code};
use crate::engine::RequestOptions;
use crate::error::Result;

impl Client {
    /// Asks for completions of a prompt or resource-template argument.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`](crate::Error::CapabilityMissing) without the `completions` capability; as
    /// [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn complete(&self, params: &CompleteRequestParams) -> Result<CompleteResult> {
        self.require(
            "completions",
            rq::Complete::METHOD,
            self.capabilities().completions.is_some(),
        )?;
        self.request::<rq::Complete>(params, RequestOptions::default())
            .await
    }

    /// Sets the server's log level: `logging/setLevel` in the session era;
    /// in the stateless era the level travels in every later request's
    /// `_meta` (no round trip).
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`](crate::Error::CapabilityMissing) without the `logging` capability
    /// (session era).
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<()> {
        if self.era() == Era::Modern {
            self.inner.log_level.store(
                level_code(Some(level)),
                std::sync::atomic::Ordering::Relaxed,
            );
            return Ok(());
        }
        self.require(
            "logging",
            rq::SetLevel::METHOD,
            self.capabilities().logging.is_some(),
        )?;
        let params = SetLevelRequestParams { level };
        self.request::<rq::SetLevel>(&params, RequestOptions::default())
            .await
            .map(drop)
    }

    /// Pings the server (session era only).
    ///
    /// # Errors
    /// [`Error::NotInThisEra`](crate::Error::NotInThisEra) on a 2026-07-28 connection; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the ping.
    pub async fn ping(&self) -> Result<()> {
        self.require_legacy("ping")?;
        self.request_raw("ping", None, RequestOptions::default())
            .await
            .map(drop)
    }
}
