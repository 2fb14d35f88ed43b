//! The repository's documents checked against the code: `docs/ARCHITECTURE.md`
//! names every crate and module that exists and nothing that does not, and
//! README.md's first program compiles as a user would copy it.
//!
//! These live in the core crate because it builds fastest; they read only
//! files inside the repository, found from `CARGO_MANIFEST_DIR`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The largest `docs/ARCHITECTURE.md` may be: a map is read whole.
const ARCHITECTURE_MAX_BYTES: usize = 16_000;

/// The directories at the repository's top that a document may name as
/// `DIR/…` outside a crate's section.
const ROOT_DIRS: [&str; 6] = [
    "crates/",
    "docs/",
    "scripts/",
    "fuzz/",
    "conformance/",
    ".ci/",
];

fn repo_root() -> PathBuf {
    // crates/switchboard → the repository's top.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the core crate lives at crates/switchboard")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every crate directory under `crates/`, sorted.
fn crate_dirs(root: &Path) -> Vec<String> {
    let mut dirs: Vec<String> = std::fs::read_dir(root.join("crates"))
        .expect("crates/ is readable")
        .map(|entry| entry.expect("a directory entry"))
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    dirs
}

/// Every `.rs` file below `dir`, as paths relative to it with `/`.
fn rust_files(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(base, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(base).expect("below its base");
                out.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// The code spans (`` `…` ``) of one line.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// A span with one `{a,b}` group stands for each alternative:
/// `hub/{one,serve}.rs` names `hub/one.rs` and `hub/serve.rs`.
fn expand(span: &str) -> Vec<String> {
    match (span.find('{'), span.find('}')) {
        (Some(open), Some(close)) if open < close => span[open + 1..close]
            .split(',')
            .map(|alt| format!("{}{}{}", &span[..open], alt.trim(), &span[close + 1..]))
            .collect(),
        _ => vec![span.to_owned()],
    }
}

fn looks_like_a_path(span: &str) -> bool {
    !span.is_empty()
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./{},".contains(c))
}

/// The rule `docs/ARCHITECTURE.md` is held to (its last section says it
/// to the reader):
///
/// - a heading naming `` `crates/NAME` `` opens that crate's section, and
///   any other heading closes it; every crate directory has a section;
/// - in a crate's section, module files are named by their path below the
///   crate's `src/` (`hub/one.rs`, `lib.rs`; one `{a,b}` group allowed:
///   `dialect/{codex,goose}.rs`), and every `.rs` file below `src/` is
///   named (unit-test files included; `tests/`, `benches/` and
///   `examples/` are not required);
/// - every path named exists: in a crate's section a span ending in `.rs`
///   or `/` is below `src/` (or the crate, for `tests/…`, `benches/…`,
///   `examples/…`); outside one, a span ending in `.rs` is below some
///   crate's `src/`; anywhere, a span starting `crates/`, `docs/`,
///   `scripts/`, `fuzz/`, `conformance/` or `.ci/` is below the
///   repository's top;
/// - the file is at most 16,000 bytes.
#[test]
fn architecture_names_every_crate_and_module_and_nothing_else() {
    let root = repo_root();
    let path = root.join("docs/ARCHITECTURE.md");
    let text = read(&path);
    let mut problems = Vec::new();
    if text.len() > ARCHITECTURE_MAX_BYTES {
        problems.push(format!(
            "docs/ARCHITECTURE.md is {} bytes, over {ARCHITECTURE_MAX_BYTES}: it is a map; move detail to the other documents",
            text.len()
        ));
    }

    let crates = crate_dirs(&root);
    let mut named: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    let mut section: Option<String> = None;
    let mut in_fence = false;
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        if line.starts_with("```") {
            in_fence = !in_fence;
        }
        if line.starts_with('#') && !in_fence {
            section = code_spans(line)
                .into_iter()
                .find_map(|span| span.strip_prefix("crates/"))
                .map(|name| name.trim_end_matches('/').to_owned());
            if let Some(name) = &section {
                if !crates.contains(name) {
                    problems.push(format!(
                        "line {number}: a section for crates/{name}, which does not exist"
                    ));
                }
                named.entry(name.clone()).or_default();
            }
            continue;
        }
        for span in code_spans(line) {
            if !looks_like_a_path(span) {
                continue;
            }
            for candidate in expand(span) {
                let at_root = ROOT_DIRS.iter().any(|dir| candidate.starts_with(dir));
                let target = if at_root {
                    root.join(&candidate)
                } else if let Some(name) = &section {
                    if !(candidate.ends_with(".rs") || candidate.ends_with('/')) {
                        continue;
                    }
                    let crate_dir = root.join("crates").join(name);
                    if ["tests/", "benches/", "examples/"]
                        .iter()
                        .any(|dir| candidate.starts_with(dir))
                    {
                        crate_dir.join(&candidate)
                    } else {
                        named
                            .get_mut(name)
                            .expect("opened with the section")
                            .insert(candidate.clone());
                        crate_dir.join("src").join(&candidate)
                    }
                } else if candidate.len() > ".rs".len() && candidate.ends_with(".rs") {
                    // Outside a crate's section: a module of some crate.
                    match crates
                        .iter()
                        .map(|name| root.join("crates").join(name).join("src").join(&candidate))
                        .find(|path| path.exists())
                    {
                        Some(found) => found,
                        None => root.join("crates/*/src").join(&candidate),
                    }
                } else {
                    continue;
                };
                if !target.exists() {
                    problems.push(format!(
                        "line {number}: `{candidate}` does not exist ({})",
                        target.display()
                    ));
                }
            }
        }
    }

    for name in &crates {
        let Some(names) = named.get(name) else {
            problems.push(format!(
                "crates/{name} has no section (a heading naming `crates/{name}`)"
            ));
            continue;
        };
        for module in rust_files(&root.join("crates").join(name).join("src")) {
            if !names.contains(&module) {
                problems.push(format!(
                    "crates/{name}/src/{module} is not named in crates/{name}'s section (as `{module}`)"
                ));
            }
        }
    }

    assert!(
        problems.is_empty(),
        "docs/ARCHITECTURE.md does not match the code:\n  {}",
        problems.join("\n  ")
    );
}

/// The first fenced block whose fence starts with `opening` (e.g. "```rust")
/// and whose text satisfies `wanted`.
fn fenced_block(text: &str, opening: &str, wanted: impl Fn(&str) -> bool) -> Option<String> {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with(opening) {
            continue;
        }
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.trim_start().starts_with("```"))
            .collect();
        let body = body.join("\n") + "\n";
        if wanted(&body) {
            return Some(body);
        }
    }
    None
}

