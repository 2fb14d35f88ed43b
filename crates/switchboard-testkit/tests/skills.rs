//! The skills extension (SEP-2640) against the test server (`--skills`), in
//! both eras, over stdio and Streamable HTTP: listing reads no file, loading
//! reads and verifies `SKILL.md`, files are read on demand and verified, and
//! every way the server can serve a file other than as listed is refused
//! with nothing of it used.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use support::HttpServer;
use switchboard::transport::http::HttpConfig;
use switchboard::transport::stdio::StdioConfig;
use switchboard::types::Era;
use switchboard::{Client, Error, SkillProblem};

const SERVER: &str = env!("CARGO_BIN_EXE_switchboard-testkit-server");
const PDF: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const LOGO: &str = "skill://pdf-processing/assets/logo.png";

/// Generous bound for anything that should happen at once.
const PATIENCE: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug)]
enum Target {
    Stdio(Era),
    Http(Era),
}

const TARGETS: [Target; 4] = [
    Target::Stdio(Era::Legacy),
    Target::Stdio(Era::Modern),
    Target::Http(Era::Legacy),
    Target::Http(Era::Modern),
];

fn era_flag(era: Era) -> &'static str {
    match era {
        Era::Legacy => "legacy",
        _ => "modern",
    }
}

/// A connected client, the server's record of what it received, and what
/// keeps an HTTP server alive.
struct Connected {
    client: Client,
    record: PathBuf,
    _http: Option<HttpServer>,
}

impl Connected {
    /// The `resources/read` URIs the server received, in order.
    fn reads(&self) -> Vec<String> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|m| m["method"] == "resources/read")
            .filter_map(|m| m["params"]["uri"].as_str().map(str::to_owned))
            .collect()
    }
}

impl Drop for Connected {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.record);
    }
}

fn record_path(target: Target, extra: &[&str]) -> PathBuf {
    std::env::temp_dir().join(format!(
        "switchboard-skills-{}-{:?}-{}-{}.jsonl",
        std::process::id(),
        target,
        extra.join("_"),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ))
}

async fn connect(target: Target, extra: &[&str]) -> Connected {
    let record = record_path(target, extra);
    let record_arg = record.to_str().unwrap().to_owned();
    let era = match target {
        Target::Stdio(era) | Target::Http(era) => era,
    };
    let mut args = vec!["--era", era_flag(era), "--record", &record_arg];
    args.extend_from_slice(extra);
    let builder = Client::builder().name(format!("{target:?}"));
    let (client, http) = match target {
        Target::Stdio(_) => (
            builder.connect(StdioConfig::new(SERVER).args(&args)).await,
            None,
        ),
        Target::Http(_) => {
            let server = HttpServer::start(&args);
            let config = HttpConfig::new(format!("{}/mcp", server.base));
            (builder.connect(config).await, Some(server))
        }
    };
    let client = client.unwrap_or_else(|e| panic!("{target:?}: connect: {e}"));
    assert_eq!(client.era(), era, "{target:?}");
    Connected {
        client,
        record,
        _http: http,
    }
}

async fn patiently<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"))
}

fn problem(error: Error) -> SkillProblem {
    match error {
        Error::Skill { problem, skill, .. } => {
            assert!(skill.starts_with("skill://"), "{skill}");
            problem
        }
        other => panic!("expected a skill error, got {other}"),
    }
}

#[tokio::test]
async fn skills_are_listed_without_reading_a_file_then_loaded_and_read_verified() {
    for target in TARGETS {
        let c = connect(target, &["--skills"]).await;
        assert!(c.client.offers_skills(), "{target:?}");
        let skills = patiently("skills/list", c.client.list_skills())
            .await
            .unwrap();
        let names: Vec<_> = skills.iter().map(|s| s.name().unwrap()).collect();
        assert_eq!(names, ["pdf-processing", "code-review"], "{target:?}");
        assert!(skills.iter().all(|s| s.problems().is_empty()), "{target:?}");
        assert_eq!(
            skills[0].description(),
            Some("Extract, fill, and assemble PDF documents")
        );
        // No prefetching: listing (and getting one) read nothing.
        let got = c.client.get_skill(PDF).await.unwrap();
        assert_eq!(got, skills[0], "{target:?}");
        assert!(c.reads().is_empty(), "{target:?}: {:?}", c.reads());

        let skill = patiently("load", c.client.load_skill(&skills[0]))
            .await
            .unwrap_or_else(|e| panic!("{target:?}: {e}"));
        assert_eq!(c.reads(), [PDF], "{target:?}: only SKILL.md is read");
        assert_eq!(skill.name(), "pdf-processing");
        assert!(skill.markdown().starts_with("---\nname: pdf-processing\n"));
        assert!(
            skill.instructions().starts_with("\n# PDF processing\n"),
            "{:?}",
            skill.instructions()
        );
        assert_eq!(skill.frontmatter()["metadata"]["version"], "1.0");
        let files: Vec<_> = skill.files().iter().map(|f| f.uri.clone()).collect();
        assert_eq!(files, [FORMS, LOGO], "{target:?}");

        let forms = c.client.read_skill_file(&skill, FORMS).await.unwrap();
        assert!(forms.verified());
        assert!(forms.text().unwrap().starts_with("# Forms"));
        let logo = c.client.read_skill_file(&skill, LOGO).await.unwrap();
        assert_eq!(logo.mime_type.as_deref(), Some("image/png"));
        assert_eq!(&logo.bytes()[..4], b"\x89PNG", "a blob, decoded");
        assert!(logo.verified());

        // Not the skill's: refused before anything is sent.
        let elsewhere = c
            .client
            .read_skill_file(&skill, "skill://code-review/SKILL.md")
            .await
            .unwrap_err();
        assert!(
            matches!(problem(elsewhere), SkillProblem::NotListed { .. }),
            "{target:?}"
        );
        assert_eq!(c.reads(), [PDF, FORMS, LOGO], "{target:?}");

        let unknown = c
            .client
            .get_skill("skill://nope/SKILL.md")
            .await
            .unwrap_err();
        assert_eq!(unknown.code(), Some(-32602), "{target:?}: {unknown}");
        c.client.close().await;
    }
}

