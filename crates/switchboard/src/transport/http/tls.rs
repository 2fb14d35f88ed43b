//! TLS for the HTTP transports: one rustls configuration per process, handed
//! to every `reqwest::Client` the transports build. Its certificate verifier
//! is the platform verifier reqwest would use, but it loads the system's CA
//! roots at the first TLS handshake (or [`check_roots`]) rather than when a
//! client is built: a client for `http://` never reads them, and an
//! `https://` one reads them once per process (about 2 ms and hundreds of
//! syscalls). So a bad `SSL_CERT_FILE` fails only what needs TLS, with a
//! [`CaCertificatesError`] naming it, never a client's construction.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::TransportError;
use crate::transport::CaCertificatesError;

/// The process's verifier and the configuration built around it.
struct Shared {
    verifier: Arc<LazyPlatformVerifier>,
    config: Result<rustls::ClientConfig, String>,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let provider = CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
        let verifier = Arc::new(LazyPlatformVerifier::new(provider));
        let config = build_config(verifier.clone());
        Shared { verifier, config }
    })
}

/// The process's TLS configuration (cheap: no roots are read to build it).
pub(super) fn client_config() -> Result<rustls::ClientConfig, TransportError> {
    shared()
        .config
        .clone()
        .map_err(|e| TransportError::Config(format!("cannot set up TLS: {e}")))
}

/// Reads the CA roots now (once per process), so that an `https://`
/// server is refused before any request when there are none, with the
/// variable to fix rather than a failed handshake.
pub(super) fn check_roots() -> Result<(), TransportError> {
    shared()
        .verifier
        .platform()
        .map(|_| ())
        .map_err(|_| TransportError::CaCertificates(CaCertificatesError::from_environment()))
}

/// As reqwest configures rustls by default: TLS 1.2 and 1.3, ALPN `h2` then
/// `http/1.1`, no client certificate.
fn build_config(verifier: Arc<LazyPlatformVerifier>) -> Result<rustls::ClientConfig, String> {
    let mut config = rustls::ClientConfig::builder_with_provider(verifier.provider.clone())
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// `rustls_platform_verifier::Verifier`, made on first use. Signatures are
/// checked with the provider's algorithms, as that verifier checks them, so
/// only a certificate chain needs the roots.
#[derive(Debug)]
pub(super) struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    platform: OnceLock<rustls_platform_verifier::Verifier>,
    /// Held while the roots are read, so that they are read once.
    loading: Mutex<()>,
    /// Times the roots were read (or tried to be): for tests.
    loads: AtomicUsize,
}

impl LazyPlatformVerifier {
    pub(super) fn new(provider: Arc<CryptoProvider>) -> Self {
        Self {
            provider,
            platform: OnceLock::new(),
            loading: Mutex::new(()),
            loads: AtomicUsize::new(0),
        }
    }

    fn platform(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        if let Some(platform) = self.platform.get() {
            return Ok(platform);
        }
        let _one = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(platform) = self.platform.get() {
            return Ok(platform);
        }
        self.loads.fetch_add(1, Ordering::Relaxed);
        // A failure (no roots on the system) is not kept: the next handshake
        // tries again.
        let platform = rustls_platform_verifier::Verifier::new(self.provider.clone())?;
        Ok(self.platform.get_or_init(|| platform))
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The variable to fix reaches the caller through the handshake's
        // error, whoever built the client.
        self.platform()
            .map_err(|_| {
                rustls::Error::Other(rustls::OtherError(Arc::new(
                    CaCertificatesError::from_environment(),
                )))
            })?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn verifier() -> Arc<LazyPlatformVerifier> {
        Arc::new(LazyPlatformVerifier::new(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        )))
    }

    #[tokio::test]
    async fn plain_http_never_reads_the_ca_roots() {
        let verifier = verifier();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(build_config(verifier.clone()).unwrap())
            .build()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = [0; 1024];
            let _ = stream.read(&mut head).await.unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                .await
                .unwrap();
        });
        let body = client.get(url).send().await.unwrap().text().await.unwrap();
        server.await.unwrap();
        assert_eq!(body, "ok");
        assert_eq!(
            verifier.loads.load(Ordering::Relaxed),
            0,
            "http:// read the roots"
        );
    }

    #[test]
    fn a_certificate_check_reads_the_roots_once() {
        let verifier = verifier();
        let name = ServerName::try_from("example.com").unwrap();
        for _ in 0..2 {
            // Not a certificate: refused, whatever the roots hold.
            let junk = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
            assert!(
                verifier
                    .verify_server_cert(&junk, &[], &name, &[], UnixTime::now())
                    .is_err()
            );
        }
        let loads = verifier.loads.load(Ordering::Relaxed);
        // Read once; twice only on a system with no roots at all, where a
        // failed read is tried again.
        assert!(loads == 1 || verifier.platform.get().is_none(), "{loads}");
        assert!(loads >= 1);
    }

    /// A server whose certificate no root vouches for (self-signed) is
    /// refused at the handshake, the roots read then, once.
    #[tokio::test]
    async fn a_certificate_no_root_vouches_for_is_refused() {
        use rustls::pki_types::PrivateKeyDer;
        use rustls::pki_types::pem::PemObject;

        let cert =
            CertificateDer::from_pem_slice(include_bytes!("testdata/self-signed.crt")).unwrap();
        let key =
            PrivateKeyDer::from_pem_slice(include_bytes!("testdata/self-signed.key")).unwrap();
        let server_config = Arc::new(
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
        // The server's side of the handshake, on a thread: it ends when the
        // client gives up on the certificate.
        let server = std::thread::spawn(move || {
            let (tcp, _) = listener.accept().unwrap();
            let connection = rustls::ServerConnection::new(server_config).unwrap();
            let mut stream = rustls::StreamOwned::new(connection, tcp);
            let mut buf = [0; 64];
            let _ = std::io::Read::read(&mut stream, &mut buf);
        });
        let verifier = verifier();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(build_config(verifier.clone()).unwrap())
            .build()
            .unwrap();
        let error = client
            .get(format!("https://localhost:{port}/mcp"))
            .send()
            .await
            .expect_err("a self-signed certificate was accepted");
        server.join().unwrap();
        let mut chain = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            chain.push_str(": ");
            chain.push_str(&cause.to_string());
            source = cause.source();
        }
        assert!(chain.to_lowercase().contains("certificate"), "{chain}");
        assert!(verifier.loads.load(Ordering::Relaxed) >= 1, "{chain}");
    }

    #[test]
    fn the_shared_configuration_builds_a_client() {
        let config = client_config().unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        reqwest::Client::builder()
            .tls_backend_preconfigured(config)
            .build()
            .unwrap();
    }
}
