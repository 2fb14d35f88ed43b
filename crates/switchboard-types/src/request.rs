//! Typed requests and notifications: a marker type per method ties the
//! method name to its params and result types.
//!
//! ```
//! use switchboard_types::request::{CallTool, Request};
//! use switchboard_types::CallToolRequestParams;
//!
//! fn method_of<R: Request>(_: &R::Params) -> &'static str {
//!     R::METHOD
//! }
//! let params = CallToolRequestParams { name: "echo".into(), ..Default::default() };
//! assert_eq!(method_of::<CallTool>(&params), "tools/call");
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::completion::{CompleteRequestParams, CompleteResult};
use crate::elicitation::{
    ElicitRequestParams, ElicitResult, ElicitationCompleteNotificationParams,
};
use crate::lifecycle::{
    DiscoverRequestParams, DiscoverResult, InitializeRequestParams, InitializeResult,
};
use crate::logging::{LoggingMessageNotificationParams, SetLevelRequestParams};
use crate::meta::{EmptyParams, EmptyResult, NotificationParams, PaginatedRequestParams};
use crate::methods;
use crate::notifications::{CancelledNotificationParams, ProgressNotificationParams};
use crate::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, ResourceUpdatedNotificationParams,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::skills::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, ReadDirectoryRequestParams,
    ReadDirectoryResult, SkillEntry,
};
use crate::subscriptions::{
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};
use crate::tasks::{
    CancelTaskRequestParams, CancelTaskResult, GetTaskPayloadRequestParams, GetTaskPayloadResult,
    GetTaskRequestParams, GetTaskResult, ListTasksResult, Task, TaskStatusNotificationParams,
    UpdateTaskRequestParams,
};
use crate::tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool};

/// A request method with its params and result types.
pub trait Request {
    /// The method name.
    const METHOD: &'static str;
    /// The params.
    type Params: Serialize + Send + Sync;
    /// The result.
    type Result: DeserializeOwned + Send;
}

/// A notification method with its params type.
pub trait Notification {
    /// The method name.
    const METHOD: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned + Send + Sync;
}

/// A page of a paginated list.
pub trait Paginated {
    /// What the list holds.
    type Item;
    /// The member that holds the items, as the wire spells it.
    const ITEMS: &'static str;
    /// The cursor for the next page; `None` on the last page.
    fn next_cursor(&self) -> Option<&str>;
    /// This page's items.
    fn into_items(self) -> Vec<Self::Item>;
}

