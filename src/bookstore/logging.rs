//! The bookstore's log subscribers: SQL statements at debug, requests and the import at info.

use notify_core::Value;
use notify_log::{Color, ColorChoice, Level, LogConfig, LogEvent, LogSubscriber};

/// Logs every `"query.sql"` event at debug, to target `sql`, as Rails' `ActiveRecord::LogSubscriber`
/// does: `  Book Load (0.4ms)  SELECT … WHERE author = ?1  ["Ada Abbott"]`.
///
/// ```
/// use notify_app::bookstore::SqlLog;
/// use notify_core::Payload;
/// use notify_log::LogEvent;
/// let payload = Payload::new().with("name", "Book Load").with("sql", "SELECT ?1").with("binds", "[7]");
/// let event = LogEvent::new("query.sql", &payload, Some(std::time::Duration::from_micros(400)));
/// assert_eq!(SqlLog::default().query(&event).unwrap(), "  Book Load (0.4ms)  SELECT ?1  [7]");
/// ```
#[derive(Debug, Default)]
pub struct SqlLog {
    /// Whether to colour (read at attach; off by default).
    pub color: ColorChoice,
}

impl SqlLog {
    /// Formats one statement: its name in bold, the duration, the statement coloured by its verb
    /// (as Rails' `sql_color`), the binds, and `failed: …` when it returned an error. A multi-row
    /// `INSERT` is shown with its first row of placeholders only.
    ///
    /// ```
    /// use notify_log::LogEvent;
    /// let sql = "INSERT INTO t (a) VALUES (?), (?)";
    /// let payload = notify_core::Payload::new().with("name", "T Bulk Insert").with("sql", sql).with("rows", 2_u64);
    /// let event = LogEvent::new("query.sql", &payload, None);
    /// assert_eq!(notify_app::bookstore::SqlLog::default().query(&event).unwrap(), "  T Bulk Insert (?ms)  INSERT INTO t (a) VALUES (?), …");
    /// ```
    pub fn query(&self, event: &LogEvent<'_>) -> Option<String> {
        let payload = event.payload();
        let name = payload.get("name").and_then(Value::as_str).unwrap_or("SQL");
        let sql = payload.get("sql").and_then(Value::as_str)?;
        let mut line = format!(
            "  {} ({})  {}",
            event.color(name, Some(Color::Cyan), true),
            event.elapsed(),
            event.color(abbreviate(sql), Some(sql_color(sql)), false),
        );
        if let Some(binds) = event.get("binds") {
            line.push_str(&format!("  {binds}"));
        }
        if let Some(exception) = payload.get(notify_core::payload::EXCEPTION_KEY) {
            line.push_str(&format!(
                "  {}",
                event.color(format!("failed: {exception}"), Some(Color::Red), true)
            ));
        }
        Some(line)
    }
}

impl LogSubscriber for SqlLog {
    fn config() -> LogConfig<SqlLog> {
        LogConfig::new("sql").method("query", Level::Debug, SqlLog::query)
    }

    fn color(&self) -> Option<ColorChoice> {
        Some(self.color)
    }
}

/// A multi-row insert shown as its first row: `INSERT INTO t (a, b) VALUES (?, ?), …`.
fn abbreviate(sql: &str) -> String {
    match sql.find("), (") {
        Some(end) => format!("{}), …", &sql[..end]),
        None => sql.to_owned(),
    }
}

/// Rails' colour per kind of statement.
fn sql_color(sql: &str) -> Color {
    let verb = sql.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
    match verb.as_str() {
        "SELECT" => Color::Blue,
        "INSERT" => Color::Green,
        "UPDATE" => Color::Yellow,
        "DELETE" | "ROLLBACK" | "DROP" => Color::Red,
        "BEGIN" | "COMMIT" => Color::Cyan,
        _ => Color::Magenta,
    }
}

/// Logs the bookstore's own events at info, to target `bookstore`: `"request.bookstore"`
/// (`Completed 200 OK in 1.2ms (GET /books?author=Ada+Abbott, 5 rows)`) and `"import.bookstore"`
/// (`Imported 1200 books from books.csv in 35.0ms`).
///
/// ```
/// use notify_app::bookstore::AppLog;
/// use notify_core::Payload;
/// use notify_log::LogEvent;
/// let payload = Payload::new().with("method", "GET").with("path", "/stats").with("status", 200_u64).with("rows", 8_u64);
/// let event = LogEvent::new("request.bookstore", &payload, Some(std::time::Duration::from_micros(1250)));
/// assert_eq!(AppLog::default().request(&event).unwrap(), "Completed 200 OK in 1.2ms (GET /stats, 8 rows)");
/// ```
#[derive(Debug, Default)]
pub struct AppLog {
    /// Whether to colour (read at attach; off by default).
    pub color: ColorChoice,
}

