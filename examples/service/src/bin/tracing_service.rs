//! The example service on the tracing stack at its best: init-tracing-opentelemetry's one call
//! (JSON lines, OTLP, sampling and RUST_LOG from the environment), axum-tracing-opentelemetry's
//! layers (W3C `traceparent` in, `traceresponse` out), tower-http's `TraceLayer` with sensitive
//! headers, axum-prometheus (metrics-exporter-prometheus underneath) for RED metrics, a span per
//! SQL statement, `traceparent` injected into the outgoing call, and spans exported to NATS by a
//! small layer (the tracing stack has none) with a consumer that counts the request spans.
//!
//! It has no live page: the tracing stack has no counterpart of notify-web.
//!
//! Like for like with `notify-service` at `RUST_LOG=info` (what scripts/service-bench compares):
//! the request's headers are recorded (x-api-key redacted), the SQL statement's span is made and
//! exported, and each server request writes a line. tracing's level gates a span's creation, so
//! these spans and the response line are at INFO; at tower-http's default (DEBUG) they would not
//! exist at all in production.
//!
//! ```sh
//! NOTIFY_NATS_URL=nats://127.0.0.1:4222 OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 \
//!   cargo run -p service-example --bin tracing-service
//! ```
//!
//! Lines marked `// glue` (or between `// glue:begin` and `// glue:end`) are the instrumentation
//! that `scripts/glue-lines` counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderName, StatusCode};
use axum::routing::get;
use axum::Router;
use futures_util::StreamExt;
use opentelemetry::trace::TraceContextExt; // glue
use service_example::{App, HttpClient, BOOK_SQL};
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse}; // glue
use tracing::{Instrument, Level}; // glue
use tracing_opentelemetry::OpenTelemetrySpanExt; // glue
use tracing_subscriber::layer::{Context, Layer, SubscriberExt}; // glue

async fn book(State(app): State<App<HttpClient>>, Path(id): Path<i64>) -> Result<String, StatusCode> {
    let (title, author): (String, String) = {
        let db = app.db.lock().unwrap();
        let query = || db.query_row(BOOK_SQL, [id], |row| Ok((row.get(0)?, row.get(1)?)));
        let span = tracing::info_span!("query.sql", db.query.text = BOOK_SQL, db.query.parameter = id); // glue
        span.in_scope(query).map_err(|_| StatusCode::NOT_FOUND)? // glue
    };
    tracing::info!("book {id} found: {title}"); // glue
    let mut request = service_example::price_request(&app.prices, id);
    // glue:begin
    let context = tracing::Span::current().context();
    tracing_opentelemetry_instrumentation_sdk::http::inject_context(&context, request.headers_mut());
    let span = tracing::info_span!("GET", otel.kind = "client", url.full = %request.uri(), http.response.status_code = tracing::field::Empty);
    let response = app.client.request(request).instrument(span.clone()).await;
    let response = response.map_err(|_| StatusCode::BAD_GATEWAY)?;
    span.record("http.response.status_code", response.status().as_u16());
    // glue:end
    let price = service_example::body_text(response)
        .await
        .map_err(|_| StatusCode::BAD_GATEWAY)?;
    Ok(format!("{title} by {author}: {price}"))
}

async fn price(Path(id): Path<i64>) -> String {
    format!("{}.99 EUR", id % 50)
}

async fn consumed_count(State(app): State<App<HttpClient>>) -> String {
    app.consumed.load(Ordering::Relaxed).to_string()
}

// glue:begin
/// Closed spans, as JSON, to the task that publishes them on NATS (`spans.<target>`).
struct NatsLayer(tokio::sync::mpsc::UnboundedSender<(String, String)>);

impl<S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>> Layer<S> for NatsLayer {
    fn on_close(&self, id: tracing::span::Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let otel = tracing::dispatcher::get_default(|d| tracing_opentelemetry::get_otel_context(&id, d));
        let trace_id = otel.map(|c| c.span().span_context().trace_id().to_string());
        let body = serde_json::json!({ "name": span.name(), "target": span.metadata().target(), "trace_id": trace_id });
        let _ = self
            .0
            .send((format!("spans.{}", span.metadata().target()), body.to_string()));
    }
}
// glue:end

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let nats_url = service_example::nats_url();
    // glue:begin
    let (spans, mut to_publish) = tokio::sync::mpsc::unbounded_channel();
    let config = init_tracing_opentelemetry::TracingConfig::production();
    let _guard = config.init_subscriber_ext(|registry| registry.with(NatsLayer(spans)))?;
    // glue:end
    let consumed = Arc::new(AtomicU64::new(0));
    if let Some(url) = nats_url {
        // glue:begin
        let publisher = async_nats::connect(&url).await?;
        tokio::spawn(async move {
            while let Some((subject, body)) = to_publish.recv().await {
                let _ = publisher.publish(subject, body.into()).await;
            }
        });
        let mut requests = async_nats::connect(&url)
            .await?
            .subscribe("spans.otel::tracing")
            .await?;
        let count = consumed.clone();
        tokio::spawn(async move {
            while requests.next().await.is_some() {
                count.fetch_add(1, Ordering::Relaxed);
            }
        });
        // glue:end
    }
    let (listener, address) = service_example::bind().await?;
    let app = App {
        db: service_example::database()?,
        client: service_example::http_client(),
        prices: format!("http://{address}"),
        consumed,
    };
    let (metrics, metrics_handle) = axum_prometheus::PrometheusMetricLayer::pair(); // glue
    let routes = Router::new()
        .route("/books/{id}", get(book))
        .route("/prices/{id}", get(price))
        .route("/consumed", get(consumed_count))
        .with_state(app)
        // glue:begin
        .layer(
            tower_http::trace::TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::INFO).include_headers(true))
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
        .layer(tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer::new([
            HeaderName::from_static("x-api-key"),
        ]))
        .layer(axum_tracing_opentelemetry::middleware::OtelInResponseLayer)
        .layer(axum_tracing_opentelemetry::middleware::OtelAxumLayer::default())
        .layer(metrics)
        .route("/metrics", get(|| async move { metrics_handle.render() }));
    // glue:end
    service_example::serve(listener, routes).await?;
    Ok(())
}
