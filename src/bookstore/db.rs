//! A file-backed SQLite connection whose every statement is a `"query.sql"` event.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::Debug;
use std::path::Path;

use notify_core::{Notifier, Payload};
use rusqlite::{Connection, Params, Row};

/// The event every statement publishes. Payload: `name` (what the statement does, as Rails names
/// it: `"Book Load"`), `sql` (the statement text), `binds` (the bound values, `Debug` text, when
/// there are any) and, after it ran, `rows` (rows returned by a query, rows changed by an insert,
/// update or delete) — or `exception` when it failed.
pub const QUERY_EVENT: &str = "query.sql";

/// A SQLite connection that instruments every statement on a notifier.
///
/// ```
/// use notify_app::bookstore::Db;
/// use notify_core::{Event, Notifier, Subscriber};
/// let notifier = Notifier::new();
/// notifier.subscribe("query.sql", Subscriber::event(|e: &Event| {
///     assert_eq!(e.payload().get("name").and_then(|v| v.as_str()), Some("Answer"));
///     assert_eq!(e.payload().get("rows").and_then(|v| v.as_i64()), Some(1));
/// }));
/// let db = Db::open_in_memory(notifier)?;
/// let answers = db.query("Answer", "SELECT 42", (), |row| row.get::<_, i64>(0))?;
/// assert_eq!(answers, [42]);
/// # Ok::<(), rusqlite::Error>(())
/// ```
pub struct Db {
    conn: Connection,
    notifier: Notifier,
}

