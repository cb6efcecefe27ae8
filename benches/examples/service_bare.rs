//! scripts/service-bench's uninstrumented service: an axum catalog over SQLite, with no logs, no
//! metrics, no traces and no notify events. Its CPU per request is what the instrumented services
//! (the notify service and its tracing-stack twin, issue 47) are measured against: the harness
//! prints each one's CPU per request minus this one's.
//!
//! ```text
//! cargo build --release -p notify-bench --example service_bare
//! SERVICE_ADDR=127.0.0.1:3000 target/release/examples/service_bare &
//! curl http://127.0.0.1:3000/books/7        # {"id":7,"isbn":"...","title":"...",...}
//! ```
//!
//! Routes: `GET /books/{id}` looks the book up by id (1..=1,200, the bookstore's data file) in an
//! in-memory SQLite database and answers it as JSON (404 with `{"error":"not found"}` for an id
//! not in the table, 400 for an id that is not a number: axum's `Path` rejection); `GET /health`
//! answers `ok`. `SERVICE_ADDR` (default 127.0.0.1:3000) is the address to listen on; the same
//! variable as the instrumented services read (docs/benchmarks.md, "CPU per request of a service").
//! Errors at start (no data file, an address in use) are printed and exit with status 1.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use notify_app::bookstore::{default_data_file, load_books, Book};
use rusqlite::{params, Connection, OptionalExtension};

/// The catalog's rows, loaded once; each runtime thread copies them into a database of its own.
struct Catalog {
    books: Vec<Book>,
}

thread_local! {
    // One in-memory SQLite database per runtime thread: requests never wait on a lock, as with
    // a connection pool of one connection per worker.
    static DB: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

fn open(books: &[Book]) -> rusqlite::Result<Connection> {
    let mut db = Connection::open_in_memory()?;
    db.execute_batch(
        "CREATE TABLE books (id INTEGER PRIMARY KEY, isbn TEXT NOT NULL, title TEXT NOT NULL, \
         author TEXT NOT NULL, year INTEGER NOT NULL, price_cents INTEGER NOT NULL, \
         genre TEXT NOT NULL, stock INTEGER NOT NULL)",
    )?;
    let tx = db.transaction()?;
    {
        let mut insert = tx.prepare("INSERT INTO books VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
        for (i, b) in books.iter().enumerate() {
            insert.execute(params![
                i as i64 + 1,
                b.isbn,
                b.title,
                b.author,
                b.year,
                b.price_cents,
                b.genre,
                b.stock
            ])?;
        }
    }
    tx.commit()?;
    Ok(db)
}

/// The book with this id as a JSON object, `None` when there is none.
fn find(catalog: &Catalog, id: i64) -> rusqlite::Result<Option<serde_json::Value>> {
    DB.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(open(&catalog.books)?);
        }
        let db = slot.as_ref().expect("opened above");
        let mut select =
            db.prepare_cached("SELECT isbn, title, author, year, price_cents, genre, stock FROM books WHERE id = ?1")?;
        select
            .query_row([id], |row| {
                Ok(serde_json::json!({
                    "id": id,
                    "isbn": row.get::<_, String>(0)?,
                    "title": row.get::<_, String>(1)?,
                    "author": row.get::<_, String>(2)?,
                    "year": row.get::<_, i64>(3)?,
                    "price_cents": row.get::<_, i64>(4)?,
                    "genre": row.get::<_, String>(5)?,
                    "stock": row.get::<_, i64>(6)?,
                }))
            })
            .optional()
    })
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

async fn book(State(catalog): State<Arc<Catalog>>, Path(id): Path<i64>) -> Response {
    match find(&catalog, id) {
        Ok(Some(book)) => json(StatusCode::OK, &book),
        Ok(None) => json(StatusCode::NOT_FOUND, &serde_json::json!({"error": "not found"})),
        Err(e) => json(
            StatusCode::INTERNAL_SERVER_ERROR,
            &serde_json::json!({"error": e.to_string()}),
        ),
    }
}

fn main() -> ExitCode {
    let addr = std::env::var("SERVICE_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    let addr: SocketAddr = match addr.parse() {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("service_bare: SERVICE_ADDR `{addr}` is not an address: {e}");
            return ExitCode::FAILURE;
        }
    };
    let books = match load_books(&default_data_file()) {
        Ok(books) => books,
        Err(e) => {
            eprintln!("service_bare: {e}");
            return ExitCode::FAILURE;
        }
    };
    let catalog = Arc::new(Catalog { books });
    let app = Router::new()
        .route("/books/{id}", get(book))
        .route("/health", get(|| async { "ok" }))
        .with_state(catalog);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("service_bare: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        eprintln!("service_bare: listening on http://{}", listener.local_addr()?);
        axum::serve(listener, app).await
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("service_bare: {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}
