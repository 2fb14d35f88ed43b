//! Tool results in each provider's form: snapshots of every content kind,
//! and the rules a user would notice (budget, saved files, follow-ups, bad
//! data).

use serde_json::{Map, Value, json};
use switchboard_models::results::{self, ChatImages, ProviderResult, ResultOptions};
use switchboard_models::{MediaStore, Provider};
use switchboard_types::{
    Annotations, AudioContent, BlobResourceContents, CallToolResult, ContentBlock,
    EmbeddedResource, ImageContent, ResourceContents, ResourceLink, Role, TextResourceContents,
    ToolUseContent,
};

mod support;

use support::*;

fn image(mime: &str, bytes: &[u8]) -> ContentBlock {
    ContentBlock::Image(ImageContent {
        data: b64(bytes),
        mime_type: mime.into(),
        ..ImageContent::default()
    })
}

fn audio(mime: &str, bytes: &[u8]) -> ContentBlock {
    ContentBlock::Audio(AudioContent {
        data: b64(bytes),
        mime_type: mime.into(),
        ..AudioContent::default()
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

fn blob(uri: &str, mime: &str, bytes: &[u8]) -> ContentBlock {
    embedded(ResourceContents::Blob(BlobResourceContents {
        uri: uri.into(),
        mime_type: Some(mime.into()),
        blob: b64(bytes),
        ..BlobResourceContents::default()
    }))
}

fn result(content: Vec<ContentBlock>) -> CallToolResult {
    CallToolResult {
        content,
        ..CallToolResult::default()
    }
}

fn view(r: &ProviderResult) -> Value {
    json!({
        "items": r.items,
        "follow_up": r.follow_up,
        "saved": r.saved,
        "truncated": r.truncated,
    })
}

/// Every provider's answer to `call_1` of `mcp__files__read`, plus Chat
/// with follow-up images, with the session folder's path replaced by
/// `[media]` so the snapshot is stable.
fn all(result: &CallToolResult, options: &ResultOptions) -> Value {
    let mut out = Map::new();
    for provider in Provider::ALL {
        let r = results::tool_result(provider, "call_1", "mcp__files__read", result, options);
        out.insert(provider.to_string(), view(&r));
    }
    let follow = options.clone().chat_images(ChatImages::FollowUp);
    let r = results::tool_result(
        Provider::OpenAiChat,
        "call_1",
        "mcp__files__read",
        result,
        &follow,
    );
    out.insert("openai-chat (FollowUp)".into(), view(&r));
    redact(Value::Object(out), options)
}

#[test]
fn text() {
    let r = result(vec![
        ContentBlock::text("first line"),
        ContentBlock::text(""),
        ContentBlock::text("second block"),
    ]);
    insta::assert_json_snapshot!("text", all(&r, &with_store("text").options));
}

#[test]
fn text_and_image() {
    let r = result(vec![
        ContentBlock::text("Here is the chart:"),
        image("image/png", PNG),
    ]);
    insta::assert_json_snapshot!(
        "text_and_image",
        all(&r, &with_store("text_and_image").options)
    );
}

#[test]
fn image_without_media_store() {
    let r = result(vec![image("image/png", PNG)]);
    insta::assert_json_snapshot!(
        "image_without_media_store",
        all(&r, &ResultOptions::default())
    );
}

#[test]
fn audio_saved_or_inline() {
    let r = result(vec![
        ContentBlock::text("Recording:"),
        audio("audio/wav", WAV),
    ]);
    insta::assert_json_snapshot!("audio", all(&r, &with_store("audio").options));
}

#[test]
fn audio_without_media_store() {
    let r = result(vec![audio("audio/wav", WAV)]);
    insta::assert_json_snapshot!(
        "audio_without_media_store",
        all(&r, &ResultOptions::default())
    );
}

#[test]
fn embedded_text_resource() {
    let r = result(vec![embedded(ResourceContents::Text(
        TextResourceContents {
            uri: "file:///project/src/main.rs".into(),
            mime_type: Some("text/x-rust".into()),
            text: "fn main() {}\n".into(),
            ..TextResourceContents::default()
        },
    ))]);
    insta::assert_json_snapshot!(
        "embedded_text_resource",
        all(&r, &with_store("embedded_text").options)
    );
}

#[test]
fn embedded_pdf_blob() {
    let r = result(vec![blob(
        "file:///docs/report.pdf",
        "application/pdf",
        PDF,
    )]);
    insta::assert_json_snapshot!(
        "embedded_pdf_blob",
        all(&r, &with_store("embedded_pdf").options)
    );
}

#[test]
fn embedded_zip_blob() {
    let r = result(vec![blob(
        "file:///tmp/../../etc/archive.zip",
        "application/zip",
        ZIP,
    )]);
    insta::assert_json_snapshot!(
        "embedded_zip_blob",
        all(&r, &with_store("embedded_zip").options)
    );
}

#[test]
fn resource_link() {
    let r = result(vec![ContentBlock::ResourceLink(ResourceLink {
        uri: "file:///project/src/main.rs".into(),
        name: "main.rs".into(),
        title: Some("Main".into()),
        description: Some("Primary application entry point".into()),
        mime_type: Some("text/x-rust".into()),
        size: Some(120),
        ..ResourceLink::default()
    })]);
    insta::assert_json_snapshot!("resource_link", all(&r, &ResultOptions::default()));
}

#[test]
fn is_error() {
    let r = CallToolResult {
        is_error: Some(true),
        ..CallToolResult::text("disk full")
    };
    insta::assert_json_snapshot!("is_error", all(&r, &ResultOptions::default()));
}

#[test]
fn structured_with_mirror_text() {
    let r = CallToolResult {
        content: vec![ContentBlock::text(
            r#"{"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65}"#,
        )],
        structured_content: Some(
            json!({"conditions": "Partly cloudy", "humidity": 65, "temperature": 22.5}),
        ),
        ..CallToolResult::default()
    };
    insta::assert_json_snapshot!("structured_with_mirror", all(&r, &ResultOptions::default()));
}

#[test]
fn structured_without_mirror_text() {
    let r = CallToolResult {
        content: vec![ContentBlock::text("Partly cloudy, 22.5 °C")],
        structured_content: Some(json!({"temperature": 22.5, "conditions": "Partly cloudy"})),
        ..CallToolResult::default()
    };
    insta::assert_json_snapshot!(
        "structured_without_mirror",
        all(&r, &ResultOptions::default())
    );
}

#[test]
fn structured_error_only() {
    let r = CallToolResult {
        structured_content: Some(json!({"code": 404, "reason": "no such city"})),
        is_error: Some(true),
        ..CallToolResult::default()
    };
    insta::assert_json_snapshot!("structured_error", all(&r, &ResultOptions::default()));
}

#[test]
fn unknown_and_sampling_blocks() {
    let other: Map<String, Value> =
        serde_json::from_value(json!({"type": "hologram", "z": 1})).unwrap();
    let r = result(vec![
        ContentBlock::Other(other),
        ContentBlock::ToolUse(ToolUseContent {
            id: "t1".into(),
            name: "lookup".into(),
            ..ToolUseContent::default()
        }),
        ContentBlock::text("done"),
    ]);
    insta::assert_json_snapshot!("unknown_blocks", all(&r, &ResultOptions::default()));
}

#[test]
fn empty_result() {
    insta::assert_json_snapshot!("empty", all(&result(vec![]), &ResultOptions::default()));
}

#[test]
fn bad_base64() {
    let r = result(vec![ContentBlock::Image(ImageContent {
        data: "not base64!!".into(),
        mime_type: "image/png".into(),
        ..ImageContent::default()
    })]);
    insta::assert_json_snapshot!("bad_base64", all(&r, &with_store("bad_base64").options));
}

#[test]
fn cut_to_budget() {
    let r = result(vec![
        ContentBlock::text("0123456789".repeat(3)),
        image("image/png", PNG),
        ContentBlock::text("never shown"),
    ]);
    let scratch = with_store("cut");
    let options = scratch.options.clone().budget(25);
    insta::assert_json_snapshot!("cut_to_budget", all(&r, &options));
}

#[test]
fn failure() {
    let mut out = Map::new();
    for provider in Provider::ALL {
        let r = results::tool_failure(provider, "call_9", "mcp__x__y", "unknown tool `y`");
        out.insert(provider.to_string(), view(&r));
    }
    insta::assert_json_snapshot!("failure", Value::Object(out));
}

// ---- assertions ----

fn chat_text(r: &ProviderResult) -> &str {
    r.items[0]["content"].as_str().unwrap()
}

#[test]
fn budget_is_exact_at_the_boundary() {
    let options = ResultOptions::default().budget(10);
    let fits = results::tool_result(
        Provider::OpenAiChat,
        "c",
        "t",
        &CallToolResult::text("0123456789"),
        &options,
    );
    assert!(!fits.truncated);
    assert_eq!(chat_text(&fits), "0123456789");

    let over = results::tool_result(
        Provider::OpenAiChat,
        "c",
        "t",
        &CallToolResult::text("0123456789X"),
        &options,
    );
    assert!(over.truncated);
    let text = chat_text(&over);
    assert!(
        text.starts_with("0123456789\n\n[… output cut: showed 10 of 11 bytes."),
        "{text}"
    );
    assert!(!text.contains('X'));
    assert!(text.ends_with("Ask for less (a narrower query, a page, a limit) to see the rest.]"));
}

#[test]
fn budget_never_splits_a_character() {
    // "é" is two bytes: a budget of 5 shows two of them (4 bytes).
    let options = ResultOptions::default().budget(5);
    let r = results::tool_result(
        Provider::Anthropic,
        "c",
        "t",
        &CallToolResult::text("ééé"),
        &options,
    );
    assert!(r.truncated);
    let content = r.items[0]["content"].as_array().unwrap();
    assert_eq!(content[0]["text"], "éé");
    assert_eq!(
        content[1]["text"]
            .as_str()
            .unwrap()
            .split('.')
            .next()
            .unwrap(),
        "[… output cut: showed 4 of 6 bytes"
    );

    // A budget smaller than the first character shows nothing but the marker.
    let r = results::tool_result(
        Provider::Anthropic,
        "c",
        "t",
        &CallToolResult::text("😀"),
        &ResultOptions::default().budget(3),
    );
    let content = r.items[0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert!(
        content[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[… output cut: showed 0 of 4 bytes.")
    );
}

#[test]
fn budget_spans_blocks() {
    let options = ResultOptions::default().budget(100);
    let r = results::tool_result(
        Provider::OpenAiResponses,
        "c",
        "t",
        &result(vec![
            ContentBlock::text("a".repeat(60)),
            ContentBlock::text("b".repeat(60)),
            ContentBlock::text("c".repeat(60)),
        ]),
        &options,
    );
    assert!(r.truncated);
    let output = r.items[0]["output"].as_str().unwrap();
    let expected = format!(
        "{}\n\n{}\n\n[… output cut: showed 100 of 180 bytes.",
        "a".repeat(60),
        "b".repeat(40)
    );
    assert!(output.starts_with(&expected), "{output}");
    assert!(!output.contains("cc"));
}

#[test]
fn oversized_text_is_cut_and_saved_whole() {
    let line = "lorem ipsum dolor sit amet, ünïcödé ✓\n";
    let full: String = line.repeat(300_000 / line.len() + 1);
    assert!(full.len() > 300_000);
    let scratch = with_store("oversized");
    let options = &scratch.options;
    for provider in Provider::ALL {
        let r = results::tool_result(
            provider,
            "c",
            "big_tool",
            &CallToolResult::text(&*full),
            options,
        );
        assert!(r.truncated, "{provider}");
        assert_eq!(r.saved.len(), 1, "{provider}");
        let saved = &r.saved[0];
        assert_eq!(
            saved.parent().unwrap(),
            options.media.as_ref().unwrap().dir()
        );
        assert!(
            saved.to_str().unwrap().ends_with("-big_tool-output.txt"),
            "{saved:?}"
        );
        assert_eq!(std::fs::read_to_string(saved).unwrap(), full);
        let text = match provider {
            Provider::OpenAiResponses => r.items[0]["output"].as_str().unwrap().to_owned(),
            Provider::OpenAiChat => chat_text(&r).to_owned(),
            Provider::Anthropic => r.items[0]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["text"].as_str().unwrap())
                .collect::<Vec<_>>()
                .join("\n\n"),
            _ => r.items[0]["functionResponse"]["response"]["output"]
                .as_str()
                .unwrap()
                .to_owned(),
        };
        let (shown, marker) = text.split_once("\n\n[… output cut: ").unwrap();
        assert!(
            shown.len() <= results::DEFAULT_BUDGET && shown.len() > results::DEFAULT_BUDGET - 4
        );
        assert!(full.starts_with(shown));
        assert_eq!(
            marker,
            format!(
                "showed {} of {} bytes. The full output was saved to {}; ask for less (a narrower \
                 query, a page, a limit) to see the rest.]",
                shown.len(),
                full.len(),
                saved.display()
            )
        );
    }
}

#[test]
fn saved_files_hold_the_decoded_bytes() {
    let scratch = with_store("saved_bytes");
    let options = &scratch.options;
    let dir = options.media.as_ref().unwrap().dir().to_owned();
    let r = results::tool_result(
        Provider::Anthropic,
        "c",
        "t",
        &result(vec![
            blob("file:///tmp/../../etc/archive.zip", "application/zip", ZIP),
            audio("audio/wav", WAV),
        ]),
        options,
    );
    assert_eq!(r.saved.len(), 2);
    assert_eq!(std::fs::read(&r.saved[0]).unwrap(), ZIP);
    assert_eq!(std::fs::read(&r.saved[1]).unwrap(), WAV);
    for path in &r.saved {
        assert_eq!(
            path.parent().unwrap(),
            dir,
            "{path:?} escaped the session folder"
        );
    }
    assert_eq!(r.saved[0].file_name().unwrap(), "1-archive.zip");
    assert_eq!(r.saved[1].file_name().unwrap(), "2-t-audio.wav");
    let text = r.items[0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        format!(
            "[resource file:///tmp/../../etc/archive.zip (application/zip, {} bytes) saved to {}]",
            ZIP.len(),
            r.saved[0].display()
        )
    );
}

#[test]
fn chat_follow_up_carries_the_turns_images() {
    let options = ResultOptions::default().chat_images(ChatImages::FollowUp);
    let r = results::tool_result(
        Provider::OpenAiChat,
        "call_7",
        "shot",
        &result(vec![
            image("image/png", PNG),
            image("image/jpeg", b"\xff\xd8\xff\xe0jfif"),
        ]),
        &options,
    );
    assert_eq!(r.follow_up.len(), 1);
    let message = &r.follow_up[0];
    assert_eq!(message["role"], "user");
    let content = message["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(content[0]["text"], "Images from tool shot (call call_7):");
    assert_eq!(
        content[1]["image_url"]["url"],
        format!("data:image/png;base64,{}", b64(PNG))
    );
    assert_eq!(
        content[2]["image_url"]["url"]
            .as_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap(),
        "data:image/jpeg"
    );
    // The tool message says where the images went, and nothing is saved.
    assert!(chat_text(&r).contains("attached in the next user message"));
    assert!(r.saved.is_empty());

    // Omit (the default) sends no follow-up.
    let r = results::tool_result(
        Provider::OpenAiChat,
        "call_7",
        "shot",
        &result(vec![image("image/png", PNG)]),
        &ResultOptions::default(),
    );
    assert!(r.follow_up.is_empty());
}

#[test]
fn bad_data_never_panics() {
    let garbage = |mime: &str| {
        ContentBlock::Image(ImageContent {
            data: "%%%".into(),
            mime_type: mime.into(),
            ..ImageContent::default()
        })
    };
    let r = result(vec![
        garbage("image/png"),
        garbage(""),
        ContentBlock::Audio(AudioContent {
            data: "@@".into(),
            mime_type: "audio/wav".into(),
            ..AudioContent::default()
        }),
        embedded(ResourceContents::Blob(BlobResourceContents {
            uri: "".into(),
            mime_type: None,
            blob: "=".into(),
            ..BlobResourceContents::default()
        })),
        // Valid base64, but not an image.
        image("image/png", b"hello"),
        image("image/x-made-up", b""),
    ]);
    for provider in Provider::ALL {
        for chat_images in [ChatImages::Omit, ChatImages::FollowUp] {
            let options = ResultOptions::default().chat_images(chat_images);
            let r = results::tool_result(provider, "", "", &r, &options);
            let text = r.items[0].to_string();
            assert!(text.contains("not valid base64"), "{provider}: {text}");
            assert!(
                text.contains("its bytes are not image/png"),
                "{provider}: {text}"
            );
            assert!(r.follow_up.is_empty());
        }
    }
}

#[test]
fn oversized_media_are_saved_not_inlined() {
    let scratch = with_store("max_inline");
    let options = scratch.options.clone().max_inline_media(4);
    let r = results::tool_result(
        Provider::Anthropic,
        "c",
        "t",
        &result(vec![image("image/png", PNG)]),
        &options,
    );
    assert_eq!(r.saved.len(), 1);
    assert_eq!(std::fs::read(&r.saved[0]).unwrap(), PNG);
    let content = r.items[0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert_eq!(content[0]["type"], "text");

    let r = results::tool_result(
        Provider::Anthropic,
        "c",
        "t",
        &result(vec![image("image/png", PNG)]),
        &ResultOptions::default().max_inline_media(4),
    );
    assert_eq!(
        r.items[0]["content"][0]["text"],
        format!(
            "[image (image/png, {} bytes) not shown: larger than the 4 byte inline limit]",
            PNG.len()
        )
    );
}

#[test]
fn images_go_by_their_bytes_and_animated_gifs_skip_openai() {
    // A PNG labelled JPEG is sent as PNG (Anthropic rejects a wrong label).
    let r = results::tool_result(
        Provider::Anthropic,
        "c",
        "t",
        &result(vec![image("image/jpeg", PNG)]),
        &ResultOptions::default(),
    );
    assert_eq!(
        r.items[0]["content"][0]["source"]["media_type"],
        "image/png"
    );

    let gif = b"GIF89a\x01\0\x01\0\x21\xff\x0bNETSCAPE2.0\x03\x01\0\0\0;";
    let block = image("image/gif", gif);
    let r = results::tool_result(
        Provider::OpenAiResponses,
        "c",
        "t",
        &result(vec![block.clone()]),
        &ResultOptions::default(),
    );
    assert!(
        r.items[0]["output"]
            .as_str()
            .unwrap()
            .starts_with("[image (image/gif, ")
    );
    let r = results::tool_result(
        Provider::Anthropic,
        "c",
        "t",
        &result(vec![block]),
        &ResultOptions::default(),
    );
    assert_eq!(r.items[0]["content"][0]["type"], "image");
}

#[test]
fn user_only_blocks_are_kept_unless_asked() {
    let for_user = ContentBlock::Text(switchboard_types::TextContent {
        text: "shown to the user".into(),
        annotations: Some(Annotations {
            audience: Some(vec![Role::User]),
            ..Annotations::default()
        }),
        ..switchboard_types::TextContent::default()
    });
    let r = result(vec![for_user, ContentBlock::text("for everyone")]);
    let kept = results::tool_result(
        Provider::OpenAiChat,
        "c",
        "t",
        &r,
        &ResultOptions::default(),
    );
    assert_eq!(chat_text(&kept), "shown to the user\n\nfor everyone");
    let skipped = results::tool_result(
        Provider::OpenAiChat,
        "c",
        "t",
        &r,
        &ResultOptions::default().skip_user_only(true),
    );
    assert_eq!(chat_text(&skipped), "for everyone");
}

#[test]
fn gemini_id_only_when_given() {
    let r = results::tool_result(
        Provider::Gemini,
        "",
        "t",
        &CallToolResult::text("x"),
        &ResultOptions::default(),
    );
    assert_eq!(
        r.items[0],
        json!({"functionResponse": {"name": "t", "response": {"output": "x"}}})
    );
}

#[test]
fn structured_content_larger_than_the_budget_is_text_for_gemini() {
    let value = json!({"rows": ["x".repeat(50)]});
    let r = CallToolResult {
        structured_content: Some(value.clone()),
        ..CallToolResult::default()
    };
    let options = ResultOptions::default().budget(30);
    let out = results::tool_result(Provider::Gemini, "c", "t", &r, &options);
    assert!(out.truncated);
    let output = out.items[0]["functionResponse"]["response"]["output"]
        .as_str()
        .unwrap();
    assert!(output.starts_with(&value.to_string()[..30]), "{output}");
}

#[test]
fn session_folders_and_files_are_unique() {
    let base = temp_base("unique");
    let a = MediaStore::session(&base).unwrap();
    let b = MediaStore::session(&base).unwrap();
    assert_ne!(a.dir(), b.dir());
    assert_eq!(a.dir().parent().unwrap(), base);
    assert!(
        a.dir()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("session-")
    );
    let p1 = a.save(b"one", Some("text/plain"), "../../../x").unwrap();
    let p2 = a.save(b"two", Some("text/plain"), "../../../x").unwrap();
    assert_ne!(p1, p2);
    assert_eq!(p1.parent().unwrap(), a.dir());
    assert_eq!(p1.file_name().unwrap(), "1-x.txt");
    assert_eq!(p2.file_name().unwrap(), "2-x.txt");
    assert_eq!(std::fs::read(&p1).unwrap(), b"one");
    assert_eq!(std::fs::read(&p2).unwrap(), b"two");
    // A file already there (another writer) is never overwritten.
    std::fs::write(a.dir().join("3-y.bin"), b"theirs").unwrap();
    let p3 = a.save(b"mine", None, "y").unwrap();
    assert_eq!(p3.file_name().unwrap(), "4-y.bin");
    assert_eq!(std::fs::read(a.dir().join("3-y.bin")).unwrap(), b"theirs");
    let t = MediaStore::temp().unwrap();
    let user_folder = t.dir().parent().unwrap();
    assert_eq!(user_folder.parent().unwrap(), std::env::temp_dir());
    assert!(
        user_folder
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("switchboard-media")
    );
    let _ = std::fs::remove_dir(t.dir());
    let _ = std::fs::remove_dir_all(&base);
}

proptest::proptest! {
    /// Whatever the text and budget, what is shown is a prefix of the text,
    /// within the budget, short of it by less than one character.
    #[test]
    fn cut_is_a_prefix_within_budget(text in "\\PC{0,120}", budget in 0usize..200) {
        let options = ResultOptions::default().budget(budget);
        let r = results::tool_result(
            Provider::OpenAiChat,
            "c",
            "t",
            &CallToolResult::text(text.clone()),
            &options,
        );
        let out = chat_text(&r);
        if text.len() <= budget {
            proptest::prop_assert!(!r.truncated);
            if !text.is_empty() {
                proptest::prop_assert_eq!(out, text.as_str());
            }
        } else {
            proptest::prop_assert!(r.truncated);
            let at = out.rfind("[… output cut: showed ").unwrap();
            let shown = out[..at].strip_suffix("\n\n").unwrap_or(&out[..at]);
            proptest::prop_assert!(text.starts_with(shown));
            proptest::prop_assert!(shown.len() <= budget);
            proptest::prop_assert!(shown.len() + 4 > budget);
            let expected = format!("showed {} of {} bytes.", shown.len(), text.len());
            proptest::prop_assert!(out[at..].contains(&expected));
        }
    }
}
