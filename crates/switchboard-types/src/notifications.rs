//! Progress and cancellation. The other notifications' params live beside
//! their feature ([`ResourceUpdatedNotificationParams`](crate::ResourceUpdatedNotificationParams),
//! [`NotificationParams`](crate::NotificationParams) for `list_changed`, …).

use serde::{Deserialize, Serialize};

use crate::jsonrpc::RequestId;
use crate::meta::JsonObject;

/// A progress token: a string or an integer, like a request id.
pub type ProgressToken = RequestId;

/// Params of `notifications/progress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification.
    #[serde(serialize_with = "crate::util::ser_f64")]
    pub progress: f64,
    /// The total, if known.
    #[serde(
        default,
        serialize_with = "crate::util::ser_opt_f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub total: Option<f64>,
    /// A human-readable message (2025-03-26).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// Params of `notifications/cancelled`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The request to cancel (optional only in 2025-11-25, where tasks use
    /// `tasks/cancel` instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}
