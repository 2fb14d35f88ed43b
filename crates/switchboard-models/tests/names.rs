//! Model-facing names: exact outputs, collisions, and properties that hold
//! for any input.

use std::collections::HashSet;
use std::time::Instant;

use proptest::prelude::*;
use switchboard_models::names::{HASH_LEN, MAX_LEN, is_valid};
use switchboard_models::{NameOptions, Names, Provider};

fn build<'a>(provider: Provider, pairs: &[(&'a str, &'a str)]) -> Names {
    Names::build(provider, &NameOptions::default(), pairs.iter().copied())
}

#[test]
fn default_shape_is_mcp_server_tool() {
    for provider in Provider::ALL {
        let names = build(provider, &[("github", "create_issue")]);
        assert_eq!(names.all(), ["mcp__github__create_issue"]);
        assert_eq!(
            names.resolve("mcp__github__create_issue"),
            Some(("github", "create_issue"))
        );
        assert_eq!(names.index("mcp__github__create_issue"), Some(0));
        assert_eq!(names.resolve("mcp__github__other"), None);
        assert!(names.collisions().is_empty());
    }
}

#[test]
fn custom_prefix_and_separator() {
    let options = NameOptions::default().prefix("ext").separator("-");
    let names = Names::build(Provider::Anthropic, &options, [("fs", "read")]);
    assert_eq!(names.get(0), "ext-fs-read");
}

#[test]
fn empty_prefix_writes_no_leading_separator() {
    let options = NameOptions::default().prefix("");
    let names = Names::build(Provider::OpenAiChat, &options, [("fs", "read")]);
    assert_eq!(names.get(0), "fs__read");
}

#[test]
fn invalid_prefix_and_separator_are_sanitized() {
    let options = NameOptions::default().prefix("my tools").separator("::");
    let names = Names::build(Provider::OpenAiResponses, &options, [("fs", "read")]);
    assert_eq!(names.get(0), "my_tools__fs__read");
}

#[test]
fn invalid_characters_become_underscores_per_provider() {
    let pairs = [("files.local", "read file ✓")];
    let openai = build(Provider::OpenAiResponses, &pairs);
    assert_eq!(openai.get(0), "mcp__files_local__read_file__");
    // Gemini allows dots.
    let gemini = build(Provider::Gemini, &pairs);
    assert_eq!(gemini.get(0), "mcp__files.local__read_file__");
    assert_eq!(
        gemini.resolve(gemini.get(0)),
        Some(("files.local", "read file ✓"))
    );
}

#[test]
fn empty_parts_get_a_placeholder() {
    let names = build(Provider::Anthropic, &[("", "")]);
    assert_eq!(names.get(0), "mcp______");
    let options = NameOptions::default().prefix("").separator("");
    let names = Names::build(Provider::OpenAiChat, &options, [("", "")]);
    assert_eq!(names.get(0), "__");
    assert!(is_valid(Provider::OpenAiChat, names.get(0)));
}

#[test]
fn gemini_names_start_with_a_letter_or_underscore() {
    let options = NameOptions::default().prefix("");
    let names = Names::build(Provider::Gemini, &options, [("9lives", "x")]);
    assert_eq!(names.get(0), "_9lives__x");
    // Others take a leading digit.
    let names = Names::build(Provider::OpenAiChat, &options, [("9lives", "x")]);
    assert_eq!(names.get(0), "9lives__x");
}

#[test]
fn long_names_become_a_stem_and_a_hash() {
    let tool = "t".repeat(100);
    let names = build(Provider::OpenAiResponses, &[("github", &tool)]);
    let name = names.get(0);
    assert_eq!(name.len(), MAX_LEN);
    let (stem, hash) = name.split_at(MAX_LEN - HASH_LEN - 1);
    assert_eq!(stem, format!("mcp__github__{}", "t".repeat(42)));
    assert!(hash.starts_with('_'));
    assert_eq!(hash.len(), HASH_LEN + 1);
    assert!(
        hash[1..]
            .chars()
            .all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(&c)),
        "{hash}"
    );
    // Stable: the same every run and on every platform.
    assert_eq!(
        name,
        build(Provider::OpenAiResponses, &[("github", &tool)]).get(0)
    );
    assert_eq!(names.resolve(name), Some(("github", tool.as_str())));
    // Another long name with the same stem gets another hash.
    let other = format!("{tool}x");
    let both = build(
        Provider::OpenAiResponses,
        &[("github", &tool), ("github", &other)],
    );
    assert_ne!(both.get(0), both.get(1));
    assert!(both.collisions().is_empty());
}

