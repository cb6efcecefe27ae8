//! notify-http in a small axum service: the catalog (`GET /books/{id}`) asks a second service,
//! prices (`GET /prices/{id}`), through a hyper client; both are instrumented with
//! `ServerLayer`, the call with `ClientLayer`, and a log subscriber prints the events. The call
//! carries the W3C `traceparent`, so the prices request is in the catalog request's trace.
//!
//! `cargo run --example http_service`

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{MatchedPath, Path, State};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use notify_core::{Event, Notifier, Subscriber};
use notify_http::{ClientLayer, ServerLayer};
use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
use tower::{ServiceBuilder, ServiceExt};

/// Lines for "request.http" (requests served) and "request.http_client" (calls made).
struct HttpLog;
impl LogSubscriber for HttpLog {
    fn config() -> LogConfig<HttpLog> {
        LogConfig::new("http").method("request", Level::Info, |_: &HttpLog, e: &LogEvent<'_>| {
            let route = e.get("http.route").or_else(|| e.get("url.path"))?;
            Some(format!(
                "{} {route} -> {} ({})",
                e.get("http.request.method")?,
                e.get("http.response.status_code")?,
                e.elapsed()
            ))
        })
    }
}
struct ClientLog;
impl LogSubscriber for ClientLog {
    fn config() -> LogConfig<ClientLog> {
        LogConfig::new("http_client").method("request", Level::Info, |_: &ClientLog, e: &LogEvent<'_>| {
            Some(format!(
                "  call {} {} -> {} ({})",
                e.get("http.request.method")?,
                e.get("url.path")?,
                e.get("http.response.status_code")?,
                e.elapsed()
            ))
        })
    }
}

/// The layer both services use: route templates from axum.
fn server_layer() -> ServerLayer {
    ServerLayer::new().route_from(|request| request.extensions.get::<MatchedPath>().map(|p| p.as_str().to_owned()))
}

type HttpClient = notify_http::ClientService<Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>>;

async fn book(Path(id): Path<u32>, State((client, prices)): State<(HttpClient, SocketAddr)>) -> String {
    let request = http::Request::get(format!("http://{prices}/prices/{id}"))
        .body(Empty::new())
        .unwrap();
    let response = client.oneshot(request).await.expect("prices answers");
    let price = response.into_body().collect().await.expect("a price").to_bytes();
    format!("book {id}: {}", String::from_utf8_lossy(&price))
}

async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serving") });
    address
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::new().filter_level(log::LevelFilter::Info).init();
    let _logs = (
        HttpLog.attach_to(Notifier::global())?,
        ClientLog.attach_to(Notifier::global())?,
    );
    // Shows that both requests are in one trace.
    let _traces = Notifier::global().subscribe(
        "request.http",
        Subscriber::event(|e: &Event| {
            // W3C forms: 32 and 16 hex digits (an EventId's `Display` is its decimal number).
            let parent = e
                .parent_id()
                .map_or_else(|| "none".to_owned(), |id| format!("{:016x}", id.get()));
            println!(
                "trace {}: {} {:016x} (parent {parent})",
                e.trace_id(),
                e.name(),
                e.id().get()
            )
        }),
    );

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let prices = serve(
            Router::new()
                .route(
                    "/prices/{id}",
                    get(|Path(id): Path<u32>| async move { format!("{}.99 EUR", id % 50) }),
                )
                .layer(server_layer()),
        )
        .await;
        let client = ServiceBuilder::new()
            .layer(ClientLayer::new())
            .service(Client::builder(TokioExecutor::new()).build_http());
        let catalog = Router::new()
            .route("/books/{id}", get(book))
            .with_state((client, prices))
            .layer(server_layer());
        let catalog = serve(catalog).await;

        let plain = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
        let response = plain.get(format!("http://{catalog}/books/42").parse()?).await?;
        println!(
            "{}",
            String::from_utf8_lossy(&response.into_body().collect().await?.to_bytes())
        );
        // The catalog's event ends just after its last byte went out.
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(())
    })
}
