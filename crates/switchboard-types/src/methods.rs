//! Method names of every revision, 2024-11-05 through 2026-07-28.
//!
//! The revision that introduced a method, or the last one that had it, is
//! noted where it is not in all five.

/// `initialize` (legacy era).
pub const INITIALIZE: &str = "initialize";
/// `ping` (legacy era).
pub const PING: &str = "ping";
/// `server/discover` (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";

/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";

/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe` (legacy era).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (legacy era).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";

/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";

/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";

/// `logging/setLevel` (legacy era).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

/// `sampling/createMessage` (server to client; an input request in 2026-07-28).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `roots/list` (server to client; an input request in 2026-07-28).
pub const ROOTS_LIST: &str = "roots/list";
/// `elicitation/create` (2025-06-18; server to client; an input request in 2026-07-28).
pub const ELICITATION_CREATE: &str = "elicitation/create";

/// `tasks/get` (2025-11-25; the tasks extension in 2026-07-28).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result` (2025-11-25 only).
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list` (2025-11-25 only).
pub const TASKS_LIST: &str = "tasks/list";
/// `tasks/cancel` (2025-11-25; the tasks extension in 2026-07-28).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/update` (the tasks extension of 2026-07-28).
pub const TASKS_UPDATE: &str = "tasks/update";

/// `skills/list` (the skills extension, SEP-2640).
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get` (the skills extension, SEP-2640).
pub const SKILLS_GET: &str = "skills/get";
/// `resources/directory/read` (the skills extension, with `directoryRead`).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

/// `subscriptions/listen` (2026-07-28).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// `notifications/initialized` (legacy era).
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled`.
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// `notifications/message`.
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// `notifications/resources/list_changed`.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/resources/updated`.
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/prompts/list_changed`.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/tools/list_changed`.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/roots/list_changed` (legacy era).
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// `notifications/elicitation/complete` (2025-11-25 only).
pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `notifications/tasks/status` (2025-11-25; the tasks extension in 2026-07-28).
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";
/// `notifications/subscriptions/acknowledged` (2026-07-28).
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";

/// Every request method above.
pub const ALL_REQUESTS: &[&str] = &[
    INITIALIZE,
    PING,
    SERVER_DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    PROMPTS_LIST,
    PROMPTS_GET,
    COMPLETION_COMPLETE,
    LOGGING_SET_LEVEL,
    SAMPLING_CREATE_MESSAGE,
    ROOTS_LIST,
    ELICITATION_CREATE,
    TASKS_GET,
    TASKS_RESULT,
    TASKS_LIST,
    TASKS_CANCEL,
    TASKS_UPDATE,
    SUBSCRIPTIONS_LISTEN,
];

/// Every notification method above.
pub const ALL_NOTIFICATIONS: &[&str] = &[
    NOTIFICATION_INITIALIZED,
    NOTIFICATION_CANCELLED,
    NOTIFICATION_PROGRESS,
    NOTIFICATION_MESSAGE,
    NOTIFICATION_RESOURCES_LIST_CHANGED,
    NOTIFICATION_RESOURCES_UPDATED,
    NOTIFICATION_PROMPTS_LIST_CHANGED,
    NOTIFICATION_TOOLS_LIST_CHANGED,
    NOTIFICATION_ROOTS_LIST_CHANGED,
    NOTIFICATION_ELICITATION_COMPLETE,
    NOTIFICATION_TASKS_STATUS,
    NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `method` const in every schema revision must be named here.
    #[test]
    fn covers_every_schema_method() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spec");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            panic!("spec folder missing at {}", dir.display());
        };
        let mut checked = 0;
        for entry in entries.flatten() {
            let schema = entry.path().join("schema.json");
            let Ok(text) = std::fs::read_to_string(&schema) else {
                continue;
            };
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            let defs = value
                .get("$defs")
                .or_else(|| value.get("definitions"))
                .unwrap();
            for def in defs.as_object().unwrap().values() {
                let method = def
                    .pointer("/properties/method/const")
                    .and_then(|m| m.as_str());
                if let Some(method) = method {
                    assert!(
                        ALL_REQUESTS.contains(&method) || ALL_NOTIFICATIONS.contains(&method),
                        "{} has method {method} with no constant",
                        schema.display()
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "only {checked} methods found");
    }
}
