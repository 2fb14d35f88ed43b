//! The CLI's side of the tool policy (`[policy.tools]`, decided by the
//! hub for every path): the question on the terminal that answers an
//! `ask` for `call` and `shell`, the file of remembered "always" answers
//! (or, for gateway replicas, each user's in the shared state), and
//! `switchboard policy list|revoke|deny|ask|remove|rules`.

use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use switchboard_hub::config::LoadedConfig;
use switchboard_hub::hub::policy::REMEMBERED_ALLOWS_FILE;
use switchboard_hub::hub::{HubBuilder, RememberedAllows, ToolAnswer, ToolApprover, ToolAsk};

use crate::configure::Context;
use crate::term::ui::Ui;
use crate::{failure::Failure, term::output, term::sanitize};

/// Where the "always allow" answers are kept: beside `approvals.json`.
pub(crate) fn allows_file(context: &Context) -> PathBuf {
    context.locations.data_dir().join(REMEMBERED_ALLOWS_FILE)
}

/// `builder` with the configuration's tool policy and the remembered
/// allows; with `ui`, an `ask` is put to the user on the terminal.
pub(crate) fn apply(
    builder: HubBuilder,
    context: &Context,
    loaded: &LoadedConfig,
    ui: Option<Arc<Ui>>,
) -> HubBuilder {
    let builder = with_rules(
        builder,
        loaded.policy.tools.clone(),
        RememberedAllows::at(allows_file(context)),
    );
    match ui {
        Some(ui) => {
            let approver = terminal_approver(ui);
            builder.tool_approver(move |ask| approver.approve(ask))
        }
        None => builder,
    }
}

/// `builder` with the tool policy `rules` and the remembered allows
/// `allows` (no one asked).
pub(crate) fn with_rules(
    builder: HubBuilder,
    rules: switchboard_hub::config::policy::ToolPolicy,
    allows: RememberedAllows,
) -> HubBuilder {
    builder.tool_policy(rules).remembered_allows(allows)
}

/// The user the replicas of a gateway without `--issuer` (one identity,
/// its `--token`) keep their remembered allows under in the shared state;
/// a host user's `sub` is never empty.
pub(crate) const TOKEN_USER: &str = "";

/// `user`'s remembered allows in the shared state: an answer given through
/// one replica holds on all, and a revocation anywhere holds at once.
pub(crate) fn shared_allows_of(
    state: &switchboard_postgres::PgState,
    user: &str,
) -> RememberedAllows {
    RememberedAllows::shared(Arc::new(state.tool_allows(user)))
}

/// A user as said to the operator.
fn said_user(user: &str) -> String {
    if user == TOKEN_USER {
        "(the --token gateway)".to_owned()
    } else {
        sanitize::line(user).into_owned()
    }
}

/// `policy list --state …`: the replicas' users' remembered allows.
pub(crate) async fn shared_allows(
    state: &crate::cli::SharedStateArgs,
    user: Option<String>,
    json: bool,
) -> Result<u8, Failure> {
    let allows =
        crate::state::on_shared(state, move |shared| shared.all_tool_allows(user.as_deref()))
            .await?;
    if json {
        let allows: Vec<serde_json::Value> = allows
            .iter()
            .map(|found| {
                let mut value = serde_json::to_value(&found.allow).unwrap_or_default();
                value["user"] = serde_json::Value::String(found.user.clone());
                value
            })
            .collect();
        output::print_json(&serde_json::json!({ "allows": allows }));
    } else if allows.is_empty() {
        eprintln!("no tool is remembered as always allowed in the shared state");
    } else {
        for found in &allows {
            println!(
                "{}\t{}/{}\t(server identity {})",
                said_user(&found.user),
                sanitize::line(&found.allow.server),
                sanitize::line(&found.allow.tool),
                found
                    .allow
                    .identity
                    .get(..12)
                    .unwrap_or(&found.allow.identity)
            );
        }
    }
    Ok(0)
}