/// Each workspace package's name and its directory.
fn workspace_packages(root: &Path) -> Vec<(String, PathBuf)> {
    crate_dirs(root)
        .into_iter()
        .map(|dir| {
            let dir = root.join("crates").join(dir);
            let manifest = read(&dir.join("Cargo.toml"));
            let name = manifest
                .lines()
                .skip_while(|l| l.trim() != "[package]")
                .find_map(|l| {
                    let (key, value) = l.split_once('=')?;
                    (key.trim() == "name").then(|| value.trim().trim_matches('"').to_owned())
                })
                .expect("every crate's manifest names its package");
            (name, dir)
        })
        .collect()
}

/// The README's `[dependencies]` with each of this workspace's packages
/// pointed at its directory here; every other line as written. Only where
/// the package comes from changes (a version, a `path` or a `git` source):
/// features and the rest of an entry stay.
fn local_dependencies(block: &str, packages: &[(String, PathBuf)]) -> String {
    let mut out = String::new();
    for line in block.lines() {
        let key = line.split('=').next().unwrap_or("").trim();
        let Some((_, dir)) = packages.iter().find(|(name, _)| name == key) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let local = format!("path = {:?}", dir.display().to_string());
        let value = line.split_once('=').expect("a key has a value").1.trim();
        let entry = if value.starts_with('"') {
            format!("{{ {local} }}")
        } else {
            // An inline table: drop its source keys, then add ours.
            let inner = value
                .trim_start_matches('{')
                .trim_end_matches('}')
                .split(',')
                .map(str::trim)
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>();
            let mut kept = vec![local];
            let mut pending = String::new();
            // Re-join parts that a `,` inside `[...]` split.
            for part in inner {
                if !pending.is_empty() {
                    pending.push_str(", ");
                }
                pending.push_str(part);
                if pending.matches('[').count() > pending.matches(']').count() {
                    continue;
                }
                let name = pending.split('=').next().unwrap_or("").trim();
                if !["version", "path", "git", "branch", "tag", "rev"].contains(&name) {
                    kept.push(std::mem::take(&mut pending));
                } else {
                    pending.clear();
                }
            }
            format!("{{ {} }}", kept.join(", "))
        };
        out.push_str(&format!("{key} = {entry}\n"));
    }
    out
}

/// README.md's first Rust program, with the first `[dependencies]` block it
/// shows, built as a new crate would be: only where this workspace's own
/// packages come from is changed (they are not on crates.io), and the
/// workspace's Cargo.lock is copied so that every other version matches
/// what CI has built (`--offline`: nothing is downloaded). The build's
/// target directory is kept between runs.
#[test]
fn readme_program_compiles_as_copied_into_a_new_crate() {
    let root = repo_root();
    let readme = read(&root.join("README.md"));
    let dependencies = fenced_block(&readme, "```toml", |b| b.contains("[dependencies]"))
        .expect("README.md shows a ```toml block with [dependencies]");
    let program =
        fenced_block(&readme, "```rust", |_| true).expect("README.md shows a ```rust block");
    assert!(
        program.contains("fn main"),
        "README.md's first Rust block is not a whole program (no `fn main`):\n{program}"
    );

    let packages = workspace_packages(&root);
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-program");
    std::fs::create_dir_all(scratch.join("src")).expect("a scratch directory");
    let manifest = format!(
        "[package]\nname = \"readme-program\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         # Its own workspace, wherever the scratch directory is.\n[workspace]\n\n{}",
        local_dependencies(&dependencies, &packages)
    );
    std::fs::write(scratch.join("Cargo.toml"), &manifest).expect("Cargo.toml written");
    std::fs::write(scratch.join("src/main.rs"), &program).expect("main.rs written");
    std::fs::copy(root.join("Cargo.lock"), scratch.join("Cargo.lock")).expect("Cargo.lock copied");

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let started = Instant::now();
    let output = Command::new(cargo)
        .args(["build", "--offline", "--quiet"])
        .current_dir(&scratch)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-program-target"),
        )
        .output()
        .expect("cargo runs");
    eprintln!(
        "README.md's program built in {:.1} s ({})",
        started.elapsed().as_secs_f64(),
        scratch.display()
    );
    assert!(
        output.status.success(),
        "README.md's first Rust program does not build as a new crate ({}):\n\
         --- Cargo.toml\n{manifest}\n--- cargo's stderr\n{}",
        scratch.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}
