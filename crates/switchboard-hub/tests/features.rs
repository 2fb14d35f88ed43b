//! Resources, resource templates, prompts and completion across servers
//! (`hub/features.rs`), against real processes: the test server of
//! `switchboard-testkit` in each era, run by this very binary (`features
//! __testserver …`, see `support/mod.rs`), and small `sh` servers that
//! declare fewer capabilities than it does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use switchboard::types::{
    CompleteArgument, CompleteRequestParams, ContentBlock, Era, PromptReference, Reference,
    ResourceContents,
};
use switchboard_hub::hub::Hub;
use switchboard_hub::{
    Dialect, HubError, Origin, Scope, ServerConfig, ServerState, TransportConfig,
};

mod support;

use macro_rules_attribute::apply;
use support::process_test;

fn main() {
    support::main();
}

fn origin() -> Origin {
    Origin {
        file: PathBuf::from("/tests/features.toml"),
        dialect: Dialect::Switchboard,
        scope: Scope::Explicit,
    }
}

fn stdio(name: &str, command: String, args: Vec<String>) -> ServerConfig {
    ServerConfig::new(
        name,
        TransportConfig::Stdio {
            command,
            args,
            env: BTreeMap::new(),
            cwd: None,
        },
        origin(),
    )
}

/// The test server in `era`, recording what it receives in `record`.
fn testserver(name: &str, era: &str, record: &Path) -> ServerConfig {
    let exe = std::env::current_exe().expect("current exe");
    let args = ["__testserver", "--era", era, "--name", name, "--record"]
        .map(String::from)
        .into_iter()
        .chain([record.to_string_lossy().into_owned()])
        .collect();
    stdio(name, exe.to_string_lossy().into_owned(), args)
}

/// A session-era server in `sh` that declares `capabilities`, lists no
/// tools and answers every other request with "boom" (-32603), so a
/// declared feature fails when used.
fn sh_server(name: &str, capabilities: &str) -> ServerConfig {
    let script = format!(
        r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\)[,}}].*/\1/p')
  [ -n "$id" ] || continue
  case "$line" in
    *'"method":"initialize"'*) printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-06-18","capabilities":{capabilities},"serverInfo":{{"name":"{name}","version":"0"}}}}}}\n' "$id" ;;
    *'"method":"tools/list"'*) printf '{{"jsonrpc":"2.0","id":%s,"result":{{"tools":[]}}}}\n' "$id" ;;
    *'"method":"server/discover"'*) printf '{{"jsonrpc":"2.0","id":%s,"error":{{"code":-32601,"message":"Method not found"}}}}\n' "$id" ;;
    *) printf '{{"jsonrpc":"2.0","id":%s,"error":{{"code":-32603,"message":"boom"}}}}\n' "$id" ;;
  esac
done"#
    );
    stdio(name, "sh".into(), vec!["-c".into(), script])
}

/// A fresh, empty directory for one test's record files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("switchboard-hub-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// How many requests of `method` the server recorded (its record file is
/// written before it answers, so an answered request is in it).
fn recorded(record: &Path, method: &str) -> usize {
    let text = std::fs::read_to_string(record).unwrap_or_default();
    let needle = format!("\"method\":\"{method}\"");
    text.lines().filter(|l| l.contains(&needle)).count()
}

