//! What the two services have in common and is not instrumentation: the database, the HTTP
//! client, the server's address and its graceful stop. `src/bin/notify_service.rs` (notify) and
//! `src/bin/tracing_service.rs` (the tracing stack) add the instrumentation; `scripts/glue-lines`
//! counts the lines each adds (the lines marked `// glue`, or between `// glue:begin` and
//! `// glue:end`).
//!
//! Both serve, on `APP_ADDRESS` (default `127.0.0.1:8080`):
//!
//! | route | what |
//! |---|---|
//! | `GET /books/{id}` | a SQLite lookup, then a call to `/prices/{id}` (the outgoing call), the book and its price |
//! | `GET /prices/{id}` | a price |
//! | `GET /consumed` | how many request events the NATS consumer has received |
//!
//! Both print `listening on http://ADDRESS` on standard error once they accept connections, and
//! stop on Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rusqlite::Connection;

/// The query of `GET /books/{id}`, with one positional bind.
pub const BOOK_SQL: &str = "SELECT title, author FROM books WHERE id = ?1";

/// The HTTP client both services call `/prices` with.
pub type HttpClient = Client<HttpConnector, Empty<Bytes>>;

/// What a handler needs.
#[derive(Clone)]
pub struct App<C> {
    /// The database.
    pub db: Arc<Mutex<Connection>>,
    /// The client for outgoing calls.
    pub client: C,
    /// The base URL of the prices service (`http://127.0.0.1:PORT`).
    pub prices: String,
    /// Request events received by the NATS consumer.
    pub consumed: Arc<AtomicU64>,
}

/// An in-memory database with three books.
///
/// # Errors
/// SQLite's.
pub fn database() -> rusqlite::Result<Arc<Mutex<Connection>>> {
    let db = Connection::open_in_memory()?;
    db.execute_batch(
        "CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author TEXT NOT NULL);
         INSERT INTO books VALUES (1, 'Dune', 'Frank Herbert'), (2, 'Emma', 'Jane Austen'),
                                  (3, 'Ulysses', 'James Joyce');",
    )?;
    Ok(Arc::new(Mutex::new(db)))
}

/// A plain hyper client.
pub fn http_client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// The request for the price of book `id`.
///
/// # Panics
/// Never for a base URL from [`bind`].
pub fn price_request(prices: &str, id: i64) -> http::Request<Empty<Bytes>> {
    http::Request::get(format!("{prices}/prices/{id}"))
        .body(Empty::new())
        .expect("a valid URI")
}

/// A response's body as text.
///
/// # Errors
/// The body's error.
pub async fn body_text<B: http_body::Body>(response: http::Response<B>) -> Result<String, B::Error> {
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Binds `APP_ADDRESS` (default `127.0.0.1:8080`).
///
/// # Errors
/// An invalid address or one that cannot be bound.
pub async fn bind() -> Result<(tokio::net::TcpListener, SocketAddr), Box<dyn std::error::Error>> {
    let address = std::env::var("APP_ADDRESS").unwrap_or_else(|_| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// Serves `app` until Ctrl-C or SIGTERM.
///
/// # Errors
/// The server's.
pub async fn serve(listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    eprintln!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).with_graceful_shutdown(stopped()).await
}

async fn stopped() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("a signal handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// The NATS server URL the consumer connects to (`NOTIFY_NATS_URL`, as the exporter's), if any.
pub fn nats_url() -> Option<String> {
    std::env::var("NOTIFY_NATS_URL").ok()
}
