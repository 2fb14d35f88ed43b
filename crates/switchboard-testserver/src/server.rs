//! Request dispatch: protocol eras, tools, resources, prompts, completion.
//!
//! One file, on purpose: the test server's dispatch for both eras and every
//! fixture behaviour the conformance and interop tests rely on read best as
//! one table of methods and tools; it is test equipment, not library code.
//!
//! Public but hidden: switchboard-testkit's HTTP front end drives it;
//! nothing here is a stable API.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Write as _};
use std::ops::Deref;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::config::{Era, Fault, LATEST_LEGACY_VERSION, LEGACY_VERSIONS, ServerConfig};
use crate::features::{self, META_LOG_LEVEL, META_SUBSCRIPTION_ID};
use crate::fixture;
use crate::skills::{SKILLS_EXTENSION, Skills};
use crate::tasks::{self, META_RELATED_TASK, TASKS_EXTENSION, TaskStore, TaskWork};
use crate::{SCHEMA_RICH_INPUT_SCHEMA, TINY_PNG_BASE64, id_key};

pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

const INSTRUCTIONS: &str = "Test server for switchboard.";
const STATIC_BLOB_BASE64: &str = "AAECAwQFBgcICQoLDA0ODw==";
const COMPLETION_NAMES: [&str; 3] = ["alice", "bob", "carol"];
/// Upper bound for `blob` / `long_line` sizes (1 GiB).
const MAX_BLOB: u64 = 1 << 30;

/// Children started by `spawn_grandchild`; kept so they are never reaped.
static GRANDCHILDREN: Mutex<Vec<Child>> = Mutex::new(Vec::new());

/// JSON-RPC error codes used by the server.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    pub(crate) const INTERNAL_ERROR: i64 = -32603;
    pub(crate) const RESOURCE_NOT_FOUND: i64 = -32002;
    pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    pub const HEADER_MISMATCH: i64 = -32020;
    pub const SESSION_NOT_FOUND: i64 = -32001;
    pub const REQUEST_CANCELLED: i64 = -32800;
    pub(crate) const URL_ELICITATION_REQUIRED: i64 = -32042;
    pub(crate) const MISSING_CLIENT_CAPABILITY: i64 = -32021;
}

/// How long a session-era server→client request waits for its answer.
const CLIENT_ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug)]
pub struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }
}

/// Which era's rules apply to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Legacy,
    Modern,
}

/// Tool calls that complete asynchronously (run in a spawned task).
#[derive(Debug)]
pub enum AsyncKind {
    Slow {
        ms: u64,
    },
    Progress {
        steps: u64,
        interval_ms: u64,
        /// Characters of filler in each notification's message.
        pad: usize,
        token: Option<Value>,
        /// Minimum log level for the `notifications/message` between steps
        /// (`None`: no log lines).
        log: Option<u8>,
    },
    Hang,
    /// Session era: ask the client (sampling, elicitation, roots) with
    /// server→client requests, then answer.
    Interact {
        tool: String,
        args: Map<String, Value>,
        caps: Value,
    },
    /// `count` log lines (only if `log` allows `info`), then the result.
    Flood {
        count: u64,
        log: Option<u8>,
    },
    /// Stateless era `subscriptions/listen`: acknowledge, then forward the
    /// notifications the filter asked for until cancelled or closed.
    Listen {
        filter: Value,
    },
    /// Session era `tasks/result`: wait for the task to end.
    TaskResult {
        task_id: String,
    },
    /// `--suite-fixture`: logging, progress or server→client requests.
    Fixture(crate::fixture::Job),
}

/// What a `subscriptions/listen` stream receives.
#[derive(Debug)]
enum ListenEvent {
    /// A notification (without the subscription id; added per stream).
    Notify(Value),
    /// End the subscription gracefully (with its result).
    Close,
}

/// One open `subscriptions/listen` stream.
#[derive(Debug)]
struct Listener {
    tools: bool,
    uris: HashSet<String>,
    task_ids: HashSet<String>,
    tx: mpsc::UnboundedSender<ListenEvent>,
}

#[derive(Debug)]
pub struct AsyncJob {
    pub id: Value,
    pub(crate) mode: Mode,
    pub kind: AsyncKind,
}

/// What the read loop must do with one incoming message.
#[derive(Debug)]
pub enum Action {
    /// Nothing to send (notification, stray response).
    None,
    /// Send this complete JSON-RPC message.
    Reply(Value),
    /// `notifications/cancelled` for this request id.
    Cancel(Value),
    /// Terminate the server with this exit code, without answering.
    Exit(i32),
    /// Run a job concurrently (see [`Shared::run_job`]); it produces the reply.
    Async(AsyncJob),
    /// Send this reply, then forget the current HTTP session (the
    /// `forget_session` tool; other transports just send the reply).
    ForgetSession(Value),
}

pub(crate) enum ToolOutcome {
    Done(Value),
    Exit(i32),
    Async(AsyncKind),
    ForgetSession,
}

/// Server-wide data (the catalog, the record file, the `exit-before-init`
/// bookkeeping and the state the feature tools share), shared by all
/// connections / sessions.
#[derive(Debug)]
pub struct Catalog {
    pub config: ServerConfig,
    server_info: Value,
    capabilities: Value,
    /// `server/discover` capabilities (with the tasks extension).
    modern_capabilities: Value,
    tools: Vec<Value>,
    resources: Vec<Value>,
    templates: Vec<Value>,
    prompts: Vec<Value>,
    seen_request: AtomicBool,
    record: Option<Mutex<File>>,
    /// Session-era server→client requests awaiting an answer, by id.
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Ids of server→client requests (server-wide, never reused).
    next_out_id: AtomicU64,
    /// Requests served, by method (the `hits` tool).
    hits: Mutex<HashMap<String, u64>>,
    /// Every call of an MRTR tool: `{id, tool, round}` (the `mrtr_ids` tool).
    mrtr_log: Mutex<Vec<Value>>,
    /// Tools added by `add_tool`, after the fixed ones.
    dyn_tools: Mutex<Vec<Value>>,
    /// Every connection's session-era state, for list-changed and
    /// resource-updated notifications.
    peers: Mutex<Vec<Weak<ConnState>>>,
    /// Open `subscriptions/listen` streams (stateless era).
    listeners: Mutex<Vec<Listener>>,
    /// Tasks of both eras.
    pub(crate) tasks: TaskStore,
    /// The skills extension (`--skills`).
    skills: Option<Skills>,
    /// Its `skills/list` entries.
    skill_entries: Vec<Value>,
}

/// Per-connection (per-session) server state, shared with request tasks.
/// Dereferences to the server-wide [`Catalog`].
#[derive(Debug)]
pub struct Shared {
    pub(crate) catalog: Arc<Catalog>,
    legacy_initialized: AtomicBool,
    pub(crate) conn: Arc<ConnState>,
}

/// Where a connection's unsolicited messages go (stdio, WebSocket and
/// legacy SSE: the connection; Streamable HTTP: the session's GET stream).
pub(crate) type Notifier = Arc<dyn Fn(Value) + Send + Sync>;

/// Session-era state of one connection.
#[derive(Default)]
pub(crate) struct ConnState {
    /// `capabilities` from `initialize`.
    client_caps: Mutex<Value>,
    /// `logging/setLevel` (index into the syslog levels).
    log_level: Mutex<Option<u8>>,
    /// `notifications/roots/list_changed` received.
    roots_changes: AtomicU64,
    /// `needs_url`: 0 = never called, 1 = -32042 sent.
    needs_url: AtomicU8,
    /// `initialize` was answered on this connection.
    legacy: AtomicBool,
    /// URIs from `resources/subscribe`.
    subscribed: Mutex<HashSet<String>>,
    pub(crate) notifier: Mutex<Option<Notifier>>,
}

impl std::fmt::Debug for ConnState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnState")
            .field("client_caps", &self.client_caps)
            .field("log_level", &self.log_level)
            .finish_non_exhaustive()
    }
}