#[tokio::test]
async fn a_skill_file_that_does_not_match_its_listing_is_refused_and_nothing_more_is_read() {
    for target in [Target::Stdio(Era::Legacy), Target::Stdio(Era::Modern)] {
        for (tamper, what) in [
            ("digest", "digest"),
            ("size", "size"),
            ("frontmatter", "frontmatter"),
        ] {
            let c = connect(target, &["--skills-tamper", tamper]).await;
            let skills = c.client.list_skills().await.unwrap();
            let error = patiently("load", c.client.load_skill(&skills[0]))
                .await
                .unwrap_err();
            let shown = error.to_string();
            assert!(shown.contains("server `"), "names the server: {shown}");
            assert!(shown.contains(PDF), "names the skill: {shown}");
            match (what, problem(error)) {
                ("digest", SkillProblem::Digest { file, listed, read }) => {
                    assert_eq!(file, PDF);
                    assert_ne!(listed, read);
                }
                ("size", SkillProblem::Size { listed, read, .. }) => {
                    assert!(read > listed, "{read} > {listed}");
                }
                ("frontmatter", SkillProblem::Frontmatter { detail }) => {
                    assert!(detail.contains("\"description\""), "{detail}");
                    assert!(detail.contains("Exfiltrate credentials"), "{detail}");
                }
                (what, other) => panic!("{target:?} {what}: {other:?}"),
            }
            // Refused: the supporting file is never asked for.
            assert_eq!(c.reads(), [PDF], "{target:?} {tamper}");
            // The other skill is unaffected.
            c.client.load_skill(&skills[1]).await.unwrap();
            c.client.close().await;
        }

        let c = connect(target, &["--skills-tamper", "file"]).await;
        let skills = c.client.list_skills().await.unwrap();
        let skill = c.client.load_skill(&skills[0]).await.unwrap();
        let error = c.client.read_skill_file(&skill, FORMS).await.unwrap_err();
        assert!(
            matches!(problem(error), SkillProblem::Digest { ref file, .. } if file == FORMS),
            "{target:?}"
        );
        c.client.close().await;
    }
}

#[tokio::test]
async fn a_server_without_the_extension_is_not_asked() {
    for target in [Target::Stdio(Era::Legacy), Target::Stdio(Era::Modern)] {
        let c = connect(target, &[]).await;
        assert!(!c.client.offers_skills());
        let error = c.client.list_skills().await.unwrap_err();
        assert!(
            matches!(error, Error::CapabilityMissing { .. }),
            "{target:?}: {error}"
        );
        assert!(
            error.to_string().contains("io.modelcontextprotocol/skills"),
            "{error}"
        );
        let sent = std::fs::read_to_string(&c.record).unwrap_or_default();
        assert!(!sent.contains("skills/list"), "nothing sent: {sent}");
        c.client.close().await;
    }
}

#[tokio::test]
async fn a_dynamic_skills_files_are_found_through_its_directory() {
    for target in TARGETS {
        let c = connect(target, &["--skills-directories"]).await;
        assert!(c.client.offers_skill_directories(), "{target:?}");
        let skills = c.client.list_skills().await.unwrap();
        let live = skills
            .iter()
            .find(|s| s.name() == Some("live-notes"))
            .unwrap_or_else(|| panic!("{target:?}: {skills:?}"));
        assert_eq!(live.resources, switchboard::types::SkillFiles::Dynamic);
        // No digest to check: the frontmatter still is.
        let skill = c.client.load_skill(live).await.unwrap();
        assert!(skill.instructions().contains("notes/"), "{target:?}");
        let files = c.client.skill_files(&skill).await.unwrap();
        assert_eq!(
            files,
            [
                "skill://live-notes/notes/today.md",
                "skill://live-notes/notes/archive/monday.md"
            ],
            "{target:?}"
        );
        let today = c.client.read_skill_file(&skill, &files[0]).await.unwrap();
        assert!(!today.verified(), "nothing to verify it against");
        assert!(today.text().unwrap().starts_with("# Today"));
        // A listed skill's files come from its listing, no directory read.
        let pdf = c.client.load_skill(&skills[0]).await.unwrap();
        assert_eq!(c.client.skill_files(&pdf).await.unwrap(), [FORMS, LOGO]);
        // A file is no directory: the server's -32602.
        let error = c.client.read_directory(PDF).await.unwrap_err();
        assert_eq!(error.code(), Some(-32602), "{target:?}: {error}");
        c.client.close().await;
    }
    // Without `directoryRead`, nothing is asked.
    let c = connect(Target::Stdio(Era::Legacy), &["--skills"]).await;
    assert!(!c.client.offers_skill_directories());
    let error = c
        .client
        .read_directory("skill://pdf-processing")
        .await
        .unwrap_err();
    assert!(matches!(error, Error::CapabilityMissing { .. }), "{error}");
    c.client.close().await;
}
