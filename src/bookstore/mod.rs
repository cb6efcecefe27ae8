//! The main example: a bookstore on a real SQLite file whose every statement is an event.
//!
//! `cargo run --release --example bookstore` loads `examples/data/books.csv` (1,200 books) into a
//! SQLite database file, runs a mix of requests (indexed and unindexed queries, inserts, updates, a
//! transaction that commits and one that rolls back), and logs them through two log subscribers:
//!
//! * [`SqlLog`] turns every `"query.sql"` event into a Rails-like debug line on target `sql`:
//!   `  Book Load (0.1ms)  SELECT title FROM books WHERE author = ?1 ORDER BY year  ["Rosa Eriksen"]`
//! * [`AppLog`] turns `"request.bookstore"` and `"import.bookstore"` into info lines on target
//!   `bookstore`: `Completed 200 OK in 0.3ms (GET /books?author=Rosa+Eriksen, 21 rows)`.
//!
//! With `RUST_LOG=info` the SQL log subscriber is *silenced*: its events cost what unlistened
//! events cost, and only the info lines print. At the end a [`Summary`] (an event-object
//! subscriber on every event) prints count, total, p50 and p99 per event name.
//!
//! Events follow notify's `"<method>.<namespace>"` convention (see
//! [`notify_log`]).

mod cli;
mod data;
mod db;
mod logging;
mod serve;
mod signals;
mod store;
mod summary;

use std::fmt;
use std::path::PathBuf;

use notify_core::Notifier;
use notify_log::{ColorChoice, LogSubscriberError};

pub use cli::{default_data_file, run_cli};
pub use data::{load_books, Book, DataError, HEADER};
pub use db::{Db, QUERY_EVENT};
pub use logging::{AppLog, LogFormat, Logs, SqlLog};
pub use serve::{serve, DEFAULT_SERVE_ADDR, SERVE_ROUND};
pub use store::{create_schema, import, run_requests, IMPORT_BATCH};
pub use summary::{render_summary, Summary, SummaryRow};

/// Why the example failed.
///
/// ```
/// let err = notify_app::bookstore::AppError::Serve(std::io::ErrorKind::AddrInUse.into());
/// assert_eq!(err.to_string(), "cannot serve the live page: address in use");
/// ```
#[derive(Debug)]
pub enum AppError {
    /// The data file is missing or malformed (names the file and line).
    Data(DataError),
    /// SQLite failed.
    Sql(rusqlite::Error),
    /// A log subscriber's configuration is invalid.
    Log(LogSubscriberError),
    /// `--serve`: the page's address cannot be bound.
    Serve(std::io::Error),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Data(e) => e.fmt(f),
            AppError::Sql(e) => write!(f, "database error: {e}"),
            AppError::Log(e) => e.fmt(f),
            AppError::Serve(e) => write!(f, "cannot serve the live page: {e}"),
        }
    }
}

impl std::error::Error for AppError {}

impl From<DataError> for AppError {
    fn from(e: DataError) -> AppError {
        AppError::Data(e)
    }
}

impl From<rusqlite::Error> for AppError {
    fn from(e: rusqlite::Error) -> AppError {
        AppError::Sql(e)
    }
}

impl From<LogSubscriberError> for AppError {
    fn from(e: LogSubscriberError) -> AppError {
        AppError::Log(e)
    }
}

/// What to run.
///
/// ```
/// let options = notify_app::bookstore::Options::new("books.csv", "/tmp/books.sqlite");
/// assert_eq!(options.color, notify_log::ColorChoice::Never);
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    /// The data file (see [`HEADER`]).
    pub data: PathBuf,
    /// The SQLite database file; created if missing, its tables dropped and re-created.
    pub database: PathBuf,
    /// Colour of the log lines (see [`ColorChoice`]: decided by where the logger writes).
    pub color: ColorChoice,
    /// `--serve [ADDR]`: serve the live page (notify-web) there and run requests in a loop.
    pub serve: Option<std::net::SocketAddr>,
    /// `--traces COUNT`: how many finished traces the live page keeps (at least 1; 100 by
    /// default, notify-web's default).
    pub traces: usize,
    /// `--log-format`: Rails-style lines (default), JSON or logfmt.
    pub log_format: LogFormat,
}

impl Options {
    /// Options without colour ([`ColorChoice::Never`]) and without `--serve` (100 traces kept if
    /// served).
    ///
    /// ```
    /// let options = notify_app::bookstore::Options::new("a.csv", "b.sqlite");
    /// assert_eq!(options.data, std::path::PathBuf::from("a.csv"));
    /// ```
    pub fn new(data: impl Into<PathBuf>, database: impl Into<PathBuf>) -> Options {
        Options {
            data: data.into(),
            database: database.into(),
            color: ColorChoice::Never,
            serve: None,
            traces: 100,
            log_format: LogFormat::Rails,
        }
    }
}

/// What a run did.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let options = notify_app::bookstore::Options::new(notify_app::bookstore::default_data_file(), dir.path().join("b.sqlite"));
/// let report = notify_app::bookstore::run(&options, &notify_core::Notifier::new())?;
/// assert_eq!((report.books, report.requests), (1200, 17));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Report {
    /// Books imported.
    pub books: usize,
    /// Requests run.
    pub requests: usize,
    /// The summary rows (see [`Summary::rows`]).
    pub summary: Vec<SummaryRow>,
}

/// Runs the example on `notifier`: loads the data file (before touching the database), attaches
/// the log subscribers of [`Options::log_format`] ([`SqlLog`] and [`AppLog`] by default) and a
/// [`Summary`], creates the schema, imports, runs the requests, and
/// detaches everything again.
///
/// # Errors
/// [`AppError::Data`] for a missing or malformed data file (nothing else happens then),
/// [`AppError::Sql`] for a database failure.
///
/// ```
/// let err = notify_app::bookstore::run(&notify_app::bookstore::Options::new("missing.csv", "unused.sqlite"), &notify_core::Notifier::new()).unwrap_err();
/// assert_eq!(err.to_string(), "missing.csv: cannot read the data file: No such file or directory (os error 2)");
/// assert!(!std::path::Path::new("unused.sqlite").exists());
/// ```
pub fn run(options: &Options, notifier: &Notifier) -> Result<Report, AppError> {
    let books = load_books(&options.data)?;
    let logs = Logs::attach(options.log_format, options.color, notifier)?;
    let summary = Summary::subscribe(notifier);
    let result = (|| {
        let db = Db::open(&options.database, notifier.clone())?;
        create_schema(&db)?;
        let file = options.data.display().to_string();
        let imported = import(&db, &file, &books)?;
        let requests = run_requests(&db, &books)?;
        Ok::<_, AppError>((imported, requests))
    })();
    logs.detach();
    let summary = summary.finish();
    let (books, requests) = result?;
    Ok(Report {
        books,
        requests,
        summary,
    })
}
