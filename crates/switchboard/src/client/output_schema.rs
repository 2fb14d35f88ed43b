//! Checking a tool's `structuredContent` against its `outputSchema`.
//!
//! Since 2025-06-18 a tool may declare an `outputSchema`, and a server that
//! does "MUST provide structured results that conform to this schema". An
//! [`OutputValidator`] checks that promise and says precisely where a result
//! breaks it:
//!
//! ```
//! use serde_json::json;
//! use switchboard::schema::{OutputMismatch, OutputValidator};
//! use switchboard::types::tools::{CallToolResult, Tool};
//!
//! let tool: Tool = serde_json::from_value(json!({
//!     "name": "weather",
//!     "inputSchema": {"type": "object"},
//!     "outputSchema": {
//!         "type": "object",
//!         "properties": {"celsius": {"type": "number"}},
//!         "required": ["celsius"]
//!     }
//! }))?;
//! let validator = OutputValidator::new();
//!
//! let good: CallToolResult = serde_json::from_value(json!({
//!     "content": [], "structuredContent": {"celsius": 21.5}
//! }))?;
//! assert!(validator.validate(&tool, &good).is_ok());
//!
//! let bad: CallToolResult = serde_json::from_value(json!({
//!     "content": [], "structuredContent": {"celsius": "warm"}
//! }))?;
//! let mismatch = validator.validate(&tool, &bad).unwrap_err();
//! assert!(matches!(mismatch, OutputMismatch::Invalid { .. }));
//! assert_eq!(mismatch.violations()[0].instance_path, "/celsius");
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! ## What is checked
//! - A result with `isError: true` is never checked: a failing tool reports
//!   its failure in `content`, not in the declared shape.
//! - A tool without `outputSchema` is never checked.
//! - A tool with `outputSchema` whose result has no `structuredContent` is an
//!   [`OutputMismatch::MissingStructuredContent`].
//! - Otherwise `structuredContent` is validated. The dialect is JSON Schema
//!   Draft 2020-12 unless the schema's `$schema` names another draft the
//!   `jsonschema` crate knows (4, 6, 7, 2019-09). `format` follows the
//!   dialect's default (an annotation, not an assertion, in 2020-12).
//!
//! ## Nothing is fetched
//! A `$ref` or `$schema` may point only inside the schema itself (`#/$defs/…`,
//! `$id`-relative names defined in it) or at the bundled meta-schemas of the
//! known drafts. Every other URI, `http(s)://` or `file://` alike, is refused
//! without being opened: `jsonschema` is built without its HTTP and file
//! retrievers, and the validator is offline on top of that. Such a schema is
//! reported as [`OutputMismatch::SchemaUnusable`].
//!
//! ## Bounded cost
//! The schema and the result come from the server, so neither may make the
//! client do unbounded work:
//! - a schema whose text is larger than [`MAX_SCHEMA_BYTES`] is refused
//!   before it is parsed or compiled;
//! - compiled schemas are cached, at most [`DEFAULT_CAPACITY`] of them unless
//!   [`OutputValidator::with_capacity`] says otherwise; the least recently
//!   used one goes first. A schema that failed to compile is cached as such,
//!   so a broken schema costs one compilation, not one per call;
//! - `pattern` and `patternProperties` run on `fancy-regex` with a
//!   backtracking limit of [`REGEX_BACKTRACK_LIMIT`] steps (exceeding it is a
//!   violation) and compiled regexes capped at [`REGEX_SIZE_LIMIT`] bytes;
//! - at most [`MAX_VIOLATIONS`] violations are reported, each message cut to
//!   [`MAX_MESSAGE_BYTES`];
//! - the instance is whatever arrived, already bounded by the transport's
//!   message size limit;
//! - [`OutputValidator::validate_within`] runs a check on a blocking thread
//!   (never on the async workers) and waits at most a time budget
//!   ([`DEFAULT_VALIDATION_BUDGET`], 100 ms, unless the caller gives another;
//!   `Client` takes [`ClientBuilder::output_validation_budget`](crate::ClientBuilder::output_validation_budget)):
//!   past it the result is reported unchecked ([`OutputMismatch::OverBudget`]).
//!   The check it stops waiting for (past the budget, or because the
//!   future was dropped) is stopped too: from then on the validator reads
//!   every string as empty and every object and array as having no more
//!   members, so it ends within the regex match it is in (at most
//!   [`REGEX_BACKTRACK_LIMIT`] steps, about 20 ms in a release build) and
//!   its answer is thrown away. Compiling a schema cannot be stopped, but
//!   is bounded by [`MAX_SCHEMA_BYTES`] and cached. At most
//!   [`MAX_RUNNING_CHECKS`] checks of one validator run at a time, and a
//!   result that finds them all busy for its whole budget is reported
//!   unchecked too;
//! - a panic inside the `jsonschema` crate while compiling or validating is
//!   caught and reported as [`OutputMismatch::SchemaUnusable`] (unless the
//!   program is built with `panic = "abort"`).

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use jsonschema::PatternOptions;
use serde_json::Value;

