//! The skills extension (SEP-2640, `io.modelcontextprotocol/skills`), the
//! client side: discovering a server's skills, loading one, and reading its
//! files — each checked against the listing before anything of it is used.
//!
//! The extension's rules this module keeps:
//! - **No prefetching.** Listing reads no file. A file is read only through
//!   [`Client::load_skill`] (the `SKILL.md`) and [`Client::read_skill_file`],
//!   which takes the loaded [`Skill`]: a supporting file cannot be read
//!   before its skill is loaded and verified.
//! - **Verification on read.** A file's byte length must be the entry's
//!   `size` and its SHA-256 the entry's `digest`; the `SKILL.md`'s YAML
//!   frontmatter must equal the entry's `frontmatter` field by field. Any
//!   mismatch is [`Error::Skill`] and the content is dropped.
//! - **Entries by the rules.** An entry whose URI, name or file list breaks
//!   the extension's rules ([`SkillEntry::problems`]) is not loaded.
//!
//! ```no_run
//! # async fn demo(client: &switchboard::Client) -> switchboard::Result<()> {
//! let entries = client.list_skills().await?;
//! for entry in &entries {
//!     println!("{}: {}", entry.name().unwrap_or("?"), entry.description().unwrap_or(""));
//! }
//! let skill = client.load_skill(&entries[0]).await?;
//! println!("{}", skill.instructions());
//! for file in skill.files() {
//!     let bytes = client.read_skill_file(&skill, &file.uri).await?;
//!     println!("{}: {} bytes", file.uri, bytes.bytes().len());
//! }
//! # Ok(()) }
//! ```

use std::fmt;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchboard_types::request::{self as rq, Request};
use switchboard_types::skills::{
    DIRECTORY_MIME_TYPE, DIRECTORY_READ, MAX_SKILL_FILES, SKILL_MD, SKILLS_EXTENSION, parse_digest,
};
use switchboard_types::{
    GetSkillRequestParams, JsonObject, ReadDirectoryRequestParams, ReadDirectoryResult, Resource,
    ResourceContents, SkillEntry, SkillFile, SkillFiles,
};

use super::Client;
use crate::engine::RequestOptions;
use crate::error::{Error, Result};

/// At most this many bytes of frontmatter are parsed (the `SKILL.md` as a
/// whole is bounded by its entry's `size` and the transport's message limit).
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// At most this many YAML events, nodes and replayed alias events in a
/// frontmatter.
const FRONTMATTER_LIMIT: usize = 10_000;

/// A `dynamic` skill's directory is walked at most this deep.
pub const MAX_SKILL_DEPTH: usize = 16;

/// Why a skill or one of its files was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkillProblem {
    /// The entry breaks the extension's rules ([`SkillEntry::problems`]).
    InvalidEntry(Vec<String>),
    /// The file is not among the skill's listed files.
    NotListed {
        /// The file asked for.
        file: String,
    },
    /// The server did not send the file as asked: no contents for its URI,
    /// a blob that is not base64, a `SKILL.md` that is not UTF-8 text.
    Unreadable {
        /// The file.
        file: String,
        /// What was wrong.
        detail: String,
    },
    /// The file's byte length is not the entry's `size`.
    Size {
        /// The file.
        file: String,
        /// The entry's size.
        listed: u64,
        /// What was read.
        read: u64,
    },
    /// The file's SHA-256 is not the entry's `digest`.
    Digest {
        /// The file.
        file: String,
        /// The entry's digest.
        listed: String,
        /// The digest of what was read.
        read: String,
    },
    /// The `SKILL.md`'s frontmatter is missing, does not parse, or differs
    /// from the entry's `frontmatter`.
    Frontmatter {
        /// What differs, or why it does not parse.
        detail: String,
    },
}