/// Removes a pending server→client request when its waiter goes away.
struct PendingGuard<'a>(&'a Mutex<HashMap<String, oneshot::Sender<Value>>>, String);

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(self.0).remove(&self.1);
    }
}

impl Deref for Shared {
    type Target = Catalog;

    fn deref(&self) -> &Catalog {
        &self.catalog
    }
}

impl Shared {
    pub fn new(config: ServerConfig) -> io::Result<Shared> {
        Ok(Shared::over(Arc::new(Catalog::new(config)?)))
    }

    /// Fresh per-connection state (not initialized) over the same catalog.
    pub fn fork(&self) -> Shared {
        Shared::over(Arc::clone(&self.catalog))
    }

    fn over(catalog: Arc<Catalog>) -> Shared {
        let conn = Arc::<ConnState>::default();
        {
            let mut peers = lock(&catalog.peers);
            peers.retain(|p| p.strong_count() > 0);
            peers.push(Arc::downgrade(&conn));
        }
        Shared {
            catalog,
            legacy_initialized: AtomicBool::new(false),
            conn,
        }
    }

    /// Send this connection's unsolicited (not request-bound) messages to
    /// `notifier`.
    pub fn set_notifier(&self, notifier: Notifier) {
        *lock(&self.conn.notifier) = Some(notifier);
    }

    /// Send a request to the client (session era) on `emit` and wait for
    /// its result. `Err` is a human-readable reason (error answer, timeout).
    ///
    /// # Cancel safety
    /// Dropping the future forgets the request; a late answer is ignored.
    pub(crate) async fn ask_client(
        &self,
        emit: &mut (impl FnMut(Value) + Send),
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = Value::from(self.next_out_id.fetch_add(1, Ordering::Relaxed) + 1);
        let key = id_key(&id);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(key.clone(), tx);
        let _guard = PendingGuard(&self.pending, key);
        emit(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        match tokio::time::timeout(CLIENT_ANSWER_TIMEOUT, rx).await {
            Ok(Ok(mut resp)) => match resp.get_mut("result") {
                Some(result) => Ok(result.take()),
                None => Err(format!("{method} failed: {}", resp["error"])),
            },
            Ok(Err(_)) => Err(format!("{method}: the connection went away")),
            Err(_) => Err(format!(
                "{method}: no answer within {} s",
                CLIENT_ANSWER_TIMEOUT.as_secs()
            )),
        }
    }
}

impl Catalog {
    fn new(config: ServerConfig) -> io::Result<Catalog> {
        let record = match &config.record {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            )),
            None => None,
        };
        let server_info = json!({
            "name": config.name,
            "version": env!("CARGO_PKG_VERSION"),
        });
        let mut caps = Map::new();
        if !config.has_fault(Fault::NoToolsCapability) {
            caps.insert("tools".into(), json!({"listChanged": true}));
        }
        caps.insert(
            "resources".into(),
            json!({"subscribe": true, "listChanged": false}),
        );
        caps.insert("prompts".into(), json!({"listChanged": false}));
        caps.insert("completions".into(), json!({}));
        caps.insert("logging".into(), json!({}));
        let skills = config
            .skills
            .then(|| Skills::new(config.skills_tamper, config.skills_directories));
        let skills_settings = if config.skills_directories {
            json!({"directoryRead": true})
        } else {
            json!({})
        };
        let mut modern_caps = caps.clone();
        modern_caps.insert("extensions".into(), json!({TASKS_EXTENSION: {}}));
        if skills.is_some() {
            // Both eras: a session-era server declares it in initialize.
            caps.insert(
                "extensions".into(),
                json!({SKILLS_EXTENSION: skills_settings.clone()}),
            );
            modern_caps["extensions"]
                .as_object_mut()
                .expect("an object")
                .insert(SKILLS_EXTENSION.into(), skills_settings);
        }
        caps.insert(
            "tasks".into(),
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        );
        let mut tools = builtin_tools();
        tools.extend(features::feature_tools());
        if config.has_fault(Fault::SessionLoss) {
            tools.push(json!({
                "name": "forget_session",
                "description": "Makes the server forget the current HTTP session",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            }));
        }
        tools.extend((0..config.extra_tools).map(|i| {
            json!({
                "name": format!("tool_{i}"),
                "description": format!("Generated tool number {i}"),
                "inputSchema": {"type": "object", "properties": {}},
            })
        }));
        tools.extend(config.named_tools.iter().map(|name| {
            json!({
                "name": name,
                "description": "A tool named on the command line (--extra-tool)",
                "inputSchema": {"type": "object", "properties": {}},
            })
        }));
        let mut resources = vec![
            json!({
                "uri": "test://static/hello",
                "name": "hello",
                "title": "Hello",
                "description": "A static greeting",
                "mimeType": "text/plain",
            }),
            json!({
                "uri": "test://static/blob",
                "name": "blob",
                "title": "Blob",
                "description": "A static binary resource (bytes 0..16)",
                "mimeType": "application/octet-stream",
            }),
        ];
        if config.suite_fixture {
            tools = fixture::tools();
            resources = fixture::resources();
        }
        let skill_entries = skills.as_ref().map(Skills::entries).unwrap_or_default();
        resources.extend(skills.iter().flat_map(Skills::resources));
        if config.apps {
            tools.extend(crate::apps::tools());
            resources.extend(crate::apps::resources());
        }
        if config.probe_app {
            tools.extend(crate::apps::probe_tools());
            resources.push(crate::apps::probe_resource());
        }
        Ok(Catalog {
            server_info,
            capabilities: Value::Object(caps),
            modern_capabilities: Value::Object(modern_caps),
            tools,
            resources,
            templates: if config.suite_fixture {
                fixture::templates()
            } else {
                vec![json!({
                    "uriTemplate": "test://items/{id}",
                    "name": "item",
                    "title": "Item",
                    "description": "An item by id",
                    "mimeType": "text/plain",
                })]
            },
            prompts: if config.suite_fixture {
                fixture::prompts()
            } else {
                vec![
                    json!({
                        "name": "greeting",
                        "title": "Greeting",
                        "description": "Greets someone by name",
                        "arguments": [
                            {"name": "name", "description": "Who to greet", "required": true}
                        ],
                    }),
                    json!({
                        "name": "simple",
                        "title": "Simple",
                        "description": "A prompt without arguments",
                    }),
                ]
            },
            seen_request: AtomicBool::new(false),
            record,
            config,
            pending: Mutex::new(HashMap::new()),
            next_out_id: AtomicU64::new(0),
            hits: Mutex::new(HashMap::new()),
            mrtr_log: Mutex::new(Vec::new()),
            dyn_tools: Mutex::new(Vec::new()),
            peers: Mutex::new(Vec::new()),
            listeners: Mutex::new(Vec::new()),
            tasks: TaskStore::default(),
            skills,
            skill_entries,
        })
    }

    /// Append a raw received message (line or HTTP body) to the record file
    /// (if any).
    pub fn record(&self, line: &[u8]) {
        let Some(file) = &self.record else { return };
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        let res = if line.ends_with(b"\n") {
            file.write_all(line)
        } else {
            file.write_all(line).and_then(|()| file.write_all(b"\n"))
        };
        if let Err(e) = res.and_then(|()| file.flush()) {
            eprintln!("switchboard-testserver: cannot write record file: {e}");
        }
    }
}

