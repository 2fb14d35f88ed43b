//! The skills extension (SEP-2640, `io.modelcontextprotocol/skills`): a
//! server offers Agent Skills — a `SKILL.md` with YAML frontmatter plus
//! supporting files — listed by `skills/list` and `skills/get`, each file
//! read through `resources/read` and checked against the entry's digest and
//! size before it is used.
//!
//! A server that declares the extension (`capabilities.extensions`) declares
//! `resources` too. Skill URIs are `skill://<skill-path>/SKILL.md`, the last
//! `<skill-path>` segment being the skill's name.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::meta::{CacheScope, JsonObject, ResultType};
use crate::resources::Resource;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
/// The file every skill has, last in its URI.
pub const SKILL_MD: &str = "SKILL.md";
/// The scheme of skill URIs.
pub const SKILL_SCHEME: &str = "skill://";
/// At most this many files per skill (the extension's limit).
pub const MAX_SKILL_FILES: usize = 512;
/// At most this many bytes in all of a skill's files together (16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;
/// The MIME type of a subdirectory in `resources/directory/read`.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// The extension's setting that says the server serves
/// `resources/directory/read`.
pub const DIRECTORY_READ: &str = "directoryRead";

/// One skill, as `skills/list` and `skills/get` describe it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md` (`skill://<skill-path>/SKILL.md`).
    pub uri: String,
    /// The `SKILL.md` YAML frontmatter as a JSON object; `name` and
    /// `description` are always there.
    pub frontmatter: JsonObject,
    /// The skill's files, `SKILL.md` included, each with its digest and
    /// size; or `dynamic` when the server cannot enumerate them.
    pub resources: SkillFiles,
    /// Entry metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

impl SkillEntry {
    /// `frontmatter.name`, if it is a string.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name")?.as_str()
    }

    /// `frontmatter.description`, if it is a string.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description")?.as_str()
    }

    /// The skill's directory URI: [`uri`](Self::uri) without `/SKILL.md`.
    pub fn directory(&self) -> Option<&str> {
        self.uri
            .strip_suffix(SKILL_MD)
            .and_then(|d| d.strip_suffix('/'))
    }

    /// The listed file with this URI.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillFiles::Listed(files) => files.iter().find(|f| f.uri == uri),
            SkillFiles::Dynamic => None,
        }
    }

    /// What is wrong with this entry by the extension's rules, one line
    /// each; empty when nothing is. A client should not load an entry with
    /// problems: its files cannot be verified as the extension requires.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let Some(path) = self.uri.strip_prefix(SKILL_SCHEME) else {
            problems.push(format!("uri {:?} is not a skill:// URI", self.uri));
            return problems;
        };
        let segments: Vec<&str> = path.split('/').collect();
        if segments.len() < 2
            || segments.last() != Some(&SKILL_MD)
            || segments
                .iter()
                .any(|s| s.is_empty() || *s == "." || *s == "..")
        {
            problems.push(format!(
                "uri {:?} is not skill://<skill-path>/SKILL.md",
                self.uri
            ));
        }
        match self.name() {
            None => problems.push("frontmatter has no string `name`".into()),
            Some(name) => {
                if !valid_skill_name(name) {
                    problems.push(format!(
                        "name {name:?} is not 1-64 lowercase letters, digits and single hyphens"
                    ));
                }
                if segments.len() >= 2 && segments[segments.len() - 2] != name {
                    problems.push(format!(
                        "the uri's last path segment {:?} is not the name {name:?}",
                        segments[segments.len() - 2]
                    ));
                }
            }
        }
        if self.description().is_none_or(str::is_empty) {
            problems.push("frontmatter has no string `description`".into());
        }
        if let SkillFiles::Listed(files) = &self.resources {
            if files.len() > MAX_SKILL_FILES {
                problems.push(format!(
                    "{} files, over the limit of {MAX_SKILL_FILES}",
                    files.len()
                ));
            }
            let total: u64 = files.iter().fold(0, |sum, f| sum.saturating_add(f.size));
            if total > MAX_SKILL_BYTES {
                problems.push(format!(
                    "{total} bytes of files, over the limit of {MAX_SKILL_BYTES}"
                ));
            }
            if !files.iter().any(|f| f.uri == self.uri) {
                problems.push("its resources do not list its SKILL.md".into());
            }
            let directory = self.directory().map(|d| format!("{d}/"));
            let mut seen = std::collections::HashSet::new();
            for file in files {
                if !seen.insert(file.uri.as_str()) {
                    problems.push(format!("file {:?} is listed twice", file.uri));
                }
                let inside = directory.as_deref().is_some_and(|d| {
                    file.uri.strip_prefix(d).is_some_and(|rest| {
                        !rest.is_empty()
                            && rest
                                .split('/')
                                .all(|s| !s.is_empty() && s != "." && s != "..")
                    })
                });
                if !inside {
                    problems.push(format!(
                        "file {:?} is outside the skill's directory",
                        file.uri
                    ));
                }
                if parse_digest(&file.digest).is_none() {
                    problems.push(format!(
                        "file {:?} has digest {:?}, not sha256:<64 lowercase hex digits>",
                        file.uri, file.digest
                    ));
                }
            }
        }
        problems
    }
}