macro_rules! requests {
    ($( $(#[$meta:meta])* $name:ident = $method:path, $params:ty => $result:ty; )+) => {
        $(
            $(#[$meta])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name;

            impl Request for $name {
                const METHOD: &'static str = $method;
                type Params = $params;
                type Result = $result;
            }
        )+
    };
}

macro_rules! notifications {
    ($( $(#[$meta:meta])* $name:ident = $method:path, $params:ty; )+) => {
        $(
            $(#[$meta])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name;

            impl Notification for $name {
                const METHOD: &'static str = $method;
                type Params = $params;
            }
        )+
    };
}

macro_rules! paginated {
    ($( $result:ty => $field:ident ($key:literal): $item:ty; )+) => {
        $(
            impl Paginated for $result {
                type Item = $item;
                const ITEMS: &'static str = $key;
                fn next_cursor(&self) -> Option<&str> {
                    self.next_cursor.as_deref()
                }
                fn into_items(self) -> Vec<$item> {
                    self.$field
                }
            }
        )+
    };
}

requests! {
    /// `initialize` (legacy era).
    Initialize = methods::INITIALIZE, InitializeRequestParams => InitializeResult;
    /// `server/discover` (2026-07-28).
    Discover = methods::SERVER_DISCOVER, DiscoverRequestParams => DiscoverResult;
    /// `ping` (legacy era).
    Ping = methods::PING, EmptyParams => EmptyResult;
    /// `tools/list`.
    ListTools = methods::TOOLS_LIST, PaginatedRequestParams => ListToolsResult;
    /// `tools/call`. In 2026-07-28 the answer may be an input-required or
    /// task result; parse it as [`RequestOutcome<CallToolResult>`](crate::RequestOutcome) to tell.
    CallTool = methods::TOOLS_CALL, CallToolRequestParams => CallToolResult;
    /// `resources/list`.
    ListResources = methods::RESOURCES_LIST, PaginatedRequestParams => ListResourcesResult;
    /// `resources/templates/list`.
    ListResourceTemplates = methods::RESOURCES_TEMPLATES_LIST, PaginatedRequestParams => ListResourceTemplatesResult;
    /// `resources/read`. May be input-required in 2026-07-28.
    ReadResource = methods::RESOURCES_READ, ReadResourceRequestParams => ReadResourceResult;
    /// `resources/subscribe` (legacy era).
    Subscribe = methods::RESOURCES_SUBSCRIBE, SubscribeRequestParams => EmptyResult;
    /// `resources/unsubscribe` (legacy era).
    Unsubscribe = methods::RESOURCES_UNSUBSCRIBE, UnsubscribeRequestParams => EmptyResult;
    /// `prompts/list`.
    ListPrompts = methods::PROMPTS_LIST, PaginatedRequestParams => ListPromptsResult;
    /// `prompts/get`. May be input-required in 2026-07-28.
    GetPrompt = methods::PROMPTS_GET, GetPromptRequestParams => GetPromptResult;
    /// `completion/complete`.
    Complete = methods::COMPLETION_COMPLETE, CompleteRequestParams => CompleteResult;
    /// `logging/setLevel` (legacy era).
    SetLevel = methods::LOGGING_SET_LEVEL, SetLevelRequestParams => EmptyResult;
    /// `tasks/get`.
    GetTask = methods::TASKS_GET, GetTaskRequestParams => GetTaskResult;
    /// `tasks/result` (2025-11-25).
    GetTaskPayload = methods::TASKS_RESULT, GetTaskPayloadRequestParams => GetTaskPayloadResult;
    /// `tasks/list` (2025-11-25).
    ListTasks = methods::TASKS_LIST, PaginatedRequestParams => ListTasksResult;
    /// `tasks/cancel`.
    CancelTask = methods::TASKS_CANCEL, CancelTaskRequestParams => CancelTaskResult;
    /// `tasks/update` (tasks extension, 2026-07-28).
    UpdateTask = methods::TASKS_UPDATE, UpdateTaskRequestParams => EmptyResult;
    /// `skills/list` (the skills extension).
    ListSkills = methods::SKILLS_LIST, PaginatedRequestParams => ListSkillsResult;
    /// `skills/get` (the skills extension).
    GetSkill = methods::SKILLS_GET, GetSkillRequestParams => GetSkillResult;
    /// `resources/directory/read` (the skills extension, `directoryRead`).
    ReadDirectory = methods::RESOURCES_DIRECTORY_READ, ReadDirectoryRequestParams => ReadDirectoryResult;
    /// `subscriptions/listen` (2026-07-28).
    SubscriptionsListen = methods::SUBSCRIPTIONS_LISTEN, SubscriptionsListenRequestParams => SubscriptionsListenResult;
    /// `sampling/createMessage` (server to client).
    CreateMessage = methods::SAMPLING_CREATE_MESSAGE, CreateMessageRequestParams => CreateMessageResult;
    /// `elicitation/create` (server to client).
    Elicit = methods::ELICITATION_CREATE, ElicitRequestParams => ElicitResult;
    /// `roots/list` (server to client).
    ListRoots = methods::ROOTS_LIST, EmptyParams => ListRootsResult;
}

notifications! {
    /// `notifications/initialized` (legacy era).
    InitializedNotification = methods::NOTIFICATION_INITIALIZED, NotificationParams;
    /// `notifications/cancelled`.
    CancelledNotification = methods::NOTIFICATION_CANCELLED, CancelledNotificationParams;
    /// `notifications/progress`.
    ProgressNotification = methods::NOTIFICATION_PROGRESS, ProgressNotificationParams;
    /// `notifications/message`.
    LoggingMessageNotification = methods::NOTIFICATION_MESSAGE, LoggingMessageNotificationParams;
    /// `notifications/resources/list_changed`.
    ResourceListChangedNotification = methods::NOTIFICATION_RESOURCES_LIST_CHANGED, NotificationParams;
    /// `notifications/resources/updated`.
    ResourceUpdatedNotification = methods::NOTIFICATION_RESOURCES_UPDATED, ResourceUpdatedNotificationParams;
    /// `notifications/prompts/list_changed`.
    PromptListChangedNotification = methods::NOTIFICATION_PROMPTS_LIST_CHANGED, NotificationParams;
    /// `notifications/tools/list_changed`.
    ToolListChangedNotification = methods::NOTIFICATION_TOOLS_LIST_CHANGED, NotificationParams;
    /// `notifications/roots/list_changed` (legacy era).
    RootsListChangedNotification = methods::NOTIFICATION_ROOTS_LIST_CHANGED, NotificationParams;
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationCompleteNotification = methods::NOTIFICATION_ELICITATION_COMPLETE, ElicitationCompleteNotificationParams;
    /// `notifications/tasks/status`.
    TaskStatusNotification = methods::NOTIFICATION_TASKS_STATUS, TaskStatusNotificationParams;
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledgedNotification = methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, SubscriptionsAcknowledgedNotificationParams;
}

paginated! {
    ListToolsResult => tools ("tools"): Tool;
    ListResourcesResult => resources ("resources"): Resource;
    ListResourceTemplatesResult => resource_templates ("resourceTemplates"): ResourceTemplate;
    ListPromptsResult => prompts ("prompts"): Prompt;
    ListTasksResult => tasks ("tasks"): Task;
    ListSkillsResult => skills ("skills"): SkillEntry;
}
