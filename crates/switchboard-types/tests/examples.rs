//! Every official example of 2026-07-28 parses into its type and serializes
//! back to the same JSON value.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use switchboard_types::jsonrpc::{
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse,
};
use switchboard_types::request::{self, Notification, Request};
use switchboard_types::*;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spec/2026-07-28/examples")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses `json` as `T`, serializes it again, and demands the same value.
fn round_trip<T: DeserializeOwned + Serialize>(json: &str, what: &str) -> T {
    let original: Value = serde_json::from_str(json).unwrap();
    let parsed: T = serde_json::from_str(json).unwrap_or_else(|e| {
        panic!(
            "{what}: does not parse as {}: {e}",
            std::any::type_name::<T>()
        )
    });
    let back = serde_json::to_value(&parsed).unwrap();
    assert_eq!(
        back,
        original,
        "{what}: round trip through {} changed it",
        std::any::type_name::<T>()
    );
    parsed
}

fn check<T: DeserializeOwned + Serialize>(path: &Path) -> T {
    round_trip(&read(path), &path.display().to_string())
}

fn raw(value: &impl Serialize) -> Box<RawValue> {
    RawValue::from_string(serde_json::to_string(value).unwrap()).unwrap()
}

fn parse_message(path: &Path) -> (String, JsonRpcMessage) {
    let text = read(path);
    let message = JsonRpcMessage::from_slice(text.as_bytes())
        .unwrap_or_else(|e| panic!("{}: not JSON-RPC: {e}", path.display()));
    (text, message)
}

/// The whole message must also survive being rebuilt from the typed payload.
fn assert_same_message(path: &Path, text: &str, rebuilt: &JsonRpcMessage) {
    let original: Value = serde_json::from_str(text).unwrap();
    let back: Value = serde_json::from_slice(&rebuilt.to_vec()).unwrap();
    assert_eq!(
        back,
        original,
        "{}: rebuilt message differs",
        path.display()
    );
}

fn check_request<R: Request>(path: &Path)
where
    R::Params: DeserializeOwned,
{
    let (text, message) = parse_message(path);
    let JsonRpcMessage::Request(request) = message else {
        panic!("{}: not a request", path.display())
    };
    assert_eq!(request.method, R::METHOD, "{}", path.display());
    let params = request.params.expect("params");
    let typed: R::Params = round_trip(params.get(), &path.display().to_string());
    let rebuilt = JsonRpcMessage::Request(JsonRpcRequest {
        id: request.id,
        method: request.method,
        params: Some(raw(&typed)),
    });
    assert_same_message(path, &text, &rebuilt);
}

fn check_notification<N: Notification>(path: &Path) {
    let (text, message) = parse_message(path);
    let JsonRpcMessage::Notification(notification) = message else {
        panic!("{}: not a notification", path.display())
    };
    assert_eq!(notification.method, N::METHOD, "{}", path.display());
    let params = notification.params.map(|params| {
        let typed: N::Params = round_trip(params.get(), &path.display().to_string());
        raw(&typed)
    });
    let rebuilt = JsonRpcMessage::Notification(JsonRpcNotification {
        method: notification.method,
        params,
    });
    assert_same_message(path, &text, &rebuilt);
}

/// A response whose result must parse as `T` (use `RequestOutcome<_>` where
/// the schema allows an input-required result).
fn check_response<T: DeserializeOwned + Serialize>(path: &Path) -> T {
    let (text, message) = parse_message(path);
    let JsonRpcMessage::Response(response) = message else {
        panic!("{}: not a response", path.display())
    };
    let result = response.outcome.expect("a result");
    let typed: T = round_trip(result.get(), &path.display().to_string());
    let rebuilt = JsonRpcMessage::Response(JsonRpcResponse {
        id: response.id,
        outcome: Ok(raw(&typed)),
    });
    assert_same_message(path, &text, &rebuilt);
    typed
}

fn check_complete<T: DeserializeOwned + Serialize>(path: &Path) {
    let outcome: RequestOutcome<T> = check_response(path);
    assert!(
        matches!(outcome, RequestOutcome::Complete(_)),
        "{}",
        path.display()
    );
}