impl Shared {
    /// Run the asynchronous part of a request (see [`Action::Async`]):
    /// `emit` receives the request's notifications (progress, log lines) and
    /// server→client requests as they happen (answers come back through
    /// [`Shared::dispatch`]); the returned value is the final response.
    /// Dropping the future cancels the work.
    pub async fn run_job(&self, job: AsyncJob, mut emit: impl FnMut(Value) + Send) -> Value {
        let AsyncJob { id, mode, kind } = job;
        if let AsyncKind::TaskResult { task_id } = &kind {
            return match self.tasks.outcome(task_id).await {
                Ok(Ok(mut result)) => {
                    if let Some(r) = result.as_object_mut() {
                        let meta = r.entry("_meta").or_insert_with(|| json!({}));
                        meta[META_RELATED_TASK] = json!({"taskId": task_id});
                    }
                    self.ok_response(id, mode, result)
                }
                Ok(Err(error)) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                Err(e) => error_response(id, e),
            };
        }
        let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
        let result = match kind {
            AsyncKind::Slow { ms } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text("done".to_owned())
            }
            AsyncKind::Progress {
                steps,
                interval_ms,
                pad,
                token,
                log,
            } => {
                let interval = Duration::from_millis(interval_ms);
                let info = features::level_index("info").unwrap_or(1);
                let filler = "x".repeat(pad);
                for i in 1..=steps {
                    tokio::time::sleep(interval).await;
                    if let Some(token) = &token {
                        let mut note = progress_notification(token, i, steps);
                        if pad > 0 {
                            note["params"]["message"] = json!(format!("step {i} {filler}"));
                        }
                        emit(note);
                    }
                    if i < steps && log.is_some_and(|l| l <= info) {
                        emit(features::log_message(info, json!({"step": i, "of": steps})));
                    }
                }
                text(format!("completed {steps} steps"))
            }
            AsyncKind::Hang => std::future::pending().await,
            AsyncKind::Flood { count, log } => {
                let info = features::level_index("info").unwrap_or(1);
                if log.is_some_and(|l| l <= info) {
                    for i in 0..count {
                        emit(features::log_message(info, json!({"seq": i})));
                    }
                }
                text(format!("flooded {count}"))
            }
            AsyncKind::Interact { tool, args, caps } => {
                self.interact(&tool, &args, &caps, &mut emit).await
            }
            AsyncKind::Listen { filter } => self.listen(&id, &filter, &mut emit).await,
            AsyncKind::Fixture(job) => self.run_fixture(job, &mut emit).await,
            AsyncKind::TaskResult { .. } => unreachable!("handled above"),
        };
        self.ok_response(id, mode, result)
    }

    /// `subscriptions/listen`: acknowledge the part of `filter` the server
    /// honours, forward matching notifications (tagged with the
    /// subscription id), and end with a result when closed by the server.
    async fn listen(
        &self,
        id: &Value,
        filter: &Value,
        emit: &mut (impl FnMut(Value) + Send),
    ) -> Value {
        let tools = filter.get("toolsListChanged").and_then(Value::as_bool) == Some(true);
        let uris: HashSet<String> = filter
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        // Prompts and resources never change here: those types are omitted.
        let mut agreed = Map::new();
        if tools {
            agreed.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if let Some(subs) = filter.get("resourceSubscriptions").filter(|v| v.is_array()) {
            agreed.insert("resourceSubscriptions".into(), subs.clone());
        }
        let task_ids: HashSet<String> = filter
            .get("taskIds")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(ids) = filter.get("taskIds").filter(|v| v.is_array()) {
            agreed.insert("taskIds".into(), ids.clone());
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        lock(&self.listeners).push(Listener {
            tools,
            uris,
            task_ids,
            tx,
        });
        let sub_meta = json!({META_SUBSCRIPTION_ID: id});
        emit(json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": sub_meta, "notifications": agreed},
        }));
        while let Some(ListenEvent::Notify(mut msg)) = rx.recv().await {
            match msg.get_mut("params").and_then(Value::as_object_mut) {
                Some(params) => {
                    params.insert("_meta".into(), sub_meta.clone());
                }
                None => msg["params"] = json!({"_meta": sub_meta}),
            }
            emit(msg);
        }
        json!({"_meta": sub_meta})
    }

    /// Tell every connection and listen stream that wants it: `tools` for
    /// a tools list change, `uri` for a resource update. Returns how many
    /// were told.
    pub(crate) fn broadcast(&self, msg: &Value, tools: bool, uri: Option<&str>) -> usize {
        let mut told = 0;
        let peers: Vec<Arc<ConnState>> =
            lock(&self.peers).iter().filter_map(Weak::upgrade).collect();
        for peer in peers {
            let wants = peer.legacy.load(Ordering::Relaxed)
                && (tools || uri.is_some_and(|u| lock(&peer.subscribed).contains(u)));
            let notifier = lock(&peer.notifier).clone();
            if wants && let Some(notify) = notifier {
                notify(msg.clone());
                told += 1;
            }
        }
        let mut listeners = lock(&self.listeners);
        listeners.retain(|l| !l.tx.is_closed());
        for l in listeners.iter() {
            if (tools && l.tools) || uri.is_some_and(|u| l.uris.contains(u)) {
                let _ = l.tx.send(ListenEvent::Notify(msg.clone()));
                told += 1;
            }
        }
        told
    }

    /// End every listen stream gracefully; returns how many there were.
    fn close_listeners(&self) -> usize {
        let mut listeners = lock(&self.listeners);
        let n = listeners.iter().filter(|l| !l.tx.is_closed()).count();
        for l in listeners.drain(..) {
            let _ = l.tx.send(ListenEvent::Close);
        }
        n
    }

    /// Session era: ask for each input the tool needs with a server→client
    /// request, in sequence, then build the tool result.
    async fn interact(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        caps: &Value,
        emit: &mut (impl FnMut(Value) + Send),
    ) -> Value {
        let keys = features::interactive_keys(tool).unwrap_or(&[]);
        if let Some(err) = keys
            .iter()
            .find_map(|k| features::missing_capability(k, args, caps))
        {
            return err;
        }
        let mut got = Map::new();
        for key in keys.iter().copied() {
            let elicitation_id = (key == "ask_url").then(|| {
                format!(
                    "elicit-{}",
                    self.next_out_id.fetch_add(1, Ordering::Relaxed) + 1
                )
            });
            let mut req = features::input_request(key, args, false, elicitation_id.as_deref());
            let method = req["method"].as_str().unwrap_or_default().to_owned();
            let answer = match self.ask_client(emit, &method, req["params"].take()).await {
                Ok(a) => a,
                Err(e) => return features::tool_error(e),
            };
            if let Some(eid) = &elicitation_id
                && answer.get("action").and_then(Value::as_str) == Some("accept")
            {
                emit(json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/elicitation/complete",
                    "params": {"elicitationId": eid},
                }));
            }
            got.insert(key.to_owned(), answer);
        }
        features::finish(tool, &got)
    }

    /// Handle one parsed JSON-RPC message (not a batch): everything that can
    /// be answered at once is answered here; slow tool calls come back as
    /// [`Action::Async`], to be completed with [`Catalog::run_job`]. Used by
    /// every transport (stdio, WebSocket, HTTP+SSE, Streamable HTTP).
    pub fn dispatch(&self, msg: Value) -> Action {
        let Value::Object(mut msg) = msg else {
            return Action::Reply(error_response(
                Value::Null,
                RpcError::new(code::INVALID_REQUEST, "Invalid Request"),
            ));
        };
        let id = msg.remove("id");
        let method = match msg.remove("method") {
            Some(Value::String(m)) => m,
            Some(_) => {
                return Action::Reply(error_response(
                    id.unwrap_or(Value::Null),
                    RpcError::new(
                        code::INVALID_REQUEST,
                        "Invalid Request: method must be a string",
                    ),
                ));
            }
            None => {
                if let Some(id) = &id
                    && (msg.contains_key("result") || msg.contains_key("error"))
                {
                    // An answer to a server→client request; one to a request
                    // we never sent (or gave up on) is ignored.
                    let waiter = lock(&self.pending).remove(&id_key(id));
                    if let Some(tx) = waiter {
                        msg.insert("id".into(), id.clone());
                        let _ = tx.send(Value::Object(msg));
                    }
                    return Action::None;
                }
                return Action::Reply(error_response(
                    id.unwrap_or(Value::Null),
                    RpcError::new(code::INVALID_REQUEST, "Invalid Request: missing method"),
                ));
            }
        };
        let params = msg.remove("params");

        let Some(id) = id else {
            // Notification.
            if method == "notifications/cancelled" {
                // Counted like a request, for `hits` (did a cancellation
                // get here?).
                *lock(&self.hits).entry(method.clone()).or_insert(0) += 1;
                if let Some(request_id) =
                    params.and_then(|mut p| p.get_mut("requestId").map(Value::take))
                {
                    return Action::Cancel(request_id);
                }
            }
            if method == "notifications/roots/list_changed" {
                self.conn.roots_changes.fetch_add(1, Ordering::Relaxed);
            }
            return Action::None;
        };
        {
            let mut hits = lock(&self.hits);
            match hits.get_mut(&method) {
                Some(n) => *n += 1,
                None => {
                    hits.insert(method.clone(), 1);
                }
            }
        }

        if self.config.has_fault(Fault::ExitBeforeInit)
            && !self.seen_request.swap(true, Ordering::Relaxed)
            && method != "initialize"
        {
            eprintln!(
                "switchboard-testserver: first request was {method:?}, not \"initialize\"; exiting"
            );
            return Action::Exit(1);
        }

        let era = self.config.era;
        let mode = match method.as_str() {
            "initialize" => {
                return Action::Reply(match era {
                    Era::Modern => error_response(
                        id,
                        RpcError::new(
                            code::METHOD_NOT_FOUND,
                            format!(
                                "Method not found: initialize. This server only supports the \
                                 stateless protocol versions {} (use server/discover and \
                                 per-request _meta)",
                                self.config.modern_versions.join(", ")
                            ),
                        )
                        .with_data(json!({"supported": self.config.modern_versions})),
                    ),
                    Era::Legacy | Era::Dual => self.initialize(id, params.as_ref()),
                });
            }
            "server/discover" if era == Era::Legacy => {
                return Action::Reply(error_response(
                    id,
                    RpcError::new(code::METHOD_NOT_FOUND, "Method not found"),
                ));
            }
            "server/discover" => Mode::Modern,
            _ => match era {
                Era::Legacy => Mode::Legacy,
                Era::Modern => Mode::Modern,
                Era::Dual => {
                    if has_modern_meta(params.as_ref())
                        || !(method == "ping" || self.legacy_initialized.load(Ordering::Relaxed))
                    {
                        Mode::Modern
                    } else {
                        Mode::Legacy
                    }
                }
            },
        };

        match mode {
            Mode::Modern => {
                if let Err(e) = self.validate_modern(params.as_ref()) {
                    return Action::Reply(error_response(id, e));
                }
            }
            Mode::Legacy => {
                if method != "ping" && !self.legacy_initialized.load(Ordering::Relaxed) {
                    return Action::Reply(error_response(
                        id,
                        RpcError::new(code::INVALID_REQUEST, "Server not initialized"),
                    ));
                }
            }
        }

        let result = match method.as_str() {
            "server/discover" => Ok(json!({
                "supportedVersions": self.config.modern_versions,
                "capabilities": self.modern_capabilities,
                "instructions": INSTRUCTIONS,
            })),
            "ping" if mode == Mode::Modern && self.config.suite_fixture => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                "Method not found: ping (removed in the stateless era)",
            )),
            "ping" => Ok(json!({})),
            "logging/setLevel" if mode == Mode::Legacy => {
                match params
                    .as_ref()
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str)
                    .and_then(features::level_index)
                {
                    Some(level) => {
                        *lock(&self.conn.log_level) = Some(level);
                        Ok(json!({}))
                    }
                    None => Err(RpcError::invalid_params(
                        "Invalid params: level must be a syslog level name",
                    )),
                }
            }
            "tools/list" => {
                let dyn_tools = lock(&self.dyn_tools);
                if dyn_tools.is_empty() {
                    drop(dyn_tools);
                    self.paginate(&self.tools, "tools", params.as_ref())
                } else {
                    let all: Vec<Value> =
                        self.tools.iter().chain(dyn_tools.iter()).cloned().collect();
                    drop(dyn_tools);
                    self.paginate(&all, "tools", params.as_ref())
                }
            }
            "resources/subscribe" | "resources/unsubscribe" if mode == Mode::Legacy => match params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(Value::as_str)
            {
                Some(uri) => {
                    let mut subscribed = lock(&self.conn.subscribed);
                    if method == "resources/subscribe" {
                        subscribed.insert(uri.to_owned());
                    } else {
                        subscribed.remove(uri);
                    }
                    Ok(json!({}))
                }
                None => Err(RpcError::invalid_params("Invalid params: missing uri")),
            },
            "subscriptions/listen" if mode == Mode::Modern => {
                let filter = params
                    .as_ref()
                    .and_then(|p| p.get("notifications"))
                    .filter(|f| f.is_object())
                    .cloned();
                match filter {
                    Some(filter)
                        if filter.get("taskIds").is_some()
                            && !tasks::client_wants_tasks(&self.request_caps(params.as_ref())) =>
                    {
                        Err(tasks::missing_extension())
                    }
                    Some(filter) => {
                        return Action::Async(AsyncJob {
                            id,
                            mode,
                            kind: AsyncKind::Listen { filter },
                        });
                    }
                    None => Err(RpcError::invalid_params(
                        "Invalid params: notifications must be an object",
                    )),
                }
            }
            "tools/call" => match self.call_tool(&id, mode, params) {
                Ok(ToolOutcome::Done(v)) => Ok(v),
                Ok(ToolOutcome::Exit(code)) => return Action::Exit(code),
                Ok(ToolOutcome::Async(kind)) => return Action::Async(AsyncJob { id, mode, kind }),
                Ok(ToolOutcome::ForgetSession) => {
                    let result =
                        json!({"content": [{"type": "text", "text": "session forgotten"}]});
                    return Action::ForgetSession(self.ok_response(id, mode, result));
                }
                Err(e) => Err(e),
            },
            "tasks/get" | "tasks/cancel" | "tasks/update" | "tasks/list" | "tasks/result"
                if mode == Mode::Legacy || method != "tasks/list" && method != "tasks/result" =>
            {
                let task_id = params
                    .as_ref()
                    .and_then(|p| p.get("taskId"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                match (mode, method.as_str(), task_id) {
                    (Mode::Modern, _, _)
                        if !tasks::client_wants_tasks(&self.request_caps(params.as_ref())) =>
                    {
                        Err(tasks::missing_extension())
                    }
                    (Mode::Legacy, "tasks/list", _) => Ok(self.tasks.list()),
                    (_, _, None) => Err(RpcError::invalid_params(
                        "Invalid params: taskId must be a string",
                    )),
                    (_, "tasks/get", Some(t)) => self.tasks.get(&t),
                    (_, "tasks/cancel", Some(t)) => {
                        let r = self.tasks.cancel(&t);
                        if r.is_ok() {
                            self.task_changed(&t);
                        }
                        r
                    }
                    (Mode::Legacy, "tasks/result", Some(task_id)) => {
                        return Action::Async(AsyncJob {
                            id,
                            mode,
                            kind: AsyncKind::TaskResult { task_id },
                        });
                    }
                    (Mode::Modern, "tasks/update", Some(t)) => {
                        let responses = params
                            .as_ref()
                            .and_then(|p| p.get("inputResponses"))
                            .and_then(Value::as_object)
                            .cloned();
                        match responses {
                            Some(r) => self.tasks.update(&t, r).map(|()| json!({})),
                            None => Err(RpcError::invalid_params(
                                "Invalid params: inputResponses must be an object",
                            )),
                        }
                    }
                    _ => Err(RpcError::new(
                        code::METHOD_NOT_FOUND,
                        format!("Method not found: {method}"),
                    )),
                }
            }
            "resources/list" => self.paginate(&self.resources, "resources", params.as_ref()),
            "resources/templates/list" => {
                self.paginate(&self.templates, "resourceTemplates", params.as_ref())
            }
            "resources/read" => {
                let uri = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str);
                match (&self.skills, uri) {
                    _ if self.config.suite_fixture
                        && uri.is_some_and(|u| u.starts_with("test://")) =>
                    {
                        fixture::read_resource(params.as_ref(), mode)
                    }
                    (Some(skills), Some(uri)) if uri.starts_with("skill://") => {
                        match skills.read(uri) {
                            Some(content) => Ok(json!({"contents": [content]})),
                            None => Err(RpcError::new(
                                match mode {
                                    Mode::Legacy => code::RESOURCE_NOT_FOUND,
                                    Mode::Modern => code::INVALID_PARAMS,
                                },
                                "Resource not found",
                            )
                            .with_data(json!({"uri": uri}))),
                        }
                    }
                    _ => match uri
                        .filter(|_| self.config.apps)
                        .and_then(crate::apps::read)
                        .or_else(|| {
                            uri.filter(|_| self.config.probe_app)
                                .and_then(crate::apps::read_probe)
                        }) {
                        Some(view) => Ok(view),
                        None => read_resource(params.as_ref(), mode),
                    },
                }
            }
            "resources/directory/read" if self.config.skills_directories => {
                let uri = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str);
                match self
                    .skills
                    .as_ref()
                    .zip(uri)
                    .and_then(|(s, u)| s.directory(u))
                {
                    Some(resources) => Ok(json!({"resources": resources})),
                    None => Err(RpcError::invalid_params(
                        "Invalid params: not a directory of this server",
                    )),
                }
            }
            "skills/list" if self.skills.is_some() => {
                self.paginate(&self.skill_entries, "skills", params.as_ref())
            }
            "skills/get" if self.skills.is_some() => {
                let uri = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str);
                match self.skills.as_ref().zip(uri).and_then(|(s, u)| s.get(u)) {
                    Some(skill) => Ok(json!({"skill": skill})),
                    None => Err(RpcError::invalid_params(
                        "Invalid params: no skill with that uri",
                    )),
                }
            }
            "prompts/list" => self.paginate(&self.prompts, "prompts", params.as_ref()),
            "prompts/get" if self.config.suite_fixture => {
                self.fixture_prompt(mode, params.as_ref())
            }
            "prompts/get" => get_prompt(params.as_ref()),
            "completion/complete" if self.config.suite_fixture => {
                Ok(fixture::complete(params.as_ref()))
            }
            "completion/complete" => Ok(complete(params.as_ref())),
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        };
        Action::Reply(match result {
            Ok(mut result) => {
                if mode == Mode::Modern {
                    self.add_cache_hints(&method, &mut result);
                }
                self.ok_response(id, mode, result)
            }
            Err(e) => error_response(id, e),
        })
    }

    /// `--cache-ttl-ms`: caching hints on the cacheable results of the
    /// stateless era.
    fn add_cache_hints(&self, method: &str, result: &mut Value) {
        let Some(ttl) = self.config.cache_ttl_ms else {
            return;
        };
        let default_scope = match method {
            "server/discover"
            | "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "skills/list"
            | "skills/get" => "public",
            "resources/read" => "private",
            _ => return,
        };
        if let Some(map) = result.as_object_mut() {
            let scope = self.config.cache_scope.as_deref().unwrap_or(default_scope);
            map.insert("ttlMs".into(), Value::from(ttl));
            map.insert("cacheScope".into(), Value::from(scope));
        }
    }

    fn initialize(&self, id: Value, params: Option<&Value>) -> Value {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let version = match (&self.config.legacy_version, requested) {
            (Some(forced), _) => forced.as_str(),
            (None, Some(v)) if LEGACY_VERSIONS.contains(&v) => v,
            _ => LATEST_LEGACY_VERSION,
        };
        self.legacy_initialized.store(true, Ordering::Relaxed);
        self.conn.legacy.store(true, Ordering::Relaxed);
        *lock(&self.conn.client_caps) = params
            .and_then(|p| p.get("capabilities"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let result = json!({
            "protocolVersion": version,
            "capabilities": self.capabilities,
            "serverInfo": self.server_info,
            "instructions": INSTRUCTIONS,
        });
        self.ok_response(id, Mode::Legacy, result)
    }
}

/// Whether request params carry the modern per-request `_meta` fields.
pub fn has_modern_meta(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(|m| {
            m.contains_key(META_PROTOCOL_VERSION) || m.contains_key(META_CLIENT_CAPABILITIES)
        })
}

impl Catalog {
    pub fn validate_modern(&self, params: Option<&Value>) -> Result<(), RpcError> {
        let meta = params
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object);
        let version = meta.and_then(|m| m.get(META_PROTOCOL_VERSION));
        let caps = meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES));
        let mut missing = Vec::new();
        if version.is_none() {
            missing.push(META_PROTOCOL_VERSION);
        }
        if caps.is_none() {
            missing.push(META_CLIENT_CAPABILITIES);
        }
        if !missing.is_empty() {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: missing required _meta field(s): {}",
                missing.join(", ")
            ))
            .with_data(json!({"missing": missing})));
        }
        let Some(Value::String(version)) = version else {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: _meta field {META_PROTOCOL_VERSION} must be a string"
            )));
        };
        if !caps.is_some_and(Value::is_object) {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: _meta field {META_CLIENT_CAPABILITIES} must be an object"
            )));
        }
        if let Some(level) = meta.and_then(|m| m.get(META_LOG_LEVEL))
            && level
                .as_str()
                .is_none_or(|l| features::level_index(l).is_none())
        {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: _meta field {META_LOG_LEVEL} must be a syslog level name"
            )));
        }
        if !self.config.modern_versions.iter().any(|v| v == version) {
            return Err(RpcError::new(
                code::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .with_data(json!({
                "supported": self.config.modern_versions,
                "requested": version,
            })));
        }
        Ok(())
    }

    /// Build a success response; modern results get `resultType` and
    /// `_meta.io.modelcontextprotocol/serverInfo`.
    pub(crate) fn ok_response(&self, id: Value, mode: Mode, result: Value) -> Value {
        let result = match (mode, result) {
            (Mode::Modern, Value::Object(map)) => {
                let mut out = Map::with_capacity(map.len() + 2);
                out.insert("resultType".into(), Value::from("complete"));
                out.extend(map);
                match out.get_mut("_meta") {
                    Some(Value::Object(meta)) => {
                        meta.insert(META_SERVER_INFO.into(), self.server_info.clone());
                    }
                    _ => {
                        let mut meta = Map::with_capacity(1);
                        meta.insert(META_SERVER_INFO.into(), self.server_info.clone());
                        out.insert("_meta".into(), Value::Object(meta));
                    }
                }
                Value::Object(out)
            }
            (_, result) => result,
        };
        let mut msg = Map::with_capacity(3);
        msg.insert("jsonrpc".into(), Value::from("2.0"));
        msg.insert("id".into(), id);
        msg.insert("result".into(), result);
        Value::Object(msg)
    }

    fn paginate(
        &self,
        items: &[Value],
        key: &str,
        params: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let start = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => c
                .strip_prefix("cursor-")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n <= items.len())
                .ok_or_else(|| RpcError::invalid_params("Invalid cursor"))?,
            Some(_) => return Err(RpcError::invalid_params("Invalid cursor")),
        };
        let end = match self.config.page_size {
            Some(n) => start.saturating_add(n).min(items.len()),
            None => items.len(),
        };
        let mut result = Map::with_capacity(2);
        result.insert(key.into(), Value::Array(items[start..end].to_vec()));
        if self.config.has_fault(Fault::RepeatCursor) {
            let next = self.config.page_size.unwrap_or(0).min(items.len());
            result.insert("nextCursor".into(), Value::from(format!("cursor-{next}")));
        } else if end < items.len() {
            result.insert("nextCursor".into(), Value::from(format!("cursor-{end}")));
        }
        Ok(Value::Object(result))
    }
}

