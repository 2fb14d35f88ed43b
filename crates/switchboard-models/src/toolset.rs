//! A provider's view of many servers' tools: names, definitions, the way
//! back from a name to (server, tool), the opt-in `search_tools`
//! meta-tool, and the opt-in `authenticate` tool of each server that needs
//! a login.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use switchboard_types::{CallToolResult, Tool};

use crate::Provider;
use crate::definitions::{self, DefinitionOptions, ToolHints};
use crate::names::{Collision, NameOptions, Names};
use crate::schema::Note;
use crate::search::Index;

/// Default for [`SearchOptions::threshold`].
pub const DEFAULT_SEARCH_THRESHOLD: usize = 40;
/// Default for [`SearchOptions::max_results`].
pub const DEFAULT_SEARCH_RESULTS: usize = 8;
/// Default for [`SearchOptions::name`].
pub const SEARCH_TOOL: &str = "search_tools";
/// The tool name, under each server's prefix, of the
/// [`ToolsetOptions::authenticate`] tool.
pub const AUTHENTICATE_TOOL: &str = "authenticate";

/// The `search_tools` meta-tool: with more tools than `threshold`, the
/// model gets this one tool (and the tools it has found so far) instead of
/// every definition up front.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchOptions {
    /// More tools than this and the meta-tool replaces the full list
    /// (default 40).
    pub threshold: usize,
    /// Most tools one search returns and loads (default 8; a model may
    /// ask for fewer with `limit`).
    pub max_results: usize,
    /// The meta-tool's name (default `search_tools`).
    pub name: String,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            threshold: DEFAULT_SEARCH_THRESHOLD,
            max_results: DEFAULT_SEARCH_RESULTS,
            name: SEARCH_TOOL.into(),
        }
    }
}

impl SearchOptions {
    /// Sets the number of tools above which the meta-tool stands in.
    pub fn threshold(mut self, threshold: usize) -> Self {
        self.threshold = threshold;
        self
    }

    /// Sets the most tools one search returns (at least 1).
    pub fn max_results(mut self, max_results: usize) -> Self {
        self.max_results = max_results.max(1);
        self
    }

    /// Sets the meta-tool's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

/// How a [`Toolset`] is built.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ToolsetOptions {
    /// Naming.
    pub names: NameOptions,
    /// Definitions.
    pub definitions: DefinitionOptions,
    /// The `search_tools` meta-tool; `None` (the default) sends every
    /// definition.
    pub search: Option<SearchOptions>,
    /// For each server that needs a login (`needs-auth`), an
    /// `authenticate` tool named like the server's tools
    /// (`server__authenticate`, say), whose call starts the login and
    /// answers with the URL for the user ([`Toolset::from_hub`] only; off
    /// by default).
    pub authenticate: bool,
}

impl ToolsetOptions {
    /// Turns the `authenticate` tools of servers that need a login on or
    /// off (see [`ToolsetOptions::authenticate`]).
    pub fn authenticate(mut self, on: bool) -> Self {
        self.authenticate = on;
        self
    }

    /// Sets the naming.
    pub fn names(mut self, names: NameOptions) -> Self {
        self.names = names;
        self
    }

    /// Sets the definition options.
    pub fn definitions(mut self, definitions: DefinitionOptions) -> Self {
        self.definitions = definitions;
        self
    }

    /// Turns the `search_tools` meta-tool on (or off with `None`).
    pub fn search(mut self, search: Option<SearchOptions>) -> Self {
        self.search = search;
        self
    }
}

/// One tool as the model sees it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolEntry {
    /// The model-facing name.
    pub name: String,
    /// The server offering it.
    pub server: String,
    /// The tool as the server describes it.
    pub tool: Tool,
    /// Its definition for the provider, as JSON text (for Gemini, one
    /// `functionDeclarations` entry); `serde_json::from_str(d.get())`
    /// gives a `Value`.
    pub definition: Box<RawValue>,
    /// What was changed in the definition to make it acceptable.
    pub notes: Vec<Note>,
    /// Its untrusted hints, for approval UIs.
    pub hints: ToolHints,
}

