//! Prompts: listing and getting them.

use std::sync::Arc;

use switchboard_types::request::{self as rq, Request};
use switchboard_types::{GetPromptRequestParams, GetPromptResult, Prompt, RequestOutcome};

use super::Client;
use crate::engine::RequestOptions;
use crate::error::Result;

impl Client {
    /// One round of `prompts/get` (see [`Client::call_tool_once`]).
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_prompt_once(
        &self,
        params: &GetPromptRequestParams,
        options: RequestOptions,
    ) -> Result<RequestOutcome<GetPromptResult>> {
        self.require(
            "prompts",
            rq::GetPrompt::METHOD,
            self.capabilities().prompts.is_some(),
        )?;
        self.request_once(rq::GetPrompt::METHOD, params, options)
            .await
    }

    /// Every prompt, following pagination.
    ///
    /// # Errors
    /// As [`Client::list_tools`], for prompts.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        Ok(self.list_prompts_shared().await?.to_vec())
    }

    /// [`Client::list_prompts`] without its copy: the list kept for
    /// [`Client::prompts`] is the one returned.
    ///
    /// # Errors
    /// As [`Client::list_prompts`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_prompts_shared(&self) -> Result<Arc<[Prompt]>> {
        self.require(
            "prompts",
            rq::ListPrompts::METHOD,
            self.capabilities().prompts.is_some(),
        )?;
        let prompts: Arc<[Prompt]> = self.list_all::<rq::ListPrompts>().await?.into();
        self.inner.subs.set_prompts(prompts.clone());
        Ok(prompts)
    }

    /// Gets a prompt with its arguments filled in.
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<GetPromptResult> {
        let params = GetPromptRequestParams {
            name: name.into(),
            arguments: arguments.map(|a| a.into_iter().collect()),
            ..Default::default()
        };
        self.get_prompt_with(&params, RequestOptions::default())
            .await
    }

    /// Gets a prompt with full params and options (timeout, progress); the
    /// server's asks are answered as for [`Client::call_tool`].
    ///
    /// # Errors
    /// As [`Client::get_prompt`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_prompt_with(
        &self,
        params: &GetPromptRequestParams,
        options: RequestOptions,
    ) -> Result<GetPromptResult> {
        self.require(
            "prompts",
            rq::GetPrompt::METHOD,
            self.capabilities().prompts.is_some(),
        )?;
        let call = || self.request_rounds(rq::GetPrompt::METHOD, params, options.clone());
        self.with_url_elicitation(options.tag, call).await
    }
}