impl fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillProblem::InvalidEntry(problems) => {
                write!(
                    f,
                    "its entry breaks the extension's rules: {}",
                    problems.join("; ")
                )
            }
            SkillProblem::NotListed { file } => {
                write!(f, "{file:?} is not one of the skill's listed files")
            }
            SkillProblem::Unreadable { file, detail } => write!(f, "{file:?}: {detail}"),
            SkillProblem::Size { file, listed, read } => write!(
                f,
                "{file:?} is {read} bytes, the listing says {listed}: not used (the server changed it, or something between altered it)"
            ),
            SkillProblem::Digest { file, listed, read } => write!(
                f,
                "{file:?} has digest {read}, the listing says {listed}: not used (the server changed it, or something between altered it)"
            ),
            SkillProblem::Frontmatter { detail } => {
                write!(f, "its SKILL.md frontmatter {detail}")
            }
        }
    }
}

/// A skill loaded and verified: its `SKILL.md` matched the listing.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    entry: SkillEntry,
    markdown: String,
    body_start: usize,
}

impl Skill {
    /// The entry it was loaded from.
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// The skill's name (`frontmatter.name`, checked when loaded).
    pub fn name(&self) -> &str {
        self.entry.name().unwrap_or_default()
    }

    /// The skill's description.
    pub fn description(&self) -> &str {
        self.entry.description().unwrap_or_default()
    }

    /// The verified frontmatter.
    pub fn frontmatter(&self) -> &JsonObject {
        &self.entry.frontmatter
    }

    /// The whole `SKILL.md`, frontmatter included.
    pub fn markdown(&self) -> &str {
        &self.markdown
    }

    /// The `SKILL.md` after its frontmatter: what the model is to follow.
    pub fn instructions(&self) -> &str {
        &self.markdown[self.body_start..]
    }

    /// The skill's other files, to read on demand with
    /// [`Client::read_skill_file`]; empty for a `dynamic` skill.
    pub fn files(&self) -> Vec<&SkillFile> {
        match &self.entry.resources {
            SkillFiles::Listed(files) => files.iter().filter(|f| f.uri != self.entry.uri).collect(),
            SkillFiles::Dynamic => Vec::new(),
        }
    }
}

/// A skill file's contents, as read.
#[derive(Clone, Debug, PartialEq)]
pub struct SkillFileContents {
    /// The file's URI.
    pub uri: String,
    /// Its MIME type, when the server said.
    pub mime_type: Option<String>,
    bytes: Vec<u8>,
    verified: bool,
}

impl SkillFileContents {
    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The file as text, when it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }

    /// Whether it was checked against a listed size and digest: always for
    /// a listed skill; never for a file of a `dynamic` skill, which has
    /// nothing to check against.
    pub fn verified(&self) -> bool {
        self.verified
    }
}

impl Client {
    /// Whether the server declares the skills extension.
    pub fn offers_skills(&self) -> bool {
        self.capabilities().extension(SKILLS_EXTENSION).is_some()
    }

    /// Whether the server also serves `resources/directory/read` for its
    /// skills (`directoryRead: true` in the extension's settings).
    pub fn offers_skill_directories(&self) -> bool {
        self.capabilities()
            .extension(SKILLS_EXTENSION)
            .and_then(|settings| settings.get(DIRECTORY_READ))
            .and_then(Value::as_bool)
            == Some(true)
    }