/// An error response with `code`, whose `data` (if any) parses as `D`.
fn check_error_response<D: DeserializeOwned + Serialize>(path: &Path, code: i64) {
    let (text, message) = parse_message(path);
    let JsonRpcMessage::Response(response) = message else {
        panic!("{}: not a response", path.display())
    };
    let error = response.outcome.expect_err("an error");
    assert_eq!(error.code, code, "{}", path.display());
    if let Some(data) = &error.data {
        round_trip::<D>(&data.to_string(), &path.display().to_string());
    }
    let rebuilt = JsonRpcMessage::Response(JsonRpcResponse {
        id: response.id,
        outcome: Err(error),
    });
    assert_same_message(path, &text, &rebuilt);
}

fn check_error_object(path: &Path, code: i64) {
    let error: ErrorObject = check(path);
    assert_eq!(error.code, code, "{}", path.display());
}

fn check_block(path: &Path, kind: &str) {
    let block: ContentBlock = check(path);
    assert!(
        !matches!(block, ContentBlock::Other(_)),
        "{}: parsed as unknown",
        path.display()
    );
    assert_eq!(block.kind(), Some(kind), "{}", path.display());
}

fn check_field_schema(path: &Path, expected: fn(&PrimitiveSchemaDefinition) -> bool) {
    let schema: PrimitiveSchemaDefinition = check(path);
    assert!(
        expected(&schema),
        "{}: parsed as {schema:?}",
        path.display()
    );
}

