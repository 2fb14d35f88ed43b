//! `switchboard-conformance <server-url>`: the client the official MCP
//! conformance suite (`npx @modelcontextprotocol/conformance client`) runs.
//!
//! It reads the scenario from `MCP_CONFORMANCE_SCENARIO` and extra input from
//! `MCP_CONFORMANCE_CONTEXT`, and does what a user of the library would do
//! for that scenario — through the public API only, with default settings,
//! so the suite judges the library, not this program.
//!
//! It installs a handler for everything a server may ask, so it declares
//! `elicitation`, `sampling` and `roots`: forms are accepted with the
//! defaults the server supplied (SEP-1034), sampling echoes the last user
//! text, and the roots are one fixed directory.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard::handlers::BoxFuture;
use switchboard::transport::http::HttpConfig;
use switchboard::types::elicitation::ElicitResult;
use switchboard::types::roots::Root;
use switchboard::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use switchboard::types::{ContentBlock, Role};
mod auth;
mod auth_ext;

use switchboard::{
    Client, ElicitationHandler, Error, FormRequest, HandlerContext, HandlerError, Roots,
    SamplingHandler,
};

fn main() -> ExitCode {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let Some(url) = std::env::args().nth(1).filter(|a| !a.starts_with('-')) else {
        eprintln!("usage: switchboard-conformance <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(&url, &scenario, &context)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("switchboard-conformance: {}", chain(&error));
            ExitCode::FAILURE
        }
    }
}

fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

async fn run(url: &str, scenario: &str, context: &Value) -> Result<(), Error> {
    let client = Client::builder()
        .client_info(switchboard::types::Implementation::new(
            "switchboard-conformance",
            env!("CARGO_PKG_VERSION"),
        ))
        .request_timeout(Duration::from_secs(20))
        .elicitation(AcceptDefaults)
        .sampling(EchoSampler)
        .roots(Roots::new(vec![Root {
            uri: "file:///tmp/switchboard-conformance".into(),
            name: Some("conformance".into()),
            ..Default::default()
        }]))
        .connect(auth::configure(HttpConfig::new(url), url, scenario, context).await?)
        .await?;
    let caps = client.capabilities().clone();
    let outcome = if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
        // The scenario says exactly which calls to make.
        client.list_tools().await?;
        for call in calls {
            let name = call["name"].as_str().unwrap_or_default();
            let arguments = call.get("arguments").and_then(Value::as_object).cloned();
            client.call_tool(name, arguments).await?;
        }
        Ok(())
    } else {
        match scenario {
            "initialize" => Ok(()),
            // Echo the focal tool's inputSchema, as received, through the
            // tool that takes a `schema` argument: shows what survived parsing.
            "json-schema-2020-12-preservation" => {
                let tools = client.list_tools().await?;
                let takes_schema = |t: &&switchboard::types::Tool| {
                    t.input_schema.to_object().is_ok_and(|schema| {
                        schema
                            .get("properties")
                            .is_some_and(|p| p.get("schema").is_some())
                    })
                };
                match (
                    tools.iter().find(takes_schema),
                    tools.iter().find(|t| !takes_schema(t)),
                ) {
                    (Some(echo), Some(focal)) => {
                        let arguments = json!({"schema": focal.input_schema});
                        client
                            .call_tool(&echo.name, arguments.as_object().cloned())
                            .await
                            .map(drop)
                    }
                    _ => Ok(()),
                }
            }
            "tools_call" => {
                client.list_tools().await?;
                client
                    .call_tool("add_numbers", json!({"a": 5, "b": 3}).as_object().cloned())
                    .await
                    .map(drop)
            }
            // The skills extension: a host lists the skills when it
            // connects (and shows the model their names and descriptions)
            // and reads nothing until one is used.
            "sep-2640-client-no-prefetch" => client.list_skills().await.map(drop),
            // The model picked a skill: load it, then read its files.
            s if s.starts_with("sep-2640-client-verify-") => use_skills(&client).await,
            // Every other scenario: use what the server offers, as an
            // application would — every tool, resource and prompt once.
            _ => {
                exercise(
                    &client,
                    caps.tools.is_some(),
                    caps.resources.is_some(),
                    caps.prompts.is_some(),
                )
                .await
            }
        }
    };
    client.close().await;
    outcome
}

