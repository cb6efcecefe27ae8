//! The bookstore's units of work: the schema, the import, and the requests.

use notify_core::{Notifier, Payload};
use rusqlite::params_from_iter;
use rusqlite::types::Value as SqlValue;

use super::data::Book;
use super::db::Db;
use super::AppError;

/// Rows per multi-row `INSERT` of the import.
pub const IMPORT_BATCH: usize = 100;

/// Drops and creates the tables and the indexes: `books` (ISBN unique, indexed by author; genre
/// and title deliberately not indexed) and `orders`.
///
/// # Errors
/// The `rusqlite` error of the first statement that failed.
///
/// ```
/// let db = notify_app::bookstore::Db::open_in_memory(notify_core::Notifier::new())?;
/// notify_app::bookstore::create_schema(&db)?;
/// assert_eq!(db.query("Count", "SELECT COUNT(*) FROM books", (), |r| r.get::<_, i64>(0))?, [0]);
/// # Ok::<(), rusqlite::Error>(())
/// ```
pub fn create_schema(db: &Db) -> rusqlite::Result<()> {
    db.execute("Schema", "DROP TABLE IF EXISTS orders", ())?;
    db.execute("Schema", "DROP TABLE IF EXISTS books", ())?;
    db.execute(
        "Schema",
        "CREATE TABLE books (id INTEGER PRIMARY KEY, isbn TEXT NOT NULL UNIQUE, title TEXT NOT NULL, \
         author TEXT NOT NULL, year INTEGER NOT NULL, price_cents INTEGER NOT NULL, genre TEXT NOT NULL, \
         stock INTEGER NOT NULL)",
        (),
    )?;
    db.execute("Schema", "CREATE INDEX index_books_on_author ON books (author)", ())?;
    db.execute(
        "Schema",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL REFERENCES books (id), \
         price_cents INTEGER NOT NULL)",
        (),
    )?;
    Ok(())
}

/// Inserts `books` in one transaction, [`IMPORT_BATCH`] rows per statement, as one
/// `"import.bookstore"` event (payload `file`, then `rows`).
///
/// # Errors
/// The `rusqlite` error; the transaction is rolled back.
///
/// ```
/// use notify_app::bookstore::{create_schema, import, Book, Db};
/// let db = Db::open_in_memory(notify_core::Notifier::new())?;
/// create_schema(&db)?;
/// let book = Book::parse("9780001000001,The Paper Forest,Rosa Eriksen,2020,2528,history,9").unwrap();
/// assert_eq!(import(&db, "inline", &[book])?, 1);
/// # Ok::<(), notify_app::bookstore::AppError>(())
/// ```
pub fn import(db: &Db, file: &str, books: &[Book]) -> Result<usize, AppError> {
    db.notifier().instrument_result(
        "import.bookstore",
        || Payload::new().with("file", file.to_owned()),
        |payload| {
            let inserted = db.transaction(|db| {
                let mut inserted = 0;
                for batch in books.chunks(IMPORT_BATCH) {
                    let sql = format!(
                        "INSERT INTO books (isbn, title, author, year, price_cents, genre, stock) VALUES {}",
                        vec!["(?, ?, ?, ?, ?, ?, ?)"; batch.len()].join(", ")
                    );
                    let values = batch.iter().flat_map(|b| {
                        [
                            SqlValue::Text(b.isbn.clone()),
                            SqlValue::Text(b.title.clone()),
                            SqlValue::Text(b.author.clone()),
                            SqlValue::Integer(b.year),
                            SqlValue::Integer(b.price_cents),
                            SqlValue::Text(b.genre.clone()),
                            SqlValue::Integer(b.stock),
                        ]
                    });
                    inserted += db.execute_sql("Book Bulk Insert", &sql, params_from_iter(values))?;
                }
                Ok::<_, AppError>(inserted)
            })?;
            payload.insert("rows", inserted);
            Ok(inserted)
        },
    )
}

/// One request-like unit of work: the event `"request.bookstore"` with payload `method`, `path`,
/// and, from `body`, `status` and `rows`, in a scope tagged `request_id` ([`notify_core::context::tagged`]).
fn request(
    notifier: &Notifier,
    method: &'static str,
    path: String,
    body: impl FnOnce() -> Result<(u16, usize), AppError>,
) -> Result<(), AppError> {
    // Every event of the request, its SQL included, carries its id in structured log lines.
    let id = NEXT_REQUEST.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    notify_core::context::tagged([("request_id", format!("req-{id}"))], || {
        notifier.instrument_result(
            "request.bookstore",
            || Payload::new().with("method", method).with("path", path),
            |payload| {
                let (status, rows) = body()?;
                payload.insert("status", status);
                payload.insert("rows", rows);
                Ok(())
            },
        )
    })
}

/// The next request's `request_id` tag (`req-1`, `req-2`, … per process).
static NEXT_REQUEST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A query-string value: spaces as `+`.
fn query_value(text: &str) -> String {
    text.replace(' ', "+")
}

/// Why a checkout did not happen.
enum Checkout {
    OutOfStock,
    Failed(AppError),
}

impl From<rusqlite::Error> for Checkout {
    fn from(e: rusqlite::Error) -> Checkout {
        Checkout::Failed(e.into())
    }
}