/// What a name the model used stands for.
#[derive(Clone, Copy, Debug)]
pub enum Lookup<'a> {
    /// A server's tool.
    Tool(&'a ToolEntry),
    /// The `search_tools` meta-tool.
    Search,
    /// The `authenticate` tool of the server in the entry (see
    /// [`ToolsetOptions::authenticate`]): start its login.
    Authenticate(&'a ToolEntry),
    /// Nothing: the model made it up (or it is from an older list).
    Unknown,
}

/// Many servers' tools for one provider.
#[derive(Debug)]
pub struct Toolset {
    provider: Provider,
    options: ToolsetOptions,
    entries: Vec<ToolEntry>,
    names: Names,
    /// Built on the first search: only a searching toolset needs it.
    index: OnceLock<Index>,
    /// Tools a search has loaded (sent from then on).
    loaded: Vec<AtomicBool>,
    search_definition: OnceLock<Box<RawValue>>,
    /// Entries from here on are `authenticate` tools.
    authenticate_from: usize,
}

impl Toolset {
    /// Names and defines `tools` (server name, tool), in order.
    pub fn new(
        provider: Provider,
        options: ToolsetOptions,
        tools: impl IntoIterator<Item = (String, Tool)>,
    ) -> Self {
        Self::with_logins(provider, options, tools.into_iter().collect(), Vec::new())
    }

    /// `tools`, then an `authenticate` tool for each server in `logins`.
    fn with_logins(
        provider: Provider,
        options: ToolsetOptions,
        mut tools: Vec<(String, Tool)>,
        logins: Vec<String>,
    ) -> Self {
        let authenticate_from = tools.len();
        tools.extend(logins.into_iter().map(|server| {
            let tool = authenticate_tool(&server);
            (server, tool)
        }));
        let names = Names::build(
            provider,
            &options.names,
            tools.iter().map(|(s, t)| (s.as_str(), t.name.as_str())),
        );
        let entries = define(provider, &options.definitions, &names, tools);
        let loaded = entries.iter().map(|_| AtomicBool::new(false)).collect();
        Toolset {
            provider,
            options,
            entries,
            names,
            index: OnceLock::new(),
            loaded,
            search_definition: OnceLock::new(),
            authenticate_from,
        }
    }

    /// Every offered tool of every server in `hub` (see
    /// [`switchboard_hub::Hub::tools`]).
    #[cfg(feature = "hub")]
    pub fn from_hub(
        provider: Provider,
        options: ToolsetOptions,
        hub: &switchboard_hub::Hub,
    ) -> Self {
        let tools = hub
            .tools()
            .into_iter()
            .map(|t| (t.server, t.tool))
            .collect();
        let logins = if options.authenticate {
            hub.list()
                .into_iter()
                .filter(|s| matches!(s.state, switchboard_hub::ServerState::NeedsAuth { .. }))
                .map(|s| s.name)
                .collect()
        } else {
            Vec::new()
        };
        Self::with_logins(provider, options, tools, logins)
    }

    /// The servers with an `authenticate` tool (those that needed a login
    /// when the toolset was built).
    pub fn logins(&self) -> impl Iterator<Item = &str> {
        self.entries[self.authenticate_from..]
            .iter()
            .map(|e| e.server.as_str())
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Every tool, in input order.
    pub fn entries(&self) -> &[ToolEntry] {
        &self.entries
    }

    /// Names that collided and were renamed.
    pub fn collisions(&self) -> &[Collision] {
        self.names.collisions()
    }

    /// Whether the `search_tools` meta-tool stands in for the full list.
    pub fn searching(&self) -> bool {
        self.options
            .search
            .as_ref()
            .is_some_and(|s| self.entries.len() > s.threshold)
    }

    /// The definitions to send now: every tool, or (when
    /// [`searching`](Self::searching)) `search_tools` and the tools
    /// searches have loaded so far. For Gemini these are
    /// `functionDeclarations` entries; [`tools_param`](Self::tools_param)
    /// wraps them.
    pub fn definitions(&self) -> Vec<&RawValue> {
        if !self.searching() {
            return self.entries.iter().map(|e| &*e.definition).collect();
        }
        let mut out = vec![self.search_definition()];
        out.extend(
            self.entries
                .iter()
                .zip(&self.loaded)
                .enumerate()
                // `authenticate` tools are always sent: no search finds them.
                .filter(|(i, (_, l))| *i >= self.authenticate_from || l.load(Ordering::Relaxed))
                .map(|(_, (e, _))| &*e.definition),
        );
        out
    }

    /// The request's `tools` field, as JSON text: the definitions as a
    /// list (OpenAI, Anthropic) or one `{"functionDeclarations": […]}`
    /// entry (Gemini). Written by joining the definitions' text, with no
    /// JSON values built; it serializes as itself inside a request (a
    /// `serde_json::Value` of it is `serde_json::from_str(param.get())`).
    pub fn tools_param(&self) -> Box<RawValue> {
        joined(self.provider, &self.definitions())
    }

    /// What `name` stands for.
    pub fn lookup(&self, name: &str) -> Lookup<'_> {
        if let Some(search) = &self.options.search
            && self.searching()
            && name == search.name
        {
            return Lookup::Search;
        }
        match self.names.index(name) {
            Some(i) if i >= self.authenticate_from => Lookup::Authenticate(&self.entries[i]),
            Some(i) => Lookup::Tool(&self.entries[i]),
            None => Lookup::Unknown,
        }
    }

    /// The arguments to send `entry`'s server for a call the model made:
    /// with strict mode on, the `null`s strict mode makes a model send for
    /// properties the tool had as optional are taken out
    /// ([`schema::drop_strict_nulls`](crate::schema::drop_strict_nulls)),
    /// so the server gets the arguments it described. Without strict mode,
    /// the arguments as they are.
    pub fn server_arguments(
        &self,
        entry: &ToolEntry,
        arguments: Option<Map<String, Value>>,
    ) -> Option<Map<String, Value>> {
        let mut arguments = arguments?;
        if self.options.definitions.strict
            && matches!(
                self.provider,
                Provider::OpenAiChat | Provider::OpenAiResponses
            )
        {
            // Parsed per call: only strict mode needs the tree.
            if let Ok(schema) = entry.tool.input_schema.to_object() {
                crate::schema::drop_strict_nulls(&schema, &mut arguments);
            }
        }
        Some(arguments)
    }

    /// Runs `search_tools` with the model's arguments (`query`, optional
    /// `limit`): the matching tools, best first, are loaded (their
    /// definitions sent from the next request on) and listed in the result.
    pub fn search(&self, arguments: Option<&Map<String, Value>>) -> CallToolResult {
        let Some(search) = &self.options.search else {
            return error_result("tool search is not enabled");
        };
        let query = arguments
            .and_then(|a| a.get("query"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if query.is_empty() {
            return error_result(
                "search_tools needs a `query`: words from the task, like `weather forecast`",
            );
        }
        let most = search.max_results.max(1);
        let limit = arguments
            .and_then(|a| a.get("limit"))
            .and_then(Value::as_u64)
            .map_or(most, |l| {
                usize::try_from(l).unwrap_or(usize::MAX).clamp(1, most)
            });
        let index = self.index.get_or_init(|| {
            Index::build(self.entries[..self.authenticate_from].iter().map(|e| {
                (
                    e.name.as_str(),
                    e.server.as_str(),
                    e.tool.name.as_str(),
                    e.tool.display_name(),
                    e.tool.description.as_deref().unwrap_or(""),
                )
            }))
        });
        let hits = index.search(query, limit);
        if hits.is_empty() {
            return CallToolResult::text(format!(
                "No tool matches `{query}`. Try other or fewer words; there are {} tools.",
                self.entries.len()
            ));
        }
        let mut text = format!(
            "{} tool(s) match `{query}`; they can be called now:\n",
            hits.len()
        );
        let mut found = Vec::new();
        for i in hits {
            self.loaded[i].store(true, Ordering::Relaxed);
            let e = &self.entries[i];
            let description = e.tool.description.as_deref().unwrap_or("");
            let description = definitions::cap_text(
                description,
                200.min(self.options.definitions.description_cap),
            );
            text.push_str(&format!("- {}: {}\n", e.name, description));
            found.push(json!({"name": e.name, "server": e.server, "tool": e.tool.name}));
        }
        CallToolResult {
            content: vec![switchboard_types::ContentBlock::text(text.trim_end())],
            structured_content: Some(json!({ "tools": found })),
            ..CallToolResult::default()
        }
    }

    fn search_definition(&self) -> &RawValue {
        self.search_definition
            .get_or_init(|| self.make_search_definition())
    }

    fn make_search_definition(&self) -> Box<RawValue> {
        let search = self.options.search.as_ref().expect("searching");
        let tool = Tool {
            name: search.name.clone(),
            description: Some(format!(
                "Finds tools by keyword among {} tools from MCP servers and makes the best \
                 matches (at most {}) callable. Call it first with words from the task; then \
                 call the tools it returns.",
                self.entries.len(),
                search.max_results
            )),
            input_schema: match json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords, e.g. `create github issue`."},
                    "limit": {"type": "integer", "description": "Most tools to return.", "minimum": 1, "maximum": search.max_results}
                },
                "required": ["query"]
            }) {
                Value::Object(map) => map.into(),
                _ => unreachable!(),
            },
            ..Tool::default()
        };
        definitions::definition_json(
            self.provider,
            &search.name,
            &tool,
            &self.options.definitions,
        )
        .0
    }
}

