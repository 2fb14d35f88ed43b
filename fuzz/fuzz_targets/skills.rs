//! The skills extension's untrusted inputs (`switchboard::client::skills`,
//! `switchboard_types::skills`): a `SKILL.md` as a server sends it, and a
//! `skills/list` entry.
//!
//! Input: the bytes, read lossily as text.
//!
//! Invariants:
//! - no panic, and parsing finishes fast (the frontmatter's YAML budget;
//!   libFuzzer's timeout);
//! - a frontmatter that parses ends where the body starts: on a character
//!   boundary, after the opening `---`, within the text;
//! - an entry that decodes re-encodes to JSON that decodes to the same
//!   entry, and judging it by the rules (`problems`) never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard::client::skills::parse_frontmatter;
use switchboard_types::SkillEntry;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok((frontmatter, body_start)) = parse_frontmatter(&text) {
        assert!(body_start <= text.len());
        assert!(text.is_char_boundary(body_start));
        assert!(body_start >= 4, "after the opening `---` line");
        assert!(serde_json::to_string(&frontmatter).is_ok());
    }
    if let Ok(entry) = serde_json::from_slice::<SkillEntry>(data) {
        let _ = entry.problems();
        let _ = (entry.name(), entry.description(), entry.directory());
        let again = serde_json::to_vec(&entry).expect("an entry encodes");
        let back: SkillEntry = serde_json::from_slice(&again).expect("and decodes");
        assert_eq!(back, entry);
    }
});
