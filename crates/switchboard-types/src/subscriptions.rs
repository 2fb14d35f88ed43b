//! `subscriptions/listen` (2026-07-28): one long-lived request whose
//! response stream carries the change notifications the client opted into.

use serde::{Deserialize, Serialize};

use crate::jsonrpc::RequestId;
use crate::lifecycle::Implementation;
use crate::meta::{JsonObject, ResultType, server_info_from_meta, subscription_id_from_meta};

/// Which change notifications to receive.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// Params of `subscriptions/listen`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// What to listen for.
    pub notifications: SubscriptionFilter,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

/// The result of `subscriptions/listen`, sent when the stream closes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// `complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata: the subscription id and the server's identity.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl SubscriptionsListenResult {
    /// `_meta["io.modelcontextprotocol/subscriptionId"]`.
    pub fn subscription_id(&self) -> Option<RequestId> {
        subscription_id_from_meta(self.meta.as_ref())
    }

    /// `_meta["io.modelcontextprotocol/serverInfo"]`.
    pub fn server_info(&self) -> Option<Implementation> {
        server_info_from_meta(self.meta.as_ref())
    }
}

/// Params of `notifications/subscriptions/acknowledged`: what the server
/// agreed to send, which may be less than was asked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The accepted filter.
    pub notifications: SubscriptionFilter,
    /// Notification metadata, with the subscription id.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl SubscriptionsAcknowledgedNotificationParams {
    /// `_meta["io.modelcontextprotocol/subscriptionId"]`.
    pub fn subscription_id(&self) -> Option<RequestId> {
        subscription_id_from_meta(self.meta.as_ref())
    }
}
