//! The caller's environment: what a stdio server is given (the proxy and
//! CA variables, not the rest), what a start-up timeout says about it, and
//! a bad `SSL_CERT_FILE`, which stops only what needs TLS, by name.

#[allow(dead_code)] // not every helper of `support` is used here
mod support;

use std::path::PathBuf;
use std::process::Output;

use support::home::Home;
use support::{BIN, HttpServer};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A file of one CA certificate in PEM form (the core's test certificate):
/// an `SSL_CERT_FILE` the TLS stack accepts.
fn a_good_cert_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../switchboard/src/transport/http/testdata/self-signed.crt")
}

/// The proxy and CA variables a server behind a corporate proxy needs,
/// as a caller sets them.
fn network_variables() -> [(&'static str, String); 5] {
    [
        ("HTTPS_PROXY", "http://proxy.test:3128".to_owned()),
        ("NO_PROXY", "localhost,.internal.test".to_owned()),
        ("no_proxy", "localhost,.internal.test".to_owned()),
        (
            "SSL_CERT_FILE",
            a_good_cert_file().to_string_lossy().into_owned(),
        ),
        ("NODE_EXTRA_CA_CERTS", "/etc/corp/ca.pem".to_owned()),
    ]
}

/// A server that says on stderr what it got of `names`, then exits.
fn reporting(names: &[&str]) -> String {
    let mut script = String::new();
    for name in names {
        script.push_str(&format!("echo \"{name}=${{{name}-(unset)}}\" >&2; "));
    }
    script.push_str("exit 3");
    script
}

#[test]
fn a_stdio_server_gets_the_callers_proxy_and_ca_variables_and_not_the_rest() {
    let home = Home::new("env-passed", "");
    let script = reporting(&[
        "HTTPS_PROXY",
        "NO_PROXY",
        "no_proxy",
        "SSL_CERT_FILE",
        "NODE_EXTRA_CA_CERTS",
        "NODE_OPTIONS",
        "SB_TEST_SECRET",
    ]);
    let output = home
        .command()
        .envs(network_variables())
        // Code for every Node process, and a secret for another program:
        // neither is on the list.
        .env("NODE_OPTIONS", "--require /tmp/evil.js")
        .env("SB_TEST_SECRET", "hunter2")
        .args(["tools", "--era", "legacy", "--", "sh", "-c", &script])
        .output()
        .expect("switchboard runs");
    let said = stderr(&output);
    // The server's exit (with its stderr) is the event that shows what it got.
    assert_eq!(output.status.code(), Some(4), "{said}");
    for (name, value) in network_variables() {
        assert!(said.contains(&format!("{name}={value}")), "{name}: {said}");
    }
    assert!(said.contains("NODE_OPTIONS=(unset)"), "{said}");
    assert!(said.contains("SB_TEST_SECRET=(unset)"), "{said}");
}

/// A server that never answers: `sleep` reads nothing and says nothing.
const SILENT: [&str; 3] = ["sh", "-c", "exec sleep 60"];

#[test]
fn a_server_that_never_answers_is_told_apart_by_the_environment_it_got() {
    let home = Home::new("env-timeout", "");
    let mut args = vec![
        "tools",
        "--era",
        "legacy",
        "--timeout",
        "0.5",
        "--env",
        "API_KEY=sesame-value",
        "--",
    ];
    args.extend(SILENT);
    let output = home
        .command()
        .envs(network_variables())
        .env("SB_TEST_SECRET", "hunter2")
        .args(&args)
        .output()
        .expect("switchboard runs");
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "{said}");
    assert!(said.contains("did not answer `initialize`"), "{said}");
    // Names, never values: the one set with --env, the inherited ones.
    for name in ["API_KEY", "HTTPS_PROXY", "NODE_EXTRA_CA_CERTS", "PATH"] {
        assert!(said.contains(name), "{name} not named: {said}");
    }
    assert!(!said.contains("sesame-value"), "a value was shown: {said}");
    assert!(!said.contains("SB_TEST_SECRET"), "{said}");
}