/// Checks one example file by the type its folder is named after.
/// Returns `false` for a folder this test does not know.
fn check_example(folder: &str, path: &Path) -> bool {
    use PrimitiveSchemaDefinition as P;
    match folder {
        // Content blocks carry their tag on `ContentBlock`.
        "AudioContent" => check_block(path, "audio"),
        "EmbeddedResource" => check_block(path, "resource"),
        "ImageContent" => check_block(path, "image"),
        "ResourceLink" => check_block(path, "resource_link"),
        "TextContent" => check_block(path, "text"),
        "ToolResultContent" => check_block(path, "tool_result"),
        "ToolUseContent" => check_block(path, "tool_use"),

        // Elicitation field schemas carry their tag on `PrimitiveSchemaDefinition`.
        "BooleanSchema" => check_field_schema(path, |s| matches!(s, P::Boolean(_))),
        "NumberSchema" => check_field_schema(path, |s| matches!(s, P::Number(_))),
        "StringSchema" => check_field_schema(path, |s| matches!(s, P::String(_))),
        "TitledMultiSelectEnumSchema" => {
            check_field_schema(path, |s| matches!(s, P::TitledMultiSelectEnum(_)))
        }
        "TitledSingleSelectEnumSchema" => {
            check_field_schema(path, |s| matches!(s, P::TitledSingleSelectEnum(_)))
        }
        "UntitledMultiSelectEnumSchema" => {
            check_field_schema(path, |s| matches!(s, P::UntitledMultiSelectEnum(_)))
        }
        "UntitledSingleSelectEnumSchema" => {
            check_field_schema(path, |s| matches!(s, P::UntitledSingleSelectEnum(_)))
        }

        // Plain types.
        "BlobResourceContents" => {
            check::<BlobResourceContents>(path);
            assert!(matches!(
                check::<ResourceContents>(path),
                ResourceContents::Blob(_)
            ));
        }
        "TextResourceContents" => {
            check::<TextResourceContents>(path);
            assert!(matches!(
                check::<ResourceContents>(path),
                ResourceContents::Text(_)
            ));
        }
        "CallToolRequestParams" => drop(check::<CallToolRequestParams>(path)),
        "CallToolResult" => drop(check::<CallToolResult>(path)),
        "CancelledNotificationParams" => drop(check::<CancelledNotificationParams>(path)),
        "ClientCapabilities" => drop(check::<ClientCapabilities>(path)),
        "CompleteRequestParams" => drop(check::<CompleteRequestParams>(path)),
        "CompleteResult" => drop(check::<CompleteResult>(path)),
        "CreateMessageRequestParams" => drop(check::<CreateMessageRequestParams>(path)),
        "CreateMessageResult" => drop(check::<CreateMessageResult>(path)),
        "DiscoverResult" => {
            let result: DiscoverResult = check(path);
            assert!(
                result.server_info().is_some(),
                "{}: no serverInfo",
                path.display()
            );
        }
        "ElicitRequestFormParams" => {
            check::<ElicitRequestFormParams>(path);
            assert!(matches!(
                check::<ElicitRequestParams>(path),
                ElicitRequestParams::Form(_)
            ));
        }
        "ElicitRequestURLParams" => {
            check::<ElicitRequestUrlParams>(path);
            assert!(matches!(
                check::<ElicitRequestParams>(path),
                ElicitRequestParams::Url(_)
            ));
        }
        "ElicitResult" => drop(check::<ElicitResult>(path)),
        "GetPromptRequestParams" => drop(check::<GetPromptRequestParams>(path)),
        "GetPromptResult" => drop(check::<GetPromptResult>(path)),
        "InputRequests" => {
            let requests: InputRequests = check(path);
            assert!(
                requests
                    .values()
                    .all(|r| !matches!(r, InputRequest::Other(_)))
            );
        }
        "InputResponses" => {
            let responses: InputResponses = check(path);
            assert!(
                responses
                    .values()
                    .all(|r| !matches!(r, InputResponse::Other(_)))
            );
        }
        "InputRequiredResult" => {
            let result: InputRequiredResult = check(path);
            assert_eq!(result.result_type, ResultType::InputRequired);
            assert!(matches!(
                check::<RequestOutcome<CallToolResult>>(path),
                RequestOutcome::InputRequired(_)
            ));
        }
        "ListPromptsResult" => drop(check::<ListPromptsResult>(path)),
        "ListResourceTemplatesResult" => drop(check::<ListResourceTemplatesResult>(path)),
        "ListResourcesResult" => drop(check::<ListResourcesResult>(path)),
        "ListRootsResult" => drop(check::<ListRootsResult>(path)),
        "ListToolsResult" => drop(check::<ListToolsResult>(path)),
        "LoggingMessageNotificationParams" => drop(check::<LoggingMessageNotificationParams>(path)),
        "ModelPreferences" => drop(check::<ModelPreferences>(path)),
        "PaginatedRequestParams" => drop(check::<PaginatedRequestParams>(path)),
        "ProgressNotificationParams" => drop(check::<ProgressNotificationParams>(path)),
        "ReadResourceResult" => drop(check::<ReadResourceResult>(path)),
        "Resource" => drop(check::<Resource>(path)),
        "ResourceUpdatedNotificationParams" => {
            drop(check::<ResourceUpdatedNotificationParams>(path))
        }
        "Root" => drop(check::<Root>(path)),
        "SamplingMessage" => drop(check::<SamplingMessage>(path)),
        "ServerCapabilities" => drop(check::<ServerCapabilities>(path)),
        "SubscriptionsListenResult" => {
            let result: SubscriptionsListenResult = check(path);
            assert!(result.subscription_id().is_some(), "{}", path.display());
        }
        "Tool" => drop(check::<Tool>(path)),

        // Requests embedded in an InputRequiredResult: `{method, params}`, no envelope.
        "CreateMessageRequest" => drop(check::<CreateMessageRequest>(path)),
        "ElicitRequest" => drop(check::<ElicitRequest>(path)),
        "ListRootsRequest" => drop(check::<ListRootsRequest>(path)),

        // Full JSON-RPC requests.
        "CallToolRequest" => check_request::<request::CallTool>(path),
        "CompleteRequest" => check_request::<request::Complete>(path),
        "DiscoverRequest" => check_request::<request::Discover>(path),
        "GetPromptRequest" => check_request::<request::GetPrompt>(path),
        "ListPromptsRequest" => check_request::<request::ListPrompts>(path),
        "ListResourceTemplatesRequest" => check_request::<request::ListResourceTemplates>(path),
        "ListResourcesRequest" => check_request::<request::ListResources>(path),
        "ListToolsRequest" => check_request::<request::ListTools>(path),
        "ReadResourceRequest" => check_request::<request::ReadResource>(path),
        "SubscriptionsListenRequest" => check_request::<request::SubscriptionsListen>(path),

        // Full JSON-RPC notifications.
        "CancelledNotification" => check_notification::<request::CancelledNotification>(path),
        "LoggingMessageNotification" => {
            check_notification::<request::LoggingMessageNotification>(path)
        }
        "ProgressNotification" => check_notification::<request::ProgressNotification>(path),
        "PromptListChangedNotification" => {
            check_notification::<request::PromptListChangedNotification>(path)
        }
        "ResourceListChangedNotification" => {
            check_notification::<request::ResourceListChangedNotification>(path)
        }
        "ResourceUpdatedNotification" => {
            check_notification::<request::ResourceUpdatedNotification>(path)
        }
        "SubscriptionsAcknowledgedNotification" => {
            check_notification::<request::SubscriptionsAcknowledgedNotification>(path)
        }
        "ToolListChangedNotification" => {
            check_notification::<request::ToolListChangedNotification>(path)
        }

        // Full JSON-RPC responses.
        "CallToolResultResponse" => check_complete::<CallToolResult>(path),
        "CompleteResultResponse" => drop(check_response::<CompleteResult>(path)),
        "DiscoverResultResponse" => drop(check_response::<DiscoverResult>(path)),
        "GetPromptResultResponse" => check_complete::<GetPromptResult>(path),
        "ListPromptsResultResponse" => drop(check_response::<ListPromptsResult>(path)),
        "ListResourceTemplatesResultResponse" => {
            drop(check_response::<ListResourceTemplatesResult>(path))
        }
        "ListResourcesResultResponse" => drop(check_response::<ListResourcesResult>(path)),
        "ListToolsResultResponse" => drop(check_response::<ListToolsResult>(path)),
        "ReadResourceResultResponse" => check_complete::<ReadResourceResult>(path),
        "SubscriptionsListenResultResponse" => {
            drop(check_response::<SubscriptionsListenResult>(path))
        }

        // Errors: full responses, or bare error objects.
        "HeaderMismatchError" => check_error_response::<Value>(path, codes::HEADER_MISMATCH),
        "MissingRequiredClientCapabilityError" => check_error_response::<
            MissingRequiredClientCapabilityData,
        >(
            path, codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        ),
        "UnsupportedProtocolVersionError" => {
            check_error_response::<UnsupportedProtocolVersionData>(
                path,
                codes::UNSUPPORTED_PROTOCOL_VERSION,
            )
        }
        "InternalError" => check_error_object(path, codes::INTERNAL_ERROR),
        "InvalidParamsError" => check_error_object(path, codes::INVALID_PARAMS),
        "MethodNotFoundError" => check_error_object(path, codes::METHOD_NOT_FOUND),
        "ParseError" => check_error_object(path, codes::PARSE_ERROR),

        _ => return false,
    }
    true
}

#[test]
fn every_official_example_round_trips() {
    let dir = examples_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        panic!(
            "\n\n*** OFFICIAL EXAMPLES NOT FOUND at {} ***\n\
             They are copied into the repository (tests/spec, see its README).\n\n",
            dir.display()
        );
    };
    let mut folders: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    assert!(
        !folders.is_empty(),
        "no example folders in {}",
        dir.display()
    );

    let mut unmapped = Vec::new();
    let mut files_checked = 0;
    for folder in &folders {
        let name = folder.file_name().unwrap().to_str().unwrap();
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: no JSON files", folder.display());
        for file in &files {
            if !check_example(name, file) {
                unmapped.push(name.to_owned());
                break;
            }
            files_checked += 1;
        }
    }
    assert!(
        unmapped.is_empty(),
        "example folders with no type mapping: {unmapped:?}"
    );
    println!("{} folders, {files_checked} files checked", folders.len());
}