/// `policy revoke SERVER/TOOL --state … [--user SUB]`: forgotten on every
/// replica at once, for that user or for every user.
pub(crate) async fn shared_revoke(
    state: &crate::cli::SharedStateArgs,
    user: Option<String>,
    target: &str,
) -> Result<u8, Failure> {
    let (server, tool) = split_target(target)?;
    let (whose, server, tool) = (user.clone(), server.to_owned(), tool.to_owned());
    let revoked = crate::state::on_shared(state, move |shared| {
        shared.revoke_tool_allows(whose.as_deref(), &server, &tool)
    })
    .await?;
    let whose = user.map_or_else(|| "every user".to_owned(), |u| said_user(&u));
    if revoked == 0 {
        return Err(Failure::usage(anyhow!(
            "no remembered allow of {whose} matches `{}` (see `switchboard policy list --state …`)",
            sanitize::line(target)
        )));
    }
    eprintln!(
        "revoked {revoked} remembered allow(s) of {whose}: `{}` is asked about again on every replica",
        sanitize::line(target)
    );
    Ok(0)
}

/// `SERVER/TOOL` split, or why not.
fn split_target(target: &str) -> Result<(&str, &str), Failure> {
    target.split_once('/').ok_or_else(|| {
        Failure::usage(anyhow!(
            "`{}` is not SERVER/TOOL (or SERVER/* for every tool of a server)",
            sanitize::line(target)
        ))
    })
}

/// Asks on the terminal: allow once, always, or not. Without a terminal
/// (or with `--no-input`) the call is refused, saying how to allow it.
pub(crate) fn terminal_approver(ui: Arc<Ui>) -> Arc<dyn ToolApprover> {
    Arc::new(
        move |ask: ToolAsk| -> switchboard::BoxFuture<'static, ToolAnswer> {
            let ui = ui.clone();
            Box::pin(async move {
                let pair = format!("{}/{}", ask.server, ask.tool);
                if let Err(why) = ui.can_prompt() {
                    return ToolAnswer::Refuse(format!(
                        "the tool policy asks before `{pair}` runs ({}), and {}; or answer `always` \
                     once in a terminal, or change that rule in [policy.tools]",
                        ask.rule,
                        why.reason()
                    ));
                }
                let arguments = serde_json::to_string(&ask.arguments).unwrap_or_default();
                let question = format!(
                    "The tool policy asks first ({}).\nRun `{}` of server `{}` with {}?\n\
                 [y] once  [a] always (this server as configured now)  [N] no: ",
                    sanitize::line(&ask.rule),
                    sanitize::line(&ask.tool),
                    sanitize::line(&ask.server),
                    sanitize::line(&arguments),
                );
                let answer = ui
                    .prompt(move || {
                        let mut stderr = std::io::stderr();
                        let _ = write!(stderr, "{question}");
                        let _ = stderr.flush();
                        let mut line = String::new();
                        std::io::stdin().lock().read_line(&mut line).map(|_| line)
                    })
                    .await;
                match answer {
                    Ok(Ok(line)) => match line.trim().to_ascii_lowercase().as_str() {
                        "y" | "yes" => ToolAnswer::Once,
                        "a" | "always" => ToolAnswer::Always,
                        _ => ToolAnswer::Refuse(format!("the user did not allow `{pair}` to run")),
                    },
                    Ok(Err(error)) => {
                        ToolAnswer::Refuse(format!("the question could not be read: {error}"))
                    }
                    Err(why) => ToolAnswer::Refuse(why),
                }
            })
        },
    )
}

/// `policy list`: the remembered "always allow" answers.
pub(crate) fn list(context: &Context, json: bool) -> Result<u8, Failure> {
    let file = allows_file(context);
    let allows = RememberedAllows::at(&file)
        .list()
        .map_err(|e| Failure::usage(anyhow!("cannot read {}: {e}", file.display())))?;
    if json {
        output::print_json(&serde_json::to_value(&allows).unwrap_or_default());
        return Ok(0);
    }
    if allows.is_empty() {
        eprintln!(
            "no tool is remembered as always allowed ({})",
            file.display()
        );
        return Ok(0);
    }
    for allow in &allows {
        println!(
            "{}/{}\t(server identity {})",
            sanitize::line(&allow.server),
            sanitize::line(&allow.tool),
            allow.identity.get(..12).unwrap_or(&allow.identity)
        );
    }
    Ok(0)
}