use self::stop::{Stop, Stoppable};

use crate::types::schema::Schema;
use crate::types::tools::{CallToolResult, Tool};

mod stop;

/// How many compiled schemas an [`OutputValidator::new`] keeps.
pub const DEFAULT_CAPACITY: usize = 256;

/// The largest `outputSchema` compiled, in bytes of its text (256 KiB).
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;

/// How many violations an [`OutputMismatch::Invalid`] lists at most.
pub const MAX_VIOLATIONS: usize = 5;

/// The longest violation message kept, in bytes; longer ones are cut at a
/// character boundary and end in `…`. Messages quote the offending value, and
/// that value can be large.
pub const MAX_MESSAGE_BYTES: usize = 512;

/// How many backtracking steps one `pattern` match may take.
pub const REGEX_BACKTRACK_LIMIT: usize = 1_000_000;

/// The largest compiled `pattern`, in bytes.
pub const REGEX_SIZE_LIMIT: usize = 1024 * 1024;

/// How long [`OutputValidator::validate_within`] waits for a check by
/// default.
pub const DEFAULT_VALIDATION_BUDGET: std::time::Duration = std::time::Duration::from_millis(100);

/// How many checks of one [`OutputValidator`] run at once on blocking
/// threads, abandoned ones included (they stop within a regex match).
pub const MAX_RUNNING_CHECKS: usize = 2;

/// Checks `structuredContent` against `outputSchema`, keeping compiled
/// schemas for reuse.
///
/// Cloning is cheap and clones share the cache; the validator is `Send` and
/// `Sync`. Entries are keyed by tool name and a keyed hash of the schema's
/// JSON text, so a tool whose schema changes (after
/// `notifications/tools/list_changed`, say) is compiled afresh, and one
/// validator can serve tools of the same name on different servers.
/// See the [module docs](self) for what is checked and the limits.
#[derive(Clone)]
pub struct OutputValidator {
    inner: Arc<Inner>,
}

struct Inner {
    capacity: usize,
    /// One permit per check running on a blocking thread.
    running: Arc<tokio::sync::Semaphore>,
    /// Random keys, so a server cannot craft two schemas that share an entry.
    hasher: RandomState,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<u64, Entry>,
    /// Bumped on every use; the entry with the smallest stamp is evicted.
    clock: u64,
}

struct Entry {
    /// Checked on a hit so that only the schema text rests on the hash.
    tool: Box<str>,
    compiled: Compiled,
    last_used: u64,
}

#[derive(Clone)]
enum Compiled {
    Ready(Arc<jsonschema::Validator<Stoppable>>),
    Unusable(Arc<str>),
}

impl fmt::Debug for OutputValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cached = self.lock().entries.len();
        f.debug_struct("OutputValidator")
            .field("capacity", &self.inner.capacity)
            .field("cached", &cached)
            .finish()
    }
}

impl Default for OutputValidator {
    fn default() -> Self {
        Self::new()
    }
}

