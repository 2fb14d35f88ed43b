use super::*;

#[test]
fn a_resource_uri_survives_the_round_trip() {
    for (server, uri) in [
        ("files", "file:///tmp/a b/c.txt"),
        ("odd/name", "https://x.example/p?q=1&r=%2F#frag"),
        ("ünï", "test://static/resource/1"),
        ("s", ""),
    ] {
        let mapped = resource_uri(server, uri);
        assert!(mapped.starts_with("switchboard://"), "{mapped}");
        assert!(
            mapped["switchboard://".len()..].matches('/').count() == 1,
            "one separator: {mapped}"
        );
        assert_eq!(
            resource_origin(&mapped),
            Some((server.to_owned(), uri.to_owned()))
        );
    }
    // A template's expressions survive; what a host expands from it
    // leads back to exactly what the server's template expands to.
    let template = resource_template_uri("my files", "file:///{path}?v={+rev}");
    assert_eq!(
        template,
        "switchboard://my%20files/~/file:///{path}?v={+rev}"
    );
    let expanded = template
        .replace("{path}", "a%20b%2Fc.txt")
        .replace("{+rev}", "7");
    assert_eq!(
        resource_origin(&expanded),
        Some((
            "my files".to_owned(),
            "file:///a%20b%2Fc.txt?v=7".to_owned()
        ))
    );
    // An encoded original starting with `~/` stays encoded, not raw.
    let odd = resource_uri("s", "~/x");
    assert_eq!(
        resource_origin(&odd),
        Some(("s".to_owned(), "~/x".to_owned()))
    );
    assert_eq!(resource_origin("file:///x"), None);
    // Dot segments in a skill URI are refused, not forwarded.
    for uri in [
        "skill://s/../x/SKILL.md",
        "skill://s/a/./SKILL.md",
        "skill://s/%2E%2e/x/SKILL.md",
        "skill://s/a/..",
    ] {
        assert_eq!(skill_origin(uri), None, "{uri}");
    }
    assert_eq!(
        skill_origin("skill://s/a..b/SKILL.md"),
        Some(("s".to_owned(), "skill://a..b/SKILL.md".to_owned()))
    );
    assert_eq!(resource_origin("switchboard://a/%zz"), None);
    assert_eq!(resource_origin("switchboard://a/%F"), None);
}
