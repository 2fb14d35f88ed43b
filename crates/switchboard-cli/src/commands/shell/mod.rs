//! `switchboard shell [NAME…]`: connect once, then work with the servers
//! from a prompt — `tools`, `call` (arguments as `k=v`, JSON, or asked
//! field by field from the tool's input schema), `read`, `prompt`,
//! `servers`; history, tab completion of commands, tool and server names;
//! what servers say (log lines, list changes) printed as it arrives, a
//! call's progress as it runs.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History as _};
use rustyline::validate::Validator;
use rustyline::{Editor, Helper};
use serde_json::{Map, Value};
use switchboard::RequestOptions;

use std::path::Path;

use crate::configure::Context;
use crate::{failure::Failure, term::output, term::sanitize};

mod servers;

use servers::{Servers, own_entry};

const COMMANDS: [&str; 10] = [
    "call", "exit", "help", "prompt", "read", "servers", "skill", "skills", "tools", "quit",
];

const HELP: &str = "\
commands:
  tools [SERVER]              the tools (of one server)
  call TOOL [JSON | k=v …]    call a tool (SERVER__TOOL or SERVER/TOOL); missing
                              arguments are asked for, field by field
  read SERVER URI             read a resource
  prompt SERVER/NAME [k=v …]  get a prompt
  skills [SERVER]             the skills (of one server); reads no skill file
  skill NAME [PATH]           load a skill (NAME, SERVER/NAME), verified, and show
                              it, or its file PATH
  servers                     each server and its state
  help, exit                  (Tab completes commands and names; Ctrl-D leaves)";

/// What Tab completes from: the names as of the last prompt.
#[derive(Default)]
struct Names {
    tools: Vec<String>,
    servers: Vec<String>,
    /// As the last `skills` listed them (`SERVER/NAME`): listing asks
    /// every server, so it is not done before each prompt.
    skills: Vec<String>,
}

struct ShellHelper {
    names: Arc<Mutex<Names>>,
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before.rfind(' ').map_or(0, |i| i + 1);
        let word = &before[start..];
        let words: Vec<&str> = before[..start].split_whitespace().collect();
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let candidates: Vec<String> = match words.as_slice() {
            [] => COMMANDS.iter().map(|c| (*c).to_owned()).collect(),
            ["call"] => names.tools.clone(),
            ["tools" | "read" | "skills"] => names.servers.clone(),
            ["skill"] => names.skills.clone(),
            ["prompt"] => names.servers.iter().map(|s| format!("{s}/")).collect(),
            _ => Vec::new(),
        };
        let pairs = candidates
            .into_iter()
            .filter(|c| c.starts_with(word))
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}
impl Highlighter for ShellHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(&'s self, prompt: &'p str, _: bool) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}
impl Validator for ShellHelper {}
impl Helper for ShellHelper {}

/// Where the shell keeps its history.
fn history_file() -> Option<std::path::PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".local/state"))
        })?;
    let dir = state.join("switchboard");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("shell-history"))
}

/// `shell [NAME]`: one configured server, or all — the background
/// session's when it runs them as this command would start them, else
/// started once here; then the prompt.
pub(crate) async fn shell(
    context: &Context,
    only: Option<&str>,
    credentials: Option<&Path>,
    lifecycle: &crate::lifecycle::Servers,
) -> Result<u8, Failure> {
    let servers = Servers::open(context, only, credentials, lifecycle).await?;
    let code = run(&servers, lifecycle.interrupts()).await;
    servers.close().await;
    code
}

/// Runs one command of the shell; Ctrl-C (`interrupts`) cancels it — the
/// server is told (`notifications/cancelled`) — and the prompt comes back.
async fn interruptible(
    command: impl std::future::Future<Output = ()>,
    interrupts: &mut tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    // A Ctrl-C from before (typed at the prompt, where it is a key) is not
    // this command's.
    while interrupts.try_recv().is_ok() {}
    tokio::select! {
        () = command => {}
        Some(()) = interrupts.recv() => eprintln!("\ncancelled"),
    }
}

