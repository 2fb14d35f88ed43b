//! Prompts as provider messages and resources as context parts:
//! snapshots for every provider, and the merging, dropping and budget
//! rules.

use serde_json::{Map, Value, json};
use switchboard_models::messages::{prompt_messages, resource_parts};
use switchboard_models::{Provider, ResultOptions};
use switchboard_types::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, GetPromptResult,
    ImageContent, PromptMessage, ReadResourceResult, ResourceContents, ResourceLink, Role,
    TextResourceContents,
};

mod support;

use support::*;

fn message(role: Role, content: ContentBlock) -> PromptMessage {
    PromptMessage {
        role,
        content,
        extra: Default::default(),
    }
}

fn prompt(messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult {
        description: Some("Reviews code (not sent to the model)".into()),
        messages,
        ..GetPromptResult::default()
    }
}

fn image(bytes: &[u8]) -> ContentBlock {
    ContentBlock::Image(ImageContent {
        data: b64(bytes),
        mime_type: "image/png".into(),
        ..ImageContent::default()
    })
}

fn embedded(resource: ResourceContents) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource {
        resource,
        annotations: None,
        meta: None,
        extra: Default::default(),
    })
}

fn text_contents(uri: &str, mime: Option<&str>, text: &str) -> ResourceContents {
    ResourceContents::Text(TextResourceContents {
        uri: uri.into(),
        mime_type: mime.map(Into::into),
        text: text.into(),
        ..TextResourceContents::default()
    })
}

fn blob_contents(uri: &str, mime: &str, bytes: &[u8]) -> ResourceContents {
    ResourceContents::Blob(BlobResourceContents {
        uri: uri.into(),
        mime_type: Some(mime.into()),
        blob: b64(bytes),
        ..BlobResourceContents::default()
    })
}

fn all_prompts(prompt: &GetPromptResult, options: &ResultOptions) -> Value {
    let mut out = Map::new();
    for provider in Provider::ALL {
        out.insert(
            provider.to_string(),
            Value::Array(prompt_messages(provider, prompt, options)),
        );
    }
    redact(Value::Object(out), options)
}

fn all_resources(resource: &ReadResourceResult, options: &ResultOptions) -> Value {
    let mut out = Map::new();
    for provider in Provider::ALL {
        out.insert(
            provider.to_string(),
            Value::Array(resource_parts(provider, resource, options)),
        );
    }
    redact(Value::Object(out), options)
}

#[test]
fn text_conversation() {
    let p = prompt(vec![
        message(Role::User, ContentBlock::text("Review this function.")),
        message(
            Role::User,
            embedded(text_contents(
                "file:///src/lib.rs",
                Some("text/x-rust"),
                "pub fn add(a: i32, b: i32) -> i32 { a + b }",
            )),
        ),
        message(Role::Assistant, ContentBlock::text("It adds two numbers.")),
        message(Role::User, ContentBlock::text("Any overflow?")),
    ]);
    insta::assert_json_snapshot!("prompt_text", all_prompts(&p, &ResultOptions::default()));
}

#[test]
fn media_in_prompts() {
    let scratch = with_store("media");
    let p = prompt(vec![
        message(Role::User, image(PNG)),
        message(
            Role::User,
            ContentBlock::Audio(AudioContent {
                data: b64(WAV),
                mime_type: "audio/wav".into(),
                ..AudioContent::default()
            }),
        ),
        message(
            Role::User,
            embedded(blob_contents(
                "file:///docs/spec.pdf",
                "application/pdf",
                PDF,
            )),
        ),
        message(
            Role::User,
            ContentBlock::ResourceLink(ResourceLink {
                uri: "file:///docs/big.csv".into(),
                name: "big.csv".into(),
                mime_type: Some("text/csv".into()),
                ..ResourceLink::default()
            }),
        ),
        // No provider takes media from the assistant.
        message(Role::Assistant, image(PNG)),
    ]);
    insta::assert_json_snapshot!("prompt_media", all_prompts(&p, &scratch.options));
}

#[test]
fn resources() {
    let scratch = with_store("resources");
    let r = ReadResourceResult {
        contents: vec![
            text_contents(
                "file:///notes.md",
                Some("text/markdown"),
                "# Notes\nShip it.",
            ),
            text_contents("memo://plain", None, "no type"),
            blob_contents("file:///img/logo.png", "image/png", PNG),
            blob_contents("file:///docs/spec.pdf", "application/pdf", PDF),
            blob_contents("file:///dist/app.zip", "application/zip", ZIP),
        ],
        ..ReadResourceResult::default()
    };
    insta::assert_json_snapshot!("resource_parts", all_resources(&r, &scratch.options));
}