impl Catalog {
    /// Announce a task's new state: session era `notifications/tasks/status`
    /// to the connection that created it; stateless era
    /// `notifications/tasks` to listen streams that asked for its id.
    pub(crate) fn task_changed(&self, task_id: &str) {
        let Some((modern, owner, view)) = self.tasks.snapshot(task_id) else {
            return;
        };
        if modern {
            let msg = json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": view});
            let mut listeners = lock(&self.listeners);
            listeners.retain(|l| !l.tx.is_closed());
            for l in listeners.iter().filter(|l| l.task_ids.contains(task_id)) {
                let _ = l.tx.send(ListenEvent::Notify(msg.clone()));
            }
        } else if let Some(owner) = owner.upgrade() {
            let notifier = lock(&owner.notifier).clone();
            if let Some(notify) = notifier {
                notify(
                    json!({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                              "params": view}),
                );
            }
        }
    }

    /// `_meta` client capabilities of a (stateless era) request.
    fn request_caps(&self, params: Option<&Value>) -> Value {
        params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
            .cloned()
            .unwrap_or_else(|| json!({}))
    }
}

impl Shared {
    /// A call of a task tool (`slow_task`, `must_task`, `input_task`), or of
    /// another tool with a session-era `task` param: a task when asked for
    /// (session era) or allowed (stateless era), else `None` (run normally).
    fn call_task_tool(
        &self,
        mode: Mode,
        name: &str,
        args: &Map<String, Value>,
        params: &Map<String, Value>,
    ) -> Result<Option<ToolOutcome>, RpcError> {
        let support = match name {
            "slow_task" | "input_task" => "optional",
            "must_task" => "required",
            _ => "forbidden",
        };
        let use_task = match mode {
            Mode::Legacy => params.get("task").is_some_and(Value::is_object),
            Mode::Modern => {
                support != "forbidden" && tasks::client_wants_tasks(&self.client_caps(mode, params))
            }
        };
        if !use_task {
            return match (mode, support) {
                (Mode::Legacy, "required") => Err(RpcError::new(
                    code::METHOD_NOT_FOUND,
                    format!("Method not found: tool {name} must be called as a task"),
                )),
                (Mode::Modern, "required") => Err(tasks::missing_extension()),
                _ => Ok(None),
            };
        }
        if support == "forbidden" {
            return Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: tool {name} does not support tasks"),
            ));
        }
        let work = match name {
            "input_task" if mode == Mode::Legacy => {
                return Ok(Some(ToolOutcome::Done(features::tool_error(
                    "input_task needs tasks/update, which only the stateless era has".to_owned(),
                ))));
            }
            "input_task" => {
                if let Some(err) =
                    features::missing_capability("ask", args, &self.client_caps(mode, params))
                {
                    return Ok(Some(ToolOutcome::Done(err)));
                }
                TaskWork::Input
            }
            _ => TaskWork::Sleep {
                ms: args.get("ms").and_then(Value::as_u64).unwrap_or(100),
            },
        };
        let owner = Arc::downgrade(&self.conn);
        let created = self
            .tasks
            .create(&self.catalog, mode == Mode::Modern, owner, work);
        Ok(Some(ToolOutcome::Done(created)))
    }

    /// The client's capabilities for this request: `_meta` in the stateless
    /// era, `initialize` in the session era.
    pub(crate) fn client_caps(&self, mode: Mode, params: &Map<String, Value>) -> Value {
        match mode {
            Mode::Modern => params
                .get("_meta")
                .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
                .cloned()
                .unwrap_or_else(|| json!({})),
            Mode::Legacy => lock(&self.conn.client_caps).clone(),
        }
    }

    /// The minimum level of log lines for this request: `_meta` in the
    /// stateless era (absent: none at all), `logging/setLevel` in the
    /// session era.
    pub(crate) fn log_level(&self, mode: Mode, params: &Map<String, Value>) -> Option<u8> {
        match mode {
            Mode::Modern => params
                .get("_meta")
                .and_then(|m| m.get(META_LOG_LEVEL))
                .and_then(Value::as_str)
                .and_then(features::level_index),
            Mode::Legacy => *lock(&self.conn.log_level),
        }
    }

    /// A call of an MRTR-capable tool: the stateless era answers at once
    /// (`input_required` or the result), the session era asks the client
    /// with server→client requests in a job.
    fn call_interactive(
        &self,
        id: &Value,
        mode: Mode,
        name: &str,
        args: Map<String, Value>,
        params: &mut Map<String, Value>,
    ) -> Result<ToolOutcome, RpcError> {
        let caps = self.client_caps(mode, params);
        if mode == Mode::Legacy {
            lock(&self.mrtr_log).push(json!({"id": id, "tool": name, "round": 0}));
            return Ok(match name {
                "state_only" | "forever" => ToolOutcome::Done(features::tool_error(format!(
                    "{name} only exists in the stateless era (2026-07-28)"
                ))),
                _ => ToolOutcome::Async(AsyncKind::Interact {
                    tool: name.to_owned(),
                    args,
                    caps,
                }),
            });
        }
        let state = match params.remove("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => {
                let state = features::open_state(&s)?;
                if state.get("tool").and_then(Value::as_str) != Some(name) {
                    return Err(RpcError::invalid_params(format!(
                        "Invalid params: requestState was not issued for tool {name}"
                    )));
                }
                if state.get("args").and_then(Value::as_str)
                    != Some(features::args_digest(&args).as_str())
                {
                    return Err(RpcError::invalid_params(
                        "Invalid params: requestState was issued for other arguments",
                    ));
                }
                if state.get("id") == Some(id) {
                    return Err(RpcError::new(
                        code::INVALID_REQUEST,
                        "Invalid Request: a retry must use a new JSON-RPC id, not the id of \
                         the request that returned input_required",
                    ));
                }
                Some(state)
            }
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: requestState must be a string",
                ));
            }
        };
        let responses = match params.remove("inputResponses") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: inputResponses must be an object",
                ));
            }
        };
        if responses.is_some() && state.is_none() {
            return Err(RpcError::invalid_params(
                "Invalid params: inputResponses without the requestState they answer",
            ));
        }
        let round = state
            .as_ref()
            .and_then(|s| s.get("round"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        lock(&self.mrtr_log).push(json!({"id": id, "tool": name, "round": round}));
        Ok(ToolOutcome::Done(features::modern_round(
            name,
            &args,
            &caps,
            id,
            state,
            responses.as_ref(),
        )))
    }

    fn call_tool(
        &self,
        id: &Value,
        mode: Mode,
        params: Option<Value>,
    ) -> Result<ToolOutcome, RpcError> {
        let mut params = match params {
            Some(Value::Object(p)) => p,
            _ => {
                return Err(RpcError::invalid_params(
                    "Invalid params: expected an object",
                ));
            }
        };
        let name = match params.remove("name") {
            Some(Value::String(n)) => n,
            _ => {
                return Err(RpcError::invalid_params(
                    "Invalid params: missing tool name",
                ));
            }
        };
        let args = match params.remove("arguments") {
            Some(Value::Object(a)) => a,
            None | Some(Value::Null) => Map::new(),
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "Invalid arguments for tool {name}: arguments must be an object"
                )));
            }
        };
        let text = |t: String| ToolOutcome::Done(json!({"content": [{"type": "text", "text": t}]}));
        if self.config.suite_fixture && crate::suite_tasks::is_task_tool(&name) {
            return self.suite_task_call(mode, &name, args, params);
        }
        if self.config.suite_fixture
            && (name.starts_with("test_") || name == "json_schema_2020_12_tool")
        {
            return self.fixture_call(mode, &name, args, params);
        }
        if let Some(outcome) = self.call_task_tool(mode, &name, &args, &params)? {
            return Ok(outcome);
        }
        Ok(match name.as_str() {
            "echo" => {
                let t = match args.get("text") {
                    Some(Value::String(s)) => s.clone(),
                    _ => return Err(bad_arg(&name, "text", "a string")),
                };
                text(t)
            }
            "add" => {
                let a = args.get("a").filter(|v| v.is_number());
                let b = args.get("b").filter(|v| v.is_number());
                let (Some(a), Some(b)) = (a, b) else {
                    return Err(RpcError::invalid_params(format!(
                        "Invalid arguments for tool {name}: 'a' and 'b' must be numbers"
                    )));
                };
                let sum = match (a.as_i64(), b.as_i64()) {
                    (Some(x), Some(y)) if x.checked_add(y).is_some() => Value::from(x + y),
                    _ => Value::from(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
                };
                ToolOutcome::Done(json!({
                    "content": [{"type": "text", "text": sum.to_string()}],
                    "structuredContent": {"sum": sum},
                }))
            }
            "blob" | "long_line" => {
                let size = int_arg(&args, &name, "size")?;
                if size > MAX_BLOB {
                    return Err(RpcError::invalid_params(format!(
                        "Invalid arguments for tool {name}: size must be at most {MAX_BLOB}"
                    )));
                }
                text("x".repeat(size as usize))
            }
            "slow" => ToolOutcome::Async(AsyncKind::Slow {
                ms: int_arg(&args, &name, "ms")?,
            }),
            "progress" => ToolOutcome::Async(AsyncKind::Progress {
                steps: int_arg(&args, &name, "steps")?,
                interval_ms: match (args.get("interval_ms"), args.get("delay_ms")) {
                    (None, None) => 0,
                    (Some(_), _) => int_arg(&args, &name, "interval_ms")?,
                    (None, Some(_)) => int_arg(&args, &name, "delay_ms")?,
                },
                pad: match args.get("pad") {
                    None => 0,
                    Some(_) => usize::try_from(int_arg(&args, &name, "pad")?).unwrap_or(0),
                },
                log: self.log_level(mode, &params),
                token: params
                    .get_mut("_meta")
                    .and_then(|m| m.get_mut("progressToken"))
                    .map(Value::take),
            }),
            "flood" => ToolOutcome::Async(AsyncKind::Flood {
                count: int_arg(&args, &name, "count")?,
                // The session era logs unless told otherwise; 2026-07-28
                // only when the request asks for a level.
                log: match mode {
                    Mode::Legacy => Some(self.log_level(mode, &params).unwrap_or(0)),
                    Mode::Modern => self.log_level(mode, &params),
                },
            }),
            "sample" | "ask" | "ask_url" | "roots" | "multi" | "state_only" | "forever" => {
                if name == "sample" && !args.get("prompt").is_some_and(Value::is_string) {
                    return Err(bad_arg(&name, "prompt", "a string"));
                }
                return self.call_interactive(id, mode, &name, args, &mut params);
            }
            "needs_url" => match mode {
                Mode::Modern => ToolOutcome::Done(features::tool_error(
                    "needs_url only exists in the session era (2026-07-28 has no \
                     URLElicitationRequiredError)"
                        .to_owned(),
                )),
                Mode::Legacy if self.conn.needs_url.swap(1, Ordering::Relaxed) == 0 => {
                    let eid = format!(
                        "needs-url-{}",
                        self.next_out_id.fetch_add(1, Ordering::Relaxed) + 1
                    );
                    return Err(RpcError::new(
                        code::URL_ELICITATION_REQUIRED,
                        "This request requires more information.",
                    )
                    .with_data(json!({"elicitations": [{
                        "mode": "url",
                        "elicitationId": eid,
                        "url": features::CONSENT_URL,
                        "message": "Please open the consent page, then call needs_url again",
                    }]})));
                }
                Mode::Legacy => text("authorized".to_owned()),
            },
            "roots_changes" => text(self.conn.roots_changes.load(Ordering::Relaxed).to_string()),
            "mrtr_ids" => {
                let calls = Value::Array(lock(&self.mrtr_log).clone());
                ToolOutcome::Done(json!({
                    "content": [{"type": "text", "text": calls.to_string()}],
                    "structuredContent": {"calls": calls},
                }))
            }
            "add_tool" => {
                let name = {
                    let mut dyn_tools = lock(&self.dyn_tools);
                    let name = format!("dynamic_{}", dyn_tools.len());
                    dyn_tools.push(json!({
                        "name": name,
                        "description": "A tool added by add_tool",
                        "inputSchema": {"type": "object", "properties": {}},
                    }));
                    name
                };
                let told = self.broadcast(
                    &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                    true,
                    None,
                );
                ToolOutcome::Done(json!({
                    "content": [{"type": "text", "text": format!("added {name}")}],
                    "structuredContent": {"name": name, "notified": told},
                }))
            }
            "touch" => {
                let Some(uri) = args.get("uri").and_then(Value::as_str) else {
                    return Err(bad_arg(&name, "uri", "a string"));
                };
                let told = self.broadcast(
                    &json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                            "params": {"uri": uri}}),
                    false,
                    Some(uri),
                );
                ToolOutcome::Done(json!({
                    "content": [{"type": "text", "text": format!("touched {uri}")}],
                    "structuredContent": {"notified": told},
                }))
            }
            "close_subscriptions" => text(format!("closed {}", self.close_listeners())),
            "slow_task" | "must_task" => ToolOutcome::Async(AsyncKind::Slow {
                ms: args.get("ms").and_then(Value::as_u64).unwrap_or(100),
            }),
            "input_task" => text("input_task only asks for input when run as a task".to_owned()),
            "hits" => {
                let hits = lock(&self.hits);
                match args.get("method").and_then(Value::as_str) {
                    Some(method) => {
                        let n = hits.get(method).copied().unwrap_or(0);
                        ToolOutcome::Done(json!({
                            "content": [{"type": "text", "text": n.to_string()}],
                            "structuredContent": {"method": method, "count": n},
                        }))
                    }
                    None => {
                        let all = json!(*hits);
                        ToolOutcome::Done(json!({
                            "content": [{"type": "text", "text": all.to_string()}],
                            "structuredContent": {"hits": all},
                        }))
                    }
                }
            }
            "weather" => ToolOutcome::Done(features::weather(false)),
            "bad_weather" => ToolOutcome::Done(features::weather(true)),
            "hang" => ToolOutcome::Async(AsyncKind::Hang),
            "image" => ToolOutcome::Done(json!({
                "content": [
                    {"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png"},
                    {"type": "text", "text": "a 1x1 PNG image"},
                ],
            })),
            "error" => ToolOutcome::Done(json!({
                "content": [{"type": "text", "text": "something went wrong"}],
                "isError": true,
            })),
            "fail" => {
                return Err(RpcError::new(
                    code::INTERNAL_ERROR,
                    "Internal error: the fail tool always fails",
                ));
            }
            "exit" => {
                let code = match args.get("code").and_then(Value::as_i64) {
                    Some(c) => i32::try_from(c).map_err(|_| bad_arg(&name, "code", "an i32"))?,
                    None => return Err(bad_arg(&name, "code", "an integer")),
                };
                eprintln!("exiting with code {code}");
                ToolOutcome::Exit(code)
            }
            "spawn_grandchild" => {
                let child = Command::new("sleep")
                    .arg("300")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| {
                        RpcError::new(code::INTERNAL_ERROR, format!("cannot spawn sleep: {e}"))
                    })?;
                let pid = child.id();
                GRANDCHILDREN
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(child);
                ToolOutcome::Done(json!({
                    "content": [{"type": "text", "text": pid.to_string()}],
                    "structuredContent": {"pid": pid, "serverPid": std::process::id()},
                }))
            }
            "schema_rich" => text(Value::Object(args).to_string()),
            "forget_session" if self.config.has_fault(Fault::SessionLoss) => {
                ToolOutcome::ForgetSession
            }
            _ if name
                .strip_prefix("dynamic_")
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|i| i < lock(&self.dyn_tools).len()) =>
            {
                text(format!("{name} called"))
            }
            _ if self.config.named_tools.contains(&name) => text(format!("{name} called")),
            _ if (self.config.apps && crate::apps::is_tool(&name))
                || (self.config.probe_app && crate::apps::is_probe_tool(&name)) =>
            {
                ToolOutcome::Done(crate::apps::call(&name, &args))
            }
            _ => match name
                .strip_prefix("tool_")
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(i) if i < self.config.extra_tools => text(format!("tool_{i} called")),
                _ => return Err(RpcError::invalid_params(format!("Unknown tool: {name}"))),
            },
        })
    }
}

