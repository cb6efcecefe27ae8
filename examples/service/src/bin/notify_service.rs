//! The example service instrumented with notify: one setup call reads the environment (JSON
//! lines, OTLP, sampling, NATS export, Prometheus, the live page; see instrumentation-setup),
//! notify-http's layers make the request and call events (W3C `traceparent` in and out), SQL
//! statements are events, and a NATS consumer counts the request events it receives.
//!
//! ```sh
//! NOTIFY_NATS_URL=nats://127.0.0.1:4222 NOTIFY_PROMETHEUS_ADDRESS=127.0.0.1:9464 \
//! NOTIFY_WEB_ADDRESS=127.0.0.1:7878 OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 \
//!   cargo run -p service-example --bin notify-service
//! ```
//!
//! Lines marked `// glue` (or between `// glue:begin` and `// glue:end`) are the instrumentation
//! that `scripts/glue-lines` counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{MatchedPath, Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use notify_core::{Event, Notifier, Payload, Subscriber}; // glue
use notify_http::{ClientLayer, ClientService, Headers, ServerLayer}; // glue
use service_example::{App, HttpClient, BOOK_SQL};
use tower::{Layer, ServiceExt};

type Client = ClientService<HttpClient>; // glue

async fn book(State(app): State<App<Client>>, Path(id): Path<i64>) -> Result<String, StatusCode> {
    let (title, author): (String, String) = {
        let db = app.db.lock().unwrap();
        let query = || db.query_row(BOOK_SQL, [id], |row| Ok((row.get(0)?, row.get(1)?)));
        // glue:begin
        let binds = || Payload::new().with("sql", BOOK_SQL).with("binds", vec![id]);
        notify_core::instrument("query.sql", binds, |_| query()).map_err(|_| StatusCode::NOT_FOUND)?
        // glue:end
    };
    log::info!("book {id} found: {title}"); // glue
    let request = service_example::price_request(&app.prices, id);
    let response = app.client.oneshot(request).await.map_err(|_| StatusCode::BAD_GATEWAY)?;
    let price = service_example::body_text(response)
        .await
        .map_err(|_| StatusCode::BAD_GATEWAY)?;
    Ok(format!("{title} by {author}: {price}"))
}

async fn price(Path(id): Path<i64>) -> String {
    format!("{}.99 EUR", id % 50)
}

async fn consumed_count(State(app): State<App<Client>>) -> String {
    app.consumed.load(Ordering::Relaxed).to_string()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // glue:begin
    let _guard = instrumentation_setup::Setup::production()
        .service_name("catalog")
        .init()?;
    let redaction = notify_core::redaction::Redaction::builder().key("x-api-key").build()?;
    Notifier::global().set_redaction(redaction);
    // glue:end
    let (listener, address) = service_example::bind().await?;
    let consumed = Arc::new(AtomicU64::new(0));
    // The consumer: another notifier (another process, in a real deployment) fed from NATS, with
    // the request events only (what it counts; the tracing twin's consumer takes request spans).
    let consumer = Notifier::new(); // glue
    let _importer = match service_example::nats_url() {
        // glue:begin
        Some(url) => Some(
            notify_nats::Importer::builder(notify_nats::NatsOptions::new(url))
                .subject("request.http")
                .start(&consumer)?,
        ),
        // glue:end
        None => None,
    };
    let count = consumed.clone();
    // glue:begin
    let on_request = Subscriber::event(move |_: &Event| {
        count.fetch_add(1, Ordering::Relaxed);
    });
    let _consuming = consumer.subscribe("request.http", on_request);
    // glue:end
    let app = App {
        db: service_example::database()?,
        client: ClientLayer::new().layer(service_example::http_client()), // glue
        prices: format!("http://{address}"),
        consumed,
    };
    let routes = Router::new()
        .route("/books/{id}", get(book))
        .route("/prices/{id}", get(price))
        .route("/consumed", get(consumed_count))
        .with_state(app);
    // glue:begin
    let routes = routes.layer(
        ServerLayer::new()
            .route_from(|request| request.extensions.get::<MatchedPath>().map(|p| p.as_str().to_owned()))
            .request_headers(Headers::All)
            .traceresponse(true),
    );
    // glue:end
    service_example::serve(listener, routes).await?;
    Ok(())
}
