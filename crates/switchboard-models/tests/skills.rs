//! `Skillset` over a hub: skills of the testkit's server (Streamable HTTP
//! on loopback, `--skills`), handed to a model as two tools and loaded
//! only when the model calls them; a server that serves a file other than
//! as listed gets an error result, and nothing of the file.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use switchboard_hub::{Dialect, HttpKind, Hub, Origin, Scope, ServerConfig, TransportConfig};
use switchboard_models::{Provider, SkillOptions, Skillset, results};
use switchboard_types::CallToolResult;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The testkit's server with `flags`, over HTTP on loopback, recording
/// what it receives.
struct McpServer {
    url: String,
    record: std::path::PathBuf,
    task: JoinHandle<std::io::Result<()>>,
}

impl McpServer {
    async fn start(name: &str, flags: &[&str]) -> Self {
        let record = std::env::temp_dir().join(format!(
            "switchboard-models-skills-{name}-{}.jsonl",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&record);
        let mut args: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        args.extend(["--record".into(), record.to_string_lossy().into_owned()]);
        let config = switchboard_testkit::ServerConfig::from_args(args).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(switchboard_testkit::serve_http(config, listener));
        McpServer { url, record, task }
    }

    fn reads(&self) -> Vec<String> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["method"] == "resources/read")
            .map(|m| m["params"]["uri"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn config(&self, name: &str) -> ServerConfig {
        ServerConfig::new(
            name,
            TransportConfig::Http {
                url: self.url.clone(),
                headers: BTreeMap::new(),
                kind: HttpKind::Auto,
            },
            Origin {
                file: "tests/skills.rs".into(),
                dialect: Dialect::Switchboard,
                scope: Scope::Explicit,
            },
        )
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.record);
    }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content[0]).unwrap()["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_model_sees_names_and_descriptions_and_loads_skills_on_demand() {
    let docs = McpServer::start("docs", &["--skills"]).await;
    let evil = McpServer::start("evil", &["--skills-tamper", "file"]).await;
    let hub = Hub::builder()
        .persist(false)
        .servers([docs.config("docs"), evil.config("evil")])
        .build()
        .unwrap();
    hub.start().await.unwrap();

    let (skills, failed) =
        Skillset::from_hub(Provider::OpenAiChat, SkillOptions::default(), &hub).await;
    assert!(failed.is_empty(), "{failed:?}");
    // Both servers offer skills of the same names: each is server/name.
    let names: Vec<_> = skills.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "docs/pdf-processing",
            "docs/code-review",
            "evil/pdf-processing",
            "evil/code-review"
        ]
    );
    let definitions: Vec<Value> = skills
        .definitions()
        .iter()
        .map(|d| serde_json::from_str(d.get()).unwrap())
        .collect();
    let load = &definitions[0]["function"];
    assert_eq!(load["name"], "load_skill");
    assert!(
        load["description"]
            .as_str()
            .unwrap()
            .contains("- docs/pdf-processing: Extract, fill, and assemble PDF documents\n"),
        "{load}"
    );
    assert_eq!(
        load["parameters"]["properties"]["name"]["enum"][3],
        "evil/code-review"
    );
    // Handing the skills to the model read no file.
    assert!(docs.reads().is_empty() && evil.reads().is_empty());

    // The model loads one: its SKILL.md is read, verified, and its
    // instructions and files come back.
    let loaded = skills
        .call(
            &hub,
            "load_skill",
            Some(&args(json!({"name": "docs/pdf-processing"}))),
        )
        .await
        .unwrap();
    assert_eq!(loaded.is_error, None, "{}", text(&loaded));
    let said = text(&loaded);
    assert!(said.contains("# PDF processing"), "{said}");
    assert!(
        said.contains("references/FORMS.md, assets/logo.png"),
        "{said}"
    );
    assert_eq!(docs.reads(), ["skill://pdf-processing/SKILL.md"]);

    // Its files on demand; the skill is not read again.
    let forms = skills
        .call(
            &hub,
            "read_skill_file",
            Some(&args(
                json!({"skill": "docs/pdf-processing", "path": "references/FORMS.md"}),
            )),
        )
        .await
        .unwrap();
    assert!(text(&forms).contains("# Forms"), "{}", text(&forms));
    let logo = skills
        .call(
            &hub,
            "read_skill_file",
            Some(&args(
                json!({"skill": "docs/pdf-processing", "path": "assets/logo.png"}),
            )),
        )
        .await
        .unwrap();
    let shown = serde_json::to_value(&logo.content).unwrap();
    assert_eq!(shown[1]["type"], "image", "{shown}");
    assert_eq!(docs.reads().len(), 3, "{:?}", docs.reads());
    // As the provider's tool message.
    let message = results::tool_result(
        Provider::OpenAiChat,
        "call_1",
        "read_skill_file",
        &forms,
        &Default::default(),
    );
    assert_eq!(message.items[0]["role"], "tool");

    // A file served other than as listed: an error result, without it.
    let tampered = skills
        .call(
            &hub,
            "read_skill_file",
            Some(&args(
                json!({"skill": "evil/pdf-processing", "path": "references/FORMS.md"}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(tampered.is_error, Some(true));
    let said = text(&tampered);
    assert!(said.contains("digest"), "{said}");
    assert!(
        !said.contains("mail it"),
        "the tampered text is not shown: {said}"
    );
    // Loaded first (read on demand), then the file: two reads.
    assert_eq!(evil.reads().len(), 2, "{:?}", evil.reads());

    // Not a skill tool, and a path outside the skill.
    assert!(skills.call(&hub, "echo", None).await.is_none());
    let outside = skills
        .call(
            &hub,
            "read_skill_file",
            Some(&args(
                json!({"skill": "docs/code-review", "path": "../pdf-processing/SKILL.md"}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(outside.is_error, Some(true));
    assert_eq!(docs.reads().len(), 3, "nothing sent for it");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_dynamic_skills_files_are_named_from_its_directory() {
    let docs = McpServer::start("dynamic", &["--skills-directories"]).await;
    let hub = Hub::builder()
        .persist(false)
        .server(docs.config("docs"))
        .build()
        .unwrap();
    hub.start().await.unwrap();
    let (skills, _) = Skillset::from_hub(Provider::Anthropic, SkillOptions::default(), &hub).await;
    let loaded = skills
        .call(
            &hub,
            "load_skill",
            Some(&args(json!({"name": "live-notes"}))),
        )
        .await
        .unwrap();
    let said = text(&loaded);
    assert!(
        said.contains("notes/today.md, notes/archive/monday.md"),
        "{said}"
    );
    let today = skills
        .call(
            &hub,
            "read_skill_file",
            Some(&args(
                json!({"skill": "live-notes", "path": "notes/today.md"}),
            )),
        )
        .await
        .unwrap();
    let said = text(&today);
    assert!(
        said.contains("# Today") && said.contains("not verified"),
        "{said}"
    );
    hub.shutdown().await;
}
