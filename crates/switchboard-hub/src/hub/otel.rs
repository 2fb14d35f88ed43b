//! The current span's OpenTelemetry context as W3C Trace Context entries of
//! a request's `_meta` (feature `otel`).

use opentelemetry::trace::TraceContextExt;
use switchboard::RequestOptions;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// `options` with `traceparent` (and `tracestate`, when not empty) of the
/// current span, when it has a valid OpenTelemetry span context; unchanged
/// otherwise (no OpenTelemetry layer, or a span that is not recorded).
pub(super) fn with_trace_context(options: RequestOptions) -> RequestOptions {
    let context = tracing::Span::current().context();
    let span = context.span();
    let span_context = span.span_context();
    if !span_context.is_valid() {
        return options;
    }
    // W3C Trace Context, version 00: version-traceid-parentid-flags.
    let traceparent = format!(
        "00-{:032x}-{:016x}-{:02x}",
        span_context.trace_id(),
        span_context.span_id(),
        span_context.trace_flags().to_u8()
    );
    let options = options.meta("traceparent", traceparent);
    match span_context.trace_state().header() {
        state if state.is_empty() => options,
        state => options.meta("tracestate", state),
    }
}