/// The REPL over `servers`, already started; Ctrl-C while a command runs
/// cancels that command.
async fn run(
    servers: &Servers,
    mut interrupts: tokio::sync::mpsc::UnboundedReceiver<()>,
) -> Result<u8, Failure> {
    let names = Arc::new(Mutex::new(Names::default()));
    // The editor lives only while a line is typed: rustyline sets its own
    // SIGINT handler for as long as an editor exists, and Ctrl-C while a
    // command runs must reach ours (`interrupts`), to cancel it.
    let mut history = DefaultHistory::new();
    let history_file = history_file();
    if let Some(file) = &history_file {
        let _ = history.load(file);
    }
    // What the servers say: printed at once while a command runs; while a
    // line is being typed, held and printed before the next prompt (a line
    // printed under the editor would garble what is typed).
    let reading = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let held: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut lines = servers.lines();
    let (flag, queue) = (reading.clone(), held.clone());
    let printing = tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            let mut queue = queue.lock().unwrap_or_else(|e| e.into_inner());
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                queue.push(line);
            } else {
                eprintln!("{line}");
            }
        }
    });
    let tools = servers.tools().await.unwrap_or_else(|error| {
        eprintln!("error: {}", sanitize::line(&error));
        Vec::new()
    });
    println!(
        "switchboard shell: {}{}. `help` lists the commands; Tab completes.",
        output::count(tools.len(), "tool"),
        servers.whose()
    );
    loop {
        let tools = servers.tools().await.unwrap_or_default();
        {
            let mut names = names.lock().unwrap_or_else(|e| e.into_inner());
            names.tools = tools.iter().map(|t| t.name.clone()).collect();
            names.servers = servers.states().into_iter().map(|(name, _)| name).collect();
        }
        {
            let mut queue = held.lock().unwrap_or_else(|e| e.into_inner());
            queue.extend(servers.changed_states());
            for line in queue.drain(..) {
                eprintln!("{line}");
            }
            reading.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let helper = ShellHelper {
            names: names.clone(),
        };
        let (back, line) = tokio::task::spawn_blocking(move || {
            let mut editor: Editor<ShellHelper, DefaultHistory> =
                match Editor::with_history(rustyline::Config::default(), history) {
                    Ok(editor) => editor,
                    Err(error) => return (DefaultHistory::new(), Err(error)),
                };
            editor.set_helper(Some(helper));
            let line = editor.readline("switchboard> ");
            (
                std::mem::replace(editor.history_mut(), DefaultHistory::new()),
                line,
            )
        })
        .await
        .map_err(|e| Failure::usage(anyhow::anyhow!("the line editor failed: {e}")))?;
        reading.store(false, std::sync::atomic::Ordering::SeqCst);
        history = back;
        let line = match line {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(error) => {
                eprintln!("error: {error}");
                break;
            }
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = history.add(line);
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match command {
            "exit" | "quit" => break,
            "help" | "?" => println!("{HELP}"),
            "servers" => {
                for (name, state) in servers.states() {
                    println!("{}  {state}", sanitize::line(&name));
                }
            }
            "tools" => {
                let tools: Vec<Value> = tools
                    .into_iter()
                    .filter(|t| rest.is_empty() || t.server == rest)
                    .map(|t| {
                        let mut value = serde_json::to_value(&t.tool).unwrap_or(Value::Null);
                        value["name"] = Value::String(t.name);
                        value
                    })
                    .collect();
                output::print_tools(&tools);
            }
            "call" => interruptible(call(servers, &tools, rest), &mut interrupts).await,
            "read" => match rest.split_once(' ') {
                Some((server, uri)) => {
                    let read = async {
                        match servers.read(server, uri.trim()).await {
                            Ok(result) => {
                                if let Err(refused) = output::print_read_result(&result) {
                                    eprintln!("error: {refused}");
                                }
                            }
                            Err(error) => eprintln!("error: {}", sanitize::line(&error)),
                        }
                    };
                    interruptible(read, &mut interrupts).await;
                }
                None => eprintln!("usage: read SERVER URI"),
            },
            "prompt" => interruptible(prompt(servers, rest), &mut interrupts).await,
            "skills" => {
                let skills = match servers.skills().await {
                    Ok(skills) => skills,
                    Err(error) => {
                        eprintln!("error: {}", sanitize::line(&error));
                        continue;
                    }
                };
                let skills: Vec<_> = skills
                    .into_iter()
                    .filter(|s| rest.is_empty() || s.server == rest)
                    .collect();
                names.lock().unwrap_or_else(|e| e.into_inner()).skills = skills
                    .iter()
                    .map(|s| format!("{}/{}", s.server, s.entry.name().unwrap_or_default()))
                    .collect();
                let items: Vec<Value> = skills
                    .iter()
                    .map(|s| crate::hub::tagged(&s.server, &own_entry(&s.entry)))
                    .collect();
                output::print_skills(&items);
            }
            "skill" => interruptible(skill(servers, rest), &mut interrupts).await,
            other => {
                let near = crate::suggest::closest(other, COMMANDS.into_iter());
                match near {
                    Some(near) => eprintln!("unknown command `{other}`; did you mean `{near}`?"),
                    None => eprintln!("unknown command `{other}`; `help` lists them"),
                }
            }
        }
    }
    if let Some(file) = &history_file {
        let _ = history.save(file);
    }
    printing.abort();
    Ok(0)
}

/// `k=v …` (values as JSON when they parse) or one JSON object.
fn arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.starts_with('{') {
        return match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err("the arguments are not one JSON object".to_owned()),
        };
    }
    let mut map = Map::new();
    for pair in text.split_whitespace() {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` is not KEY=VALUE"))?;
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
        map.insert(key.to_owned(), value);
    }
    Ok(map)
}

async fn call(servers: &Servers, tools: &[servers::ShellTool], rest: &str) {
    let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
    if name.is_empty() {
        eprintln!("usage: call TOOL [JSON | k=v …]");
        return;
    }
    let found = tools.iter().find(|t| {
        t.name == name
            || name
                .split_once('/')
                .is_some_and(|(server, tool)| t.server == server && t.tool.name == tool)
    });
    let Some(tool) = found else {
        // A tool the policy denies is not listed: say so, as `call` does.
        let pair = name.split_once('/').or_else(|| name.split_once("__"));
        if let Some((server, own)) = pair
            && let switchboard_hub::config::policy::ToolDecision::Deny(reason) =
                servers.decide(server, own)
        {
            let denied = switchboard_hub::HubError::ToolDenied {
                server: server.to_owned(),
                tool: own.to_owned(),
                reason,
            };
            eprintln!("error: {}", sanitize::line(&denied.to_string()));
            return;
        }
        let names = tools.iter().map(|t| t.name.as_str());
        match crate::suggest::closest(name, names) {
            Some(near) => eprintln!("no tool `{name}`; did you mean `{near}`?"),
            None => eprintln!("no tool `{name}`; `tools` lists them"),
        }
        return;
    };
    let mut arguments = match arguments(args.trim()) {
        Ok(arguments) => arguments,
        Err(why) => {
            eprintln!("error: {why}");
            return;
        }
    };
    let schema: Value = tool.tool.input_schema.parse().unwrap_or(Value::Null);
    let has_fields = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if has_fields {
        let mut given = std::mem::take(&mut arguments);
        let asked = tokio::task::spawn_blocking(move || {
            crate::term::ask::ask_arguments(&schema, &mut given).map(|done| (done, given))
        })
        .await;
        match asked {
            Ok(Ok((true, given))) => arguments = given,
            Ok(Ok((false, _))) => {
                eprintln!("(not called)");
                return;
            }
            Ok(Err(why)) => {
                eprintln!("error: {why}");
                return;
            }
            Err(error) => {
                eprintln!("error: {error}");
                return;
            }
        }
    }
    let started = Instant::now();
    let server = tool.server.clone();
    let options = RequestOptions::default().on_progress(move |p| {
        let mut line = format!(
            "[{server}] progress {}{}",
            p.progress,
            p.total.map(|t| format!("/{t}")).unwrap_or_default()
        );
        if let Some(message) = &p.message {
            line.push(' ');
            line.push_str(message);
        }
        eprintln!("{}", sanitize::term(&line));
    });
    match servers.call(tool, arguments, options).await {
        Ok(result) => output::print_call_result(&result, started.elapsed()),
        Err(error) => eprintln!("error: {}", sanitize::line(&error)),
    }
}

/// `skill NAME [PATH]`: NAME as `switchboard skill` takes it.
async fn skill(servers: &Servers, rest: &str) {
    let (target, path) = rest.split_once(' ').unwrap_or((rest, ""));
    if target.is_empty() {
        eprintln!("usage: skill NAME [PATH]");
        return;
    }
    let skills = match servers.skills().await {
        Ok(skills) => skills,
        Err(error) => {
            eprintln!("error: {}", sanitize::line(&error));
            return;
        }
    };
    let (only, name) = match target.split_once('/') {
        Some((server, name)) if !target.contains("://") => (Some(server), name),
        _ => (None, target),
    };
    let shown: Vec<_> = skills
        .iter()
        .filter(|s| only.is_none_or(|o| s.server == o))
        .map(|s| (s, own_entry(&s.entry)))
        .collect();
    let found = crate::hub::pick_skill(
        shown
            .iter()
            .map(|(s, own)| (s.server.as_str(), own, s.name.as_str())),
        name,
    );
    let found = match found {
        Ok((_, own)) => shown.iter().find(|(_, o)| std::ptr::eq(o, own)),
        Err(failure) => {
            eprintln!("error: {}", sanitize::term(&format!("{:#}", failure.error)));
            return;
        }
    };
    let Some((found, own)) = found else {
        return;
    };
    let path = Some(path.trim()).filter(|p| !p.is_empty());
    match servers.load_skill(found, path).await {
        Ok((skill, files, contents)) => output::print_skill(
            Some(&found.server),
            &skill,
            Some(&own.uri),
            &files,
            contents.as_ref(),
            false,
        ),
        Err(error) => eprintln!("error: {}", sanitize::line(&error)),
    }
}

async fn prompt(servers: &Servers, rest: &str) {
    let (target, args) = rest.split_once(' ').unwrap_or((rest, ""));
    let Some((server, name)) = target.split_once('/') else {
        eprintln!("usage: prompt SERVER/NAME [k=v …]");
        return;
    };
    let arguments = match arguments(args.trim()) {
        Ok(map) => map
            .into_iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect(),
        Err(why) => {
            eprintln!("error: {why}");
            return;
        }
    };
    match servers.prompt(server, name, arguments).await {
        Ok(result) => output::print_prompt_result(&result),
        Err(error) => eprintln!("error: {}", sanitize::line(&error)),
    }
}