impl OutputValidator {
    /// A validator that keeps up to [`DEFAULT_CAPACITY`] compiled schemas.
    #[must_use]
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// A validator that keeps up to `capacity` compiled schemas. With `0`
    /// nothing is kept and every call compiles its schema.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                capacity,
                running: Arc::new(tokio::sync::Semaphore::new(MAX_RUNNING_CHECKS)),
                hasher: RandomState::new(),
                cache: Mutex::new(Cache::default()),
            }),
        }
    }

    /// How many compiled schemas this validator keeps at most.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// Checks `result` against `tool`'s `outputSchema`.
    ///
    /// Returns `Ok(())` when there is nothing to check (`isError: true`, or
    /// no `outputSchema`) or when `structuredContent` conforms.
    ///
    /// The result itself is never altered; what to do with a mismatch is the
    /// caller's decision. A demanding client fails the call on
    /// [`Invalid`](OutputMismatch::Invalid) and
    /// [`MissingStructuredContent`](OutputMismatch::MissingStructuredContent),
    /// since the server broke its declared contract, and may choose to pass
    /// the result through (with a warning) on
    /// [`SchemaUnusable`](OutputMismatch::SchemaUnusable), where the fault is
    /// a schema this client refuses to use rather than the result.
    ///
    /// # Errors
    /// - [`OutputMismatch::MissingStructuredContent`]: the tool declares a
    ///   schema and the result has no `structuredContent`;
    /// - [`OutputMismatch::SchemaUnusable`]: the schema is too large, invalid
    ///   for its draft, or refers outside itself; the result was not checked;
    /// - [`OutputMismatch::Invalid`]: `structuredContent` does not conform.
    pub fn validate(&self, tool: &Tool, result: &CallToolResult) -> Result<(), OutputMismatch> {
        if result.is_error() {
            return Ok(());
        }
        let Some(schema) = &tool.output_schema else {
            return Ok(());
        };
        let Some(instance) = &result.structured_content else {
            return Err(OutputMismatch::MissingStructuredContent {
                tool: tool.name.clone(),
            });
        };
        let validator = match self.compiled(&tool.name, schema) {
            Compiled::Ready(validator) => validator,
            Compiled::Unusable(reason) => {
                return Err(OutputMismatch::SchemaUnusable {
                    tool: tool.name.clone(),
                    reason: reason.to_string(),
                });
            }
        };
        let checked = catch_unwind(AssertUnwindSafe(|| check(&validator, instance)));
        match checked {
            Ok(None) => Ok(()),
            Ok(Some((violations, truncated))) => Err(OutputMismatch::Invalid {
                tool: tool.name.clone(),
                violations,
                truncated,
            }),
            Err(_) => Err(OutputMismatch::SchemaUnusable {
                tool: tool.name.clone(),
                reason: "the JSON Schema validator panicked while checking the result".into(),
            }),
        }
    }

    /// [`OutputValidator::validate`] on a blocking thread, waiting at most
    /// `budget` for it (compiling included). Past the budget, or when
    /// [`MAX_RUNNING_CHECKS`] checks are still running for the whole
    /// budget, the answer is [`OutputMismatch::OverBudget`]: the result was
    /// not checked.
    ///
    /// # Errors
    /// As [`OutputValidator::validate`], and [`OutputMismatch::OverBudget`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the check, which stops as it does past
    /// the budget: within the regex match it is in (see the
    /// [module docs](self#bounded-cost)), holding one of the
    /// [`MAX_RUNNING_CHECKS`] slots until then.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    ///
    /// `tool` is anything that derefs to the [`Tool`] and can be sent to
    /// the check's thread: an `Arc<Tool>`, or a shared list's entry (the
    /// client passes its tool list's `Arc`, so no call copies a tool).
    pub async fn validate_within<T>(
        &self,
        tool: T,
        result: Arc<CallToolResult>,
        budget: std::time::Duration,
    ) -> Result<(), OutputMismatch>
    where
        T: std::ops::Deref<Target = Tool> + Clone + Send + 'static,
    {
        if result.is_error() || tool.output_schema.is_none() {
            return Ok(());
        }
        let over = || OutputMismatch::OverBudget {
            tool: tool.name.clone(),
            budget,
        };
        let now = tokio::time::Instant::now();
        let deadline = now
            .checked_add(budget)
            .unwrap_or_else(|| now + std::time::Duration::from_secs(86_400 * 365 * 30));
        let running = self.inner.running.clone();
        let Ok(Ok(permit)) = tokio::time::timeout_at(deadline, running.acquire_owned()).await
        else {
            return Err(over());
        };
        let validator = self.clone();
        let checked_tool = tool.clone();
        // Stops the check when this function returns or its future is
        // dropped: from then on nobody reads its outcome.
        let stop = Stop::default();
        let _stop_on_return = stop.on_drop();
        let check = tokio::task::spawn_blocking(move || {
            let outcome = stop.watching(|| validator.validate(&checked_tool, &result));
            drop(permit);
            outcome
        });
        match tokio::time::timeout_at(deadline, check).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(OutputMismatch::SchemaUnusable {
                tool: tool.name.clone(),
                reason: "the JSON Schema validator panicked while checking the result".into(),
            }),
            Err(_) => Err(over()),
        }
    }

    /// The compiled schema for this tool, from the cache or compiled now.
    fn compiled(&self, tool: &str, schema: &Schema) -> Compiled {
        let text = schema.as_str();
        if text.len() > MAX_SCHEMA_BYTES {
            // Not cached: it is cheap to refuse again.
            return Compiled::Unusable(
                format!("it is larger than {} KiB", MAX_SCHEMA_BYTES / 1024).into(),
            );
        }
        let mut hasher = self.inner.hasher.build_hasher();
        hasher.write(tool.as_bytes());
        hasher.write_u8(0xff); // no tool name contains 0xff, so name and schema cannot run together
        hasher.write(text.as_bytes());
        let key = hasher.finish();

        {
            let mut cache = self.lock();
            cache.clock += 1;
            let now = cache.clock;
            if let Some(entry) = cache.entries.get_mut(&key)
                && *entry.tool == *tool
            {
                entry.last_used = now;
                return entry.compiled.clone();
            }
        }

        // Compiled without the lock held: another thread may compile the same
        // schema meanwhile, which costs time but never a wrong answer.
        let compiled = compile(schema);
        if self.inner.capacity > 0 {
            let mut cache = self.lock();
            if cache.entries.len() >= self.inner.capacity && !cache.entries.contains_key(&key) {
                let oldest = cache
                    .entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.last_used)
                    .map(|(key, _)| *key);
                if let Some(oldest) = oldest {
                    cache.entries.remove(&oldest);
                }
            }
            cache.clock += 1;
            let last_used = cache.clock;
            cache.entries.insert(
                key,
                Entry {
                    tool: tool.into(),
                    compiled: compiled.clone(),
                    last_used,
                },
            );
        }
        compiled
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // The cache is consistent between statements, so a panic elsewhere
        // while it was held leaves nothing to repair.
        self.inner
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn compile(schema: &Schema) -> Compiled {
    // Parsed only here, once per tool: the compiled validator is cached.
    let schema: Value = match schema.parse() {
        Ok(schema) => schema,
        Err(error) => {
            return Compiled::Unusable(truncate(format!("it cannot be parsed: {error}")).into());
        }
    };
    let built = catch_unwind(AssertUnwindSafe(|| {
        jsonschema::options_for::<Stoppable>()
            .offline()
            .with_pattern_options(
                PatternOptions::fancy_regex()
                    .backtrack_limit(REGEX_BACKTRACK_LIMIT)
                    .size_limit(REGEX_SIZE_LIMIT),
            )
            .build(&schema)
    }));
    match built {
        Ok(Ok(validator)) => Compiled::Ready(Arc::new(validator)),
        Ok(Err(error)) => {
            // A schema that breaks its meta-schema is the instance there, so
            // the instance path says where in the schema the fault is.
            let at = error.instance_path().as_str();
            let reason = if at.is_empty() {
                error.to_string()
            } else {
                format!("at {at} in the schema: {error}")
            };
            Compiled::Unusable(truncate(reason).into())
        }
        Err(_) => {
            Compiled::Unusable("the JSON Schema validator panicked while compiling it".into())
        }
    }
}