fn bad_arg(tool: &str, arg: &str, expected: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "Invalid arguments for tool {tool}: '{arg}' must be {expected}"
    ))
}

fn int_arg(args: &Map<String, Value>, tool: &str, arg: &str) -> Result<u64, RpcError> {
    let v = args.get(arg);
    v.and_then(Value::as_u64)
        .or_else(|| {
            // Accept integral floats such as 5.0.
            v.and_then(Value::as_f64)
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                .map(|f| f as u64)
        })
        .ok_or_else(|| bad_arg(tool, arg, "a non-negative integer"))
}

pub fn error_response(id: Value, e: RpcError) -> Value {
    let mut err = Map::with_capacity(3);
    err.insert("code".into(), Value::from(e.code));
    err.insert("message".into(), Value::from(e.message));
    if let Some(data) = e.data {
        err.insert("data".into(), data);
    }
    let mut msg = Map::with_capacity(3);
    msg.insert("jsonrpc".into(), Value::from("2.0"));
    msg.insert("id".into(), id);
    msg.insert("error".into(), Value::Object(err));
    Value::Object(msg)
}

pub fn parse_error() -> Value {
    error_response(Value::Null, RpcError::new(code::PARSE_ERROR, "Parse error"))
}

pub fn invalid_request() -> Value {
    error_response(
        Value::Null,
        RpcError::new(code::INVALID_REQUEST, "Invalid Request"),
    )
}

