//! Losslessness and legacy-era shapes.

use serde_json::{Value, json};
use switchboard_types::request::{Paginated, Request};
use switchboard_types::*;

#[test]
fn tool_input_schema_survives_byte_for_byte() {
    let line = r##"{"name":"query","description":"Run a query","inputSchema":{"type":"object","required":["sql"],"properties":{"sql":{"$ref":"#/$defs/Sql"},"limit":{"type":"integer","minimum":1,"maximum":1000,"default":100},"mode":{"anyOf":[{"const":"ro"},{"const":"rw"}]}},"additionalProperties":false,"$defs":{"Sql":{"type":"string","x-mcp-header":"Sql","minLength":1}},"$schema":"https://json-schema.org/draft/2020-12/schema"}}"##;
    let tool: Tool = serde_json::from_str(line).unwrap();
    assert!(line.contains(tool.input_schema.as_str()));
    let schema = tool.input_schema.to_object().unwrap();
    let keys: Vec<&str> = schema.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "type",
            "required",
            "properties",
            "additionalProperties",
            "$defs",
            "$schema"
        ]
    );
    assert_eq!(serde_json::to_string(&tool).unwrap(), line);
}

#[test]
fn unknown_content_block_is_kept_among_known_ones() {
    let line = r#"{"content":[{"type":"text","text":"before"},{"type":"hologram","x":1,"frames":[{"z":2}]},{"type":"image","data":"AA==","mimeType":"image/png"}],"isError":false}"#;
    let result: CallToolResult = serde_json::from_str(line).unwrap();
    assert_eq!(result.content.len(), 3);
    assert_eq!(result.content[0].as_text(), Some("before"));
    let ContentBlock::Other(unknown) = &result.content[1] else {
        panic!("unknown block parsed as {:?}", result.content[1]);
    };
    assert_eq!(unknown.get("x"), Some(&json!(1)));
    assert_eq!(result.content[1].kind(), Some("hologram"));
    assert!(matches!(result.content[2], ContentBlock::Image(_)));
    assert_eq!(serde_json::to_string(&result).unwrap(), line);
}

fn assert_survives<T>(value: Value) -> T
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let parsed: T = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), value);
    parsed
}

#[test]
fn unknown_fields_survive() {
    let tool: Tool = assert_survives(json!({
        "name": "t",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": true, "futureHint": "x"},
        "execution": {"taskSupport": "sometimes", "queue": "slow"},
        "futureField": {"nested": [1, 2]}
    }));
    assert_eq!(
        tool.extra.value("futureField"),
        Some(json!({"nested": [1, 2]}))
    );
    assert_eq!(
        tool.execution.unwrap().task_support,
        Some(TaskSupport::Other("sometimes".into()))
    );

    let result: CallToolResult = assert_survives(json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": "x", "futureAnnotation": 1}],
        "structuredContent": [1, "two"],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
        "billing": {"tokens": 3}
    }));
    assert_eq!(result.extra.value("billing"), Some(json!({"tokens": 3})));
    assert_eq!(
        server_info_from_meta(result.meta.as_ref()).unwrap().name,
        "s"
    );

    let init: InitializeResult = assert_survives(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "tools": {"listChanged": true, "paged": true},
            "tasks": {"list": {}, "requests": {"tools": {"call": {}}}},
            "futureCapability": {}
        },
        "serverInfo": {"name": "s", "version": "1", "vendor": "acme"},
        "sessionHint": "x"
    }));
    assert_eq!(init.extra.value("sessionHint"), Some(json!("x")));
    assert_eq!(init.server_info.extra.value("vendor"), Some(json!("acme")));
    assert!(init.capabilities.extra.contains_key("futureCapability"));
    assert!(
        init.capabilities
            .tasks
            .unwrap()
            .supports_request("tools/call")
    );
}

#[test]
fn legacy_2024_11_05_initialize_result_parses() {
    let init: InitializeResult = assert_survives(json!({
        "protocolVersion": "2024-11-05",
        "capabilities": {
            "logging": {},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "tools": {"listChanged": true}
        },
        "serverInfo": {"name": "example-server", "version": "1.0.0"},
        "instructions": "Be nice."
    }));
    assert_eq!(init.protocol_version, ProtocolVersion::V2024_11_05);
    assert_eq!(init.protocol_version.era(), Era::Legacy);
    assert_eq!(init.capabilities.resources.unwrap().subscribe, Some(true));
}

