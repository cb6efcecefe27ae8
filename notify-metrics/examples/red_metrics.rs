//! RED metrics with trace exemplars, no instrumentation code: an axum service with notify-http's
//! `ServerLayer`, and `PrometheusExporter` serving OpenMetrics at `http://ADDR/metrics`.
//!
//! ```sh
//! cargo run -p notify-metrics --example red_metrics -- 127.0.0.1:9464
//! curl -s http://127.0.0.1:9464/metrics | grep ' # '
//! ```
//!
//! It serves the application on a free loopback port and calls it itself (a few requests, one
//! failing), prints the exposition's bucket lines that carry an exemplar, and, given `--serve`,
//! goes on serving the metrics until stopped.

use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use notify_http::ServerLayer;
use notify_metrics::PrometheusExporter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let address = args
        .next()
        .unwrap_or_else(|| notify_metrics::DEFAULT_PROMETHEUS_ADDRESS.to_owned());
    let serve = args.any(|a| a == "--serve");

    // The one line that turns the RED metrics on (the global notifier, notify-http's defaults).
    let metrics = PrometheusExporter::new().serve(&address)?;

    let app = Router::new()
        .route("/books/{id}", get(|| async { "a book" }))
        .route("/fail", get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "failed") }))
        .layer(
            ServerLayer::new().route_from(|parts| parts.extensions.get::<MatchedPath>().map(|p| p.as_str().to_owned())),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let app_address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    for path in ["/books/1", "/books/2", "/fail"] {
        let mut stream = tokio::net::TcpStream::connect(app_address).await?;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {app_address}\r\n\r\n").as_bytes())
            .await?;
        stream.read_to_end(&mut Vec::new()).await?;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    for line in metrics.render().lines().filter(|line| line.contains(" # {")) {
        println!("{line}");
    }
    if serve {
        println!(
            "serving http://{}/metrics (Ctrl-C to stop)",
            metrics.local_addr().expect("served")
        );
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}