impl AppLog {
    /// Formats a finished request: status with its reason phrase (from the `http` crate's
    /// `StatusCode::canonical_reason`; the bare code when it has none), duration, method, path
    /// and rows. A request without a status is logged as 500.
    ///
    /// ```
    /// use notify_log::LogEvent;
    /// let line = |status: u64| {
    ///     let payload = notify_core::Payload::new().with("method", "POST").with("path", "/orders").with("status", status).with("rows", 0_u64);
    ///     notify_app::bookstore::AppLog::default().request(&LogEvent::new("request.bookstore", &payload, None)).unwrap()
    /// };
    /// assert_eq!(line(409), "Completed 409 Conflict in ?ms (POST /orders, 0 rows)");
    /// assert_eq!(line(418), "Completed 418 I'm a teapot in ?ms (POST /orders, 0 rows)");
    /// assert_eq!(line(299), "Completed 299 in ?ms (POST /orders, 0 rows)");
    /// ```
    pub fn request(&self, event: &LogEvent<'_>) -> Option<String> {
        let payload = event.payload();
        let status = payload.get("status").and_then(Value::as_i64).unwrap_or(500);
        // The reason phrase of the status (RFC 9110), as the `http` crate knows it.
        let reason = u16::try_from(status)
            .ok()
            .and_then(|code| http::StatusCode::from_u16(code).ok())
            .and_then(|code| code.canonical_reason());
        let status_text = match reason {
            Some(reason) => format!("{status} {reason}"),
            None => status.to_string(),
        };
        let status_color = if status < 400 { Color::Green } else { Color::Red };
        let rows = payload.get("rows").and_then(Value::as_i64).unwrap_or(0);
        Some(format!(
            "Completed {} in {} ({} {}, {rows} {})",
            event.color(status_text, Some(status_color), true),
            event.elapsed(),
            event.get("method")?,
            event.get("path")?,
            if rows == 1 { "row" } else { "rows" },
        ))
    }

    /// Formats the import of the data file.
    ///
    /// ```
    /// use notify_log::LogEvent;
    /// let payload = notify_core::Payload::new().with("file", "books.csv").with("rows", 1200_u64);
    /// let event = LogEvent::new("import.bookstore", &payload, Some(std::time::Duration::from_millis(35)));
    /// assert_eq!(notify_app::bookstore::AppLog::default().import(&event).unwrap(), "Imported 1200 books from books.csv in 35.0ms");
    /// ```
    pub fn import(&self, event: &LogEvent<'_>) -> Option<String> {
        Some(format!(
            "Imported {} books from {} in {}",
            event.get("rows")?,
            event.get("file")?,
            event.elapsed()
        ))
    }
}

impl LogSubscriber for AppLog {
    fn config() -> LogConfig<AppLog> {
        LogConfig::new("bookstore")
            .method("request", Level::Info, AppLog::request)
            .method("import", Level::Info, AppLog::import)
    }

    fn color(&self) -> Option<ColorChoice> {
        Some(self.color)
    }
}

/// `--log-format`: how the example's events become log lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Rails-style lines from [`SqlLog`] and [`AppLog`] (the default; unchanged).
    #[default]
    Rails,
    /// One JSON object per event ([`notify_log::StructuredLog::json`]).
    Json,
    /// One logfmt line per event ([`notify_log::StructuredLog::logfmt`]).
    Logfmt,
}

/// The log subscribers of one run, in the chosen [`LogFormat`]; [`Logs::detach`] removes them.
/// In every format SQL events log at debug on target `sql` and the bookstore's own at info on
/// target `bookstore`, so `RUST_LOG=info` silences the SQL events whatever the format.
///
/// ```
/// use notify_app::bookstore::{LogFormat, Logs};
/// let notifier = notify_core::Notifier::new();
/// let logs = Logs::attach(LogFormat::Json, notify_log::ColorChoice::Never, &notifier)?;
/// assert_eq!(notifier.subscriber_count(), 1);
/// logs.detach();
/// assert_eq!(notifier.subscriber_count(), 0);
/// # Ok::<(), notify_log::LogSubscriberError>(())
/// ```
#[derive(Debug)]
pub struct Logs {
    /// [`SqlLog`] and [`AppLog`], attached (`rails`).
    rails: Option<Box<(notify_log::Attached<SqlLog>, notify_log::Attached<AppLog>)>>,
    /// A structured logger on every event (`json`, `logfmt`).
    structured: Option<notify_core::Subscription>,
}

impl Logs {
    /// Attaches the subscribers of `format` to `notifier` (`color` is for the Rails lines only).
    ///
    /// # Errors
    /// [`notify_log::LogSubscriberError`] if a Rails-style subscriber's configuration is invalid
    /// (it is not: the error is only passed on).
    pub fn attach(
        format: LogFormat,
        color: ColorChoice,
        notifier: &notify_core::Notifier,
    ) -> Result<Logs, notify_log::LogSubscriberError> {
        let structured = match format {
            LogFormat::Rails => {
                let sql = SqlLog { color }.attach_to(notifier)?;
                let app = AppLog { color }.attach_to(notifier)?;
                return Ok(Logs {
                    rails: Some(Box::new((sql, app))),
                    structured: None,
                });
            }
            LogFormat::Json => notify_log::StructuredLog::json(),
            LogFormat::Logfmt => notify_log::StructuredLog::logfmt(),
        };
        let logger = structured
            .level(Level::Info)
            .namespace_level("sql", Level::Debug)
            .build();
        Ok(Logs {
            rails: None,
            structured: Some(logger.subscribe(notifier, notify_core::Pattern::all())),
        })
    }

    /// Removes the subscribers.
    pub fn detach(self) {
        if let Some(rails) = self.rails {
            let (sql, app) = *rails;
            sql.detach();
            app.detach();
        }
        if let Some(subscription) = self.structured {
            let _ = subscription.unsubscribe();
        }
    }
}
