//! Resources: listing and reading them.

use std::sync::Arc;

use switchboard_types::request::{self as rq, Request};
use switchboard_types::{
    ReadResourceRequestParams, ReadResourceResult, RequestOutcome, Resource, ResourceTemplate,
};

use super::Client;
use crate::engine::RequestOptions;
use crate::error::Result;

impl Client {
    /// One round of `resources/read` (see [`Client::call_tool_once`]).
    ///
    /// # Errors
    /// As [`Client::request`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn read_resource_once(
        &self,
        params: &ReadResourceRequestParams,
        options: RequestOptions,
    ) -> Result<RequestOutcome<ReadResourceResult>> {
        self.require(
            "resources",
            rq::ReadResource::METHOD,
            self.capabilities().resources.is_some(),
        )?;
        self.request_once(rq::ReadResource::METHOD, params, options)
            .await
    }

    /// Every resource, following pagination.
    ///
    /// # Errors
    /// As [`Client::list_tools`], for resources.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        Ok(self.list_resources_shared().await?.to_vec())
    }

    /// [`Client::list_resources`] without its copy: the list kept for
    /// [`Client::resources`] is the one returned (as
    /// [`Client::list_tools_shared`]).
    ///
    /// # Errors
    /// As [`Client::list_resources`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_resources_shared(&self) -> Result<Arc<[Resource]>> {
        self.require(
            "resources",
            rq::ListResources::METHOD,
            self.capabilities().resources.is_some(),
        )?;
        let resources: Arc<[Resource]> = self.list_all::<rq::ListResources>().await?.into();
        self.inner.subs.set_resources(resources.clone());
        Ok(resources)
    }

    /// Every resource template, following pagination.
    ///
    /// # Errors
    /// As [`Client::list_tools`], for resources.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        Ok(self.list_resource_templates_shared().await?.to_vec())
    }

    /// [`Client::list_resource_templates`] without its copy: the list kept
    /// for [`Client::resource_templates`] is the one returned.
    ///
    /// # Errors
    /// As [`Client::list_resource_templates`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_resource_templates_shared(&self) -> Result<Arc<[ResourceTemplate]>> {
        self.require(
            "resources",
            rq::ListResourceTemplates::METHOD,
            self.capabilities().resources.is_some(),
        )?;
        let templates: Arc<[ResourceTemplate]> =
            self.list_all::<rq::ListResourceTemplates>().await?.into();
        self.inner.subs.set_templates(templates.clone());
        Ok(templates)
    }

    /// Reads a resource.
    ///
    /// # Errors
    /// As [`Client::request`]; a missing resource is [`Error::Server`](crate::Error::Server) with
    /// code -32002.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn read_resource(&self, uri: impl Into<String>) -> Result<ReadResourceResult> {
        let params = ReadResourceRequestParams {
            uri: uri.into(),
            ..Default::default()
        };
        self.read_resource_with(&params, RequestOptions::default())
            .await
    }

    /// Reads a resource with full params and options (timeout, progress);
    /// the server's asks are answered as for [`Client::call_tool`].
    ///
    /// # Errors
    /// As [`Client::read_resource`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn read_resource_with(
        &self,
        params: &ReadResourceRequestParams,
        options: RequestOptions,
    ) -> Result<ReadResourceResult> {
        self.require(
            "resources",
            rq::ReadResource::METHOD,
            self.capabilities().resources.is_some(),
        )?;
        let call = || self.request_rounds(rq::ReadResource::METHOD, params, options.clone());
        self.with_url_elicitation(options.tag, call).await
    }
}