/// A user who accepts every form as the server pre-filled it: the answer
/// is exactly the fields' defaults (SEP-1034), nothing made up.
#[derive(Debug)]
struct AcceptDefaults;

impl ElicitationHandler for AcceptDefaults {
    fn elicit_form(
        &self,
        _context: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        Box::pin(async move { Ok(ElicitResult::accept(Some(request.defaults))) })
    }
}

/// A stand-in model: answers with the last user text, so a scenario that
/// samples gets a well-formed reply.
#[derive(Debug)]
struct EchoSampler;

impl SamplingHandler for EchoSampler {
    fn create_message(
        &self,
        _context: HandlerContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> {
        let text = params
            .messages
            .iter()
            .rev()
            .filter(|m| m.role == Role::User)
            .flat_map(|m| m.content.blocks())
            .find_map(|b| b.as_text().map(str::to_owned))
            .unwrap_or_default();
        Box::pin(async move {
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: ContentBlock::text(text).into(),
                model: "switchboard-conformance-echo".into(),
                stop_reason: Some("endTurn".into()),
                meta: None,
                extra: Default::default(),
            })
        })
    }
}

async fn exercise(
    client: &Client,
    tools: bool,
    resources: bool,
    prompts: bool,
) -> Result<(), Error> {
    if tools {
        for tool in client.list_tools().await? {
            let schema = Value::Object(tool.input_schema.to_object().unwrap_or_default());
            report(
                client
                    .call_tool(&tool.name, Some(sample_arguments(&schema)))
                    .await,
            )?;
        }
    }
    if resources {
        for resource in client.list_resources().await? {
            report(client.read_resource(&resource.uri).await)?;
        }
    }
    if prompts {
        for prompt in client.list_prompts().await? {
            let arguments: BTreeMap<String, String> = prompt
                .arguments
                .iter()
                .flatten()
                .filter(|a| a.required == Some(true))
                .map(|a| (a.name.clone(), "test".to_owned()))
                .collect();
            report(client.get_prompt(&prompt.name, Some(arguments)).await)?;
        }
    }
    Ok(())
}

/// Loads every skill and reads each file of those that load; a skill
/// refused (its files do not match the listing) is reported and skipped,
/// as a host would.
async fn use_skills(client: &Client) -> Result<(), Error> {
    for entry in client.list_skills().await? {
        let skill = match client.load_skill(&entry).await {
            Ok(skill) => skill,
            Err(error @ Error::Skill { .. }) => {
                eprintln!("switchboard-conformance: {error}");
                continue;
            }
            Err(error) => return Err(error),
        };
        for file in skill.files() {
            match client.read_skill_file(&skill, &file.uri).await {
                Ok(_) => {}
                Err(error @ Error::Skill { .. }) => eprintln!("switchboard-conformance: {error}"),
                Err(error) => report(Err::<(), _>(error))?,
            }
        }
    }
    Ok(())
}

/// A server's JSON-RPC error for one call is reported and the run goes on,
/// as an application would; anything else ends it.
fn report<T>(outcome: Result<T, Error>) -> Result<(), Error> {
    match outcome {
        Ok(_) => Ok(()),
        Err(error) if error.is_server_error() => {
            eprintln!("switchboard-conformance: {error}");
            Ok(())
        }
        Err(error) => Err(error),
    }
}

/// Arguments for every required property, of the declared type.
fn sample_arguments(schema: &Value) -> Map<String, Value> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut arguments = Map::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties
            .iter()
            .filter(|(n, _)| required.contains(&n.as_str()))
        {
            let value = property
                .get("default")
                .cloned()
                .unwrap_or_else(|| match property["type"].as_str().unwrap_or("string") {
                    "integer" | "number" => json!(1),
                    "boolean" => json!(true),
                    "object" => Value::Object(sample_arguments(property)),
                    "array" => json!([]),
                    _ => json!("test"),
                });
            arguments.insert(name.clone(), value);
        }
    }
    arguments
}
