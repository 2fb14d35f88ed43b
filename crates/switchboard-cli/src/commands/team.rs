//! `switchboard team push|show|clear --state …`: the servers every gateway
//! replica sharing the state serves besides its own files.

use std::path::Path;

use anyhow::anyhow;
use serde_json::json;

use crate::cli::SharedStateArgs;
use crate::configure::Context;
use crate::failure::Failure;
use crate::state::{check_shared, on_shared};
use crate::term::{output, sanitize};

/// `team push FILE`: checked, then kept and announced.
pub(crate) async fn push(
    context: &Context,
    file: &Path,
    state: &SharedStateArgs,
) -> Result<u8, Failure> {
    let text = read_document(file)?;
    let (loaded, unfit) = check_shared(context, &text, 0);
    if let Some(why) = unfit {
        return Err(Failure::usage(anyhow!(
            "{} is not pushed: {}",
            file.display(),
            sanitize::line(&why)
        )));
    }
    let names: Vec<String> = loaded
        .servers
        .iter()
        .map(|s| sanitize::line(&s.name).into_owned())
        .collect();
    let version = on_shared(state, move |shared| shared.set_shared_config(Some(&text))).await?;
    println!(
        "pushed {} shared server{} ({}) as version {version}: every replica sharing the state serves them within a second",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    );
    Ok(0)
}

/// `team show`: the document and its version.
pub(crate) async fn show(state: &SharedStateArgs, json: bool) -> Result<u8, Failure> {
    let document = on_shared(state, |shared| shared.shared_config()).await?;
    match (document, json) {
        (Some(document), true) => output::print_json(&json!({
            "version": document.version,
            "document": document.text,
        })),
        (None, true) => output::print_json(&json!({ "version": null, "document": null })),
        (Some(document), false) => {
            println!("# the shared servers, version {}", document.version);
            print!("{}", sanitize::term(&document.text));
            if !document.text.ends_with('\n') {
                println!();
            }
        }
        (None, false) => {
            println!("no shared servers (switchboard team push FILE --state … makes them)");
        }
    }
    Ok(0)
}

/// `team clear`: no shared servers; every replica stops them.
pub(crate) async fn clear(state: &SharedStateArgs) -> Result<u8, Failure> {
    let version = on_shared(state, |shared| shared.set_shared_config(None)).await?;
    println!(
        "cleared the shared servers (version {version}): every replica stops them within a second"
    );
    Ok(0)
}

/// The file, at most the shared document's size, as UTF-8.
fn read_document(file: &Path) -> Result<String, Failure> {
    let cannot =
        |e: &dyn std::fmt::Display| Failure::usage(anyhow!("cannot read {}: {e}", file.display()));
    let meta = std::fs::metadata(file).map_err(|e| cannot(&e))?;
    let max = switchboard_postgres::MAX_SHARED_CONFIG;
    if meta.len() > max as u64 {
        return Err(Failure::usage(anyhow!(
            "{} is {} bytes; the shared servers are at most {max}",
            file.display(),
            meta.len()
        )));
    }
    std::fs::read_to_string(file).map_err(|e| cannot(&e))
}