    /// The direct children of the directory `uri`
    /// (`resources/directory/read`, every page, bounded as every list is);
    /// a subdirectory's MIME type is `inode/directory`.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] when the server does not declare
    /// `directoryRead`; a URI that is not a directory is the server's
    /// -32602; otherwise as [`Client::list_tools`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn read_directory(&self, uri: impl Into<String>) -> Result<Vec<Resource>> {
        let method = rq::ReadDirectory::METHOD;
        self.require(
            "io.modelcontextprotocol/skills directoryRead",
            method,
            self.offers_skill_directories(),
        )?;
        let uri = uri.into();
        let budget = self.inner.list_budget;
        let stopped = |reason: String| Error::Pagination {
            server: self.inner.engine.server().clone(),
            method,
            reason,
        };
        let mut children = Vec::new();
        let mut cursor = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..self.inner.page_cap {
            let params = ReadDirectoryRequestParams {
                uri: uri.clone(),
                cursor: cursor.take(),
                meta: None,
            };
            let page: ReadDirectoryResult = self
                .request::<rq::ReadDirectory>(&params, RequestOptions::default())
                .await?;
            if children.len().saturating_add(page.resources.len()) > budget.items {
                return Err(stopped(format!(
                    "it passed {} items, over the limit (the client's `max_list_items`)",
                    budget.items
                )));
            }
            children.extend(page.resources);
            match page.next_cursor {
                None => return Ok(children),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(stopped(format!("the server repeated cursor {next:?}")));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(stopped(format!(
            "more than {} pages (raise the client's page cap if this is expected)",
            self.inner.page_cap
        )))
    }

    /// A loaded skill's other files, as URIs to give
    /// [`Client::read_skill_file`]: a listed skill's from its listing; a
    /// `dynamic` one's found by walking its directory with
    /// [`Client::read_directory`] when the server serves directories
    /// (at most [`MAX_SKILL_FILES`] files, [`MAX_SKILL_DEPTH`] levels,
    /// only URIs inside the directory asked for), else none.
    ///
    /// # Errors
    /// As [`Client::read_directory`]; [`Error::Skill`] when the walk passes
    /// its bounds or a child lies outside its directory.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn skill_files(&self, skill: &Skill) -> Result<Vec<String>> {
        let entry = &skill.entry;
        if entry.resources != SkillFiles::Dynamic {
            return Ok(skill.files().iter().map(|f| f.uri.clone()).collect());
        }
        let Some(root) = entry.directory() else {
            return Ok(Vec::new());
        };
        if !self.offers_skill_directories() {
            return Ok(Vec::new());
        }
        let refuse = |detail: String| {
            self.skill_error(
                entry,
                SkillProblem::Unreadable {
                    file: root.to_owned(),
                    detail,
                },
            )
        };
        let mut files = Vec::new();
        let mut level = vec![root.to_owned()];
        for _ in 0..MAX_SKILL_DEPTH {
            let mut next = Vec::new();
            for directory in level {
                for child in self.read_directory(directory.clone()).await? {
                    let inside = child
                        .uri
                        .strip_prefix(directory.as_str())
                        .and_then(|rest| rest.strip_prefix('/'))
                        .is_some_and(|name| {
                            !name.is_empty() && !name.contains('/') && name != "." && name != ".."
                        });
                    if !inside {
                        return Err(refuse(format!(
                            "the server listed {:?} as a child of {directory:?}",
                            child.uri
                        )));
                    }
                    if child.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE) {
                        next.push(child.uri);
                    } else if child.uri != entry.uri {
                        files.push(child.uri);
                    }
                    if files.len() + next.len() > MAX_SKILL_FILES {
                        return Err(refuse(format!(
                            "its directory holds more than {MAX_SKILL_FILES} entries"
                        )));
                    }
                }
            }
            if next.is_empty() {
                return Ok(files);
            }
            level = next;
        }
        Err(refuse(format!(
            "its directory is more than {MAX_SKILL_DEPTH} levels deep"
        )))
    }

    fn require_skills(&self, method: &'static str) -> Result<()> {
        self.require(SKILLS_EXTENSION, method, self.offers_skills())
    }

    /// Every skill the server lists (`skills/list`, following pagination,
    /// bounded as every list is). Reads no file.
    ///
    /// # Errors
    /// [`Error::CapabilityMissing`] when the server does not declare the
    /// extension; otherwise as [`Client::list_tools`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_skills(&self) -> Result<Vec<SkillEntry>> {
        self.require_skills(rq::ListSkills::METHOD)?;
        self.list_all::<rq::ListSkills>().await
    }

    /// One skill's entry by its URI (`skills/get`). Reads no file.
    ///
    /// # Errors
    /// As [`Client::list_skills`]; an unknown URI is the server's -32602.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_skill(&self, uri: impl Into<String>) -> Result<SkillEntry> {
        self.require_skills(rq::GetSkill::METHOD)?;
        let params = GetSkillRequestParams {
            uri: uri.into(),
            meta: None,
        };
        let result = self
            .request::<rq::GetSkill>(&params, RequestOptions::default())
            .await?;
        Ok(result.skill)
    }

    /// Loads a skill: reads its `SKILL.md` and checks it against `entry`
    /// (size and digest when listed, then the frontmatter field by field).
    /// Reads nothing else.
    ///
    /// # Errors
    /// [`Error::Skill`] when the entry breaks the rules or the file does not
    /// match it (nothing of it is returned); otherwise as
    /// [`Client::read_resource`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<Skill> {
        self.require_skills(rq::ReadResource::METHOD)?;
        let refuse = |problem| self.skill_error(entry, problem);
        let problems = entry.problems();
        if !problems.is_empty() {
            return Err(refuse(SkillProblem::InvalidEntry(problems)));
        }
        let read = self.read_file(entry, &entry.uri).await?;
        let markdown = String::from_utf8(read.bytes).map_err(|_| {
            refuse(SkillProblem::Unreadable {
                file: entry.uri.clone(),
                detail: format!("{SKILL_MD} is not UTF-8 text"),
            })
        })?;
        let (frontmatter, body_start) = parse_frontmatter(&markdown)
            .map_err(|detail| refuse(SkillProblem::Frontmatter { detail }))?;
        compare_frontmatter(&frontmatter, &entry.frontmatter)
            .map_err(|detail| refuse(SkillProblem::Frontmatter { detail }))?;
        Ok(Skill {
            entry: entry.clone(),
            markdown,
            body_start,
        })
    }

    /// Reads one of a loaded skill's files and checks its size and digest
    /// against the listing. A file of a `dynamic` skill, which has no
    /// listing, is read when it lies inside the skill's directory and comes
    /// back with [`SkillFileContents::verified`] false.
    ///
    /// # Errors
    /// [`Error::Skill`] when the file is not the skill's or does not match
    /// its listing; otherwise as [`Client::read_resource`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn read_skill_file(&self, skill: &Skill, uri: &str) -> Result<SkillFileContents> {
        self.require_skills(rq::ReadResource::METHOD)?;
        let entry = &skill.entry;
        let listed = entry.file(uri).is_some();
        let inside = entry.resources == SkillFiles::Dynamic
            && entry.directory().is_some_and(|d| {
                uri.strip_prefix(d)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .is_some_and(|rest| {
                        !rest.is_empty()
                            && rest
                                .split('/')
                                .all(|s| !s.is_empty() && s != "." && s != "..")
                    })
            });
        if !listed && !inside {
            return Err(self.skill_error(entry, SkillProblem::NotListed { file: uri.into() }));
        }
        self.read_file(entry, uri).await
    }

    /// Reads `uri` and, when the entry lists it, checks size then digest.
    async fn read_file(&self, entry: &SkillEntry, uri: &str) -> Result<SkillFileContents> {
        let refuse = |problem| self.skill_error(entry, problem);
        let unreadable = |detail: String| {
            refuse(SkillProblem::Unreadable {
                file: uri.into(),
                detail,
            })
        };
        let result = self.read_resource(uri).await?;
        let mut matching = result.contents.into_iter().filter(|c| c.uri() == uri);
        let (contents, extra) = (matching.next(), matching.next());
        let contents = match (contents, extra) {
            (Some(contents), None) => contents,
            (None, _) => return Err(unreadable("the server sent no contents for it".into())),
            (Some(_), Some(_)) => {
                return Err(unreadable("the server sent two contents for it".into()));
            }
        };
        let (bytes, mime_type) = match contents {
            ResourceContents::Text(text) => (text.text.into_bytes(), text.mime_type),
            ResourceContents::Blob(blob) => (
                base64::engine::general_purpose::STANDARD
                    .decode(blob.blob.as_bytes())
                    .map_err(|e| unreadable(format!("its blob is not base64: {e}")))?,
                blob.mime_type,
            ),
        };
        let verified = match entry.file(uri) {
            Some(file) => {
                verify(&bytes, file).map_err(refuse)?;
                true
            }
            None => false,
        };
        Ok(SkillFileContents {
            uri: uri.into(),
            mime_type,
            bytes,
            verified,
        })
    }

    fn skill_error(&self, entry: &SkillEntry, problem: SkillProblem) -> Error {
        Error::Skill {
            server: self.inner.engine.server().clone(),
            skill: entry.uri.clone(),
            problem,
        }
    }
}

