//! Using a server: `call` a tool, `read` a resource, get a `prompt`,
//! `complete` an argument.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;
use switchboard::types::CallToolRequestParams;
use switchboard::{RequestOptions, TaskOptions};

use super::Run;
use crate::cli::ServerArgs;
use crate::direct::{connect, finish, max_message_size, no_configured_server, with_events};
use crate::failure::{Failure, exit};
use crate::term::output;
use crate::{args, configure, hub};

/// `call TOOL`: one tool called, its result printed; exit 5 when the tool says `isError`.
pub(crate) async fn call(
    run: Run<'_>,
    tool: String,
    json_args: Option<String>,
    args: Vec<String>,
    args_json: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    let arguments =
        args::tool_arguments(args_json.or(json_args).as_deref(), &args).map_err(Failure::usage)?;
    if server.command.is_empty() && server.url.is_none() {
        let context = configure::Context::new(run.config)?;
        let answer = hub::client_setup(&server)?;
        return hub::call(
            &context,
            &tool,
            arguments,
            server.json,
            run.creds,
            max_message_size(&server),
            answer,
            run.servers,
        )
        .await;
    }
    let (client, _, ui) = connect(&server, run.creds, run.servers).await?;
    let started = Instant::now();
    let params = CallToolRequestParams {
        name: tool.clone(),
        arguments: Some(arguments),
        ..Default::default()
    };
    // The callback only asks for a progress token: progress is
    // shown from the event stream, in order with the log lines.
    let options = RequestOptions::default().on_progress(|_| {});
    // A tool that must run as a task runs as one (and waits for it);
    // any other is a plain call.
    let options = TaskOptions::new().prefer_task(false).request(options);
    let result = with_events(&client, &ui, client.call_tool_and_wait(&params, options)).await;
    let result = match result {
        Ok(result) => result,
        Err(error) => return Err(suggest_name(&client, error, Listed::Tool(&tool)).await),
    };
    let elapsed = started.elapsed();
    if server.json {
        output::print_json(&serde_json::to_value(&result).unwrap_or(Value::Null));
    } else {
        output::print_call_result(&result, elapsed);
    }
    finish(&client, &server).await;
    Ok(if result.is_error == Some(true) {
        exit::TOOL_ERROR
    } else {
        0
    })
}

/// `read URI`: one resource read (or written to `-o FILE`).
pub(crate) async fn read(
    run: Run<'_>,
    uri: String,
    only: Option<String>,
    to: Option<PathBuf>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    if server.command.is_empty() && server.url.is_none() {
        let context = configure::Context::new(run.config)?;
        let only = match only {
            Some(only) => only,
            // No server named: the one that lists the URI.
            None => hub::the_one_with(
                &context,
                hub::Listed::Resource(&uri),
                server.json,
                run.creds,
                max_message_size(&server),
                run.servers,
            )
            .await
            .map_err(|why| {
                why.unwrap_or_else(|| {
                    Failure::usage(anyhow::anyhow!(
                        "no configured server lists the resource `{uri}`: give --server NAME \
                         (a template's URI, for one), or a server command after `--`, or --url"
                    ))
                })
            })?,
        };
        let answer = hub::client_setup(&server)?;
        return hub::read(
            &context,
            &only,
            &uri,
            server.json,
            to.as_deref(),
            run.creds,
            max_message_size(&server),
            answer,
            run.servers,
        )
        .await;
    }
    no_configured_server(only.as_deref())?;
    let (client, _, ui) = connect(&server, run.creds, run.servers).await?;
    let result = with_events(&client, &ui, client.read_resource(&uri)).await?;
    let shown = output::emit_read_result(&result, server.json, to.as_deref());
    finish(&client, &server).await;
    shown.map_err(Failure::usage)?;
    Ok(0)
}

