//! Tools: listing and calling them, and checking `structuredContent`
//! against a tool's `outputSchema`.

use std::sync::Arc;

use switchboard_types::request::{self as rq, Request};
use switchboard_types::{
    CallToolRequestParams, CallToolResult, Era, JsonObject, RequestOutcome, Tool, codes,
};

use super::Client;
use crate::engine::RequestOptions;
use crate::error::{Error, Result};

impl Client {
    /// Every tool, following pagination.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] when the server offers no tools;
    /// [`Error::Pagination`] when the list does not end; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropping it cancels the page in flight.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        Ok(self.list_tools_shared().await?.to_vec())
    }

    /// [`Client::list_tools`] without its copy: the list kept for
    /// [`Client::tools`] and `outputSchema` checks is the one returned.
    /// A parsed tool list is many times the size of its JSON text (every
    /// schema is a tree of maps), so for large lists this halves the
    /// memory a listing costs.
    ///
    /// # Errors
    /// As [`Client::list_tools`].
    ///
    /// # Cancel safety
    /// As [`Client::list_tools`].
    pub async fn list_tools_shared(&self) -> Result<Arc<[Tool]>> {
        self.require(
            "tools",
            rq::ListTools::METHOD,
            self.capabilities().tools.is_some(),
        )?;
        let tools: Arc<[Tool]> = self.list_all::<rq::ListTools>().await?.into();
        // Also for checking `structuredContent` against `outputSchema`.
        self.inner
            .tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set(tools.clone());
        Ok(tools)
    }

    /// Calls a tool. A result with `is_error: Some(true)` is still `Ok`:
    /// the tool ran and failed, and the model should see why.
    ///
    /// What the server asks for on the way is answered by the installed
    /// handlers: `input_required` rounds in the stateless era (up to
    /// [`ClientBuilder::max_input_rounds`](crate::ClientBuilder::max_input_rounds)), -32042 URL elicitations in
    /// either. When the tool is known from [`Client::list_tools`] and
    /// declares an `outputSchema`, its `structuredContent` is checked.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] when the server offers no tools;
    /// [`Error::InputFailed`] / [`Error::TooManyRounds`] when the server's
    /// asks cannot be met; [`Error::OutputMismatch`] when the structured
    /// result breaks the tool's `outputSchema`; as [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call.
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult> {
        let params = CallToolRequestParams {
            name: name.into(),
            arguments,
            ..Default::default()
        };
        self.call_tool_with(&params, RequestOptions::default())
            .await
    }

    /// Calls a tool with full params and options (timeout, progress).
    ///
    /// # Errors
    /// As [`Client::call_tool`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call.
    pub async fn call_tool_with(
        &self,
        params: &CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult> {
        self.require(
            "tools",
            rq::CallTool::METHOD,
            self.capabilities().tools.is_some(),
        )?;
        let call = || {
            self.request_rounds::<_, CallToolResult>(rq::CallTool::METHOD, params, options.clone())
        };
        let result = match self.with_url_elicitation(options.tag, call).await {
            // The server's tool definitions changed under us (2026-07-28
            // header mirroring): learn them again and retry, once.
            Err(error)
                if error.code() == Some(codes::HEADER_MISMATCH) && self.era() == Era::Modern =>
            {
                tracing::debug!(server = %self.server_name(), tool = %params.name, "header mismatch; refreshing the tool list and retrying once");
                self.list_tools().await?;
                self.request_rounds(rq::CallTool::METHOD, params, options.clone())
                    .await
            }
            outcome => outcome,
        }?;
        self.check_output(&params.name, result).await
    }

    /// Checks `structuredContent` against the tool's `outputSchema`, when
    /// the tool is known.
    pub(super) async fn check_output(
        &self,
        name: &str,
        result: CallToolResult,
    ) -> Result<CallToolResult> {
        // A handle on the shared list, not a copy: a tool with a large
        // schema is not cloned on every call.
        let tool = self
            .inner
            .tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name)
            .filter(|t| t.output_schema.is_some() && !result.is_error());
        let Some(tool) = tool else {
            return Ok(result);
        };
        let result = Arc::new(result);
        let checked = self
            .inner
            .output_validator
            .validate_within(tool, result.clone(), self.inner.output_validation_budget)
            .await;
        // Shared with the check's thread only while that runs: a result
        // whose check was abandoned is copied.
        let result = Arc::try_unwrap(result).unwrap_or_else(|shared| (*shared).clone());
        match checked {
            Ok(()) => Ok(result),
            // The server's own schema is broken, or checking its result
            // took too long: the result is passed on unchecked rather than
            // failing the call.
            Err(mismatch) if mismatch.is_unchecked() => {
                tracing::warn!(server = %self.server_name(), tool = %name, %mismatch, "result not checked against its outputSchema");
                Ok(result)
            }
            Err(mismatch) => Err(Error::OutputMismatch {
                server: self.inner.engine.server().clone(),
                mismatch: Box::new(mismatch),
                result: Box::new(result),
            }),
        }
    }

    /// One round of `tools/call`: the result, the server's
    /// `input_required` result (2026-07-28) for applications that answer it
    /// themselves, or a task. No handler runs and nothing is retried.
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the call.
    pub async fn call_tool_once(
        &self,
        params: &CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<RequestOutcome<CallToolResult>> {
        self.require(
            "tools",
            rq::CallTool::METHOD,
            self.capabilities().tools.is_some(),
        )?;
        self.request_once(rq::CallTool::METHOD, params, options)
            .await
    }
}