pub(crate) fn progress_notification(token: &Value, progress: u64, total: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {
            "progressToken": token,
            "progress": progress,
            "total": total,
            "message": format!("step {progress} of {total}"),
        },
    })
}

fn read_resource(params: Option<&Value>, mode: Mode) -> Result<Value, RpcError> {
    let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("Invalid params: missing uri"));
    };
    let content = match uri {
        "test://static/hello" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "Hello, world!"})
        }
        "test://static/blob" => json!({
            "uri": uri,
            "mimeType": "application/octet-stream",
            "blob": STATIC_BLOB_BASE64,
        }),
        _ => match uri.strip_prefix("test://items/") {
            Some(item) if !item.is_empty() && !item.contains('/') => {
                json!({"uri": uri, "mimeType": "text/plain", "text": format!("item {item}")})
            }
            _ => {
                // Legacy revisions used -32002; 2026-07-28 mandates -32602.
                let code = match mode {
                    Mode::Legacy => code::RESOURCE_NOT_FOUND,
                    Mode::Modern => code::INVALID_PARAMS,
                };
                return Err(
                    RpcError::new(code, "Resource not found").with_data(json!({"uri": uri}))
                );
            }
        },
    };
    Ok(json!({"contents": [content]}))
}

fn get_prompt(params: Option<&Value>) -> Result<Value, RpcError> {
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return Err(RpcError::invalid_params(
            "Invalid params: missing prompt name",
        ));
    };
    let user = |text: String| json!([{"role": "user", "content": {"type": "text", "text": text}}]);
    match name {
        "greeting" => {
            let who = params
                .and_then(|p| p.get("arguments"))
                .and_then(|a| a.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    RpcError::invalid_params("Missing required argument 'name' for prompt greeting")
                })?;
            Ok(json!({
                "description": "Greets someone by name",
                "messages": user(format!("Hello, {who}!")),
            }))
        }
        "simple" => Ok(json!({
            "description": "A prompt without arguments",
            "messages": user("This is a simple prompt.".to_owned()),
        })),
        _ => Err(RpcError::invalid_params(format!("Unknown prompt: {name}"))),
    }
}