#[test]
fn empty_resource_says_so() {
    let r = ReadResourceResult::default();
    insta::assert_json_snapshot!(
        "resource_empty",
        all_resources(&r, &ResultOptions::default())
    );
}

// ---- assertions ----

#[test]
fn same_role_messages_merge_for_anthropic_and_gemini_only() {
    let p = prompt(vec![
        message(Role::User, ContentBlock::text("a")),
        message(Role::User, ContentBlock::text("b")),
        message(Role::Assistant, ContentBlock::text("c")),
        message(Role::Assistant, ContentBlock::text("d")),
        message(Role::User, ContentBlock::text("e")),
    ]);
    let options = ResultOptions::default();
    for provider in Provider::ALL {
        let messages = prompt_messages(provider, &p, &options);
        let expected = match provider {
            Provider::Anthropic | Provider::Gemini => 3,
            _ => 5,
        };
        assert_eq!(messages.len(), expected, "{provider}: {messages:?}");
    }
    let gemini = prompt_messages(Provider::Gemini, &p, &options);
    assert_eq!(
        gemini[1],
        json!({"role": "model", "parts": [{"text": "c"}, {"text": "d"}]})
    );
    let chat = prompt_messages(Provider::OpenAiChat, &p, &options);
    assert_eq!(chat[2], json!({"role": "assistant", "content": "c"}));
    let responses = prompt_messages(Provider::OpenAiResponses, &p, &options);
    assert_eq!(
        responses[2],
        json!({"role": "assistant", "content": [{"type": "output_text", "text": "c"}]})
    );
}

#[test]
fn empty_messages_are_dropped() {
    let p = prompt(vec![
        message(Role::User, ContentBlock::text("")),
        message(Role::Assistant, ContentBlock::text("hi")),
    ]);
    for provider in Provider::ALL {
        let messages = prompt_messages(provider, &p, &ResultOptions::default());
        assert_eq!(messages.len(), 1, "{provider}");
        assert_ne!(messages[0]["role"], "user");
    }
}

#[test]
fn budget_applies_per_message() {
    let p = prompt(vec![
        message(Role::User, ContentBlock::text("x".repeat(30))),
        message(Role::Assistant, ContentBlock::text("y".repeat(20))),
    ]);
    let options = ResultOptions::default().budget(20);
    let chat = prompt_messages(Provider::OpenAiChat, &p, &options);
    let first = chat[0]["content"].as_str().unwrap();
    assert!(
        first.starts_with(&format!(
            "{}\n\n[… output cut: showed 20 of 30 bytes.",
            "x".repeat(20)
        )),
        "{first}"
    );
    assert_eq!(chat[1]["content"], "y".repeat(20));

    let r = ReadResourceResult {
        contents: vec![text_contents("a://b", None, &"z".repeat(40))],
        ..ReadResourceResult::default()
    };
    let parts = resource_parts(Provider::Anthropic, &r, &options);
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["text"].as_str().unwrap().len(), 20);
    assert!(
        parts[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("[… output cut: showed 20 of 57 bytes.")
    );
}

#[test]
fn saved_blobs_hold_the_decoded_bytes() {
    let scratch = with_store("saved");
    let r = ReadResourceResult {
        contents: vec![blob_contents(
            "file:///dist/app.zip",
            "application/zip",
            ZIP,
        )],
        ..ReadResourceResult::default()
    };
    let parts = resource_parts(Provider::Gemini, &r, &scratch.options);
    let text = parts[0]["text"].as_str().unwrap();
    let path = text
        .split(" saved to ")
        .nth(1)
        .unwrap()
        .trim_end_matches(']');
    assert!(
        path.starts_with(
            scratch
                .options
                .media
                .as_ref()
                .unwrap()
                .dir()
                .to_str()
                .unwrap()
        )
    );
    assert_eq!(std::fs::read(path).unwrap(), ZIP);
}

#[test]
fn bad_base64_never_panics() {
    let bad = ContentBlock::Image(ImageContent {
        data: "***".into(),
        mime_type: "image/png".into(),
        ..ImageContent::default()
    });
    let p = prompt(vec![
        message(Role::User, bad.clone()),
        message(Role::Assistant, bad),
    ]);
    let r = ReadResourceResult {
        contents: vec![ResourceContents::Blob(BlobResourceContents {
            uri: "x:".into(),
            mime_type: None,
            blob: "***".into(),
            ..BlobResourceContents::default()
        })],
        ..ReadResourceResult::default()
    };
    for provider in Provider::ALL {
        let messages = prompt_messages(provider, &p, &ResultOptions::default());
        assert_eq!(messages.len(), 2, "{provider}");
        assert!(messages[0].to_string().contains("not valid base64"));
        let parts = resource_parts(provider, &r, &ResultOptions::default());
        assert!(parts[0].to_string().contains("not valid base64"));
    }
}