/// `prompt NAME`: one prompt got and its messages printed.
pub(crate) async fn prompt(
    run: Run<'_>,
    name: String,
    only: Option<String>,
    args: Vec<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    let arguments = args::prompt_arguments(&args).map_err(Failure::usage)?;
    if server.command.is_empty() && server.url.is_none() {
        let context = configure::Context::new(run.config)?;
        let answer = hub::client_setup(&server)?;
        return hub::prompt(
            &context,
            only.as_deref(),
            &name,
            arguments,
            server.json,
            run.creds,
            max_message_size(&server),
            answer,
            run.servers,
        )
        .await;
    }
    no_configured_server(only.as_deref())?;
    let (client, _, ui) = connect(&server, run.creds, run.servers).await?;
    let result = with_events(&client, &ui, client.get_prompt(&name, Some(arguments))).await;
    let result = match result {
        Ok(result) => result,
        Err(error) => return Err(suggest_name(&client, error, Listed::Prompt(&name)).await),
    };
    if server.json {
        output::print_json(&serde_json::to_value(&result).unwrap_or(Value::Null));
    } else {
        output::print_prompt_result(&result);
    }
    finish(&client, &server).await;
    Ok(0)
}

/// `complete`: an argument of a prompt or a resource template completed.
pub(crate) async fn complete(
    run: Run<'_>,
    target: String,
    argument: String,
    resource: bool,
    context: Vec<String>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    let (argument, partial) = argument.split_once('=').unwrap_or((&argument, ""));
    let context = args::prompt_arguments(&context).map_err(Failure::usage)?;
    let completion = hub::Completion {
        target: &target,
        resource,
        argument,
        partial,
        context,
    };
    if server.command.is_empty() && server.url.is_none() {
        let config = configure::Context::new(run.config)?;
        let answer = hub::client_setup(&server)?;
        return hub::complete(
            &config,
            only.as_deref(),
            &completion,
            server.json,
            run.creds,
            max_message_size(&server),
            answer,
            run.servers,
        )
        .await;
    }
    no_configured_server(only.as_deref())?;
    let (client, _, ui) = connect(&server, run.creds, run.servers).await?;
    let params = completion.params(&target);
    let result = with_events(&client, &ui, client.complete(&params)).await?;
    output::print_completion(&result, server.json);
    finish(&client, &server).await;
    Ok(0)
}

/// What a name given to `call` or `prompt` names on a server after `--`.
#[derive(Clone, Copy)]
enum Listed<'a> {
    Tool(&'a str),
    Prompt(&'a str),
}

/// `error` as the command's failure; when the server refused the name as
/// invalid and does not list it, with the closest name it lists (or its
/// names), as for a configured server.
async fn suggest_name(
    client: &switchboard::Client,
    error: switchboard::Error,
    listed: Listed<'_>,
) -> Failure {
    let refused = error
        .error_object()
        .is_some_and(|e| e.code == switchboard::types::codes::INVALID_PARAMS);
    let failure = Failure::from(error);
    if !refused {
        return failure;
    }
    let (name, kind, names): (&str, &str, Vec<String>) = match listed {
        Listed::Tool(name) => (
            name,
            "tool",
            client
                .list_tools()
                .await
                .map(|tools| tools.into_iter().map(|t| t.name).collect())
                .unwrap_or_default(),
        ),
        Listed::Prompt(name) => (
            name,
            "prompt",
            client
                .list_prompts()
                .await
                .map(|prompts| prompts.into_iter().map(|p| p.name).collect())
                .unwrap_or_default(),
        ),
    };
    if names.is_empty() || names.iter().any(|n| n == name) {
        return failure;
    }
    match crate::suggest::closest(name, names.iter().map(String::as_str)) {
        Some(near) => failure.with_hint(format!("no {kind} `{name}`; did you mean `{near}`?")),
        None => failure.with_hint(format!(
            "no {kind} `{name}`; the server's {kind}s: {}",
            names.join(", ")
        )),
    }
}
