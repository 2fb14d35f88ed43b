//! What a server offers: `info`, `tools`, `resources`, `prompts`,
//! `skills` and `skill` — each written once, for a server given after `--`
//! and for configured servers alike (`reach.rs`).

use serde_json::json;

use super::Run;
use crate::cli::{ModelArgs, ServerArgs};
use crate::configure::scope_name;
use crate::failure::Failure;
use crate::reach::{Configured, Listing, Reached, is_direct};
use crate::term::output;

/// `info`: the server's era, version, identity and capabilities; for a
/// configured server, also its state and where it is configured. A server
/// that did not get ready fails the command with its state and why (exit 3
/// or 4).
pub(crate) async fn info(
    run: Run<'_>,
    name: Option<String>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    let name = name.or(only);
    if !is_direct(&server) && name.is_none() {
        return Err(Failure::usage(anyhow::anyhow!(
            "`info` needs a server: no server command given after `--` (or --url), \
             and no configured server's NAME"
        )));
    }
    let reached = match (Configured::of(&run, &server)?, name.as_deref()) {
        (Some(configured), Some(name)) => configured.reach(name, None).await?,
        _ => Reached::direct(&run, &server, name.as_deref()).await?,
    };
    let client = reached.client();
    let configured = reached.configured().map(|(state, c)| (state, c.clone()));
    // Its tools, for the apps among them (MCP Apps); `info` stands
    // without them.
    if let Ok(Some(client)) = &client
        && client.capabilities().tools.is_some()
    {
        let _ = client.list_tools().await;
    }
    let connect_time = reached.connect_time;
    reached.finish().await;
    let Some(client) = client? else {
        return Err(Failure::usage(anyhow::anyhow!("no server to describe")));
    };
    match configured {
        None if server.json => output::print_json(&output::info_json(&client, connect_time)),
        None => output::print_info(&client, connect_time),
        Some((state, config)) if server.json => {
            // Its start is the hub's, not a connection's: no `connectMs`.
            let mut info = output::info_json(&client, connect_time);
            if let Some(object) = info.as_object_mut() {
                object.remove("connectMs");
            }
            info["state"] = json!(state);
            crate::hub::merge(&mut info, crate::hub::source(&config));
            output::print_json(&info);
        }
        Some((state, config)) => {
            let origin = format!(
                "{} ({})",
                config.origin.file.display(),
                scope_name(config.origin.scope)
            );
            output::print_server_info(&state, &origin, &client);
        }
    }
    Ok(0)
}

/// `tools`: the tools, as a table, JSON or a model API's `tools` value.
pub(crate) async fn tools(
    run: Run<'_>,
    only: Option<String>,
    model: ModelArgs,
    server: ServerArgs,
) -> Result<u8, Failure> {
    // The session lists its tools with their servers, not as a model API
    // wants them.
    let session = model.provider.is_none();
    let listing = Listing::open(&run, only.as_deref(), &server, "tools", session).await?;
    let listed = listing.tools().await;
    let ((tools, by_server), code) = listing.finish(listed).await?;
    if let Some(provider) = model.provider {
        model.print(provider, by_server);
    } else if server.json {
        output::print_json(&json!({ "tools": tools }));
    } else {
        output::print_tools(&tools);
    }
    Ok(code)
}

/// `resources`: the resources and resource templates.
pub(crate) async fn resources(
    run: Run<'_>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    let listing = Listing::open(&run, only.as_deref(), &server, "resources", false).await?;
    let listed = listing.resources().await;
    let ((resources, templates), code) = listing.finish(listed).await?;
    if server.json {
        output::print_json(&json!({ "resources": resources, "resourceTemplates": templates }));
    } else {
        output::print_resources(&resources, &templates);
    }
    Ok(code)
}

/// `prompts`: the prompts.
pub(crate) async fn prompts(
    run: Run<'_>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    list_of(run, only, server, Kind::Prompts).await
}

/// `skills`: the skills (the skills extension), none of them read.
pub(crate) async fn skills(
    run: Run<'_>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    list_of(run, only, server, Kind::Skills).await
}

/// What [`list_of`] lists.
#[derive(Clone, Copy)]
enum Kind {
    Prompts,
    Skills,
}

/// One kind of item, as a table or JSON (`{"prompts": […]}`).
async fn list_of(
    run: Run<'_>,
    only: Option<String>,
    server: ServerArgs,
    kind: Kind,
) -> Result<u8, Failure> {
    let noun = match kind {
        Kind::Prompts => "prompts",
        Kind::Skills => "skills",
    };
    let listing = Listing::open(&run, only.as_deref(), &server, noun, false).await?;
    let listed = match kind {
        Kind::Prompts => listing.prompts().await,
        Kind::Skills => listing.skills().await,
    };
    let (items, code) = listing.finish(listed).await?;
    match kind {
        _ if server.json => output::print_json(&json!({ noun: items })),
        Kind::Prompts => output::print_prompts(&items),
        Kind::Skills => output::print_skills(&items),
    }
    Ok(code)
}

/// `skill NAME [--file PATH]`: one skill loaded, checked against the
/// listing, and shown (or the file). On configured servers NAME is
/// `SERVER/NAME`, `SERVER__NAME`, a skill's URI, or a name one server's
/// skill has (with `--server`, that server's).
pub(crate) async fn skill(
    run: Run<'_>,
    name: String,
    file: Option<String>,
    only: Option<String>,
    server: ServerArgs,
) -> Result<u8, Failure> {
    // `SERVER/NAME` (a skill's name has no `/`): start only that server.
    let (only, target) = match (only.as_deref(), name.split_once('/')) {
        (None, Some((configured, skill))) if !is_direct(&server) && !name.contains("://") => {
            (Some(configured), skill)
        }
        (only, _) => (only, name.as_str()),
    };
    let listing = Listing::open(&run, only, &server, "skills", false).await?;
    let shown = listing.skill(target, file.as_deref()).await;
    let ((server_name, skill, files, contents), _) = listing
        .finish(shown.map(|shown| (shown, Vec::new())))
        .await?;
    output::print_skill(
        server_name.as_deref(),
        &skill,
        None,
        &files,
        contents.as_ref(),
        server.json,
    );
    Ok(0)
}