/// The `authenticate` tool of `server`: no arguments.
fn authenticate_tool(server: &str) -> Tool {
    Tool {
        name: AUTHENTICATE_TOOL.into(),
        description: Some(format!(
            "The MCP server `{server}` needs the user to log in before its tools can be used. \
             Call this to start the login: it answers with a URL for the user to open. Show \
             the user that URL; once they have logged in, the server's tools are listed."
        )),
        input_schema: match json!({"type": "object", "properties": {}}) {
            Value::Object(map) => map.into(),
            _ => unreachable!(),
        },
        ..Tool::default()
    }
}

/// Below this many tools, definitions are written on the calling thread;
/// from it on, on scoped threads (one per core, at most 8): each
/// definition is independent, and thousands of them cost tens of
/// milliseconds on one core (`benches/adapt.rs`).
const PARALLEL_FROM: usize = 2048;

fn define(
    provider: Provider,
    options: &DefinitionOptions,
    names: &Names,
    tools: Vec<(String, Tool)>,
) -> Vec<ToolEntry> {
    let entry = |i: usize, (server, tool): (String, Tool)| {
        let name = names.get(i).to_owned();
        let (definition, notes) = definitions::definition_json(provider, &name, &tool, options);
        let hints = ToolHints::of(&tool);
        ToolEntry {
            name,
            server,
            tool,
            definition,
            notes,
            hints,
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if tools.len() < PARALLEL_FROM || threads < 2 {
        return tools
            .into_iter()
            .enumerate()
            .map(|(i, t)| entry(i, t))
            .collect();
    }
    let chunk = tools.len().div_ceil(threads);
    let mut chunks: Vec<Vec<(String, Tool)>> = Vec::with_capacity(threads);
    let mut rest = tools;
    while rest.len() > chunk {
        let tail = rest.split_off(chunk);
        chunks.push(std::mem::replace(&mut rest, tail));
    }
    chunks.push(rest);
    std::thread::scope(|scope| {
        let entry = &entry;
        let workers: Vec<_> = chunks
            .into_iter()
            .enumerate()
            .map(|(c, part)| {
                scope.spawn(move || {
                    part.into_iter()
                        .enumerate()
                        .map(|(i, t)| entry(c * chunk + i, t))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut entries = Vec::with_capacity(names.all().len());
        for worker in workers {
            match worker.join() {
                Ok(part) => entries.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        entries
    })
}

/// A result with `isError` and `text`: what a model is told when its call
/// could not be made.
pub(crate) fn error_result(text: &str) -> CallToolResult {
    CallToolResult {
        content: vec![switchboard_types::ContentBlock::text(text)],
        is_error: Some(true),
        ..CallToolResult::default()
    }
}

/// Definitions joined as `provider`'s `tools` value: a list (OpenAI,
/// Anthropic) or one `{"functionDeclarations": […]}` entry (Gemini).
/// Written by joining the definitions' text, with no JSON values built.
pub(crate) fn joined(provider: Provider, definitions: &[&RawValue]) -> Box<RawValue> {
    /// `[{"functionDeclarations": […]}]`, Gemini's `tools`.
    struct Gemini<'a>(&'a [&'a RawValue]);
    impl serde::Serialize for Gemini<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{SerializeMap, SerializeSeq};
            struct Declarations<'a>(&'a [&'a RawValue]);
            impl serde::Serialize for Declarations<'_> {
                fn serialize<S: serde::Serializer>(
                    &self,
                    serializer: S,
                ) -> Result<S::Ok, S::Error> {
                    let mut map = serializer.serialize_map(Some(1))?;
                    map.serialize_entry("functionDeclarations", self.0)?;
                    map.end()
                }
            }
            let mut seq = serializer.serialize_seq(Some(1))?;
            seq.serialize_element(&Declarations(self.0))?;
            seq.end()
        }
    }
    // Raw values are written as their text: this joins the definitions
    // without parsing them again.
    let joined = match provider {
        Provider::Gemini => serde_json::value::to_raw_value(&Gemini(definitions)),
        _ => serde_json::value::to_raw_value(&definitions),
    };
    joined.expect("definitions joined are JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> Tool {
        Tool {
            name: name.into(),
            description: Some(description.into()),
            input_schema: match json!({"type": "object", "properties": {"q": {"type": "string"}}}) {
                Value::Object(map) => map.into(),
                _ => unreachable!(),
            },
            ..Tool::default()
        }
    }

    fn sample() -> Vec<(String, Tool)> {
        vec![
            (
                "weather".into(),
                tool("forecast", "Weather forecast for a city."),
            ),
            (
                "github".into(),
                tool("create_issue", "Opens an issue in a repository."),
            ),
            ("github".into(), tool("search", "Searches code.")),
            ("files".into(), tool("search", "Searches files by name.")),
        ]
    }

    #[test]
    fn a_server_waiting_for_a_login_has_an_authenticate_tool_no_search_finds() {
        let options = ToolsetOptions::default()
            .authenticate(true)
            .search(Some(SearchOptions::default().threshold(1)));
        let set = Toolset::with_logins(
            Provider::OpenAiChat,
            options,
            sample(),
            vec!["remote".into()],
        );
        assert_eq!(set.logins().collect::<Vec<_>>(), ["remote"]);
        let name = "mcp__remote__authenticate";
        assert!(
            matches!(set.lookup(name), Lookup::Authenticate(e) if e.server == "remote"),
            "{:?}",
            set.lookup(name)
        );
        assert!(matches!(
            set.lookup("mcp__weather__forecast"),
            Lookup::Tool(_)
        ));
        // Searching: sent with `search_tools` from the start.
        assert!(set.searching());
        let sent = names(&set.definitions(), Provider::OpenAiChat);
        assert_eq!(sent, ["search_tools", name], "{sent:?}");
        let args = json!({"query": "authenticate login remote"});
        let found = set.search(args.as_object());
        let text = serde_json::to_string(&found.content).unwrap();
        assert!(!text.contains(name), "{text}");
    }

    fn names(values: &[&RawValue], provider: Provider) -> Vec<String> {
        values
            .iter()
            .map(|raw| {
                let v: Value = serde_json::from_str(raw.get()).expect("JSON");
                let v = match provider {
                    Provider::OpenAiChat => &v["function"],
                    _ => &v,
                };
                v["name"].as_str().expect("a name").to_owned()
            })
            .collect()
    }

    fn parsed(raw: &RawValue) -> Value {
        serde_json::from_str(raw.get()).expect("JSON")
    }

    #[test]
    fn every_tool_is_sent_and_found_again_by_its_name() {
        for provider in Provider::ALL {
            let set = Toolset::new(provider, ToolsetOptions::default(), sample());
            assert!(!set.searching());
            let sent = names(&set.definitions(), provider);
            assert_eq!(
                sent,
                [
                    "mcp__weather__forecast",
                    "mcp__github__create_issue",
                    "mcp__github__search",
                    "mcp__files__search"
                ],
                "{provider}"
            );
            for (name, (server, tool)) in sent.iter().zip(sample()) {
                let Lookup::Tool(entry) = set.lookup(name) else {
                    panic!("{provider}: {name} not found");
                };
                assert_eq!(
                    (entry.server.as_str(), entry.tool.name.as_str()),
                    (server.as_str(), tool.name.as_str())
                );
            }
            assert!(matches!(set.lookup("mcp__nope__x"), Lookup::Unknown));
            // Tool search is opt-in: its name means nothing without it.
            assert!(matches!(set.lookup(SEARCH_TOOL), Lookup::Unknown));
        }
    }

    #[test]
    fn gemini_tools_are_one_function_declarations_entry() {
        let set = Toolset::new(Provider::Gemini, ToolsetOptions::default(), sample());
        let param = parsed(&set.tools_param());
        assert_eq!(param.as_array().map(Vec::len), Some(1));
        assert_eq!(
            param[0]["functionDeclarations"].as_array().map(Vec::len),
            Some(4)
        );
        let set = Toolset::new(Provider::Anthropic, ToolsetOptions::default(), sample());
        assert_eq!(parsed(&set.tools_param()).as_array().map(Vec::len), Some(4));
    }

    fn searching(threshold: usize, max_results: usize) -> ToolsetOptions {
        ToolsetOptions::default().search(Some(
            SearchOptions::default()
                .threshold(threshold)
                .max_results(max_results),
        ))
    }

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn under_the_threshold_every_definition_is_sent() {
        let set = Toolset::new(Provider::Anthropic, searching(4, 8), sample());
        assert!(!set.searching());
        assert_eq!(set.definitions().len(), 4);
        assert!(matches!(set.lookup(SEARCH_TOOL), Lookup::Unknown));
    }

    #[test]
    fn over_the_threshold_search_stands_in_and_loads_what_it_finds() {
        for provider in Provider::ALL {
            let set = Toolset::new(provider, searching(3, 8), sample());
            assert!(set.searching());
            assert_eq!(
                names(&set.definitions(), provider),
                [SEARCH_TOOL],
                "{provider}"
            );
            assert!(matches!(set.lookup(SEARCH_TOOL), Lookup::Search));
            // The tools can still be called by name (a model may remember one).
            assert!(matches!(set.lookup("mcp__files__search"), Lookup::Tool(_)));

            let found = set.search(Some(&args(json!({"query": "search files"}))));
            assert!(!found.is_error(), "{found:?}");
            let text = found.content[0].as_text().unwrap();
            // Both `search` tools match; the one whose server and description
            // also match ranks first.
            let first = text.find("mcp__files__search").expect(text);
            let second = text.find("mcp__github__search").expect(text);
            assert!(first < second, "{text}");
            assert!(!text.contains("forecast"), "{text}");
            assert_eq!(
                names(&set.definitions(), provider),
                [SEARCH_TOOL, "mcp__github__search", "mcp__files__search"],
                "{provider}: found tools are sent from now on, in list order"
            );
        }
    }

    #[test]
    fn search_limits_and_explains_itself() {
        let set = Toolset::new(Provider::OpenAiChat, searching(1, 2), sample());
        let found = set.search(Some(&args(json!({"query": "search", "limit": 50}))));
        let listed = found.structured_content.as_ref().unwrap()["tools"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(listed, 2, "capped at max_results");
        let found = set.search(Some(&args(json!({"query": "issue", "limit": 1}))));
        assert!(
            found.content[0]
                .as_text()
                .unwrap()
                .contains("mcp__github__create_issue")
        );

        let empty = set.search(Some(&args(json!({"query": "  "}))));
        assert!(empty.is_error());
        assert!(
            empty.content[0]
                .as_text()
                .unwrap()
                .contains("needs a `query`")
        );
        assert!(set.search(None).is_error());

        let none = set.search(Some(&args(json!({"query": "kubernetes"}))));
        assert!(!none.is_error());
        assert!(
            none.content[0]
                .as_text()
                .unwrap()
                .contains("No tool matches `kubernetes`")
        );
    }

    #[test]
    fn search_is_off_unless_asked_for() {
        let set = Toolset::new(Provider::Gemini, ToolsetOptions::default(), sample());
        let result = set.search(Some(&args(json!({"query": "weather"}))));
        assert!(result.is_error());
    }

    #[test]
    fn strict_nulls_for_optional_arguments_do_not_reach_the_server() {
        let mut tool = tool("find", "Finds.");
        tool.input_schema = switchboard_types::Schema::from(args(json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["q"]
        })));
        let sent = Some(args(json!({"q": "x", "limit": null})));
        let strict =
            ToolsetOptions::default().definitions(DefinitionOptions::default().strict(true));
        let set = Toolset::new(
            Provider::OpenAiChat,
            strict,
            vec![("s".into(), tool.clone())],
        );
        let Lookup::Tool(entry) = set.lookup("mcp__s__find") else {
            panic!("not found")
        };
        assert_eq!(
            set.server_arguments(entry, sent.clone()),
            Some(args(json!({"q": "x"})))
        );
        // Without strict mode the model's arguments go as they are.
        let set = Toolset::new(
            Provider::OpenAiChat,
            ToolsetOptions::default(),
            vec![("s".into(), tool)],
        );
        let Lookup::Tool(entry) = set.lookup("mcp__s__find") else {
            panic!("not found")
        };
        assert_eq!(set.server_arguments(entry, sent.clone()), sent);
    }
}
