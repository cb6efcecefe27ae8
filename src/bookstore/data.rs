//! The data file: one book per line of a comma-separated file with a header.

use std::fmt;
use std::path::{Path, PathBuf};

/// The header line the data file must start with.
pub const HEADER: &str = "isbn,title,author,year,price_cents,genre,stock";

/// One book of the data file.
///
/// ```
/// let book = notify_app::bookstore::Book::parse("9780001000001,The Paper Forest,Rosa Eriksen,2020,2528,history,9")?;
/// assert_eq!((book.author.as_str(), book.year, book.price_cents, book.stock), ("Rosa Eriksen", 2020, 2528, 9));
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Book {
    /// ISBN-13, 13 digits.
    pub isbn: String,
    /// Title.
    pub title: String,
    /// Author's full name.
    pub author: String,
    /// Year of publication.
    pub year: i64,
    /// Price in cents.
    pub price_cents: i64,
    /// Genre, one lower-case word.
    pub genre: String,
    /// Copies in stock.
    pub stock: i64,
}

impl Book {
    /// Parses one data line (no trailing newline).
    ///
    /// # Errors
    /// A message saying what is wrong with the line: the number of fields, an empty field, an ISBN
    /// that is not 13 digits, or a number that does not parse.
    ///
    /// ```
    /// let err = notify_app::bookstore::Book::parse("123,Title,Author,1999,100,poetry").unwrap_err();
    /// assert_eq!(err, "expected 7 comma-separated fields (isbn,title,author,year,price_cents,genre,stock), found 6");
    /// ```
    pub fn parse(line: &str) -> Result<Book, String> {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [isbn, title, author, year, price_cents, genre, stock] = fields[..] else {
            return Err(format!(
                "expected 7 comma-separated fields ({HEADER}), found {}",
                fields.len()
            ));
        };
        let names = ["isbn", "title", "author", "year", "price_cents", "genre", "stock"];
        if let Some(i) = fields.iter().position(|f| f.is_empty()) {
            return Err(format!("field `{}` is empty", names[i]));
        }
        if isbn.len() != 13 || !isbn.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("field `isbn` is not 13 digits: `{isbn}`"));
        }
        let number = |name: &str, text: &str| {
            text.parse::<i64>()
                .map_err(|e| format!("field `{name}` is not a whole number: `{text}` ({e})"))
        };
        Ok(Book {
            isbn: isbn.to_owned(),
            title: title.to_owned(),
            author: author.to_owned(),
            year: number("year", year)?,
            price_cents: number("price_cents", price_cents)?,
            genre: genre.to_owned(),
            stock: number("stock", stock)?,
        })
    }
}

/// A data file that could not be read or has a bad line. Its `Display` names the file, and the
/// line (1-based) when there is one: `path:line: message`.
///
/// ```
/// let err = notify_app::bookstore::load_books("no/such/books.csv".as_ref()).unwrap_err();
/// assert_eq!(err.line(), None);
/// assert!(err.to_string().starts_with("no/such/books.csv: cannot read the data file: "));
/// ```
#[derive(Debug)]
pub struct DataError {
    path: PathBuf,
    line: Option<usize>,
    message: String,
}

impl DataError {
    /// The data file.
    ///
    /// ```
    /// let err = notify_app::bookstore::load_books("missing.csv".as_ref()).unwrap_err();
    /// assert_eq!(err.path(), std::path::Path::new("missing.csv"));
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The 1-based line of the problem; `None` when the file could not be read at all.
    ///
    /// ```
    /// let err = notify_app::bookstore::load_books("missing.csv".as_ref()).unwrap_err();
    /// assert_eq!(err.line(), None);
    /// ```
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong, without the file and line.
    ///
    /// ```
    /// let err = notify_app::bookstore::load_books("missing.csv".as_ref()).unwrap_err();
    /// assert!(err.message().starts_with("cannot read the data file"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for DataError {}

/// Reads every book of the data file at `path`: the [`HEADER`] line, then one book per line
/// (blank lines are skipped).
///
/// # Errors
/// [`DataError`] naming the file (and the line) when the file cannot be read, is not UTF-8, has no
/// or another header, has a malformed line, has a duplicate ISBN, or has no books.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("books.csv");
/// std::fs::write(&path, "isbn,title,author,year,price_cents,genre,stock\n9780001000001,T,A,2000,100,poetry,x\n")?;
/// let err = notify_app::bookstore::load_books(&path).unwrap_err();
/// assert_eq!(err.line(), Some(2));
/// assert_eq!(err.message(), "field `stock` is not a whole number: `x` (invalid digit found in string)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_books(path: &Path) -> Result<Vec<Book>, DataError> {
    let error = |line: Option<usize>, message: String| DataError {
        path: path.to_owned(),
        line,
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(None, format!("cannot read the data file: {e}")))?;
    // A UTF-8 byte-order mark (as some spreadsheet exports write) is not part of the header.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    match lines.next() {
        Some((_, header)) if header.trim() == HEADER => {}
        Some((n, header)) => {
            return Err(error(
                Some(n),
                format!("expected the header `{HEADER}`, found `{header}`"),
            ))
        }
        None => return Err(error(None, "the data file is empty".to_owned())),
    }
    let mut books = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let book = Book::parse(line).map_err(|message| error(Some(n), message))?;
        if let Some(first) = seen.insert(book.isbn.clone(), n) {
            return Err(error(
                Some(n),
                format!("duplicate isbn {} (first on line {first})", book.isbn),
            ));
        }
        books.push(book);
    }
    if books.is_empty() {
        return Err(error(None, "the data file has a header but no books".to_owned()));
    }
    Ok(books)
}
