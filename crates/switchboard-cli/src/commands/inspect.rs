//! What a server offers: `info`, `tools`, `resources`, `prompts`,
//! `skills` and `skill`.

use serde_json::json;

use super::Run;
use crate::cli::{ModelArgs, ServerArgs};
use crate::direct::{connect, finish, max_message_size, no_configured_server};
use crate::failure::Failure;
use crate::term::output;
use crate::{configure, hub};

/// `info`: the server's era, version, identity and capabilities.
pub(crate) async fn info(
    run: Run<'_>,
    name: Option<String>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    if server.command.is_empty() && server.url.is_none() {
        let Some(name) = name.or(only) else {
            return Err(Failure::usage(anyhow::anyhow!(
                "`info` needs a server: no server command given after `--` (or --url), \
                 and no configured server's NAME"
            )));
        };
        let context = configure::Context::new(run.config)?;
        let answer = hub::client_setup(&server)?;
        return hub::info(
            &context,
            &name,
            server.json,
            run.creds,
            max_message_size(&server),
            answer,
            run.servers,
        )
        .await;
    }
    no_configured_server(name.as_deref().or(only.as_deref()))?;
    let (client, connect_time, _) = connect(&server, run.creds, run.servers).await?;
    // Its tools, for the apps among them (MCP Apps); `info` stands
    // without them.
    if client.capabilities().tools.is_some() {
        let _ = client.list_tools().await;
    }
    let info = output::info_json(&client, connect_time);
    if server.json {
        output::print_json(&info);
    } else {
        output::print_info(&client, connect_time);
    }
    finish(&client, &server).await;
    Ok(0)
}

/// `tools`: the tools, as a table, JSON or a model API's `tools` value.
pub(crate) async fn tools(
    run: Run<'_>,
    only: Option<String>,
    model: ModelArgs,
    server: ServerArgs,
) -> Result<u8, Failure> {
    if server.command.is_empty() && server.url.is_none() {
        let context = configure::Context::new(run.config)?;
        return hub::tools(
            &context,
            only.as_deref(),
            &model,
            server.json,
            run.creds,
            max_message_size(&server),
            run.servers,
        )
        .await;
    }
    no_configured_server(only.as_deref())?;
    let (client, _, _) = connect(&server, run.creds, run.servers).await?;
    let tools = client.list_tools().await?;
    if let Some(provider) = model.provider {
        // The server's own name (the command line is no name).
        let name = client
            .server_info()
            .map_or_else(|| client.server_name(), |info| info.name.as_str())
            .to_owned();
        model.print(
            provider,
            tools.into_iter().map(|t| (name.clone(), t)).collect(),
        );
    } else if server.json {
        output::print_json(&json!({ "tools": tools }));
    } else {
        output::print_tools(&tools);
    }
    finish(&client, &server).await;
    Ok(0)
}

/// `resources`: the resources and resource templates.
pub(crate) async fn resources(
    run: Run<'_>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    if server.command.is_empty() && server.url.is_none() {
        let context = configure::Context::new(run.config)?;
        return hub::resources(
            &context,
            only.as_deref(),
            server.json,
            run.creds,
            max_message_size(&server),
            run.servers,
        )
        .await;
    }
    no_configured_server(only.as_deref())?;
    let (client, _, _) = connect(&server, run.creds, run.servers).await?;
    let resources = client.list_resources().await?;
    let templates = client.list_resource_templates().await?;
    if server.json {
        output::print_json(&json!({ "resources": resources, "resourceTemplates": templates }));
    } else {
        output::print_resources(&resources, &templates);
    }
    finish(&client, &server).await;
    Ok(0)
}

/// `prompts`: the prompts.
pub(crate) async fn prompts(
    run: Run<'_>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    if server.command.is_empty() && server.url.is_none() {
        let context = configure::Context::new(run.config)?;
        return hub::prompts(
            &context,
            only.as_deref(),
            server.json,
            run.creds,
            max_message_size(&server),
            run.servers,
        )
        .await;
    }
    no_configured_server(only.as_deref())?;
    let (client, _, _) = connect(&server, run.creds, run.servers).await?;
    let prompts = client.list_prompts().await?;
    if server.json {
        output::print_json(&json!({ "prompts": prompts }));
    } else {
        output::print_prompts(&prompts);
    }
    finish(&client, &server).await;
    Ok(0)
}

/// `skills`: the skills (the skills extension), none of them read.
pub(crate) async fn skills(
    run: Run<'_>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    if server.command.is_empty() && server.url.is_none() {
        let context = configure::Context::new(run.config)?;
        return hub::skills(
            &context,
            only.as_deref(),
            server.json,
            run.creds,
            max_message_size(&server),
            run.servers,
        )
        .await;
    }
    no_configured_server(only.as_deref())?;
    let (client, _, _) = connect(&server, run.creds, run.servers).await?;
    let skills = client.list_skills().await?;
    if server.json {
        output::print_json(&json!({ "skills": skills }));
    } else {
        output::print_skills(&skills);
    }
    finish(&client, &server).await;
    Ok(0)
}

/// `skill NAME`: one skill loaded, checked against the listing, and shown.
pub(crate) async fn skill(
    run: Run<'_>,
    name: String,
    file: Option<String>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    if server.command.is_empty() && server.url.is_none() {
        let context = configure::Context::new(run.config)?;
        return hub::skill(
            &context,
            only.as_deref(),
            &name,
            file.as_deref(),
            server.json,
            run.creds,
            max_message_size(&server),
            run.servers,
        )
        .await;
    }
    no_configured_server(only.as_deref())?;
    let (client, _, _) = connect(&server, run.creds, run.servers).await?;
    let skills = client.list_skills().await?;
    let (_, entry) = hub::pick_skill(
        skills.iter().map(|e| ("", e, e.name().unwrap_or_default())),
        &name,
    )?;
    let skill = client.load_skill(entry).await?;
    let files = client.skill_files(&skill).await?;
    let contents = match &file {
        Some(path) => Some(
            client
                .read_skill_file(&skill, &hub::skill_file_uri(entry, path))
                .await?,
        ),
        None => None,
    };
    output::print_skill(None, &skill, &files, contents.as_ref(), server.json);
    finish(&client, &server).await;
    Ok(0)
}