/// `None` when `instance` conforms; otherwise the first violations and
/// whether there were more.
fn check(
    validator: &jsonschema::Validator<Stoppable>,
    instance: &Value,
) -> Option<(Vec<Violation>, bool)> {
    let instance = stop::Node(instance);
    if validator.is_valid(instance) || stop::stopped() {
        // Once stopped, the answer is thrown away (see `stop`): no need to
        // look for violations.
        return None;
    }
    let mut errors = validator.iter_errors(instance);
    let violations: Vec<Violation> = errors
        .by_ref()
        .take(MAX_VIOLATIONS)
        .map(|error| Violation {
            instance_path: error.instance_path().as_str().to_owned(),
            keyword: error.kind().keyword().to_owned(),
            message: truncate(error.to_string()),
        })
        .collect();
    let truncated = errors.next().is_some();
    if violations.is_empty() {
        // `is_valid` and `iter_errors` disagree; trust the stricter answer.
        return Some((
            vec![Violation {
                instance_path: String::new(),
                keyword: String::new(),
                message: "the value does not match the schema".into(),
            }],
            false,
        ));
    }
    Some((violations, truncated))
}

fn truncate(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

/// Why a tool result failed its `outputSchema` check.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputMismatch {
    /// `structuredContent` does not conform to the schema: the server broke
    /// its tool's declared contract.
    #[non_exhaustive]
    Invalid {
        /// The tool's name.
        tool: String,
        /// The first violations, at most [`MAX_VIOLATIONS`], in the order
        /// the validator found them.
        violations: Vec<Violation>,
        /// There were more violations than listed.
        truncated: bool,
    },
    /// The tool declares an `outputSchema` but the result has no
    /// `structuredContent`.
    #[non_exhaustive]
    MissingStructuredContent {
        /// The tool's name.
        tool: String,
    },
    /// The schema cannot be used, so the result was not checked: it is
    /// larger than [`MAX_SCHEMA_BYTES`], invalid for its draft, names an
    /// unknown `$schema`, or has a `$ref` outside itself (never fetched).
    #[non_exhaustive]
    SchemaUnusable {
        /// The tool's name.
        tool: String,
        /// What is wrong with the schema, as the validator put it.
        reason: String,
    },
    /// The check did not finish within its time budget, so the result was
    /// not checked (see [`OutputValidator::validate_within`]).
    #[non_exhaustive]
    OverBudget {
        /// The tool's name.
        tool: String,
        /// The budget that ran out.
        budget: std::time::Duration,
    },
}

impl OutputMismatch {
    /// The tool whose result or schema failed.
    pub fn tool(&self) -> &str {
        match self {
            Self::Invalid { tool, .. }
            | Self::MissingStructuredContent { tool }
            | Self::SchemaUnusable { tool, .. }
            | Self::OverBudget { tool, .. } => tool,
        }
    }

    /// The violations found; empty unless [`Invalid`](Self::Invalid).
    pub fn violations(&self) -> &[Violation] {
        match self {
            Self::Invalid { violations, .. } => violations,
            _ => &[],
        }
    }

    /// Whether the schema, not the result, is at fault (the result was not
    /// checked).
    pub fn is_schema_unusable(&self) -> bool {
        matches!(self, Self::SchemaUnusable { .. })
    }