/// `policy revoke SERVER/TOOL` (`SERVER/*` for all of a server's).
pub(crate) fn revoke(context: &Context, target: &str) -> Result<u8, Failure> {
    let (server, tool) = split_target(target)?;
    let file = allows_file(context);
    let revoked = RememberedAllows::at(&file)
        .revoke(server, tool)
        .map_err(|e| Failure::usage(anyhow!("cannot update {}: {e}", file.display())))?;
    if revoked == 0 {
        return Err(Failure::usage(anyhow!(
            "no remembered allow matches `{}` (see `switchboard policy list`)",
            sanitize::line(target)
        )));
    }
    eprintln!(
        "revoked {revoked} remembered allow(s): `{}` is asked about again",
        sanitize::line(target)
    );
    Ok(0)
}

/// `policy deny|ask PATTERN --state …`: a rule every replica enforces.
pub(crate) async fn shared_add(
    state: &crate::cli::SharedStateArgs,
    kind: switchboard_postgres::RuleKind,
    pattern: &str,
    scope: switchboard_postgres::RuleScope,
) -> Result<u8, Failure> {
    let owned = pattern.to_owned();
    let said_scope = said_scope(&scope);
    let added = crate::state::on_shared(state, move |shared| {
        shared.add_policy_rule(kind, &owned, &scope)
    })
    .await?;
    let what = match kind {
        switchboard_postgres::RuleKind::Deny => "refused",
        switchboard_postgres::RuleKind::Ask => "asked about first",
    };
    if added {
        println!(
            "{} is {what} for {said_scope} on every replica sharing this state, from its next call",
            sanitize::line(pattern)
        );
    } else {
        println!(
            "{} was {what} for {said_scope} already",
            sanitize::line(pattern)
        );
    }
    Ok(0)
}

/// Whom a rule holds for, as said to the operator.
fn said_scope(scope: &switchboard_postgres::RuleScope) -> String {
    sanitize::line(&scope.to_string()).into_owned()
}

/// `policy remove KIND PATTERN --state …`.
pub(crate) async fn shared_remove(
    state: &crate::cli::SharedStateArgs,
    kind: &str,
    pattern: &str,
    scope: switchboard_postgres::RuleScope,
) -> Result<u8, Failure> {
    let kind = match kind {
        "ask" => switchboard_postgres::RuleKind::Ask,
        _ => switchboard_postgres::RuleKind::Deny,
    };
    let owned = pattern.to_owned();
    let said_scope = said_scope(&scope);
    let removed = crate::state::on_shared(state, move |shared| {
        shared.remove_policy_rule(kind, &owned, &scope)
    })
    .await?;
    if removed {
        println!(
            "removed on every replica: {} (for {said_scope})",
            sanitize::line(pattern)
        );
        Ok(0)
    } else {
        eprintln!(
            "error: no shared rule {} for {said_scope} (`switchboard policy rules --state …` lists them)",
            sanitize::line(pattern)
        );
        Ok(crate::failure::exit::USAGE)
    }
}

/// `policy rules --state …`: the shared rules.
pub(crate) async fn shared_list(
    state: &crate::cli::SharedStateArgs,
    json: bool,
) -> Result<u8, Failure> {
    let rules = crate::state::on_shared(state, |shared| shared.policy_rules()).await?;
    let kind = |k: switchboard_postgres::RuleKind| match k {
        switchboard_postgres::RuleKind::Deny => "deny",
        switchboard_postgres::RuleKind::Ask => "ask",
    };
    if json {
        let rules: Vec<serde_json::Value> = rules
            .iter()
            .map(|r| {
                let mut rule = serde_json::json!({"kind": kind(r.kind), "pattern": r.pattern});
                match &r.scope {
                    switchboard_postgres::RuleScope::User(sub) => rule["user"] = sub.clone().into(),
                    switchboard_postgres::RuleScope::Group(name) => {
                        rule["group"] = name.clone().into();
                    }
                    _ => {}
                }
                rule
            })
            .collect();
        output::print_json(&serde_json::json!({ "rules": rules }));
    } else if rules.is_empty() {
        println!("no shared rules");
    } else {
        for rule in &rules {
            println!(
                "{:<5} {}\tfor {}",
                kind(rule.kind),
                sanitize::line(&rule.pattern),
                said_scope(&rule.scope)
            );
        }
    }
    Ok(0)
}