fn texts(contents: &[ResourceContents]) -> Vec<String> {
    contents
        .iter()
        .filter_map(|c| match c {
            ResourceContents::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

fn code(error: &HubError) -> Option<i64> {
    match error {
        HubError::Request { source, .. } => source.code(),
        _ => None,
    }
}

/// Both eras of the test server, a server with tools only (`bare`), one
/// whose declared resources fail (`broken`), and a disabled one.
fn hub(dir: &Path) -> Hub {
    let mut off = testserver("off", "modern", &dir.join("off.jsonl"));
    off.enabled = false;
    Hub::builder()
        .servers([
            testserver("modern", "modern", &dir.join("modern.jsonl")),
            sh_server("bare", r#"{"tools":{}}"#),
            testserver("legacy", "legacy", &dir.join("legacy.jsonl")),
            sh_server("broken", r#"{"tools":{},"resources":{}}"#),
            off,
        ])
        .persist(false)
        .build()
        .unwrap()
}

#[apply(process_test!)]
async fn lists_resources_templates_and_prompts_across_servers_of_both_eras() {
    let dir = scratch("features-lists");
    let hub = hub(&dir);
    let report = hub.start().await.unwrap();
    assert_eq!(report.ready, ["modern", "bare", "legacy", "broken"]);
    assert_eq!(hub.client("modern").unwrap().era(), Era::Modern);
    assert_eq!(hub.client("legacy").unwrap().era(), Era::Legacy);

    let resources = hub.resources().await;
    let got: Vec<_> = resources
        .items
        .iter()
        .map(|r| (r.server.as_str(), r.resource.uri.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("modern", "test://static/hello"),
            ("modern", "test://static/blob"),
            ("legacy", "test://static/hello"),
            ("legacy", "test://static/blob"),
        ]
    );
    // `broken` declares resources and fails to list them: reported, with
    // the server's answer, beside everyone else's items.
    assert_eq!(resources.failed.len(), 1, "{:?}", resources.failed);
    let failure = &resources.failed[0];
    assert_eq!(failure.server(), Some("broken"));
    assert_eq!(code(failure), Some(-32603), "{failure:?}");
    assert!(failure.to_string().contains("resources/list"), "{failure}");

    let templates = hub.resource_templates().await;
    let got: Vec<_> = templates
        .items
        .iter()
        .map(|t| (t.server.as_str(), t.template.uri_template.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("modern", "test://items/{id}"),
            ("legacy", "test://items/{id}")
        ]
    );
    assert_eq!(templates.failed.len(), 1, "{:?}", templates.failed);
    assert_eq!(templates.failed[0].server(), Some("broken"));

    // Neither `bare` nor `broken` declares prompts: skipped, not failed.
    let prompts = hub.prompts().await;
    assert!(prompts.failed.is_empty(), "{:?}", prompts.failed);
    let got: Vec<_> = prompts
        .items
        .iter()
        .map(|p| (p.name.as_str(), p.server.as_str(), p.prompt.name.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("modern__greeting", "modern", "greeting"),
            ("modern__simple", "modern", "simple"),
            ("legacy__greeting", "legacy", "greeting"),
            ("legacy__simple", "legacy", "simple"),
        ]
    );
    // Each test server was asked once per listing, the skipped ones never.
    for server in ["modern", "legacy"] {
        let record = dir.join(format!("{server}.jsonl"));
        assert_eq!(recorded(&record, "resources/list"), 1, "{server}");
        assert_eq!(recorded(&record, "resources/templates/list"), 1, "{server}");
        assert_eq!(recorded(&record, "prompts/list"), 1, "{server}");
    }
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[apply(process_test!)]
async fn reads_prompts_and_completions_go_to_the_named_server() {
    let dir = scratch("features-routed");
    let hub = hub(&dir);
    hub.start().await.unwrap();
    let (modern, legacy) = (dir.join("modern.jsonl"), dir.join("legacy.jsonl"));

    let read = hub
        .read_resource("legacy", "test://items/42")
        .await
        .unwrap();
    assert_eq!(texts(&read.contents), ["item 42"]);
    assert_eq!(recorded(&legacy, "resources/read"), 1);
    assert_eq!(recorded(&modern, "resources/read"), 0);
    // A missing resource is each era's own error code: the answer came
    // from the server named.
    let missing = hub
        .read_resource("legacy", "test://nope")
        .await
        .unwrap_err();
    assert_eq!(code(&missing), Some(-32002), "{missing:?}");
    assert_eq!(missing.server(), Some("legacy"));
    let missing = hub
        .read_resource("modern", "test://nope")
        .await
        .unwrap_err();
    assert_eq!(code(&missing), Some(-32602), "{missing:?}");
    assert!(!missing.is_retryable());

    let arguments = BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
    let prompt = hub
        .get_prompt("modern", "greeting", Some(arguments))
        .await
        .unwrap();
    let said: Vec<_> = prompt
        .messages
        .iter()
        .filter_map(|m| match &m.content {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said, ["Hello, Ada!"]);
    assert_eq!(recorded(&modern, "prompts/get"), 1);
    assert_eq!(recorded(&legacy, "prompts/get"), 0);

    let params = CompleteRequestParams {
        r#ref: Reference::Prompt(PromptReference {
            name: "greeting".into(),
            ..Default::default()
        }),
        argument: CompleteArgument {
            name: "name".into(),
            value: "b".into(),
        },
        context: None,
        meta: None,
    };
    let completion = hub.complete("legacy", &params).await.unwrap();
    assert_eq!(completion.completion.values, ["bob"]);
    assert_eq!(recorded(&legacy, "completion/complete"), 1);
    assert_eq!(recorded(&modern, "completion/complete"), 0);

    // `broken` declares resources: the read is sent, and its error is the
    // server's.
    let error = hub.read_resource("broken", "test://x").await.unwrap_err();
    assert_eq!(code(&error), Some(-32603), "{error:?}");
    assert!(error.to_string().contains("server `broken`"), "{error}");
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[apply(process_test!)]
async fn unknown_unready_and_incapable_servers_are_refused_with_advice() {
    let dir = scratch("features-refused");
    let hub = hub(&dir);
    hub.start().await.unwrap();

    let error = hub
        .read_resource("nope", "test://static/hello")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, HubError::UnknownServer { server } if server == "nope"),
        "{error:?}"
    );
    assert!(matches!(
        hub.client("nope"),
        Err(HubError::UnknownServer { .. })
    ));

    let error = hub.get_prompt("off", "simple", None).await.unwrap_err();
    assert!(
        matches!(&error, HubError::Unavailable { server, state: ServerState::Disabled } if server == "off"),
        "{error:?}"
    );
    assert!(error.to_string().contains("enable it"), "{error}");
    assert!(!error.is_retryable());
    assert!(matches!(
        hub.client("off"),
        Err(HubError::Unavailable {
            state: ServerState::Disabled,
            ..
        })
    ));

    // `bare` declares neither prompts nor completions: refused before
    // anything is sent, naming the server and the capability.
    let error = hub.get_prompt("bare", "simple", None).await.unwrap_err();
    assert!(
        matches!(&error, HubError::CapabilityMissing { server, capability: "prompts", method: "prompts/get" } if server == "bare"),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("server `bare`") && message.contains("`prompts` capability"),
        "{message}"
    );
    let params = CompleteRequestParams {
        r#ref: Reference::Prompt(PromptReference {
            name: "greeting".into(),
            ..Default::default()
        }),
        argument: CompleteArgument {
            name: "name".into(),
            value: String::new(),
        },
        context: None,
        meta: None,
    };
    let error = hub.complete("bare", &params).await.unwrap_err();
    assert!(
        matches!(
            &error,
            HubError::CapabilityMissing {
                capability: "completions",
                ..
            }
        ),
        "{error:?}"
    );
    let error = hub
        .read_resource("bare", "test://static/hello")
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            HubError::CapabilityMissing {
                capability: "resources",
                ..
            }
        ),
        "{error:?}"
    );
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The test server in `era` offering skills; `tamper` serves one wrong.
fn skills_server(name: &str, era: &str, record: &Path, tamper: Option<&str>) -> ServerConfig {
    let mut config = testserver(name, era, record);
    if let TransportConfig::Stdio { args, .. } = &mut config.transport {
        match tamper {
            Some(tamper) => args.extend(["--skills-tamper".into(), tamper.into()]),
            None => args.push("--skills".into()),
        }
    }
    config
}

#[apply(process_test!)]
async fn skills_are_listed_across_servers_and_loaded_verified_from_theirs() {
    let dir = scratch("features-skills");
    let hub = Hub::builder()
        .servers([
            skills_server("modern", "modern", &dir.join("modern.jsonl"), None),
            testserver("plain", "legacy", &dir.join("plain.jsonl")),
            skills_server("legacy", "legacy", &dir.join("legacy.jsonl"), None),
            skills_server("evil", "legacy", &dir.join("evil.jsonl"), Some("digest")),
        ])
        .persist(false)
        .build()
        .unwrap();
    hub.start().await.unwrap();

    // `plain` does not declare the extension: skipped, not asked.
    let skills = hub.skills().await;
    assert!(skills.failed.is_empty(), "{:?}", skills.failed);
    let got: Vec<_> = skills
        .items
        .iter()
        .map(|s| (s.name.as_str(), s.server.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("modern__pdf-processing", "modern"),
            ("modern__code-review", "modern"),
            ("legacy__pdf-processing", "legacy"),
            ("legacy__code-review", "legacy"),
            ("evil__pdf-processing", "evil"),
            ("evil__code-review", "evil"),
        ]
    );
    assert_eq!(recorded(&dir.join("plain.jsonl"), "skills/list"), 0);
    // Listing read no file anywhere.
    for server in ["modern", "legacy", "evil"] {
        assert_eq!(
            recorded(&dir.join(format!("{server}.jsonl")), "resources/read"),
            0
        );
    }

    let pdf = &skills.items[2];
    let skill = hub.load_skill("legacy", &pdf.entry).await.unwrap();
    assert!(skill.instructions().contains("references/FORMS.md"));
    let forms = hub
        .read_skill_file(
            "legacy",
            &skill,
            "skill://pdf-processing/references/FORMS.md",
        )
        .await
        .unwrap();
    assert!(forms.text().unwrap().starts_with("# Forms"));
    assert_eq!(recorded(&dir.join("legacy.jsonl"), "resources/read"), 2);
    assert_eq!(recorded(&dir.join("modern.jsonl"), "resources/read"), 0);

    // A skill served other than as listed: refused, the client's error the source.
    let evil = &skills.items[4];
    let error = hub.load_skill("evil", &evil.entry).await.unwrap_err();
    assert_eq!(error.server(), Some("evil"));
    match &error {
        HubError::Request { source, .. } => assert!(
            matches!(**source, switchboard::Error::Skill { .. }),
            "{source}"
        ),
        other => panic!("{other}"),
    }
    let error = hub.load_skill("plain", &evil.entry).await.unwrap_err();
    assert!(
        matches!(error, HubError::CapabilityMissing { .. }),
        "{error}"
    );
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