    /// Whether the result was not checked at all: the schema is unusable
    /// or the check ran out of time.
    pub fn is_unchecked(&self) -> bool {
        matches!(self, Self::SchemaUnusable { .. } | Self::OverBudget { .. })
    }
}

impl fmt::Display for OutputMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid {
                tool,
                violations,
                truncated,
            } => {
                write!(
                    f,
                    "tool `{tool}` returned structuredContent that does not match its outputSchema: "
                )?;
                for (index, violation) in violations.iter().enumerate() {
                    if index > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{violation}")?;
                }
                if *truncated {
                    f.write_str("; and more")?;
                }
                Ok(())
            }
            Self::MissingStructuredContent { tool } => write!(
                f,
                "tool `{tool}` declares an outputSchema but returned no structuredContent"
            ),
            Self::SchemaUnusable { tool, reason } => write!(
                f,
                "the outputSchema of tool `{tool}` cannot be used, so its result was not checked: {reason}"
            ),
            Self::OverBudget { tool, budget } => write!(
                f,
                "checking the result of tool `{tool}` against its outputSchema took longer than {budget:?} (the client's output_validation_budget), so it was not checked"
            ),
        }
    }
}

impl std::error::Error for OutputMismatch {}

/// One place where `structuredContent` breaks the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Violation {
    /// JSON Pointer (RFC 6901) to the failing value; empty for the root.
    pub instance_path: String,
    /// The schema keyword that failed (`type`, `required`, …).
    pub keyword: String,
    /// What is wrong, as the validator put it; at most [`MAX_MESSAGE_BYTES`]
    /// bytes.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.instance_path.is_empty() {
            write!(f, "at the root: {}", self.message)
        } else {
            write!(f, "at {}: {}", self.instance_path, self.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::net::TcpListener;

    use serde_json::json;

    use super::*;

    fn tool(name: &str, schema: Value) -> Tool {
        Tool {
            name: name.into(),
            input_schema: Schema::default(),
            output_schema: Some(match schema {
                Value::Object(object) => object.into(),
                other => panic!("schema must be an object, got {other}"),
            }),
            ..Tool::default()
        }
    }

    fn structured(value: Value) -> CallToolResult {
        CallToolResult {
            structured_content: Some(value),
            ..CallToolResult::default()
        }
    }

    #[test]
    fn conforming_content_passes() {
        let validator = OutputValidator::new();
        let tool = tool(
            "t",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        );
        assert_eq!(
            validator.validate(&tool, &structured(json!({"n": 3}))),
            Ok(())
        );
    }

    #[test]
    fn nonconforming_content_names_the_pointer() {
        let validator = OutputValidator::new();
        let tool = tool(
            "lookup",
            json!({
                "type": "object",
                "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}
            }),
        );
        let mismatch = validator
            .validate(&tool, &structured(json!({"a": {"b": 3}})))
            .unwrap_err();
        assert_eq!(mismatch.tool(), "lookup");
        assert!(!mismatch.is_schema_unusable());
        let violations = mismatch.violations();
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].instance_path, "/a/b");
        assert_eq!(violations[0].keyword, "type");
        assert_eq!(
            mismatch.to_string(),
            "tool `lookup` returned structuredContent that does not match its outputSchema: \
             at /a/b: 3 is not of type \"string\""
        );
    }

    #[test]
    fn violations_are_capped() {
        let validator = OutputValidator::new();
        let tool = tool("t", json!({"type": "array", "items": {"type": "string"}}));
        let mismatch = validator
            .validate(&tool, &structured(json!([1, 2, 3, 4, 5, 6, 7])))
            .unwrap_err();
        assert_eq!(mismatch.violations().len(), MAX_VIOLATIONS);
        assert!(matches!(
            mismatch,
            OutputMismatch::Invalid {
                truncated: true,
                ..
            }
        ));
        assert!(mismatch.to_string().ends_with("; and more"));

        let exact = validator
            .validate(&tool, &structured(json!([1, 2, 3, 4, 5])))
            .unwrap_err();
        assert!(matches!(
            exact,
            OutputMismatch::Invalid {
                truncated: false,
                ..
            }
        ));
    }

    #[test]
    fn long_messages_are_cut() {
        let validator = OutputValidator::new();
        let tool = tool("t", json!({"type": "string"}));
        let big = json!({"padding": "é".repeat(10_000)});
        let mismatch = validator.validate(&tool, &structured(big)).unwrap_err();
        let message = &mismatch.violations()[0].message;
        assert!(message.len() <= MAX_MESSAGE_BYTES + '…'.len_utf8());
        assert!(message.ends_with('…'));
    }

    #[test]
    fn error_results_are_not_checked() {
        let validator = OutputValidator::new();
        let tool = tool("t", json!({"type": "object", "required": ["n"]}));
        let failed = CallToolResult {
            is_error: Some(true),
            ..CallToolResult::text("upstream timed out")
        };
        assert_eq!(validator.validate(&tool, &failed), Ok(()));
        let failed_with_junk = CallToolResult {
            is_error: Some(true),
            ..structured(json!("junk"))
        };
        assert_eq!(validator.validate(&tool, &failed_with_junk), Ok(()));
    }

    #[test]
    fn tools_without_schema_are_not_checked() {
        let validator = OutputValidator::new();
        let tool = Tool {
            name: "t".into(),
            ..Tool::default()
        };
        assert_eq!(validator.validate(&tool, &structured(json!(42))), Ok(()));
        assert_eq!(
            validator.validate(&tool, &CallToolResult::text("hi")),
            Ok(())
        );
    }

    #[test]
    fn missing_structured_content_is_a_mismatch() {
        let validator = OutputValidator::new();
        let tool = tool("t", json!({"type": "object"}));
        let mismatch = validator
            .validate(&tool, &CallToolResult::text("{\"n\": 1}"))
            .unwrap_err();
        assert_eq!(
            mismatch,
            OutputMismatch::MissingStructuredContent { tool: "t".into() }
        );
        assert_eq!(
            mismatch.to_string(),
            "tool `t` declares an outputSchema but returned no structuredContent"
        );
    }

    #[test]
    fn internal_refs_resolve() {
        let validator = OutputValidator::new();
        let tool = tool(
            "t",
            json!({
                "$defs": {"point": {"type": "object", "required": ["x", "y"]}},
                "type": "object",
                "properties": {"at": {"$ref": "#/$defs/point"}}
            }),
        );
        assert_eq!(
            validator.validate(&tool, &structured(json!({"at": {"x": 1, "y": 2}}))),
            Ok(())
        );
        let mismatch = validator
            .validate(&tool, &structured(json!({"at": {"x": 1}})))
            .unwrap_err();
        assert_eq!(mismatch.violations()[0].instance_path, "/at");
        assert_eq!(mismatch.violations()[0].keyword, "required");
    }

    #[test]
    fn external_refs_are_never_fetched() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let validator = OutputValidator::new();
        let schemas = [
            json!({"$ref": format!("{base}/x.json")}),
            json!({"type": "object", "properties": {"a": {"$ref": format!("{base}/a.json#/$defs/a")}}}),
            json!({"$schema": format!("{base}/meta.json"), "type": "object"}),
            json!({"$ref": "https://example.com/x.json"}),
            json!({"$ref": "file:///etc/passwd"}),
        ];
        for schema in schemas {
            let mismatch = validator
                .validate(
                    &tool("remote", schema.clone()),
                    &structured(json!({"a": 1})),
                )
                .unwrap_err();
            assert!(mismatch.is_schema_unusable(), "{schema} gave {mismatch:?}");
            assert!(mismatch.to_string().starts_with(
                "the outputSchema of tool `remote` cannot be used, so its result was not checked: "
            ));
        }
        match listener.accept() {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            other => panic!("the validator connected to the schema's host: {other:?}"),
        }
    }

    #[test]
    fn draft_2020_12_is_the_default() {
        let validator = OutputValidator::new();
        let tuple = tool(
            "tuple",
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}),
        );
        assert_eq!(
            validator.validate(&tuple, &structured(json!(["a", 1]))),
            Ok(())
        );
        let mismatch = validator
            .validate(&tuple, &structured(json!(["a", "b"])))
            .unwrap_err();
        assert_eq!(mismatch.violations()[0].instance_path, "/1");

        let closed = tool(
            "closed",
            json!({
                "allOf": [{"properties": {"a": {"type": "integer"}}}],
                "properties": {"b": {"type": "integer"}},
                "unevaluatedProperties": false
            }),
        );
        assert_eq!(
            validator.validate(&closed, &structured(json!({"a": 1, "b": 2}))),
            Ok(())
        );
        let mismatch = validator
            .validate(&closed, &structured(json!({"a": 1, "c": 3})))
            .unwrap_err();
        assert_eq!(mismatch.violations()[0].keyword, "unevaluatedProperties");
    }

    #[test]
    fn an_explicit_older_draft_is_honoured() {
        let validator = OutputValidator::new();
        // In draft 7 an array under `items` is a tuple; in 2020-12 it is
        // not a valid schema at all.
        let schema = json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]});
        let mut draft7 = schema.clone();
        draft7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        let draft7 = tool("d7", draft7);
        assert_eq!(
            validator.validate(&draft7, &structured(json!(["a", 1]))),
            Ok(())
        );
        let mismatch = validator
            .validate(&draft7, &structured(json!(["a", "b"])))
            .unwrap_err();
        assert_eq!(mismatch.violations()[0].instance_path, "/1");

        let mismatch = validator
            .validate(&tool("d2020", schema), &structured(json!(["a", 1])))
            .unwrap_err();
        assert!(mismatch.is_schema_unusable(), "{mismatch:?}");
    }

    #[test]
    fn a_changed_schema_is_compiled_again() {
        let validator = OutputValidator::new();
        let as_string = tool("t", json!({"type": "string"}));
        let as_integer = tool("t", json!({"type": "integer"}));
        assert_eq!(
            validator.validate(&as_string, &structured(json!("x"))),
            Ok(())
        );
        assert!(
            validator
                .validate(&as_integer, &structured(json!("x")))
                .is_err()
        );
        assert_eq!(
            validator.validate(&as_integer, &structured(json!(7))),
            Ok(())
        );
        assert!(
            validator
                .validate(&as_string, &structured(json!(7)))
                .is_err()
        );
    }

    #[test]
    fn the_same_schema_under_another_name_is_its_own_entry() {
        let validator = OutputValidator::new();
        let schema = json!({"type": "string"});
        let _ = validator.validate(&tool("a", schema.clone()), &structured(json!("x")));
        let mismatch = validator
            .validate(&tool("b", schema), &structured(json!(1)))
            .unwrap_err();
        assert_eq!(mismatch.tool(), "b");
        assert_eq!(validator.lock().entries.len(), 2);
    }

    #[test]
    fn the_cache_is_bounded_and_evicts_the_least_recently_used() {
        let validator = OutputValidator::with_capacity(2);
        let a = tool("a", json!({"type": "string"}));
        let b = tool("b", json!({"type": "string"}));
        let c = tool("c", json!({"type": "string"}));
        let ok = structured(json!("x"));
        validator.validate(&a, &ok).unwrap();
        validator.validate(&b, &ok).unwrap();
        validator.validate(&a, &ok).unwrap();
        validator.validate(&c, &ok).unwrap();
        let cache = validator.lock();
        let mut names: Vec<&str> = cache.entries.values().map(|entry| &*entry.tool).collect();
        names.sort_unstable();
        assert_eq!(names, ["a", "c"]);
    }

    #[test]
    fn capacity_zero_keeps_nothing_and_still_validates() {
        let validator = OutputValidator::with_capacity(0);
        let tool = tool("t", json!({"type": "string"}));
        assert_eq!(validator.validate(&tool, &structured(json!("x"))), Ok(()));
        assert!(validator.validate(&tool, &structured(json!(1))).is_err());
        assert!(validator.lock().entries.is_empty());
    }

    #[test]
    fn a_broken_schema_is_unusable_and_cached() {
        let validator = OutputValidator::new();
        let tool = tool("t", json!({"type": "no-such-type"}));
        let first = validator
            .validate(&tool, &structured(json!(1)))
            .unwrap_err();
        let OutputMismatch::SchemaUnusable { reason, .. } = &first else {
            panic!("expected an unusable schema, got {first:?}");
        };
        assert!(reason.starts_with("at /type in the schema: "), "{reason}");
        assert_eq!(validator.lock().entries.len(), 1);
        assert_eq!(validator.validate(&tool, &structured(json!(1))), Err(first));
    }

    #[test]
    fn a_huge_schema_is_refused_before_compiling() {
        let validator = OutputValidator::new();
        let huge = tool(
            "t",
            json!({"type": "string", "description": "x".repeat(MAX_SCHEMA_BYTES)}),
        );
        let mismatch = validator
            .validate(&huge, &structured(json!(1)))
            .unwrap_err();
        assert_eq!(
            mismatch,
            OutputMismatch::SchemaUnusable {
                tool: "t".into(),
                reason: "it is larger than 256 KiB".into(),
            }
        );
        assert!(validator.lock().entries.is_empty());

        let just_fits = tool(
            "t",
            json!({"type": "string", "description": "x".repeat(MAX_SCHEMA_BYTES - 100)}),
        );
        assert_eq!(
            validator.validate(&just_fits, &structured(json!("y"))),
            Ok(())
        );
    }

    #[test]
    fn catastrophic_patterns_are_bounded() {
        let validator = OutputValidator::new();
        // Exponential for a backtracking engine, and the lookahead and
        // backreference force fancy-regex to backtrack: without the limit
        // this would run for hours.
        let tool = tool(
            "t",
            json!({"type": "string", "pattern": "^(a|a)*(?=b)\\1c"}),
        );
        let mismatch = validator
            .validate(&tool, &structured(json!("a".repeat(30))))
            .unwrap_err();
        let violation = &mismatch.violations()[0];
        assert_eq!(violation.keyword, "pattern");
        assert!(violation.message.contains("backtracking"), "{violation}");
    }

    /// A string that makes [`CATASTROPHIC`] and its kin run to the
    /// backtracking limit; distinct for each `i`, since a match the engine
    /// could not finish is not tried again on the same string.
    fn hostile(i: usize) -> String {
        format!("{}{i}", "a".repeat(40))
    }

    /// Exponential for a backtracking engine; the lookahead and the
    /// backreference keep fancy-regex from handing it to a linear one.
    const CATASTROPHIC: &str = "^(a|a)*(?=b)\\1c";

    /// `check` on a thread of its own, watched by `stop`.
    fn check_on_thread(
        validator: &OutputValidator,
        tool: Tool,
        result: CallToolResult,
        stop: &Stop,
    ) -> std::thread::JoinHandle<Result<(), OutputMismatch>> {
        let validator = validator.clone();
        let stop = stop.clone();
        std::thread::spawn(move || stop.watching(|| validator.validate(&tool, &result)))
    }

    #[test]
    fn a_stopped_check_ends_within_a_match_whatever_the_keyword() {
        const STRINGS: usize = 200;
        let names: serde_json::Map<String, Value> =
            (0..STRINGS).map(|i| (hostile(i), json!("x"))).collect();
        let items: Vec<Value> = (0..STRINGS).map(|i| Value::from(hostile(i))).collect();
        let many_patterns: serde_json::Map<String, Value> = (0..STRINGS)
            .map(|i| (format!("{CATASTROPHIC}{i}"), json!(true)))
            .collect();
        // Each would take minutes: every string, value or name, reaches
        // the backtracking limit.
        let cases = [
            (
                "pattern",
                json!({"items": {"pattern": CATASTROPHIC}}),
                json!(items),
            ),
            (
                "patternProperties",
                json!({"patternProperties": {CATASTROPHIC: true}}),
                json!(names),
            ),
            (
                "additionalProperties",
                json!({"patternProperties": {CATASTROPHIC: true}, "additionalProperties": {"type": "string"}}),
                json!(names),
            ),
            (
                "unevaluatedProperties",
                json!({"allOf": [{"patternProperties": {CATASTROPHIC: true}}], "unevaluatedProperties": {"type": "string"}}),
                json!(names),
            ),
            (
                "propertyNames",
                json!({"propertyNames": {"pattern": CATASTROPHIC}}),
                json!(names),
            ),
            // One name against many patterns, in one loop over them: the
            // name is read afresh for each.
            (
                "many patterns",
                json!({"patternProperties": many_patterns, "additionalProperties": false}),
                json!({hostile(0): 1}),
            ),
        ];
        let validator = OutputValidator::new();
        let stop = Stop::default();
        let checks: Vec<_> = cases
            .into_iter()
            .map(|(keyword, schema, instance)| {
                let check = check_on_thread(
                    &validator,
                    tool(keyword, schema),
                    structured(instance),
                    &stop,
                );
                (keyword, check)
            })
            .collect();
        // Under way by now, or about to be: either way it must end soon
        // after the stop.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let stopped = std::time::Instant::now();
        drop(stop.on_drop());
        assert!(stop.is_set());
        for (keyword, check) in checks {
            // The outcome of a stopped check is thrown away; only its end matters.
            let _ = check.join();
            let took = stopped.elapsed();
            assert!(
                took < std::time::Duration::from_secs(5),
                "{keyword}: the check went on for {took:?} after it was stopped"
            );
        }
    }

    #[test]
    fn a_check_stopped_before_it_starts_reads_nothing() {
        let items: Vec<Value> = (0..3000).map(|i| Value::from(hostile(i))).collect();
        let tool = tool(
            "t",
            json!({"type": "array", "items": {"type": "string", "pattern": CATASTROPHIC}}),
        );
        let validator = OutputValidator::new();
        let stop = Stop::default();
        drop(stop.on_drop());
        let started = std::time::Instant::now();
        let _ = check_on_thread(&validator, tool, structured(json!(items)), &stop).join();
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(2), "{took:?}");
    }

    #[test]
    fn a_stop_stops_only_its_own_check() {
        let validator = OutputValidator::new();
        let tool = tool(
            "t",
            json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(?=a)(a+)b\\1$"}}}),
        );
        let bad = structured(json!({"s": "aaba"}));
        let stop = Stop::default();
        drop(stop.on_drop());
        // On this thread, once the stopped check is over, and on another
        // meanwhile, checks read the whole instance.
        stop.watching(|| {
            let other = std::thread::scope(|scope| {
                scope
                    .spawn(|| validator.validate(&tool, &bad))
                    .join()
                    .unwrap()
            });
            assert_eq!(other.unwrap_err().violations()[0].keyword, "pattern");
        });
        let mismatch = validator.validate(&tool, &bad).unwrap_err();
        assert_eq!(mismatch.violations()[0].instance_path, "/s");
        assert_eq!(
            validator.validate(&tool, &structured(json!({"s": "aabaa"}))),
            Ok(())
        );
    }

    #[test]
    fn the_validator_is_cheap_to_share() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<OutputValidator>();
        let validator = OutputValidator::new();
        let clone = validator.clone();
        let _ = clone.validate(
            &tool("t", json!({"type": "string"})),
            &structured(json!("x")),
        );
        assert_eq!(validator.lock().entries.len(), 1);
    }
}
