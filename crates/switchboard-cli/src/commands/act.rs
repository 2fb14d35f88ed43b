//! Using a server: `call` a tool, `read` a resource, get a `prompt`,
//! `complete` an argument — each written once, for a server given after
//! `--` and for a configured server alike (`reach.rs`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::anyhow;
use serde_json::Value;
use switchboard::types::completion::{
    CompleteArgument, CompleteContext, CompleteRequestParams, PromptReference, Reference,
    ResourceTemplateReference,
};

use super::Run;
use crate::cli::ServerArgs;
use crate::failure::{Failure, exit};
use crate::hub::{Listed, resolve_tool, split_target};
use crate::reach::{Configured, Reached};
use crate::session::Needs;
use crate::term::output;

/// `call TOOL`: one tool called, its result printed; exit 5 when the tool
/// says `isError`. On configured servers TOOL is `SERVER/TOOL`,
/// `SERVER__TOOL`, the hub-wide name `tools` showed, or a tool only one
/// server has.
pub(crate) async fn call(
    run: Run<'_>,
    tool: String,
    json_args: Option<String>,
    args: Vec<String>,
    args_json: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    let arguments = crate::args::tool_arguments(args_json.or(json_args).as_deref(), &args)
        .map_err(Failure::usage)?;
    let (reached, tool) = match Configured::of(&run, &server)? {
        Some(configured) => {
            let (name, tool) = resolve_tool(&tool, &configured.loaded)?;
            (
                configured.reach(&name, Some(Needs::Tool(&tool))).await?,
                tool,
            )
        }
        None => (Reached::direct(&run, &server, None).await?, tool),
    };
    let started = Instant::now();
    let result = reached.call(&tool, arguments).await;
    let elapsed = started.elapsed();
    reached.finish().await;
    let result = result?;
    if server.json {
        output::print_json(&serde_json::to_value(&result).unwrap_or(Value::Null));
    } else {
        output::print_call_result(&result, elapsed);
    }
    Ok(if result.is_error == Some(true) {
        exit::TOOL_ERROR
    } else {
        0
    })
}

/// `read URI`: one resource read (or written to `-o FILE`). On configured
/// servers, of `--server NAME`, or of the one server that lists the URI.
pub(crate) async fn read(
    run: Run<'_>,
    uri: String,
    only: Option<String>,
    to: Option<PathBuf>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    let reached = match Configured::of(&run, &server)? {
        Some(configured) => {
            let name =
                match only {
                    Some(only) => only,
                    None => configured
                        .the_one_with(Listed::Resource(&uri), || {
                            Failure::usage(anyhow!(
                                "no configured server lists the resource `{uri}`: give --server \
                                 NAME (a template's URI, for one), or a server command after \
                                 `--`, or --url"
                            ))
                        })
                        .await?,
                };
            configured.reach(&name, Some(Needs::Server)).await?
        }
        None => Reached::direct(&run, &server, only.as_deref()).await?,
    };
    let result = reached.read(&uri).await;
    reached.finish().await;
    output::emit_read_result(&result?, server.json, to.as_deref()).map_err(Failure::usage)?;
    Ok(0)
}

/// `prompt NAME`: one prompt got and its messages printed. On configured
/// servers NAME is `SERVER/NAME`, `SERVER__NAME`, or (with `--server`, or
/// when one server has it) the prompt's own name.
pub(crate) async fn prompt(
    run: Run<'_>,
    name: String,
    only: Option<String>,
    args: Vec<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    let arguments = crate::args::prompt_arguments(&args).map_err(Failure::usage)?;
    let (reached, name) = match Configured::of(&run, &server)? {
        Some(configured) => {
            let (server, name) = match only {
                Some(server) => (server, name),
                None => match split_target(&name, &configured.loaded, "prompt") {
                    Ok((server, prompt)) => (server.to_owned(), prompt.to_owned()),
                    // A bare name: the one server that has that prompt.
                    Err(failure) if !name.contains('/') => {
                        let found = configured
                            .the_one_with(Listed::Prompt(&name), || failure)
                            .await?;
                        (found, name)
                    }
                    Err(failure) => return Err(failure),
                },
            };
            (
                configured
                    .reach(&server, Some(Needs::Prompt(&name)))
                    .await?,
                name,
            )
        }
        None => (Reached::direct(&run, &server, only.as_deref()).await?, name),
    };
    let result = reached.prompt(&name, arguments).await;
    reached.finish().await;
    let result = result?;
    if server.json {
        output::print_json(&serde_json::to_value(&result).unwrap_or(Value::Null));
    } else {
        output::print_prompt_result(&result);
    }
    Ok(0)
}

/// `complete`: an argument of a prompt or a resource template completed.
/// On configured servers, `--server NAME`, or a prompt named `SERVER/NAME`
/// or `SERVER__NAME` (a URI template needs `--server`).
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
    let context = crate::args::prompt_arguments(&context).map_err(Failure::usage)?;
    let (reached, name) = match Configured::of(&run, &server)? {
        Some(configured) => {
            let (server, name) = match only {
                Some(server) => (server, target),
                None if resource => {
                    return Err(Failure::usage(anyhow!(
                        "`complete --resource` on a configured server needs the server: give \
                         --server NAME (or a server command after `--`, or --url)"
                    )));
                }
                None => {
                    let (server, name) = split_target(&target, &configured.loaded, "prompt")?;
                    (server.to_owned(), name.to_owned())
                }
            };
            let needs = if resource {
                Needs::Server
            } else {
                Needs::Prompt(&name)
            };
            (configured.reach(&server, Some(needs)).await?, name)
        }
        None => (
            Reached::direct(&run, &server, only.as_deref()).await?,
            target,
        ),
    };
    let params = completion(&name, resource, argument, partial, context);
    let result = reached.complete(params).await;
    reached.finish().await;
    output::print_completion(&result?, server.json);
    Ok(0)
}

/// The request that completes `argument` (typed so far: `partial`) of the
/// prompt or template `name` (its server's own), with the arguments
/// already given.
pub(crate) fn completion(
    name: &str,
    resource: bool,
    argument: &str,
    partial: &str,
    context: BTreeMap<String, String>,
) -> CompleteRequestParams {
    let reference = if resource {
        Reference::Resource(ResourceTemplateReference {
            uri: name.to_owned(),
            ..Default::default()
        })
    } else {
        Reference::Prompt(PromptReference {
            name: name.to_owned(),
            ..Default::default()
        })
    };
    CompleteRequestParams {
        r#ref: reference,
        argument: CompleteArgument {
            name: argument.to_owned(),
            value: partial.to_owned(),
        },
        context: (!context.is_empty()).then_some(CompleteContext {
            arguments: Some(context),
        }),
        meta: None,
    }
}
