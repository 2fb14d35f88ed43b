//! Tool-search mode and the `tools/list` answer.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;

use switchboard::server::RequestContext;
use switchboard::types::{CallToolRequestParams, CallToolResult};

use super::HubServer;
use super::calls::error_result;
use super::login::{AUTHENTICATE_TOOL, authenticate_tool};
use super::names::ORIGIN_META;

/// The tool-search mode's state: the budget, the ranking and the tools
/// found so far (listed beside `search_tools`), oldest first.
#[derive(Clone)]
pub(super) struct Search {
    pub(super) max: usize,
    pub(super) rank: Ranker,
    pub(super) found: Arc<Mutex<Vec<String>>>,
}

/// Ranks tools for a query: given each tool's (name, server, tool name,
/// title, description) and the most to return, their indexes, best first.
pub type Ranker = Arc<dyn Fn(&[[&str; 5]], &str, usize) -> Vec<usize> + Send + Sync>;

/// The tool-search mode's one tool.
pub const SEARCH_TOOL: &str = "search_tools";

fn search_tool() -> switchboard::types::Tool {
    serde_json::from_value(serde_json::json!({
        "name": SEARCH_TOOL,
        "description": "Finds tools by keywords among the many this gateway offers; the ones \
            found are listed from then on and can be called by their names.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords: what the tool should do"},
                "limit": {"type": "integer", "minimum": 1, "description": "Most tools to return (default 10)"},
            },
            "required": ["query"],
        },
    }))
    .expect("a valid tool")
}

impl HubServer {
    /// The `tools/list` result: the tools of ready servers, not denied
    /// (in tool-search mode, the search tool and what it found when they
    /// are too many), then the `authenticate` tools of servers waiting
    /// for a login. A host that does not render MCP Apps (`apps` false)
    /// is not shown app-only tools (`_meta.ui.visibility: ["app"]`): it
    /// would hand them to its model.
    pub(super) fn tools_json(&self, apps: bool) -> Result<Box<RawValue>, serde_json::Error> {
        // The policy speaks of `SERVER/authenticate` as of any tool.
        let policy = self.hub.tool_policy();
        let last: Vec<_> = self
            .waiting_for_login()
            .iter()
            .filter(|s| !self.hub.tool_denied(&policy, s, AUTHENTICATE_TOOL))
            .map(|s| authenticate_tool(s))
            .collect();
        let mut tools = self.hub.served_tools();
        if !apps {
            tools.retain_tools(|tool| !tool.is_app_only());
        }
        let mut first = Vec::new();
        if let Some(search) = &self.search
            && tools.len() > search.max
        {
            let found = search.found.lock().unwrap_or_else(|e| e.into_inner());
            tools.retain(|name| found.iter().any(|f| f == name));
            first.push(search_tool());
        }
        tools.to_json(&self.uris(), &first, &last)
    }

    /// The tools the host may see: those of ready servers, not denied.
    pub(super) fn visible_tools(&self) -> Vec<switchboard::types::Tool> {
        let ready: std::collections::HashSet<String> = self
            .hub
            .list()
            .into_iter()
            .filter(|s| s.state.is_ready())
            .map(|s| s.name)
            .collect();
        self.hub
            .tools()
            .into_iter()
            .filter(|t| !t.stale && ready.contains(&t.server))
            .map(|t| {
                let mut tool = t.tool;
                // Where it comes from, for a client that shows it (the
                // CLI's `tools` through `switchboard up`).
                tool.meta.get_or_insert_with(Default::default).insert(
                    ORIGIN_META.to_owned(),
                    serde_json::json!({"server": t.server, "tool": tool.name}),
                );
                tool.name = t.name;
                tool
            })
            .collect()
    }

    /// `search_tools`: ranks the visible tools, remembers what it found
    /// (at most the budget less one, the oldest forgotten first) and, when
    /// that changed what `tools/list` shows, tells a session-era host.
    pub(super) async fn search_tools(
        &self,
        search: &Search,
        params: &CallToolRequestParams,
        cx: &RequestContext,
    ) -> CallToolResult {
        let arguments = params.arguments.clone().unwrap_or_default();
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return error_result(format!("{SEARCH_TOOL} needs a `query` string"));
        };
        let room = search.max.saturating_sub(1).max(1);
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(10, |l| usize::try_from(l).unwrap_or(usize::MAX))
            .clamp(1, room);
        let hub_tools = self.hub.tools();
        let visible = self.visible_tools();
        let described: Vec<[&str; 5]> = visible
            .iter()
            .map(|tool| {
                let (server, own) = hub_tools
                    .iter()
                    .find(|t| t.name == tool.name)
                    .map_or(("", tool.name.as_str()), |t| {
                        (t.server.as_str(), t.tool.name.as_str())
                    });
                [
                    tool.name.as_str(),
                    server,
                    own,
                    tool.title.as_deref().unwrap_or_default(),
                    tool.description.as_deref().unwrap_or_default(),
                ]
            })
            .collect();
        let hits = (search.rank)(&described, query, limit);
        let mut grew = false;
        let mut lines = Vec::new();
        {
            let mut found = search.found.lock().unwrap_or_else(|e| e.into_inner());
            for &i in &hits {
                let Some(tool) = visible.get(i) else { continue };
                if let Some(at) = found.iter().position(|n| *n == tool.name) {
                    let name = found.remove(at);
                    found.push(name);
                } else {
                    found.push(tool.name.clone());
                    grew = true;
                }
                lines.push(format!(
                    "{}: {}",
                    tool.name,
                    tool.description.as_deref().unwrap_or("(no description)")
                ));
            }
            while found.len() > room {
                found.remove(0);
            }
        }
        if grew
            && cx.era == switchboard::types::Era::Legacy
            && cx
                .peer
                .notify("notifications/tools/list_changed", None)
                .await
                .is_err()
        {
            tracing::debug!("the host went away before hearing of the tools found");
        }
        if lines.is_empty() {
            return CallToolResult::text(format!("No tool matches `{query}`; try other keywords."));
        }
        CallToolResult::text(format!(
            "Tools found (now listed; call them by these names):\n{}",
            lines.join("\n")
        ))
    }
}