#[test]
fn long_names_with_multibyte_characters_stay_valid() {
    let tool = "é".repeat(80);
    for provider in Provider::ALL {
        let names = build(provider, &[("srv", &tool)]);
        assert!(is_valid(provider, names.get(0)), "{}", names.get(0));
        assert_eq!(names.get(0).len(), MAX_LEN);
    }
}

#[test]
fn collisions_are_renamed_in_input_order_and_reported() {
    let names = build(
        Provider::OpenAiChat,
        &[("a.b", "run"), ("a_b", "run"), ("a b", "run")],
    );
    assert_eq!(names.get(0), "mcp__a_b__run");
    let second = names.get(1);
    let third = names.get(2);
    assert!(second.starts_with("mcp__a_b__run_"), "{second}");
    assert_eq!(second.len(), "mcp__a_b__run_".len() + HASH_LEN);
    assert_ne!(second, third);
    assert_eq!(names.resolve(second), Some(("a_b", "run")));
    assert_eq!(names.resolve(third), Some(("a b", "run")));
    let collisions = names.collisions();
    assert_eq!(collisions.len(), 2);
    assert_eq!(collisions[0].wanted, "mcp__a_b__run");
    assert_eq!(collisions[0].server, "a_b");
    assert_eq!(collisions[0].tool, "run");
    assert_eq!(collisions[0].renamed, second);
    assert_eq!(collisions[0].kept, ("a.b".to_owned(), "run".to_owned()));
    assert_eq!(collisions[1].renamed, third);
    assert_eq!(collisions[1].kept, ("a.b".to_owned(), "run".to_owned()));
}

#[test]
fn the_same_pair_twice_gets_two_names() {
    let names = build(Provider::Anthropic, &[("s", "t"), ("s", "t"), ("s", "t")]);
    let all: HashSet<&String> = names.all().iter().collect();
    assert_eq!(all.len(), 3);
    assert_eq!(names.get(0), "mcp__s__t");
    for name in names.all() {
        assert_eq!(names.resolve(name), Some(("s", "t")));
    }
    assert_eq!(names.collisions().len(), 2);
}

#[test]
fn the_same_pair_ten_thousand_times_is_not_quadratic() {
    let started = Instant::now();
    let names = Names::build(
        Provider::Anthropic,
        &NameOptions::default(),
        std::iter::repeat_n(("s", "t"), 10_000),
    );
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(names.all().iter().collect::<HashSet<_>>().len(), 10_000);
    assert_eq!(names.collisions().len(), 9_999);
    let limit = if cfg!(debug_assertions) { 1.0 } else { 0.05 };
    assert!(elapsed < limit, "{elapsed} s");
}

#[test]
fn ten_thousand_tools_are_named_quickly() {
    let pairs: Vec<(String, String)> = (0..10_000)
        .map(|i| {
            (
                format!("server.{}", i / 100),
                if i % 10 == 0 {
                    "search".to_owned()
                } else {
                    format!("tool-{i}-{}", "x".repeat(i % 70))
                },
            )
        })
        .collect();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        let names = Names::build(
            Provider::OpenAiResponses,
            &NameOptions::default(),
            pairs.iter().map(|(s, t)| (s.as_str(), t.as_str())),
        );
        best = best.min(started.elapsed().as_secs_f64());
        assert_eq!(names.all().len(), 10_000);
    }
    // Well under 10 ms in release; debug builds are ten times slower, and
    // what this guards against there is a quadratic blow-up.
    let limit = if cfg!(debug_assertions) { 0.5 } else { 0.01 };
    eprintln!("10 000 names: {:.2} ms", best * 1000.0);
    assert!(best < limit, "{best} s");
}

/// Strings heavy in what naming has to handle: separators, characters
/// every provider rejects, non-ASCII, empties, and long runs.
fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_.]{0,6}",
        "(_|__|\\.|-| |é|✓|x|Y|1){0,12}",
        "\\PC{0,20}",
        "[a-zA-Z0-9_.-]{60,90}",
        Just(String::new()),
    ]
}

