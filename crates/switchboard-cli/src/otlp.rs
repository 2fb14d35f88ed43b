//! Feature `otlp`: the CLI's spans to an OpenTelemetry collector, OTLP over
//! HTTP/protobuf, sent with the workspace's reqwest.

use std::future::Future;
use std::pin::Pin;

use anyhow::Context as _;
use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The exporter's HTTP client: reqwest's blocking client, since the batch
/// exporter runs on its own thread outside the tokio runtime (and the
/// exporter's bundled clients would bring a second reqwest).
#[derive(Debug)]
struct Blocking(reqwest::blocking::Client);

impl HttpClient for Blocking {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move {
            let request = reqwest::blocking::Request::try_from(request)?;
            let response = self.0.execute(request)?;
            let mut answer = Response::builder().status(response.status());
            if let Some(headers) = answer.headers_mut() {
                *headers = response.headers().clone();
            }
            Ok(answer.body(response.bytes()?)?)
        })
    }
}

/// Flushes the spans still queued when dropped, at the end of `main`.
pub(crate) struct Guard(SdkTracerProvider);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(error) = self.0.shutdown() {
            eprintln!("warning: could not send the last traces to the collector: {error}");
        }
    }
}

/// A `tracing` layer exporting spans to the collector at `endpoint` (its
/// base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: traces go to `/v1/traces`).
///
/// # Errors
/// When the endpoint or the HTTP client cannot be set up.
pub(crate) fn layer<S>(endpoint: &str) -> anyhow::Result<(impl Layer<S>, Guard)>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .context("cannot set up the HTTP client for the OTLP exporter")?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Blocking(client))
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
        .build()
        .with_context(|| format!("cannot export traces to {endpoint}"))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name("switchboard").build())
        .build();
    let tracer = provider.tracer("switchboard");
    let layer = tracing_opentelemetry::layer().with_tracer(tracer);
    Ok((layer, Guard(provider)))
}
