//! A test service for the W3C Trace Context validation suite (w3c/trace-context, `test/test.py`),
//! whose trace-context handling is notify-http's alone: `ServerLayer` on an axum router,
//! `ClientLayer` around hyper-util's client.
//!
//! The suite POSTs a JSON array `[{"url": ..., "arguments": ...}, ...]` to the service; for each
//! element the service POSTs `arguments` (as JSON) to `url`, from inside the request, so the
//! callback shows which `traceparent`, `tracestate` (and `baggage`) the service passed on.
//!
//! ```text
//! cargo run --example w3c_service -- --listen all      # or: server, client, none
//! # elsewhere, in w3c/trace-context's test/ directory (pip install aiohttp):
//! STRICT_LEVEL=2 SPEC_LEVEL=2 python test.py http://127.0.0.1:5000/test
//! ```
//!
//! `--listen` (or the environment variable `W3C_SERVICE_LISTEN`) picks who subscribes, on the
//! global notifier the layers use: `all` (every name), `server` ("request.http" only), `client`
//! ("request.http_client" only) or `none` (nobody: propagation must not depend on it).
//! `--port` (default 5000) is the port on 127.0.0.1. docs/trace-context.md has the results.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::routing::post;
use axum::Router;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use notify_core::{Event, Notifier, Pattern, Subscriber, Subscription};
use notify_http::{ClientLayer, ServerLayer};
use tower::{ServiceBuilder, ServiceExt};

type HttpClient = notify_http::ClientService<Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>>;

/// Who subscribes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Listen {
    /// A subscriber on every name.
    All,
    /// A subscriber on "request.http" only.
    Server,
    /// A subscriber on "request.http_client" only.
    Client,
    /// Nobody listens.
    None,
}

#[derive(clap::Parser, Debug)]
#[command(about = "W3C Trace Context test service (notify-http's layers)")]
struct Args {
    /// Who subscribes on the global notifier [default: $W3C_SERVICE_LISTEN, else all].
    #[arg(long, value_enum)]
    listen: Option<Listen>,
    /// The port on 127.0.0.1.
    #[arg(long, default_value_t = 5000)]
    port: u16,
}

fn subscribe(listen: Listen) -> Vec<Subscription> {
    let nothing = || Subscriber::event(|_: &Event| {});
    let global = Notifier::global();
    match listen {
        Listen::All => vec![global.subscribe(Pattern::all(), nothing())],
        Listen::Server => vec![global.subscribe(notify_http::SERVER_EVENT, nothing())],
        Listen::Client => vec![global.subscribe(notify_http::CLIENT_EVENT, nothing())],
        Listen::None => Vec::new(),
    }
}

/// One instruction of the suite: call `url` with `arguments` as the body.
#[derive(Debug)]
struct Call {
    url: String,
    arguments: serde_json::Value,
}

/// The suite's body: an array of `{"url", "arguments"}`; anything else is a 400.
fn calls(body: &[u8]) -> Result<Vec<Call>, String> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let items = value.as_array().ok_or("not a JSON array")?;
    items
        .iter()
        .map(|item| {
            let url = item
                .get("url")
                .and_then(|u| u.as_str())
                .ok_or("an element without \"url\"")?;
            Ok(Call {
                url: url.to_owned(),
                arguments: item.get("arguments").cloned().unwrap_or(serde_json::Value::Null),
            })
        })
        .collect()
}

async fn test(client: HttpClient, body: Bytes) -> (http::StatusCode, String) {
    let calls = match calls(&body) {
        Ok(calls) => calls,
        Err(message) => return (http::StatusCode::BAD_REQUEST, message),
    };
    for call in calls {
        let request = http::Request::post(&call.url)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(call.arguments.to_string())));
        let request = match request {
            Ok(request) => request,
            Err(e) => return (http::StatusCode::BAD_REQUEST, format!("bad url {:?}: {e}", call.url)),
        };
        match client.clone().oneshot(request).await {
            // Read to the end, so the call's event ends.
            Ok(response) => drop(response.into_body().collect().await),
            Err(e) => eprintln!("call to {} failed: {e}", call.url),
        }
    }
    (http::StatusCode::OK, "{}".to_owned())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = <Args as clap::Parser>::parse();
    let listen = match (args.listen, std::env::var("W3C_SERVICE_LISTEN")) {
        (Some(listen), _) => listen,
        (None, Ok(text)) => <Listen as clap::ValueEnum>::from_str(&text, true)
            .map_err(|e| format!("W3C_SERVICE_LISTEN={text:?}: {e} (all, server, client or none)"))?,
        (None, Err(_)) => Listen::All,
    };
    let _subscriptions = subscribe(listen);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let client: HttpClient = ServiceBuilder::new()
            .layer(ClientLayer::new())
            .service(Client::builder(TokioExecutor::new()).build_http());
        let app = Router::new()
            .route("/test", post(move |body: Bytes| test(client.clone(), body)))
            .layer(ServerLayer::new().traceresponse(true));
        let address = SocketAddr::from(([127, 0, 0, 1], args.port));
        let listener = tokio::net::TcpListener::bind(address).await?;
        eprintln!("w3c_service: listening on http://{address}/test, subscribers: {listen:?}");
        axum::serve(listener, app).await
    })?;
    Ok(())
}
