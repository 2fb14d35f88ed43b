//! The registry client against the testkit's fixture registry: answers
//! kept on disk between runs as its cache headers allow (and a planted
//! or changed cache file not used), and a package's `.mcpb` bundle
//! downloaded only from where it may come and only with the SHA-256 the
//! registry gave.

use serde_json::json;
use switchboard_hub::registry::{Package, RegistryClient, RegistryError};
use switchboard_testkit::registry::{FakeRegistry, MCPB_BUNDLE, sha256_hex};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sb-registry-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn mcpb(url: &str, sha: Option<&str>) -> Package {
    serde_json::from_value(json!({
        "registryType": "mcpb", "identifier": url, "version": "1.4.0",
        "fileSha256": sha, "transport": {"type": "stdio"}
    }))
    .unwrap()
}

#[tokio::test]
async fn answers_are_kept_on_disk_while_fresh_and_a_planted_file_is_not_used() {
    let registry = FakeRegistry::start().await;
    let dir = scratch("cache");
    let first = RegistryClient::new(&registry.url())
        .unwrap()
        .with_cache_dir(&dir);
    let found = first.search(Some("filesystem"), 10).await.unwrap();
    assert!(!found.is_empty());
    let asked = registry.requests().len();
    assert!(asked > 0);
    // Another run (a new client) within max-age: nothing asked again.
    let second = RegistryClient::new(&registry.url())
        .unwrap()
        .with_cache_dir(&dir);
    assert_eq!(second.search(Some("filesystem"), 10).await.unwrap(), found);
    assert_eq!(
        registry.requests().len(),
        asked,
        "{:?}",
        registry.requests()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
    // A cache file changed to say something else for another URL is not
    // taken for this one: every file now names a URL it was not made for.
    for file in std::fs::read_dir(&dir).unwrap() {
        let path = file.unwrap().path();
        let mut entry: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        entry["url"] = json!("https://elsewhere.example/v0.1/servers");
        entry["body"] = json!("{\"servers\": [], \"metadata\": {}}");
        std::fs::write(&path, entry.to_string()).unwrap();
    }
    let third = RegistryClient::new(&registry.url())
        .unwrap()
        .with_cache_dir(&dir);
    assert_eq!(third.search(Some("filesystem"), 10).await.unwrap(), found);
    assert!(registry.requests().len() > asked);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_bundle_is_taken_only_with_the_registrys_sha256_and_from_where_it_may_come() {
    let registry = FakeRegistry::start().await;
    registry.serve_file("/releases/pdf-tools.mcpb", MCPB_BUNDLE.to_vec());
    let client = RegistryClient::new(&registry.url()).unwrap();
    let url = format!("{}/releases/pdf-tools.mcpb", registry.url());
    let sha = sha256_hex(MCPB_BUNDLE);
    // The registry's own origin, the right hash: the bundle.
    let bytes = client
        .download_bundle(&mcpb(&url, Some(&sha)))
        .await
        .unwrap();
    assert_eq!(bytes, MCPB_BUNDLE);

    let refused = |result: Result<Vec<u8>, RegistryError>, why: &str| {
        let error = result.unwrap_err();
        assert!(
            matches!(error, RegistryError::Bundle { .. }) && error.to_string().contains(why),
            "{error}"
        );
    };
    // A changed bundle (or a lying registry): its hash is not the one given.
    let other = "0".repeat(64);
    refused(
        client.download_bundle(&mcpb(&url, Some(&other))).await,
        "not the bundle that was published",
    );
    refused(
        client.download_bundle(&mcpb(&url, None)).await,
        "no valid `fileSha256`",
    );
    // Elsewhere: only https to a public host.
    refused(
        client
            .download_bundle(&mcpb("http://downloads.example/x.mcpb", Some(&sha)))
            .await,
        "not https",
    );
    for private in [
        "https://127.0.0.1:1/x.mcpb",
        "https://10.1.2.3/x.mcpb",
        "https://[::1]/x.mcpb",
        "https://printer.local/x.mcpb",
    ] {
        refused(
            client.download_bundle(&mcpb(private, Some(&sha))).await,
            "private or loopback",
        );
    }
    // Larger than the limit: stopped.
    let small = RegistryClient::new(&registry.url())
        .unwrap()
        .with_max_bundle(16);
    refused(
        small.download_bundle(&mcpb(&url, Some(&sha))).await,
        "larger than 16 bytes",
    );
    // Not a bundle at all.
    let mut npm = mcpb(&url, Some(&sha));
    npm.registry_type = "npm".into();
    refused(client.download_bundle(&npm).await, "not an MCPB bundle");
}
