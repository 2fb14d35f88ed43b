//! A bad `SSL_CERT_FILE` (a missing file, an empty one) leaves no CA
//! certificates: an `https://` server is refused with an error naming the
//! variable and its file, at connect (our client) or at the handshake (any
//! client made with `reqwest_builder`), and nothing else is stopped —
//! building a client, or a request to an `http://` server.
//!
//! The roots are read once per process, from the environment then, so each
//! case runs in a child process of this test binary with its own
//! `SSL_CERT_FILE`.

use std::process::Command;
use std::sync::Arc;

use switchboard::Client;
use switchboard::transport::http::{HttpConfig, reqwest_builder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Set in the child: the path its `SSL_CERT_FILE` names.
const CHILD: &str = "SWITCHBOARD_TEST_CA_CHILD";

#[test]
fn without_ca_certificates_only_https_fails_and_it_names_ssl_cert_file() {
    if let Some(file) = std::env::var_os(CHILD) {
        return child(&file.to_string_lossy());
    }
    let dir = std::env::temp_dir().join(format!("switchboard-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    for file in [dir.join("missing.pem"), empty] {
        let output = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "without_ca_certificates_only_https_fails_and_it_names_ssl_cert_file",
                "--nocapture",
            ])
            .env(CHILD, &file)
            .env("SSL_CERT_FILE", &file)
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The error and its sources, as one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line
}

fn child(file: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Building a client reads no roots, so it cannot fail on them.
        let http = reqwest_builder().unwrap().build().unwrap();

        // Plain HTTP works.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = [0; 1024];
            let _ = stream.read(&mut head).await.unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                .await
                .unwrap();
        });
        let body = http.get(url).send().await.unwrap().text().await.unwrap();
        server.await.unwrap();
        assert_eq!(body, "ok");

        // Our client refuses an https:// server before connecting (nothing
        // listens on port 9), with a typed error that is no outage.
        let error = Client::builder()
            .connect(HttpConfig::new("https://127.0.0.1:9/mcp"))
            .await
            .unwrap_err();
        let said = chain(&error);
        assert!(error.is_local_setup(), "{said}");
        assert!(!error.is_unreachable() && !error.is_retryable(), "{said}");
        assert!(said.contains("SSL_CERT_FILE"), "{said}");
        assert!(said.contains(file), "{said}");

        // Another client made with the same builder names it at the
        // handshake.
        let port = tls_server();
        let error = http
            .get(format!("https://localhost:{port}/"))
            .send()
            .await
            .unwrap_err();
        let said = chain(&error);
        assert!(said.contains("SSL_CERT_FILE"), "{said}");
        assert!(said.contains(file), "{said}");
    });
}

/// A TLS server (the core's self-signed test certificate) for one
/// handshake, on a thread: it ends when the client gives up.
fn tls_server() -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let testdata = concat!(env!("CARGO_MANIFEST_DIR"), "/src/transport/http/testdata");
    let cert = CertificateDer::from_pem_file(format!("{testdata}/self-signed.crt")).unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{testdata}/self-signed.key")).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let connection = rustls::ServerConnection::new(config).unwrap();
        let mut stream = rustls::StreamOwned::new(connection, tcp);
        let mut buf = [0; 64];
        let _ = std::io::Read::read(&mut stream, &mut buf);
    });
    port
}
