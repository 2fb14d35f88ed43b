//! `switchboard demo`: the bundled test server in three guises, showing era
//! detection, listing, a tool call, a resource read and a prompt, with timings.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::Client;
use switchboard::transport::stdio::StdioConfig;

use crate::failure::Failure;
use crate::lifecycle::Servers;
use crate::term::output::{describe_block, millis};

struct Scenario {
    title: &'static str,
    args: &'static [&'static str],
}

const SCENARIOS: [Scenario; 3] = [
    Scenario {
        title: "a server that speaks both eras, with skills",
        args: &["--era", "dual", "--skills"],
    },
    Scenario {
        title: "a session-era server (2025-11-25 and older)",
        args: &["--era", "legacy"],
    },
    Scenario {
        title: "an older server that exits when probed before `initialize`",
        args: &["--era", "legacy", "--fault", "exit-before-init"],
    },
];

/// Times one step and records it.
async fn step<T, F>(steps: &mut Vec<Value>, name: &str, future: F) -> Result<(T, Duration), Failure>
where
    F: std::future::Future<Output = switchboard::Result<T>>,
{
    let started = Instant::now();
    let value = future.await?;
    let elapsed = started.elapsed();
    steps.push(json!({ "step": name, "ms": elapsed.as_secs_f64() * 1000.0 }));
    Ok((value, elapsed))
}

pub(crate) async fn run(json_output: bool, servers: &Servers) -> Result<u8, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot find this program's path: {e}")))?;
    let say = |line: String| {
        if !json_output {
            println!("{line}");
        }
    };
    say("switchboard demo: the bundled test server, no setup needed.".to_owned());
    let mut report = Vec::new();
    for (n, scenario) in SCENARIOS.iter().enumerate() {
        say(String::new());
        say(format!("▸ {}. {}", n + 1, scenario.title));
        let config = StdioConfig::new(&exe)
            .arg("__testserver")
            .args(scenario.args.iter().copied());
        let mut steps = Vec::new();
        let (client, connect_time) = step(
            &mut steps,
            "connect",
            Client::builder()
                .name(format!("testserver {}", scenario.args.join(" ")))
                .connect(config),
        )
        .await?;
        servers.client(&client);
        let session = client.session().clone();
        let how = match (session.era, session.respawned) {
            (switchboard::types::Era::Modern, _) => "answered the server/discover probe",
            (_, false) => "declined server/discover, so switchboard fell back to initialize",
            (_, true) => {
                "exited on server/discover, so switchboard restarted it and ran initialize"
            }
        };
        say(format!(
            "  connected in {}: {} era, protocol {} ({how})",
            millis(connect_time),
            session.era,
            session.protocol_version
        ));

        let (tools, t) = step(&mut steps, "tools/list", client.list_tools()).await?;
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        say(format!(
            "  {} in {}: {}",
            crate::term::output::count(tools.len(), "tool"),
            millis(t),
            names.join(", ")
        ));
        let (resources, t) = step(&mut steps, "resources/list", client.list_resources()).await?;
        say(format!("  {} resources in {}", resources.len(), millis(t)));
        let (prompts, t) = step(&mut steps, "prompts/list", client.list_prompts()).await?;
        say(format!("  {} prompts in {}", prompts.len(), millis(t)));

        let arguments = json!({"a": 2, "b": 3}).as_object().cloned();
        let (result, t) = step(
            &mut steps,
            "tools/call add",
            client.call_tool("add", arguments),
        )
        .await?;
        let result = serde_json::to_value(&result).unwrap_or(Value::Null);
        let text: Vec<String> = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .map(describe_block)
            .collect();
        say(format!(
            "  tools/call add {{a: 2, b: 3}} → {:?}, structured {} in {}",
            text.join(" "),
            result.get("structuredContent").unwrap_or(&Value::Null),
            millis(t)
        ));

        let (read, t) = step(
            &mut steps,
            "resources/read",
            client.read_resource("test://static/hello"),
        )
        .await?;
        let read = serde_json::to_value(&read).unwrap_or(Value::Null);
        say(format!(
            "  resources/read test://static/hello → {:?} in {}",
            read["contents"][0]["text"].as_str().unwrap_or("?"),
            millis(t)
        ));

        let arguments = BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
        let (prompt, t) = step(
            &mut steps,
            "prompts/get",
            client.get_prompt("greeting", Some(arguments)),
        )
        .await?;
        let prompt = serde_json::to_value(&prompt).unwrap_or(Value::Null);
        say(format!(
            "  prompts/get greeting {{name: Ada}} → {} in {}",
            describe_block(&prompt["messages"][0]["content"]),
            millis(t)
        ));

        // The skills extension: listed, then one loaded and verified
        // against the listing (size, SHA-256, frontmatter).
        let mut skills = Vec::new();
        if client.offers_skills() {
            let (entries, t) = step(&mut steps, "skills/list", client.list_skills()).await?;
            skills = entries
                .iter()
                .filter_map(|e| e.name().map(str::to_owned))
                .collect();
            say(format!(
                "  {} skills in {}: {}",
                entries.len(),
                millis(t),
                skills.join(", ")
            ));
            if let Some(entry) = entries.first() {
                let (skill, t) = step(&mut steps, "load skill", client.load_skill(entry)).await?;
                say(format!(
                    "  loaded skill {} in {}: SKILL.md matches its listing, {} more files to read on demand",
                    skill.name(),
                    millis(t),
                    skill.files().len()
                ));
            }
        }

        client.close().await;
        report.push(json!({
            "scenario": scenario.title,
            "serverArgs": scenario.args,
            "era": session.era,
            "protocolVersion": session.protocol_version,
            "respawned": session.respawned,
            "serverInfo": session.server_info,
            "tools": names,
            "resources": resources.len(),
            "prompts": prompts.len(),
            "skills": skills,
            "toolResult": result,
            "steps": steps,
        }));
    }
    if json_output {
        crate::term::output::print_json(&json!({ "demo": report }));
    } else {
        println!();
        println!(
            "Try it on your own server: switchboard tools -- npx -y @modelcontextprotocol/server-everything"
        );
    }
    Ok(0)
}
