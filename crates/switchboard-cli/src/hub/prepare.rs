//! What the hub is given: each configured server expanded (its `${VAR}`s
//! and VS Code `${input:…}`s, the answers remembered per project), or why
//! it cannot start.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;

use switchboard_hub::ServerConfig;
use switchboard_hub::config::{InputSpec, LoadedConfig};

use crate::configure::Context;

/// The servers to hand to the hub: enabled ones expanded (runnable),
/// disabled ones as configured (the hub lists them as disabled); and those
/// whose references could not be expanded, with why.
pub(super) struct Prepared {
    pub(super) runnable: Vec<ServerConfig>,
    pub(super) unusable: BTreeMap<String, String>,
}

pub(super) fn prepare(context: &Context, loaded: &LoadedConfig, only: Option<&str>) -> Prepared {
    let ask = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    prepare_asking(context, loaded, only, ask)
}

/// [`prepare`]; `ask`: whether `${input:ID}` may be asked on the terminal.
pub(super) fn prepare_asking(
    context: &Context,
    loaded: &LoadedConfig,
    only: Option<&str>,
    ask: bool,
) -> Prepared {
    let mut memory = InputMemory::open(context);
    let remembered = memory.values.clone();
    let mut expander = loaded.expander(&context.locations);
    // VS Code's `${input:ID}`: asked on a terminal, as VS Code asks, and
    // remembered for this project (a later run, or the gateway, uses the
    // answer without asking).
    if ask {
        expander = expander.with_prompt(|input| {
            if let Some(value) = memory.get(&input.id) {
                return Ok(value.to_owned());
            }
            let value = ask_input(input)?;
            memory.remember(&input.id, &value);
            Ok(value)
        });
    } else if !remembered.is_empty() {
        let project = InputMemory::key(context, "");
        expander = expander.with_prompt(move |input| {
            remembered
                .get(&format!("{project}{}", input.id))
                .cloned()
                .ok_or_else(|| {
                    "this run cannot ask it (no terminal): run the command once in a terminal, \
                     where it is asked and then remembered"
                        .to_owned()
                })
        });
    }
    let mut prepared = Prepared {
        runnable: Vec::new(),
        unusable: BTreeMap::new(),
    };
    for server in &loaded.servers {
        if only.is_some_and(|name| name != server.name) {
            continue;
        }
        // Disabled and unapproved servers go to the hub as written: it
        // lists them and never starts them (nothing of them is expanded).
        if !server.enabled || !server.trust.allows_start() {
            prepared.runnable.push(server.clone());
            continue;
        }
        match expander.expand(server) {
            // A variable it needs is not set: not started (the reference
            // would reach the server as written), saying which and where.
            Ok(expanded) if !expanded.warnings.is_empty() => {
                let why: Vec<String> = expanded
                    .warnings
                    .iter()
                    .map(|w| match &w.key {
                        Some(key) => format!("{} (its {key})", w.message),
                        None => w.message.clone(),
                    })
                    .collect();
                prepared.unusable.insert(
                    server.name.clone(),
                    format!(
                        "server `{}` is not started: {}",
                        server.name,
                        why.join("; ")
                    ),
                );
            }
            Ok(expanded) => prepared.runnable.push(expanded.config),
            Err(error) => {
                prepared
                    .unusable
                    .insert(server.name.clone(), error.to_string());
            }
        }
    }
    prepared
}

/// The answers given to `${input:ID}`s, per project root and id, in
/// `inputs.json` in switchboard's data directory (0600 in a 0700
/// directory; a secret answered is kept there as VS Code keeps it).
struct InputMemory {
    file: std::path::PathBuf,
    prefix: String,
    values: BTreeMap<String, String>,
    changed: bool,
}

impl InputMemory {
    fn open(context: &Context) -> Self {
        let file = context.locations.data_dir().join("inputs.json");
        let values = switchboard_hub::private_file::read_no_follow(&file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self {
            file,
            prefix: Self::key(context, ""),
            values,
            changed: false,
        }
    }

    /// The key of `id` in this project.
    fn key(context: &Context, id: &str) -> String {
        format!("{}\u{0}{id}", context.locations.project_root().display())
    }

    fn get(&self, id: &str) -> Option<&str> {
        self.values
            .get(&format!("{}{id}", self.prefix))
            .map(String::as_str)
    }

    fn remember(&mut self, id: &str, value: &str) {
        self.values
            .insert(format!("{}{id}", self.prefix), value.to_owned());
        self.changed = true;
    }
}

impl Drop for InputMemory {
    /// Writes the answers given in this run.
    fn drop(&mut self) {
        if !self.changed {
            return;
        }
        let written = self
            .file
            .parent()
            .map_or(Ok(()), switchboard_hub::private_file::create_private_dir)
            .and_then(|()| {
                let bytes = serde_json::to_vec(&self.values).unwrap_or_default();
                switchboard_hub::private_file::write_atomically(&self.file, &bytes, false)
            });
        if let Err(error) = written {
            eprintln!(
                "warning: the answers to the config's inputs are not remembered ({}): {error}",
                self.file.display()
            );
        }
    }
}

fn ask_input(input: &InputSpec) -> Result<String, String> {
    let message = if input.description.is_empty() {
        format!("value for ${{input:{}}}:", input.id)
    } else {
        format!("{} (${{input:{}}})", input.description, input.id)
    };
    let answer = if input.password {
        inquire::Password::new(&message)
            .without_confirmation()
            .prompt()
    } else {
        let mut text = inquire::Text::new(&message);
        if let Some(default) = &input.default {
            text = text.with_default(default);
        }
        text.prompt()
    };
    answer.map_err(|e| e.to_string())
}