#[test]
fn legacy_2025_11_25_task_augmented_result_parses() {
    let raw = json!({
        "task": {
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttl": 60000,
            "pollInterval": 5000
        },
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "786512e2-9e0d-44bd-8f29-789f320fe840"}}
    });
    let outcome: RequestOutcome<CallToolResult> = assert_survives(raw.clone());
    let RequestOutcome::Task(created) = outcome else {
        panic!("not a task: {outcome:?}")
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    assert_eq!(created.task.ttl, Some(Some(60000)));
    assert!(!created.task.status.is_terminal());
    let created: CreateTaskResult = assert_survives(raw);
    assert_eq!(created.result_type, None);

    // tasks/get answers with the task inline; tasks/result with the payload.
    let got: GetTaskResult = assert_survives(json!({
        "taskId": "t", "status": "completed", "createdAt": "a", "lastUpdatedAt": "b", "ttl": null
    }));
    assert_eq!(got.task.retention(), Some(None));
    let payload: GetTaskPayloadResult =
        assert_survives(json!({"content": [{"type": "text", "text": "done"}], "isError": false}));
    let result: CallToolResult = payload.into_result().unwrap();
    assert_eq!(result.content[0].as_text(), Some("done"));
}

#[test]
fn legacy_shapes_of_other_features_parse() {
    // 2024-11-05: completion of a resource (not template) reference.
    let params: CompleteRequestParams = assert_survives(json!({
        "ref": {"type": "ref/resource", "uri": "file:///{path}"},
        "argument": {"name": "path", "value": "src/"}
    }));
    assert!(matches!(params.r#ref, Reference::Resource(_)));
    // 2024-11-05: sampling with a single content block; 2025-06-18 `EnumSchema`.
    let sampling: CreateMessageRequestParams = assert_survives(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "includeContext": "thisServer",
        "maxTokens": 10,
        "temperature": 0.5
    }));
    assert_eq!(sampling.messages[0].content.blocks().len(), 1);
    let elicit: ElicitRequestParams = assert_survives(json!({
        "message": "Pick",
        "requestedSchema": {"type": "object", "properties": {
            "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]}
        }, "required": ["color"]}
    }));
    let ElicitRequestParams::Form(form) = elicit else {
        panic!("not a form")
    };
    assert!(form.requested_schema.is_required("color"));
    // 2025-11-25: URL elicitation required error data.
    let data: UrlElicitationRequiredData = assert_survives(json!({"elicitations": [{
        "mode": "url", "elicitationId": "e1", "url": "https://x", "message": "Log in"
    }]}));
    assert_eq!(data.elicitations[0].elicitation_id.as_deref(), Some("e1"));
}

#[test]
fn paginated_results_expose_cursor_and_items() {
    let page: ListToolsResult = serde_json::from_value(json!({
        "tools": [{"name": "a", "inputSchema": {"type": "object"}}],
        "nextCursor": "c2"
    }))
    .unwrap();
    assert_eq!(page.next_cursor(), Some("c2"));
    assert_eq!(page.into_items()[0].name, "a");
    assert_eq!(request::ListTools::METHOD, methods::TOOLS_LIST);
}

/// `Paginated::ITEMS` is the member each list result writes its items to.
#[test]
fn paginated_results_name_their_items_member() {
    fn member<T: Paginated + Default + serde::Serialize>() {
        let written = serde_json::to_value(T::default()).unwrap();
        assert!(
            written.get(T::ITEMS).is_some_and(Value::is_array),
            "{written}"
        );
    }
    member::<ListToolsResult>();
    member::<ListResourcesResult>();
    member::<ListResourceTemplatesResult>();
    member::<ListPromptsResult>();
    member::<ListTasksResult>();
    member::<ListSkillsResult>();
}

#[test]
fn modern_request_meta_builds_reserved_keys() {
    let meta = RequestMeta {
        protocol_version: Some(ProtocolVersion::V2026_07_28),
        client_capabilities: Some(ClientCapabilities::default()),
        client_info: Some(Implementation::new("switchboard", "0.1.0")),
        log_level: Some(LoggingLevel::Warning),
        progress_token: Some(ProgressToken::from(7)),
        ..RequestMeta::default()
    }
    .into_object();
    assert_eq!(
        Value::Object(meta.clone()),
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "switchboard", "version": "0.1.0"},
            "io.modelcontextprotocol/logLevel": "warning",
            "progressToken": 7
        })
    );
    assert_eq!(
        RequestMeta::from_object(&meta).unwrap().log_level,
        Some(LoggingLevel::Warning)
    );
}
