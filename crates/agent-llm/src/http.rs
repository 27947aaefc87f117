//! The process's HTTP clients: one TLS set-up, root certificates read once and only when needed.
//!
//! Building a `reqwest::Client` with reqwest's own rustls set-up reads and decodes every system
//! root certificate, each time, even for a client that only ever talks to `http://127.0.0.1`.
//! Here the TLS configuration is built once per process with a certificate verifier that loads
//! the platform roots (through `rustls-platform-verifier`, the same verifier reqwest uses) on the
//! first TLS handshake and keeps them for the rest of the process. Every client of the workspace
//! should come from [`client_builder`] or [`shared_client`]: the LLM client, the web tools and
//! the MCP HTTP transports.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let client = agent_llm::http::shared_client().expect("a client");
//! let again = agent_llm::http::shared_client().expect("a client");
//! // Built once; clones share one connection pool.
//! let _ = (client, again);
//! assert!(!agent_llm::http::roots_loaded(), "no https request, no root certificates read");
//! # });
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::Verifier;

use crate::{ApiKey, LlmError};

/// The `User-Agent` of clients built here.
pub const USER_AGENT: &str = concat!("openmanus-rs/", env!("CARGO_PKG_VERSION"));

/// Verifies server certificates against the platform's roots, loading them on first use.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    inner: OnceLock<Result<Verifier, rustls::Error>>,
}

impl LazyPlatformVerifier {
    fn verifier(&self) -> Result<&Verifier, rustls::Error> {
        self.inner
            .get_or_init(|| {
                tracing::debug!("loading the platform's root certificates");
                Verifier::new(self.provider.clone())
            })
            .as_ref()
            .map_err(Clone::clone)
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
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    // Handshake signatures need no roots: checked with the provider's algorithms directly, as
    // the platform verifier does.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
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
        verify_tls13_signature(
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

/// The process-wide verifier (so the roots are read at most once per process).
fn verifier() -> &'static Arc<LazyPlatformVerifier> {
    static VERIFIER: OnceLock<Arc<LazyPlatformVerifier>> = OnceLock::new();
    VERIFIER.get_or_init(|| {
        Arc::new(LazyPlatformVerifier {
            provider: provider(),
            inner: OnceLock::new(),
        })
    })
}

/// Makes ring the process's default rustls crypto provider, unless one is installed already.
///
/// The workspace builds rustls with one provider, ring (async-nats and the AWS SDK's client use
/// it too), and reqwest without a provider of its own: a `reqwest::Client` built anywhere in the
/// process (by another library, say) finds this one. Every client of this module calls it;
/// front ends call it first thing, before any other library builds a client.
pub fn install_crypto_provider() {
    if CryptoProvider::get_default().is_none() {
        // Err means another thread installed one in the meantime: that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The crypto provider: the process default (ring unless the program installed another).
fn provider() -> Arc<CryptoProvider> {
    install_crypto_provider();
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// Whether this process has read the platform's root certificates (it does on the first https
/// handshake of a client built here).
#[must_use]
pub fn roots_loaded() -> bool {
    verifier().inner.get().is_some()
}

/// The process's rustls client configuration: platform roots loaded lazily, the safe default
/// protocol versions, ALPN `h2` then `http/1.1` (what reqwest offers itself).
///
/// # Errors
///
/// The crypto provider supports none of the default protocol versions.
pub fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    static CONFIG: OnceLock<Result<rustls::ClientConfig, rustls::Error>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let verifier = verifier().clone();
            let mut config = rustls::ClientConfig::builder_with_provider(verifier.provider.clone())
                .with_safe_default_protocol_versions()?
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Ok(config)
        })
        .clone()
}

/// A `reqwest::ClientBuilder` on the process's TLS configuration, with the openmanus-rs
/// `User-Agent`; add timeouts, redirects or another user agent, then `build()`.
pub fn client_builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder().user_agent(USER_AGENT);
    match tls_config() {
        Ok(config) => builder.tls_backend_preconfigured(config),
        Err(error) => {
            // reqwest's own set-up then reports (or survives) the same problem at build().
            tracing::warn!(%error, "cannot build the shared TLS configuration");
            builder
        }
    }
}

/// Clients built by [`shared_client`] and the LLM clients so far.
static BUILT: AtomicUsize = AtomicUsize::new(0);

/// How many shared clients this process has built (one per distinct connect timeout): a
/// diagnostic for tests and benchmarks.
#[must_use]
pub fn clients_built() -> usize {
    BUILT.load(Ordering::Relaxed)
}

/// Clients by connect timeout (`None`: no limit), shared by every caller in the process.
fn cached(connect_timeout: Option<Duration>) -> Result<reqwest::Client, reqwest::Error> {
    static CLIENTS: OnceLock<Mutex<HashMap<Option<Duration>, reqwest::Client>>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(Mutex::default);
    let mut clients = clients.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(client) = clients.get(&connect_timeout) {
        return Ok(client.clone());
    }
    let mut builder = client_builder();
    if let Some(timeout) = connect_timeout {
        builder = builder.connect_timeout(timeout);
    }
    let client = builder.build()?;
    BUILT.fetch_add(1, Ordering::Relaxed);
    clients.insert(connect_timeout, client.clone());
    Ok(client)
}

/// The process-wide default client (openmanus-rs `User-Agent`, reqwest's default redirect
/// policy, no timeouts: set them per request). Clones share one connection pool.
///
/// # Errors
///
/// The HTTP client could not be built (the TLS backend failed to initialise).
pub fn shared_client() -> Result<reqwest::Client, reqwest::Error> {
    cached(None)
}

/// The shared client for endpoints with this connect timeout (a connect timeout can only be set
/// per client; the total request timeout is set per request).
pub(crate) fn client_with_connect_timeout(
    connect_timeout: Option<Duration>,
) -> Result<reqwest::Client, reqwest::Error> {
    cached(connect_timeout)
}

/// Largest error body read for classification.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The error a response with a failure status stands for: [`crate::classify`] of its status,
/// its headers (`retry-after`, ...) and the start of its body (at most 64 KiB), with `key`
/// redacted from the body.
pub(crate) async fn status_error(response: reqwest::Response, key: &ApiKey) -> LlmError {
    let status = response.status();
    let headers = response.headers().clone();
    let body = read_limited(response, ERROR_BODY_LIMIT).await;
    crate::classify(
        status.as_u16(),
        |name| header(&headers, name),
        &key.redact(&body),
    )
}

/// Whether `response` is a stream of server-sent events (`text/event-stream`).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

fn header(headers: &reqwest::header::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn read_limited(response: reqwest::Response, limit: usize) -> String {
    use futures::StreamExt;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= limit {
            body.truncate(limit);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}