/// A skill name by the Agent Skills rules: 1–64 characters of lowercase
/// letters, digits and hyphens, no leading, trailing or doubled hyphen.
pub fn valid_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The 32 bytes of a `sha256:<64 lowercase hex>` digest.
pub fn parse_digest(digest: &str) -> Option<[u8; 32]> {
    let hex = digest.strip_prefix("sha256:")?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// A skill's files: listed, or `"dynamic"`.
#[derive(Clone, Debug, PartialEq)]
pub enum SkillFiles {
    /// Every file of the skill, `SKILL.md` included.
    Listed(Vec<SkillFile>),
    /// The server cannot enumerate them (`"dynamic"`); only `SKILL.md` is
    /// known, and nothing can be verified against a digest.
    Dynamic,
}

impl Default for SkillFiles {
    fn default() -> Self {
        SkillFiles::Listed(Vec::new())
    }
}

impl Serialize for SkillFiles {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillFiles::Listed(files) => files.serialize(serializer),
            SkillFiles::Dynamic => serializer.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillFiles {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Listed(Vec<SkillFile>),
            Word(String),
        }
        match Wire::deserialize(deserializer)? {
            Wire::Listed(files) => Ok(SkillFiles::Listed(files)),
            Wire::Word(word) if word == "dynamic" => Ok(SkillFiles::Dynamic),
            Wire::Word(word) => Err(de::Error::custom(format!(
                "resources must be an array of files or \"dynamic\", not {word:?}"
            ))),
        }
    }
}

/// One file of a skill.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillFile {
    /// The file's resource URI, inside the skill's directory.
    pub uri: String,
    /// `sha256:<64 lowercase hex digits>` of its bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

list_result! {
    /// The result of `skills/list`.
    pub struct ListSkillsResult {
        /// This page of skills.
        pub skills: Vec<SkillEntry>,
    }
}

/// Params of `resources/directory/read` (the skills extension, when the
/// server declares `directoryRead: true`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryRequestParams {
    /// The directory's URI.
    pub uri: String,
    /// The `nextCursor` of the previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

list_result! {
    /// The result of `resources/directory/read`.
    pub struct ReadDirectoryResult {
        /// This page of the directory's direct children (a subdirectory's MIME type is `inode/directory`).
        pub resources: Vec<Resource>,
    }
}

/// Params of `skills/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillRequestParams {
    /// The skill's URI (its `SKILL.md`).
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The result of `skills/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The skill.
    pub skill: SkillEntry,
    /// `complete` (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Freshness in milliseconds (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache it (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: crate::Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(value: serde_json::Value) -> SkillEntry {
        serde_json::from_value(value).expect("an entry")
    }

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn an_entry_round_trips_with_listed_or_dynamic_files() {
        let listed = json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "PDFs", "license": "MIT"},
            "resources": [{"uri": "skill://pdf-processing/SKILL.md", "digest": DIGEST, "size": 10}],
            "x-later": 1,
        });
        let e = entry(listed.clone());
        assert_eq!(e.name(), Some("pdf-processing"));
        assert_eq!(e.directory(), Some("skill://pdf-processing"));
        assert_eq!(e.file("skill://pdf-processing/SKILL.md").unwrap().size, 10);
        assert!(e.problems().is_empty(), "{:?}", e.problems());
        assert_eq!(serde_json::to_value(&e).unwrap(), listed);

        let dynamic = json!({
            "uri": "skill://a/b/SKILL.md",
            "frontmatter": {"name": "b", "description": "d"},
            "resources": "dynamic",
        });
        let e = entry(dynamic.clone());
        assert_eq!(e.resources, SkillFiles::Dynamic);
        assert!(e.problems().is_empty(), "{:?}", e.problems());
        assert_eq!(serde_json::to_value(&e).unwrap(), dynamic);

        let bad: Result<SkillEntry, _> = serde_json::from_value(json!({
            "uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "all",
        }));
        assert!(bad.unwrap_err().to_string().contains("\"dynamic\""));
    }

    #[test]
    fn problems_name_each_broken_rule() {
        let e = entry(json!({
            "uri": "skill://pdf/SKILL.md",
            "frontmatter": {"name": "PDF--x", "description": ""},
            "resources": [
                {"uri": "skill://pdf/../etc/passwd", "digest": "md5:00", "size": 1},
                {"uri": "skill://other/SKILL.md", "digest": DIGEST, "size": 1},
                {"uri": "skill://other/SKILL.md", "digest": DIGEST, "size": MAX_SKILL_BYTES},
            ],
        }));
        let problems = e.problems().join("\n");
        for expected in [
            "name \"PDF--x\" is not",
            "last path segment \"pdf\" is not the name",
            "no string `description`",
            "do not list its SKILL.md",
            "\"skill://pdf/../etc/passwd\" is outside",
            "\"skill://other/SKILL.md\" is outside",
            "listed twice",
            "not sha256:",
            "over the limit of 16777216",
        ] {
            assert!(problems.contains(expected), "{expected} in:\n{problems}");
        }
        let e = entry(json!({"uri": "https://x/SKILL.md", "frontmatter": {}, "resources": []}));
        assert_eq!(e.problems().len(), 1);
    }

    #[test]
    fn digests_and_names() {
        assert_eq!(parse_digest(DIGEST).unwrap()[..2], [0x01, 0x23]);
        assert!(parse_digest(&DIGEST.to_uppercase()).is_none());
        assert!(parse_digest("sha256:00").is_none());
        assert!(parse_digest(&DIGEST.replace("sha256", "sha512")).is_none());
        for good in ["a", "pdf-processing", "x1-2"] {
            assert!(valid_skill_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", &"a".repeat(65)] {
            assert!(!valid_skill_name(bad), "{bad}");
        }
    }
}