fn pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((part(), part()), 0..24)
        .prop_flat_map(|pairs| {
            // Repeat some pairs to force collisions of identical input.
            let n = pairs.len();
            (Just(pairs), prop::collection::vec(0..n.max(1), 0..4))
        })
        .prop_map(|(mut pairs, repeats)| {
            for i in repeats {
                if let Some(pair) = pairs.get(i).cloned() {
                    pairs.push(pair);
                }
            }
            pairs
        })
}

fn options() -> impl Strategy<Value = NameOptions> {
    (
        prop_oneof![Just("mcp".to_owned()), Just(String::new()), "\\PC{0,4}"],
        prop_oneof![Just("__".to_owned()), Just(String::new()), "\\PC{0,3}"],
    )
        .prop_map(|(prefix, separator)| NameOptions::default().prefix(prefix).separator(separator))
}

fn named(provider: Provider, options: &NameOptions, pairs: &[(String, String)]) -> Names {
    Names::build(
        provider,
        options,
        pairs.iter().map(|(s, t)| (s.as_str(), t.as_str())),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn names_are_valid_unique_resolvable_and_stable(
        pairs in pairs(),
        extra in pairs(),
        options in options(),
    ) {
        for provider in Provider::ALL {
            let names = named(provider, &options, &pairs);
            prop_assert_eq!(names.all().len(), pairs.len());
            let mut seen = HashSet::new();
            for (i, name) in names.all().iter().enumerate() {
                prop_assert!(is_valid(provider, name), "{provider}: {name:?}");
                prop_assert!(seen.insert(name), "duplicate {name:?}");
                prop_assert_eq!(names.index(name), Some(i));
                let (server, tool) = &pairs[i];
                prop_assert_eq!(names.resolve(name), Some((server.as_str(), tool.as_str())));
            }
            // Deterministic.
            let again = named(provider, &options, &pairs);
            prop_assert_eq!(again.all(), names.all());
            // Tools listed after do not rename the ones before.
            let mut longer = pairs.clone();
            longer.extend(extra.iter().cloned());
            let more = named(provider, &options, &longer);
            prop_assert_eq!(&more.all()[..pairs.len()], names.all());
            // Every renaming is reported, and only renamings.
            for c in names.collisions() {
                prop_assert_ne!(&c.wanted, &c.renamed);
                prop_assert!(names.index(&c.renamed).is_some());
                prop_assert!(names.index(&c.wanted).is_some());
            }
        }
    }

    #[test]
    fn is_valid_agrees_with_the_documented_patterns(name in "\\PC{0,70}") {
        let portable = !name.is_empty()
            && name.len() <= 64
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        prop_assert_eq!(is_valid(Provider::OpenAiResponses, &name), portable);
        prop_assert_eq!(is_valid(Provider::OpenAiChat, &name), portable);
        prop_assert_eq!(is_valid(Provider::Anthropic, &name), portable);
        let gemini = name.len() <= 64
            && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        prop_assert_eq!(is_valid(Provider::Gemini, &name), gemini);
    }
}

#[test]
fn is_valid_examples() {
    assert!(is_valid(Provider::OpenAiChat, "a"));
    assert!(is_valid(Provider::OpenAiChat, "1-a_b"));
    assert!(!is_valid(Provider::OpenAiChat, ""));
    assert!(!is_valid(Provider::OpenAiChat, "a.b"));
    assert!(!is_valid(Provider::Anthropic, &"a".repeat(65)));
    assert!(is_valid(Provider::Anthropic, &"a".repeat(64)));
    assert!(is_valid(Provider::Gemini, "a.b-c_d"));
    assert!(!is_valid(Provider::Gemini, "1a"));
    assert!(!is_valid(Provider::Gemini, "-a"));
    assert!(is_valid(Provider::Gemini, "_1"));
}

#[test]
fn hashes_are_pinned() {
    // A change here renames every long tool for every user: only on purpose.
    let tool = "t".repeat(100);
    let names = build(
        Provider::OpenAiResponses,
        &[("github", &tool), ("github", &tool)],
    );
    assert_eq!(
        names.get(0),
        "mcp__github__tttttttttttttttttttttttttttttttttttttttttt_hdf3iqem"
    );
    assert_eq!(
        names.get(1),
        "mcp__github__tttttttttttttttttttttttttttttttttttttttttt_pwt6jqvk"
    );
}