#[test]
fn a_server_that_never_answers_says_how_to_pass_it_more() {
    let home = Home::new("env-timeout-hint", "");
    let mut args = vec!["tools", "--era", "legacy", "--timeout", "0.5", "--"];
    args.extend(SILENT);
    let output = home.run(&args);
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "{said}");
    assert!(said.contains("--env KEY=VALUE"), "{said}");
    assert!(said.contains("--inherit-env"), "{said}");
}

#[test]
fn a_configured_server_that_does_not_start_says_what_it_got_and_where_to_add_more() {
    let home = Home::new(
        "env-startup",
        "[servers.silent]\ncommand = \"sh\"\nargs = [\"-c\", \"exec sleep 60\"]\n\
         startup_timeout = \"500ms\"\n\n[servers.silent.env]\nAPI_KEY = \"sesame-value\"\n",
    );
    let output = home
        .command()
        .env("HTTPS_PROXY", "http://proxy.test:3128")
        .args(["tools", "--era", "legacy"])
        .output()
        .expect("switchboard runs");
    let said = stderr(&output);
    assert!(said.contains("did not start within"), "{said}");
    for name in ["API_KEY", "HTTPS_PROXY", "PATH"] {
        assert!(said.contains(name), "{name} not named: {said}");
    }
    assert!(said.contains("`env`"), "{said}");
    assert!(!said.contains("sesame-value"), "a value was shown: {said}");
}

/// `SSL_CERT_FILE` values that leave no CA certificate: a missing file,
/// and an empty one.
fn bad_cert_files(home: &Home) -> [PathBuf; 2] {
    let empty = home.root.join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    [PathBuf::from("/nonexistent/ca.pem"), empty]
}

#[test]
fn a_bad_ssl_cert_file_does_not_stop_a_stdio_server() {
    let home = Home::new("env-cert-stdio", "");
    for file in bad_cert_files(&home) {
        let output = home
            .command()
            .env("SSL_CERT_FILE", &file)
            // Beside it, a directory of certificates would be read too.
            .env_remove("SSL_CERT_DIR")
            .args(["tools", "--", BIN, "__testserver"])
            .output()
            .expect("switchboard runs");
        assert!(
            output.status.success(),
            "{}: {}",
            file.display(),
            stderr(&output)
        );
        assert!(String::from_utf8_lossy(&output.stdout).contains("echo"));
    }
}

#[test]
fn a_bad_ssl_cert_file_does_not_stop_a_plain_http_server() {
    let home = Home::new("env-cert-http", "");
    let server = HttpServer::start(&[]);
    let url = format!("{}/mcp", server.1);
    for file in bad_cert_files(&home) {
        let output = home
            .command()
            .env("SSL_CERT_FILE", &file)
            // Beside it, a directory of certificates would be read too.
            .env_remove("SSL_CERT_DIR")
            .args(["tools", "--url", &url])
            .output()
            .expect("switchboard runs");
        assert!(
            output.status.success(),
            "{}: {}",
            file.display(),
            stderr(&output)
        );
    }
}

#[test]
fn a_bad_ssl_cert_file_fails_an_https_server_naming_it() {
    let home = Home::new("env-cert-https", "");
    // Nothing listens: the certificates are found missing before a
    // connection is tried.
    for file in bad_cert_files(&home) {
        let output = home
            .command()
            .env("SSL_CERT_FILE", &file)
            // Beside it, a directory of certificates would be read too.
            .env_remove("SSL_CERT_DIR")
            .args(["tools", "--url", "https://127.0.0.1:9/mcp"])
            .output()
            .expect("switchboard runs");
        let said = stderr(&output);
        assert_eq!(
            output.status.code(),
            Some(1),
            "a setting to fix: {}: {said}",
            file.display()
        );
        assert!(said.contains("SSL_CERT_FILE"), "{said}");
        assert!(said.contains(&file.display().to_string()), "{said}");
        assert!(!said.contains("panicked"), "{said}");
    }
}