/// The requests the example runs over the imported `books`, derived from the data so the same
/// file always gives the same requests. Returns how many requests ran.
///
/// | request | statements | index |
/// |---|---|---|
/// | `GET /books?author=…` ×5 | Book Load | `index_books_on_author` |
/// | `GET /books/<isbn>` ×3 | Book Load | the unique ISBN index |
/// | `GET /books?genre=…` ×2 | Book Count, Book Load | none (full scan) |
/// | `GET /books?q=Lighthouse` | Book Search | none (`LIKE '%…%'`) |
/// | `POST /orders` ×4 | TRANSACTION, Book Load, Book Update, Order Create, TRANSACTION | unique ISBN, primary key |
/// | `GET /stats` | Book Stats | none (`GROUP BY genre`) |
/// | `GET /orders` | Order Load | primary key join |
///
/// The fourth order is for a book out of stock: its transaction rolls back and the request
/// answers 409.
///
/// # Errors
/// The first database error.
///
/// ```
/// use notify_app::bookstore::{create_schema, import, load_books, run_requests, default_data_file, Db};
/// let db = Db::open_in_memory(notify_core::Notifier::new())?;
/// create_schema(&db)?;
/// let books = load_books(&default_data_file())?;
/// import(&db, "books.csv", &books)?;
/// assert_eq!(run_requests(&db, &books)?, 17);
/// # Ok::<(), notify_app::bookstore::AppError>(())
/// ```
pub fn run_requests(db: &Db, books: &[Book]) -> Result<usize, AppError> {
    let notifier = db.notifier();
    let mut count = 0;
    let book_row = |r: &rusqlite::Row<'_>| r.get::<_, String>(0);

    let mut authors: Vec<&str> = Vec::new();
    for book in books {
        if authors.len() < 5 && !authors.contains(&book.author.as_str()) {
            authors.push(&book.author);
        }
    }
    for author in authors {
        request(
            notifier,
            "GET",
            format!("/books?author={}", query_value(author)),
            || {
                let rows = db.query(
                    "Book Load",
                    "SELECT title FROM books WHERE author = ?1 ORDER BY year",
                    (author,),
                    book_row,
                )?;
                Ok((200, rows.len()))
            },
        )?;
        count += 1;
    }

    for i in [0, books.len() / 2, books.len() - 1] {
        let isbn = books[i].isbn.as_str();
        request(notifier, "GET", format!("/books/{isbn}"), || {
            let rows = db.query(
                "Book Load",
                "SELECT title FROM books WHERE isbn = ?1 LIMIT 1",
                (isbn,),
                book_row,
            )?;
            Ok((if rows.is_empty() { 404 } else { 200 }, rows.len()))
        })?;
        count += 1;
    }

    for genre in ["mystery", "poetry"] {
        request(notifier, "GET", format!("/books?genre={genre}"), || {
            db.query(
                "Book Count",
                "SELECT COUNT(*) FROM books WHERE genre = ?1",
                (genre,),
                |r| r.get::<_, i64>(0),
            )?;
            let rows = db.query(
                "Book Load",
                "SELECT title FROM books WHERE genre = ?1 ORDER BY price_cents LIMIT 10",
                (genre,),
                book_row,
            )?;
            Ok((200, rows.len()))
        })?;
        count += 1;
    }

    request(notifier, "GET", "/books?q=Lighthouse".to_owned(), || {
        let rows = db.query(
            "Book Search",
            "SELECT title FROM books WHERE title LIKE ?1 ORDER BY title LIMIT 20",
            ("%Lighthouse%",),
            book_row,
        )?;
        Ok((200, rows.len()))
    })?;
    count += 1;

    let in_stock = books.iter().filter(|b| b.stock > 0).take(3);
    let sold_out = books.iter().find(|b| b.stock == 0);
    for book in in_stock.chain(sold_out) {
        let isbn = book.isbn.as_str();
        request(notifier, "POST", format!("/orders?isbn={isbn}"), || {
            let outcome = db.transaction(|db| {
                let found = db.query(
                    "Book Load",
                    "SELECT id, stock, price_cents FROM books WHERE isbn = ?1 LIMIT 1",
                    (isbn,),
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)),
                )?;
                let Some(&(id, stock, price)) = found.first() else {
                    return Err(Checkout::OutOfStock);
                };
                if stock == 0 {
                    return Err(Checkout::OutOfStock);
                }
                db.execute("Book Update", "UPDATE books SET stock = stock - 1 WHERE id = ?1", (id,))?;
                db.execute(
                    "Order Create",
                    "INSERT INTO orders (book_id, price_cents) VALUES (?1, ?2)",
                    (id, price),
                )?;
                Ok(())
            });
            match outcome {
                Ok(()) => Ok((201, 1)),
                Err(Checkout::OutOfStock) => Ok((409, 0)),
                Err(Checkout::Failed(e)) => Err(e),
            }
        })?;
        count += 1;
    }

    request(notifier, "GET", "/stats".to_owned(), || {
        let rows = db.query(
            "Book Stats",
            "SELECT genre, COUNT(*), AVG(price_cents) FROM books GROUP BY genre ORDER BY genre",
            (),
            book_row,
        )?;
        Ok((200, rows.len()))
    })?;
    count += 1;

    request(notifier, "GET", "/orders".to_owned(), || {
        let rows = db.query(
            "Order Load",
            "SELECT books.title FROM orders JOIN books ON books.id = orders.book_id ORDER BY orders.id",
            (),
            book_row,
        )?;
        Ok((200, rows.len()))
    })?;
    count += 1;

    Ok(count)
}