/// Size first (cheap, and a different length can never match), then digest.
fn verify(bytes: &[u8], file: &SkillFile) -> Result<(), SkillProblem> {
    let read = bytes.len() as u64;
    if read != file.size {
        return Err(SkillProblem::Size {
            file: file.uri.clone(),
            listed: file.size,
            read,
        });
    }
    let digest: [u8; 32] = Sha256::digest(bytes).into();
    if parse_digest(&file.digest) != Some(digest) {
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        return Err(SkillProblem::Digest {
            file: file.uri.clone(),
            listed: file.digest.clone(),
            read: format!("sha256:{hex}"),
        });
    }
    Ok(())
}

/// The frontmatter of a `SKILL.md` as JSON, and where the body starts: a
/// `---` line first (after an optional BOM), YAML, a closing `---` line.
pub fn parse_frontmatter(markdown: &str) -> Result<(JsonObject, usize), String> {
    let offset = if markdown.starts_with('\u{feff}') {
        3
    } else {
        0
    };
    let text = &markdown[offset..];
    let first_line_end = text.find('\n').ok_or("is missing (no `---` line)")?;
    if text[..first_line_end].trim_end_matches('\r').trim_end() != "---" {
        return Err("is missing (the file does not start with a `---` line)".into());
    }
    let yaml_start = first_line_end + 1;
    let mut line_start = yaml_start;
    let (yaml_end, body_start) = loop {
        if line_start >= text.len() {
            return Err("is not closed (no second `---` line)".into());
        }
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        if text[line_start..line_end].trim_end_matches('\r').trim_end() == "---" {
            break (line_start, (line_end + 1).min(text.len()));
        }
        line_start = line_end + 1;
    };
    let yaml = &text[yaml_start..yaml_end];
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(format!(
            "is {} bytes, over the limit of {MAX_FRONTMATTER_BYTES}",
            yaml.len()
        ));
    }
    // A frontmatter is a few fields: bounds far below the parser's
    // defaults (which suit whole configuration files), so hostile YAML —
    // alias bombs, deep nesting, node storms — is refused in microseconds.
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_events: FRONTMATTER_LIMIT,
            max_nodes: FRONTMATTER_LIMIT,
            max_aliases: 64,
            max_anchors: 64,
            max_depth: 32,
            max_documents: 1,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: FRONTMATTER_LIMIT,
        },
    };
    let value: Value = serde_saphyr::from_str_with_options(yaml, options).map_err(|e| {
        let text = e.to_string();
        format!(
            "is not valid YAML: {}",
            text.lines().next().unwrap_or_default()
        )
    })?;
    match value {
        Value::Object(object) => Ok((object, offset + body_start)),
        other => Err(format!("is not a YAML mapping but {}", kind(&other))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// Field by field: every key of either side, with equal values (numbers by
/// value, so YAML's `1.0` and JSON's `1.0` agree).
fn compare_frontmatter(read: &JsonObject, listed: &JsonObject) -> Result<(), String> {
    for (key, listed_value) in listed {
        match read.get(key) {
            None => {
                return Err(format!(
                    "has no field {key:?}, which the listing has ({})",
                    shown(listed_value)
                ));
            }
            Some(read_value) if !same(read_value, listed_value) => {
                return Err(format!(
                    "says {key:?} is {}, the listing says {}: not loaded",
                    shown(read_value),
                    shown(listed_value)
                ));
            }
            Some(_) => {}
        }
    }
    if let Some((key, value)) = read.iter().find(|(key, _)| !listed.contains_key(*key)) {
        return Err(format!(
            "has field {key:?} ({}), which the listing does not: not loaded",
            shown(value)
        ));
    }
    Ok(())
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// A value for a message: JSON, escaped, cut at 80 characters.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 80 {
        return text;
    }
    let cut: String = text.chars().take(77).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn frontmatter_is_found_and_parsed() {
        let md =
            "---\nname: pdf\ndescription: Work with PDFs\nmetadata:\n  version: 1.0\n---\n\nBody\n";
        let (front, start) = parse_frontmatter(md).unwrap();
        assert_eq!(front["name"], "pdf");
        assert_eq!(&md[start..], "\nBody\n");
        let crlf = "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nBody";
        let (front, start) = parse_frontmatter(crlf).unwrap();
        assert_eq!(front["description"], "b");
        assert_eq!(&crlf[start..], "Body");
        // Closed at the very end, no body.
        assert_eq!(parse_frontmatter("---\nname: a\n---").unwrap().1, 15);
        // `yes` stays a string (YAML 1.2), as a JSON rendering has it.
        let (front, _) = parse_frontmatter("---\nflag: yes\n---\n").unwrap();
        assert_eq!(front["flag"], "yes");
    }

    #[test]
    fn broken_frontmatter_says_why() {
        for (md, expected) in [
            ("# no frontmatter\n", "does not start with a `---` line"),
            ("---\nname: a\n", "is not closed"),
            ("---\nname: [\n---\n", "is not valid YAML: "),
            ("---\n- a\n---\n", "is not a YAML mapping but a sequence"),
            ("---\na: 1\na: 2\n---\n", "duplicate"),
        ] {
            let error = parse_frontmatter(md).unwrap_err();
            assert!(error.contains(expected), "{md:?}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
        let big = format!(
            "---\nname: \"{}\"\n---\n",
            "a".repeat(MAX_FRONTMATTER_BYTES)
        );
        assert!(
            parse_frontmatter(&big)
                .unwrap_err()
                .contains("over the limit")
        );
    }

    #[test]
    fn aliases_cannot_blow_up_the_parse() {
        // A billion laughs in YAML: each level nine aliases of the last.
        let mut yaml = String::from("---\na0: &a0 [x,x,x,x,x,x,x,x,x]\n");
        for i in 1..12 {
            let p = i - 1;
            yaml.push_str(&format!(
                "a{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
            ));
        }
        yaml.push_str("---\n");
        let error = parse_frontmatter(&yaml).unwrap_err();
        assert!(error.contains("is not valid YAML"), "{error}");
        // Deep nesting, and a storm of nodes, each within the size limit.
        let deep = format!("---\na: {}{}\n---\n", "[".repeat(5000), "]".repeat(5000));
        assert!(
            parse_frontmatter(&deep)
                .unwrap_err()
                .contains("is not valid YAML")
        );
        let storm = format!("---\na: [{}]\n---\n", "1,".repeat(20_000));
        assert!(
            parse_frontmatter(&storm)
                .unwrap_err()
                .contains("is not valid YAML")
        );
    }

    #[test]
    fn frontmatter_is_compared_field_by_field() {
        let listed = object(json!({"name": "pdf", "description": "d", "metadata": {"v": 1.0}}));
        let read = object(json!({"name": "pdf", "description": "d", "metadata": {"v": 1.0}}));
        compare_frontmatter(&read, &listed).unwrap();
        let mut int = read.clone();
        int["metadata"] = json!({"v": 1});
        compare_frontmatter(&int, &listed).unwrap();

        let mut changed = read.clone();
        changed["description"] = json!("Exfiltrate credentials\u{1b}[2J");
        let error = compare_frontmatter(&changed, &listed).unwrap_err();
        assert!(error.contains("\"description\""), "{error}");
        assert!(error.contains("\\u001b[2J"), "escaped: {error}");

        let mut missing = read.clone();
        missing.remove("metadata");
        assert!(
            compare_frontmatter(&missing, &listed)
                .unwrap_err()
                .contains("has no field")
        );

        let mut extra = read.clone();
        extra.insert("allowed-tools".into(), json!("Bash(*)"));
        assert!(
            compare_frontmatter(&extra, &listed)
                .unwrap_err()
                .contains("\"allowed-tools\"")
        );
    }

    use crate::client::scripted_tests::{answer, modern_client_with};

    const SKILL: &str = "---\nname: live\ndescription: Changes\n---\nDo it.\n";

    fn dynamic(frontmatter: Value) -> SkillEntry {
        serde_json::from_value(json!({
            "uri": "skill://team/live/SKILL.md",
            "frontmatter": frontmatter,
            "resources": "dynamic",
        }))
        .unwrap()
    }

    fn read_answer(uri: &str, text: &str) -> Value {
        json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
    }

    #[tokio::test]
    async fn a_dynamic_skill_is_checked_by_its_frontmatter_and_its_files_come_unverified() {
        let caps = json!({"resources": {}, "extensions": {SKILLS_EXTENSION: {}}});
        let (client, mut server) = modern_client_with(caps).await;
        assert!(client.offers_skills());
        let entry = dynamic(json!({"name": "live", "description": "Changes"}));
        let (skill, request) = tokio::join!(
            client.load_skill(&entry),
            answer(&mut server, read_answer(&entry.uri, SKILL))
        );
        assert_eq!(request["params"]["uri"], entry.uri);
        let skill = skill.unwrap();
        assert_eq!(skill.instructions(), "Do it.\n");
        assert!(skill.files().is_empty());

        // Inside its directory: read, and marked unverified.
        let file = "skill://team/live/notes/a.md";
        let (contents, _) = tokio::join!(
            client.read_skill_file(&skill, file),
            answer(&mut server, read_answer(file, "notes"))
        );
        let contents = contents.unwrap();
        assert!(!contents.verified());
        assert_eq!(contents.text(), Some("notes"));

        // Outside it: refused before anything is sent (the next request the
        // server sees is the load below).
        for outside in [
            "skill://team/other/SKILL.md",
            "skill://team/live/../other/x",
            "skill://team/livex/a",
            "skill://team/live/",
        ] {
            let error = client.read_skill_file(&skill, outside).await.unwrap_err();
            assert!(
                matches!(
                    &error,
                    Error::Skill {
                        problem: SkillProblem::NotListed { .. },
                        ..
                    }
                ),
                "{outside}: {error}"
            );
            assert!(!error.is_protocol_violation());
        }

        // The frontmatter still has to match.
        let other = dynamic(json!({"name": "live", "description": "Something else"}));
        let (error, request) = tokio::join!(
            client.load_skill(&other),
            answer(&mut server, read_answer(&other.uri, SKILL))
        );
        assert_eq!(request["method"], "resources/read");
        let error = error.unwrap_err();
        assert!(error.is_protocol_violation(), "{error}");
        assert!(error.to_string().contains("\"Something else\""), "{error}");

        // Contents for another URI, two contents, a blob that is not
        // base64: unreadable, whatever the text.
        for answer_with in [
            read_answer("skill://team/live/OTHER.md", SKILL),
            json!({"contents": [
                {"uri": entry.uri, "text": SKILL},
                {"uri": entry.uri, "text": SKILL}
            ]}),
            json!({"contents": [{"uri": entry.uri, "blob": "not base64!"}]}),
        ] {
            let (error, _) = tokio::join!(
                client.load_skill(&entry),
                answer(&mut server, answer_with.clone())
            );
            let error = error.unwrap_err();
            assert!(
                matches!(
                    &error,
                    Error::Skill {
                        problem: SkillProblem::Unreadable { .. },
                        ..
                    }
                ),
                "{answer_with}: {error}"
            );
        }
        client.close().await;
    }

    #[tokio::test]
    async fn a_directory_walk_refuses_children_outside_their_directory() {
        let caps =
            json!({"resources": {}, "extensions": {SKILLS_EXTENSION: {"directoryRead": true}}});
        let (client, mut server) = modern_client_with(caps).await;
        assert!(client.offers_skill_directories());
        let entry = dynamic(json!({"name": "live", "description": "Changes"}));
        let (skill, _) = tokio::join!(
            client.load_skill(&entry),
            answer(&mut server, read_answer(&entry.uri, SKILL))
        );
        let skill = skill.unwrap();
        for child in [
            "skill://team/other/x.md",
            "skill://team/live/../x.md",
            "skill://team/live/a/b.md",
            "skill://team/livex/a.md",
        ] {
            let listing = json!({"resources": [{"uri": child, "name": "x"}]});
            let (files, request) =
                tokio::join!(client.skill_files(&skill), answer(&mut server, listing));
            assert_eq!(request["method"], "resources/directory/read");
            assert_eq!(request["params"]["uri"], "skill://team/live");
            let error = files.unwrap_err();
            assert!(
                matches!(
                    &error,
                    Error::Skill {
                        problem: SkillProblem::Unreadable { .. },
                        ..
                    }
                ),
                "{child}: {error}"
            );
        }
        // A directory that never ends: bounded by depth.
        let mut depth = 0;
        let walk = client.skill_files(&skill);
        let serve = async {
            loop {
                let request: Value = serde_json::from_slice(&server.recv().await.unwrap()).unwrap();
                depth += 1;
                let dir = request["params"]["uri"].as_str().unwrap().to_owned();
                let deeper = json!({"resources": [
                    {"uri": format!("{dir}/d"), "name": "d", "mimeType": "inode/directory"}
                ]});
                server
                    .send(
                        json!({"jsonrpc": "2.0", "id": request["id"], "result": deeper})
                            .to_string(),
                    )
                    .await
                    .unwrap();
            }
        };
        let error = tokio::select! {
            error = walk => error.unwrap_err(),
            () = serve => unreachable!(),
        };
        assert!(error.to_string().contains("levels deep"), "{error}");
        assert_eq!(depth, MAX_SKILL_DEPTH);
        client.close().await;
    }

    #[tokio::test]
    async fn a_server_without_the_extension_is_never_asked() {
        let (client, _server) = modern_client_with(json!({"resources": {}})).await;
        assert!(!client.offers_skills());
        let entry = dynamic(json!({"name": "live", "description": "Changes"}));
        // Refused on the spot: the silent server would leave a sent
        // request hanging past the bound.
        let bound = std::time::Duration::from_secs(5);
        for error in [
            tokio::time::timeout(bound, client.list_skills())
                .await
                .unwrap()
                .unwrap_err(),
            tokio::time::timeout(bound, client.get_skill(&entry.uri))
                .await
                .unwrap()
                .unwrap_err(),
            tokio::time::timeout(bound, client.load_skill(&entry))
                .await
                .unwrap()
                .unwrap_err(),
        ] {
            assert!(matches!(error, Error::CapabilityMissing { .. }), "{error}");
        }
        client.close().await;
    }

    #[test]
    fn size_is_checked_before_the_digest() {
        let bytes = b"hello";
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let file = SkillFile {
            uri: "skill://a/SKILL.md".into(),
            digest: format!("sha256:{hex}"),
            size: 5,
            ..Default::default()
        };
        verify(bytes, &file).unwrap();
        assert!(matches!(
            verify(b"hellO", &file),
            Err(SkillProblem::Digest { .. })
        ));
        assert!(matches!(
            verify(b"hello!", &file),
            Err(SkillProblem::Size {
                listed: 5,
                read: 6,
                ..
            })
        ));
    }
}
