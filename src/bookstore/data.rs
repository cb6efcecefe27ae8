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
    /// Parses one data line (no trailing newline) as a CSV record: fields separated by commas,
    /// a field with a comma or a quote in double quotes (`"Love, Actually"`, `"The ""Best"" Book"`),
    /// spaces around fields trimmed.
    ///
    /// # Errors
    /// A message saying what is wrong with the line: the number of fields, an empty field, an ISBN
    /// that is not 13 digits, a number that does not parse, or more than one line.
    ///
    /// ```
    /// let book = notify_app::bookstore::Book::parse(r#"9780001000001,"Love, Actually",Richard Curtis,2003,1999,romance,4"#)?;
    /// assert_eq!(book.title, "Love, Actually");
    /// let err = notify_app::bookstore::Book::parse("123,Title,Author,1999,100,poetry").unwrap_err();
    /// assert_eq!(err, "expected 7 comma-separated fields (isbn,title,author,year,price_cents,genre,stock), found 6");
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse(line: &str) -> Result<Book, String> {
        let mut records = csv_reader(line.as_bytes()).into_records();
        let record = match records.next() {
            Some(record) => record.map_err(|e| e.to_string())?,
            None => return Err("the line is empty".to_owned()),
        };
        if records.next().is_some() {
            return Err("expected one line, found more".to_owned());
        }
        Book::from_record(&record)
    }

    /// The book of one CSV record (its fields already trimmed).
    fn from_record(record: &csv::StringRecord) -> Result<Book, String> {
        let fields: Vec<&str> = record.iter().collect();
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

/// The data file's CSV dialect: RFC 4180 (commas, double quotes, `""` for a quote), any number of
/// fields per record (the count is checked per book, with a clear message), spaces around fields
/// trimmed, no header handling (the header is checked as a record of its own).
fn csv_reader<R: std::io::Read>(input: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(input)
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

/// Reads every book of the data file at `path` with the `csv` crate: the [`HEADER`] record, then
/// one book per record (see [`Book::parse`] for quoting; blank lines are skipped; a UTF-8
/// byte-order mark before the header is ignored).
///
/// # Errors
/// [`DataError`] naming the file (and the line) when the file cannot be read, has no or another
/// header, has a malformed record or one that is not UTF-8, has a duplicate ISBN, or has no books.
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
    let error = |line: Option<u64>, message: String| DataError {
        path: path.to_owned(),
        line: line.map(|l| l as usize),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| error(None, format!("cannot read the data file: {e}")))?;
    // A UTF-8 byte-order mark (as some spreadsheet exports write) is not part of the header.
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&bytes);
    let mut records = Records::new(bytes);
    let mut record = csv::StringRecord::new();
    let Some(line) = records.read(&mut record).map_err(|(line, e)| error(line, e))? else {
        return Err(error(None, "the data file is empty".to_owned()));
    };
    if !record.iter().eq(HEADER.split(',')) {
        let found = record.iter().collect::<Vec<_>>().join(",");
        return Err(error(
            Some(line),
            format!("expected the header `{HEADER}`, found `{found}`"),
        ));
    }
    let mut books = Vec::new();
    let mut seen = std::collections::HashMap::new();
    while let Some(line) = records.read(&mut record).map_err(|(line, e)| error(line, e))? {
        // A line of spaces only (csv skips empty lines itself).
        if record.len() == 1 && record[0].is_empty() {
            continue;
        }
        let book = Book::from_record(&record).map_err(|message| error(Some(line), message))?;
        if let Some(first) = seen.insert(book.isbn.clone(), line) {
            return Err(error(
                Some(line),
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

/// The records of a data file with the line each starts on (csv's own line count skips blank
/// lines, so lines are counted here from byte offsets).
struct Records<'a> {
    reader: csv::Reader<&'a [u8]>,
    lines: LineCounter<'a>,
}

impl<'a> Records<'a> {
    fn new(text: &'a [u8]) -> Records<'a> {
        Records {
            reader: csv_reader(text),
            lines: LineCounter::new(text),
        }
    }

    /// Reads the next record into `record`: its 1-based line, `None` at the end, or the line (when
    /// known) and a message.
    fn read(&mut self, record: &mut csv::StringRecord) -> Result<Option<u64>, (Option<u64>, String)> {
        match self.reader.read_record(record) {
            Ok(true) => Ok(Some(
                self.lines.line_at(record.position().map_or(0, csv::Position::byte)),
            )),
            Ok(false) => Ok(None),
            Err(e) => {
                let line = e.position().map(|p| self.lines.line_at(p.byte()));
                let message = match e.kind() {
                    csv::ErrorKind::Utf8 { err, .. } => format!("field {} is not valid UTF-8", err.field() + 1),
                    _ => format!("cannot read the data file: {e}"),
                };
                Err((line, message))
            }
        }
    }
}

/// Turns increasing byte offsets of a text into 1-based line numbers, counting each newline once.
struct LineCounter<'a> {
    text: &'a [u8],
    offset: usize,
    line: u64,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a [u8]) -> LineCounter<'a> {
        LineCounter {
            text,
            offset: 0,
            line: 1,
        }
    }

    /// The line of the record that csv reports at byte `offset`: csv's offset is where it
    /// started reading, before the blank lines it skips, so those are skipped here too. Offsets
    /// must not decrease from one call to the next.
    fn line_at(&mut self, offset: u64) -> u64 {
        let mut offset = usize::try_from(offset).unwrap_or(usize::MAX).min(self.text.len());
        while matches!(self.text.get(offset), Some(b'\n' | b'\r')) {
            offset += 1;
        }
        if offset > self.offset {
            let newlines = self.text[self.offset..offset].iter().filter(|&&b| b == b'\n').count();
            self.line += newlines as u64;
            self.offset = offset;
        }
        self.line
    }
}