fn complete(params: Option<&Value>) -> Value {
    let reference = params.and_then(|p| p.get("ref"));
    let is_greeting = reference
        .and_then(|r| r.get("type"))
        .and_then(Value::as_str)
        == Some("ref/prompt")
        && reference
            .and_then(|r| r.get("name"))
            .and_then(Value::as_str)
            == Some("greeting");
    let argument = params.and_then(|p| p.get("argument"));
    let arg_name = argument.and_then(|a| a.get("name")).and_then(Value::as_str);
    let prefix = argument
        .and_then(|a| a.get("value"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let values: Vec<&str> = if is_greeting && arg_name == Some("name") {
        COMPLETION_NAMES
            .iter()
            .copied()
            .filter(|n| n.starts_with(prefix))
            .collect()
    } else {
        Vec::new()
    };
    json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
}

fn builtin_tools() -> Vec<Value> {
    let schema_rich: Value = serde_json::from_str(SCHEMA_RICH_INPUT_SCHEMA)
        .expect("SCHEMA_RICH_INPUT_SCHEMA is valid JSON");
    let no_args = || json!({"type": "object", "properties": {}, "additionalProperties": false});
    let int_prop = |desc: &str| json!({"type": "integer", "minimum": 0, "description": desc});
    vec![
        json!({
            "name": "echo",
            "description": "Echoes the given text",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Text to echo"}},
                "required": ["text"],
            },
        }),
        json!({
            "name": "add",
            "description": "Adds two numbers",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"sum": {"type": "number"}},
                "required": ["sum"],
            },
        }),
        json!({
            "name": "blob",
            "description": "Returns one text block of exactly `size` bytes",
            "inputSchema": {
                "type": "object",
                "properties": {"size": int_prop("Size in bytes")},
                "required": ["size"],
            },
        }),
        json!({
            "name": "slow",
            "description": "Sleeps `ms` milliseconds, then returns \"done\"",
            "inputSchema": {
                "type": "object",
                "properties": {"ms": int_prop("Milliseconds to sleep")},
                "required": ["ms"],
            },
            // Safe to send again (the hub replays read-only calls cut off
            // by a reconnection).
            "annotations": {"readOnlyHint": true},
        }),
        json!({
            "name": "progress",
            "description": "Sends `steps` progress notifications (with the request's progress \
                            token), one every `interval_ms` (alias `delay_ms`), each message \
                            padded with `pad` characters, and a log line between steps when a \
                            log level is set",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "steps": int_prop("Number of steps"),
                    "interval_ms": int_prop("Milliseconds between steps"),
                    "delay_ms": int_prop("Alias of interval_ms"),
                    "pad": int_prop("Characters of filler in each message"),
                },
                "required": ["steps"],
            },
        }),
        json!({
            "name": "image",
            "description": "Returns a tiny PNG image and a text block",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "error",
            "description": "Returns a tool result with isError: true",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "fail",
            "description": "Fails with a JSON-RPC internal error",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "exit",
            "description": "Exits the server process immediately with `code`",
            "inputSchema": {
                "type": "object",
                "properties": {"code": {"type": "integer", "description": "Exit code"}},
                "required": ["code"],
            },
        }),
        json!({
            "name": "hang",
            "description": "Never answers (until cancelled)",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "long_line",
            "description": "Returns one text block of exactly `size` bytes (an over-long line)",
            "inputSchema": {
                "type": "object",
                "properties": {"size": int_prop("Size in bytes")},
                "required": ["size"],
            },
        }),
        json!({
            "name": "spawn_grandchild",
            "description": "Spawns `sleep 300` and returns its pid",
            "inputSchema": no_args(),
        }),
        json!({
            "name": "schema_rich",
            "description": "Echoes its arguments; has a complex input schema",
            "inputSchema": schema_rich,
        }),
    ]
}
