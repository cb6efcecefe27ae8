//! The example service with no instrumentation at all: the same routes, the same SQL and the same
//! outgoing call as `notify-service` and `tracing-service`, with no lines, no metrics, no traces
//! and no NATS. scripts/service-bench measures the two instrumented services against it (CPU per
//! request minus this one's).
//!
//! ```sh
//! APP_ADDRESS=127.0.0.1:8080 cargo run --release -p service-example --bin bare-service
//! curl http://127.0.0.1:8080/books/1        # Dune by Frank Herbert: 1.99 EUR
//! ```

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use service_example::{App, HttpClient, BOOK_SQL};
use std::sync::atomic::Ordering;
use std::sync::Arc;

async fn book(State(app): State<App<HttpClient>>, Path(id): Path<i64>) -> Result<String, StatusCode> {
    let (title, author): (String, String) = {
        let db = app.db.lock().unwrap();
        db.query_row(BOOK_SQL, [id], |row| Ok((row.get(0)?, row.get(1)?)))
            .map_err(|_| StatusCode::NOT_FOUND)?
    };
    let request = service_example::price_request(&app.prices, id);
    let response = app.client.request(request).await.map_err(|_| StatusCode::BAD_GATEWAY)?;
    let price = service_example::body_text(response)
        .await
        .map_err(|_| StatusCode::BAD_GATEWAY)?;
    Ok(format!("{title} by {author}: {price}"))
}

async fn price(Path(id): Path<i64>) -> String {
    format!("{}.99 EUR", id % 50)
}

async fn consumed_count(State(app): State<App<HttpClient>>) -> String {
    // Nothing consumes events here: always 0, the route exists so that the three services match.
    app.consumed.load(Ordering::Relaxed).to_string()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (listener, address) = service_example::bind().await?;
    let app = App {
        db: service_example::database()?,
        client: service_example::http_client(),
        prices: format!("http://{address}"),
        consumed: Arc::default(),
    };
    let routes = Router::new()
        .route("/books/{id}", get(book))
        .route("/prices/{id}", get(price))
        .route("/consumed", get(consumed_count))
        .with_state(app);
    service_example::serve(listener, routes).await?;
    Ok(())
}