impl Db {
    /// Opens (creating if needed) the SQLite database file at `path`.
    ///
    /// # Errors
    /// The `rusqlite` error when the file cannot be opened.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = notify_app::bookstore::Db::open(&dir.path().join("x.sqlite"), notify_core::Notifier::new())?;
    /// assert_eq!(db.execute("Schema", "CREATE TABLE t (x INTEGER)", ())?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: &Path, notifier: Notifier) -> rusqlite::Result<Db> {
        Ok(Db {
            conn: Connection::open(path)?,
            notifier,
        })
    }

    /// Opens a private in-memory database (for examples and tests).
    ///
    /// # Errors
    /// The `rusqlite` error when SQLite cannot allocate the database.
    ///
    /// ```
    /// let db = notify_app::bookstore::Db::open_in_memory(notify_core::Notifier::new())?;
    /// assert_eq!(db.query("One", "SELECT 1", (), |r| r.get::<_, i64>(0))?, [1]);
    /// # Ok::<(), rusqlite::Error>(())
    /// ```
    pub fn open_in_memory(notifier: Notifier) -> rusqlite::Result<Db> {
        Ok(Db {
            conn: Connection::open_in_memory()?,
            notifier,
        })
    }

    /// The notifier the statements are instrumented on.
    ///
    /// ```
    /// let db = notify_app::bookstore::Db::open_in_memory(notify_core::Notifier::new())?;
    /// assert!(!db.notifier().listening("query.sql"));
    /// # Ok::<(), rusqlite::Error>(())
    /// ```
    pub fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    /// Runs a statement that returns rows and maps each with `map`; one [`QUERY_EVENT`] whose
    /// `rows` is the number of rows returned and whose `binds` is the `Debug` text of `params`
    /// (built only when someone listens; left out for `()`).
    ///
    /// # Errors
    /// The `rusqlite` error (also recorded in the event's `exception`).
    ///
    /// ```
    /// let db = notify_app::bookstore::Db::open_in_memory(notify_core::Notifier::new())?;
    /// assert_eq!(db.query("Sum", "SELECT ?1 + ?2", (1, 2), |r| r.get::<_, i64>(0))?, [3]);
    /// # Ok::<(), rusqlite::Error>(())
    /// ```
    pub fn query<T, P: Params + Debug>(
        &self,
        name: &'static str,
        sql: &'static str,
        params: P,
        mut map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Vec<T>> {
        let params = RefCell::new(Some(params));
        self.notifier.instrument_result(
            QUERY_EVENT,
            || statement_payload(name, sql.into(), binds_of(&params)),
            |payload| {
                let mut statement = self.conn.prepare_cached(sql)?;
                let mut rows = statement.query(take(&params))?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    out.push(map(row)?);
                }
                payload.insert("rows", out.len());
                Ok(out)
            },
        )
    }

    /// Runs a statement that returns no rows (insert, update, delete, DDL); one [`QUERY_EVENT`] whose
    /// `rows` is the number of rows changed and whose `binds` is the `Debug` text of `params`.
    ///
    /// # Errors
    /// The `rusqlite` error (also recorded in the event's `exception`).
    ///
    /// ```
    /// let db = notify_app::bookstore::Db::open_in_memory(notify_core::Notifier::new())?;
    /// db.execute("Schema", "CREATE TABLE t (x INTEGER)", ())?;
    /// assert_eq!(db.execute("T Create", "INSERT INTO t VALUES (?1), (?2)", (1, 2))?, 2);
    /// # Ok::<(), rusqlite::Error>(())
    /// ```
    pub fn execute<P: Params + Debug>(
        &self,
        name: &'static str,
        sql: &'static str,
        params: P,
    ) -> rusqlite::Result<usize> {
        let params = RefCell::new(Some(params));
        self.notifier.instrument_result(
            QUERY_EVENT,
            || statement_payload(name, sql.into(), binds_of(&params)),
            |payload| {
                let changed = self.conn.prepare_cached(sql)?.execute(take(&params))?;
                payload.insert("rows", changed);
                Ok(changed)
            },
        )
    }

    /// [`Db::execute`] for a statement built at run time (a multi-row insert); its binds are not
    /// put in the payload (there are many).
    ///
    /// # Errors
    /// The `rusqlite` error (also recorded in the event's `exception`).
    ///
    /// ```
    /// let db = notify_app::bookstore::Db::open_in_memory(notify_core::Notifier::new())?;
    /// db.execute("Schema", "CREATE TABLE t (x INTEGER)", ())?;
    /// let sql = format!("INSERT INTO t VALUES {}", vec!["(?)"; 3].join(", "));
    /// assert_eq!(db.execute_sql("T Bulk Insert", &sql, rusqlite::params_from_iter([1, 2, 3]))?, 3);
    /// # Ok::<(), rusqlite::Error>(())
    /// ```
    pub fn execute_sql(&self, name: &'static str, sql: &str, params: impl Params) -> rusqlite::Result<usize> {
        self.notifier.instrument_result(
            QUERY_EVENT,
            || statement_payload(name, sql.to_owned().into(), None),
            |payload| {
                let changed = self.conn.prepare(sql)?.execute(params)?;
                payload.insert("rows", changed);
                Ok(changed)
            },
        )
    }

    /// Runs `body` in a transaction: `BEGIN`, then `COMMIT` when it returns `Ok`, `ROLLBACK` when it
    /// returns `Err` (the error is returned). Each of these is a [`QUERY_EVENT`] named
    /// `"TRANSACTION"`, as Rails logs them.
    ///
    /// # Errors
    /// `body`'s error, or the `rusqlite` error of `BEGIN`/`COMMIT`/`ROLLBACK`.
    ///
    /// ```
    /// let db = notify_app::bookstore::Db::open_in_memory(notify_core::Notifier::new())?;
    /// db.execute("Schema", "CREATE TABLE t (x INTEGER)", ())?;
    /// let failed: Result<(), rusqlite::Error> = db.transaction(|db| {
    ///     db.execute("T Create", "INSERT INTO t VALUES (1)", ())?;
    ///     Err(rusqlite::Error::QueryReturnedNoRows)
    /// });
    /// assert!(failed.is_err());
    /// assert_eq!(db.query("T Count", "SELECT COUNT(*) FROM t", (), |r| r.get::<_, i64>(0))?, [0]);
    /// # Ok::<(), rusqlite::Error>(())
    /// ```
    pub fn transaction<T, E: From<rusqlite::Error>>(&self, body: impl FnOnce(&Db) -> Result<T, E>) -> Result<T, E> {
        self.execute("TRANSACTION", "BEGIN", ())?;
        match body(self) {
            Ok(value) => {
                self.execute("TRANSACTION", "COMMIT", ())?;
                Ok(value)
            }
            Err(e) => {
                self.execute("TRANSACTION", "ROLLBACK", ())?;
                Err(e)
            }
        }
    }
}

fn statement_payload(name: &'static str, sql: Cow<'static, str>, binds: Option<String>) -> Payload {
    let payload = Payload::new().with("name", name).with("sql", sql);
    match binds {
        Some(binds) => payload.with("binds", binds),
        None => payload,
    }
}

/// The parameters still in `params` as a list, `["Ada Abbott", 3]` (from their `Debug` text, a
/// tuple or an array); `None` for `()` (no parameters).
fn binds_of<P: Debug>(params: &RefCell<Option<P>>) -> Option<String> {
    let text = format!("{:?}", params.borrow().as_ref()?);
    match text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        Some("") => None,
        Some(inner) => Some(format!("[{}]", inner.strip_suffix(',').unwrap_or(inner))),
        None => Some(text),
    }
}

/// Takes the parameters out of `params` for the statement.
fn take<P>(params: &RefCell<Option<P>>) -> P {
    params.borrow_mut().take().expect("the statement runs once")
}
