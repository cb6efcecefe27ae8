//! Runs the main example's library code (src/bookstore) on temporary SQLite files and checks the
//! exact shape of its log lines, its summary counts, and its errors for bad data files.
//!
//! One capturing `log` logger serves the whole test binary; the tests take a lock so the max level
//! and the captured lines of one test are not mixed with another's.

use std::path::Path;
use std::sync::{LazyLock, Mutex, MutexGuard, Once};

use log::{Level, LevelFilter, Log, Metadata, Record};
use notify_app::bookstore::{self, Book, Db, LogFormat, Options, SummaryRow};
use notify_core::Notifier;
use notify_log::ColorChoice;
use regex::Regex;

struct Capture(Mutex<Vec<(Level, String, String)>>);

impl Log for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &Record<'_>) {
        let line = (record.level(), record.target().to_owned(), record.args().to_string());
        self.0.lock().unwrap().push(line);
    }
    fn flush(&self) {}
}

static LOGGER: LazyLock<Capture> = LazyLock::new(|| Capture(Mutex::new(Vec::new())));
static SERIAL: Mutex<()> = Mutex::new(());

fn setup(max: LevelFilter) -> MutexGuard<'static, ()> {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| log::set_logger(&*LOGGER).expect("the only logger of this test binary"));
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    LOGGER.0.lock().unwrap().clear();
    log::set_max_level(max);
    guard
}

fn captured() -> Vec<(Level, String, String)> {
    LOGGER.0.lock().unwrap().clone()
}

/// Runs the example on the committed data file and a fresh database in `dir`, without colour.
fn run_example(dir: &Path) -> bookstore::Report {
    let mut options = Options::new(bookstore::default_data_file(), dir.join("bookstore.sqlite"));
    options.color = ColorChoice::Never;
    bookstore::run(&options, &Notifier::new()).expect("the example runs")
}

/// `(label, count)` of every summary row.
fn counts(summary: &[SummaryRow]) -> Vec<(String, u64)> {
    summary.iter().map(|r| (r.label(), r.count)).collect()
}

fn expected_counts() -> Vec<(String, u64)> {
    [
        ("import.bookstore", 1),
        ("query.sql", 52),
        ("  Book Bulk Insert", 12),
        ("  Book Count", 2),
        ("  Book Load", 14),
        ("  Book Search", 1),
        ("  Book Stats", 1),
        ("  Book Update", 3),
        ("  Order Create", 3),
        ("  Order Load", 1),
        ("  Schema", 5),
        ("  TRANSACTION", 10),
        ("request.bookstore", 17),
    ]
    .into_iter()
    .map(|(label, count)| (label.to_owned(), count))
    .collect()
}

#[test]
fn debug_logs_every_statement_as_rails_does_and_summarises_every_event() {
    let _serial = setup(LevelFilter::Debug);
    let dir = tempfile::tempdir().unwrap();
    let report = run_example(dir.path());
    assert_eq!((report.books, report.requests), (1200, 17));

    let sql = Regex::new(
        r"^  (Schema|TRANSACTION|Book Bulk Insert|Book Load|Book Count|Book Search|Book Stats|Book Update|Order Create|Order Load) \(\d+\.\dms\)  (SELECT|INSERT|UPDATE|BEGIN|COMMIT|ROLLBACK|CREATE|DROP)\b[^\n]*$",
    )
    .unwrap();
    let completed =
        Regex::new(r"^Completed (200 OK|201 Created|409 Conflict) in \d+\.\dms \((GET|POST) /\S+, \d+ rows?\)$")
            .unwrap();
    let imported = Regex::new(r"^Imported 1200 books from \S+/examples/data/books\.csv in \d+\.\dms$").unwrap();

    let lines = captured();
    let (sql_lines, app_lines): (Vec<_>, Vec<_>) = lines.iter().partition(|(_, target, _)| target == "sql");
    assert_eq!(sql_lines.len(), 52);
    assert_eq!(app_lines.len(), 18);
    for (level, _, message) in &sql_lines {
        assert_eq!(*level, Level::Debug);
        assert!(sql.is_match(message), "SQL line of unexpected shape: {message:?}");
    }
    for (level, target, message) in &app_lines {
        assert_eq!((*level, target.as_str()), (Level::Info, "bookstore"));
        assert!(
            completed.is_match(message) || imported.is_match(message),
            "app line of unexpected shape: {message:?}"
        );
    }

    // The exact text of some lines, with the durations masked.
    let masked: Vec<String> = lines
        .iter()
        .map(|(_, _, m)| Regex::new(r"\d+\.\dms").unwrap().replace_all(m, "N.Nms").into_owned())
        .collect();
    let position = |line: &str| {
        masked
            .iter()
            .position(|m| m == line)
            .unwrap_or_else(|| panic!("no line {line:?}"))
    };
    let load =
        position(r#"  Book Load (N.Nms)  SELECT title FROM books WHERE author = ?1 ORDER BY year  ["Rosa Eriksen"]"#);
    assert_eq!(
        masked[load + 1],
        "Completed 200 OK in N.Nms (GET /books?author=Rosa+Eriksen, 25 rows)"
    );
    let bulk = position(
        "  Book Bulk Insert (N.Nms)  INSERT INTO books (isbn, title, author, year, price_cents, genre, stock) VALUES (?, ?, ?, ?, ?, ?, ?), …",
    );
    assert_eq!(masked[bulk - 1], "  TRANSACTION (N.Nms)  BEGIN");
    let rollback = position("  TRANSACTION (N.Nms)  ROLLBACK");
    assert_eq!(
        masked[rollback + 1],
        "Completed 409 Conflict in N.Nms (POST /orders?isbn=9780001001480, 0 rows)"
    );
    assert_eq!(masked.iter().filter(|m| m.ends_with("  COMMIT")).count(), 4);

    assert_eq!(counts(&report.summary), expected_counts());
    for row in &report.summary {
        assert!(row.p50 <= row.p99, "{row:?}");
    }

    // The database is a real file with the data in it.
    let conn = rusqlite::Connection::open(dir.path().join("bookstore.sqlite")).unwrap();
    let books: i64 = conn.query_row("SELECT COUNT(*) FROM books", (), |r| r.get(0)).unwrap();
    let orders: i64 = conn.query_row("SELECT COUNT(*) FROM orders", (), |r| r.get(0)).unwrap();
    assert_eq!((books, orders), (1200, 3));
}

#[test]
fn rust_log_info_silences_the_sql_lines_but_not_the_requests_or_the_summary() {
    let _serial = setup(LevelFilter::Info);
    let dir = tempfile::tempdir().unwrap();
    let report = run_example(dir.path());

    let lines = captured();
    assert!(lines.iter().all(|(_, target, _)| target == "bookstore"), "{lines:?}");
    assert_eq!(lines.len(), 18);
    assert_eq!(lines.iter().filter(|(_, _, m)| m.starts_with("Completed ")).count(), 17);
    // The summary's event-object subscriber still sees every statement.
    assert_eq!(counts(&report.summary), expected_counts());
}

/// Runs the example in `format` and returns the captured lines.
fn run_in_format(format: LogFormat) -> Vec<(Level, String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::new(bookstore::default_data_file(), dir.path().join("bookstore.sqlite"));
    options.log_format = format;
    let report = bookstore::run(&options, &Notifier::new()).expect("the example runs");
    assert_eq!(counts(&report.summary), expected_counts());
    captured()
}

/// The facts of one structured line, whatever its format: event, trace id, span id, parent id
/// and `request_id` tag.
#[derive(Debug)]
struct Facts {
    target: String,
    event: String,
    trace_id: String,
    span_id: String,
    parent_id: Option<String>,
    request_id: Option<String>,
}

fn json_facts((_, target, line): &(Level, String, String)) -> Facts {
    let json: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    Facts {
        target: target.clone(),
        event: text(&json["event"]).unwrap(),
        trace_id: text(&json["trace_id"]).unwrap_or_else(|| panic!("no trace_id: {line}")),
        span_id: text(&json["span_id"]).unwrap_or_else(|| panic!("no span_id: {line}")),
        parent_id: text(&json["parent_id"]),
        request_id: text(&json["tags"]["request_id"]),
    }
}

fn logfmt_facts((_, target, line): &(Level, String, String)) -> Facts {
    assert!(!line.contains('\n'));
    // The values looked at here are never quoted; a quoted value may hold spaces, so pairs are
    // found by their key.
    let value = |key: &str| {
        let start = line.find(&format!(" {key}="))? + key.len() + 2;
        Some(line[start..].split(' ').next().unwrap().to_owned())
    };
    assert!(line.starts_with("time=") && line.contains(" level="), "{line}");
    Facts {
        target: target.clone(),
        event: value("event").unwrap(),
        trace_id: value("trace_id").unwrap_or_else(|| panic!("no trace_id: {line}")),
        span_id: value("span_id").unwrap_or_else(|| panic!("no span_id: {line}")),
        parent_id: value("parent_id"),
        request_id: value("tags.request_id"),
    }
}

/// Every line has a 32-digit trace id and a 16-digit span id; every SQL line of a request has its
/// request's trace id, its span as parent and its `request_id` tag.
fn check_structured(facts: &[Facts]) {
    assert_eq!(facts.len(), 70, "52 statements, 17 requests, 1 import");
    for f in facts {
        assert_eq!(f.trace_id.len(), 32, "{f:?}");
        assert_eq!(f.span_id.len(), 16, "{f:?}");
        assert!(
            f.trace_id
                .chars()
                .chain(f.span_id.chars())
                .all(|c| c.is_ascii_hexdigit()),
            "{f:?}"
        );
    }
    let requests: Vec<&Facts> = facts.iter().filter(|f| f.event == "request.bookstore").collect();
    assert_eq!(requests.len(), 17);
    let mut in_requests = 0;
    for request in &requests {
        assert_eq!(request.target, "bookstore");
        assert!(request.request_id.is_some(), "{request:?}");
        for sql in facts
            .iter()
            .filter(|f| f.request_id == request.request_id && f.event == "query.sql")
        {
            assert_eq!(sql.target, "sql");
            assert_eq!(sql.trace_id, request.trace_id, "{sql:?} in {request:?}");
            assert_eq!(sql.parent_id.as_ref(), Some(&request.span_id), "{sql:?} in {request:?}");
            in_requests += 1;
        }
    }
    // Every statement but the schema's and the import's runs inside a request.
    assert_eq!(in_requests, 52 - 5 - 12 - 2, "{facts:#?}");
}

#[test]
fn json_at_debug_writes_one_object_per_event_and_sql_lines_carry_their_requests_trace_id() {
    let _serial = setup(LevelFilter::Debug);
    let lines = run_in_format(LogFormat::Json);
    check_structured(&lines.iter().map(json_facts).collect::<Vec<_>>());
}

#[test]
fn logfmt_at_debug_writes_one_line_per_event_and_sql_lines_carry_their_requests_trace_id() {
    let _serial = setup(LevelFilter::Debug);
    let lines = run_in_format(LogFormat::Logfmt);
    check_structured(&lines.iter().map(logfmt_facts).collect::<Vec<_>>());
}

#[test]
fn rust_log_info_silences_the_sql_lines_in_every_format() {
    for format in [LogFormat::Rails, LogFormat::Json, LogFormat::Logfmt] {
        let _serial = setup(LevelFilter::Info);
        let lines = run_in_format(format);
        assert_eq!(lines.len(), 18, "{format:?}: {lines:?}");
        assert!(
            lines
                .iter()
                .all(|(level, target, _)| target == "bookstore" && *level == Level::Info),
            "{format:?}"
        );
    }
}

#[test]
fn the_command_line_prints_the_summary_and_exits_zero() {
    let _serial = setup(LevelFilter::Info);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.sqlite");
    let args = ["--db".to_owned(), db.display().to_string()];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = bookstore::run_cli(&args, &Notifier::new(), &mut out, &mut err);
    let out = String::from_utf8(out).unwrap();
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    assert!(err.is_empty());
    assert!(out.contains(&format!(
        "1200 books imported, 17 requests; database {}\n",
        db.display()
    )));
    let row = Regex::new(r"(?m)^query\.sql +52 +\d+\.\d{3} +\d+\.\d{3} +\d+\.\d{3}$").unwrap();
    assert!(row.is_match(&out), "{out}");
    let header = Regex::new(r"(?m)^event +count +total ms +p50 ms +p99 ms$").unwrap();
    assert!(header.is_match(&out), "{out}");
}

#[test]
fn a_missing_data_file_names_the_file_and_exits_non_zero() {
    let _serial = setup(LevelFilter::Info);
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.csv");
    let db = dir.path().join("never.sqlite");
    let args = [
        missing.display().to_string(),
        "--db".to_owned(),
        db.display().to_string(),
    ];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = bookstore::run_cli(&args, &Notifier::new(), &mut out, &mut err);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert_eq!(
        String::from_utf8(err).unwrap(),
        format!(
            "error: {}: cannot read the data file: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
    assert!(!db.exists(), "nothing touches the database when the data file is bad");
}

#[test]
fn a_malformed_data_file_names_the_file_and_line_and_exits_non_zero() {
    let _serial = setup(LevelFilter::Info);
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "isbn,title,author,year,price_cents,genre,stock\n9780001000001,T,A,2000,100,poetry,1\n9780001000002,T,A,2000,100,poetry\n",
            "3: expected 7 comma-separated fields (isbn,title,author,year,price_cents,genre,stock), found 6",
        ),
        (
            "isbn,title,author,year,price_cents,genre,stock\n9780001000001,T,A,two thousand,100,poetry,1\n",
            "2: field `year` is not a whole number: `two thousand` (invalid digit found in string)",
        ),
        (
            "isbn,title\n",
            "1: expected the header `isbn,title,author,year,price_cents,genre,stock`, found `isbn,title`",
        ),
        (
            "isbn,title,author,year,price_cents,genre,stock\n9780001000001,T,A,2000,100,poetry,1\n\n9780001000001,U,B,2001,200,poetry,2\n",
            "4: duplicate isbn 9780001000001 (first on line 2)",
        ),
    ];
    for (text, expected) in cases {
        let data = dir.path().join("books.csv");
        std::fs::write(&data, text).unwrap();
        let db = dir.path().join("never.sqlite");
        let args = ["--db".to_owned(), db.display().to_string(), data.display().to_string()];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = bookstore::run_cli(&args, &Notifier::new(), &mut out, &mut err);
        assert_eq!(code, 1);
        assert_eq!(
            String::from_utf8(err).unwrap(),
            format!("error: {}:{expected}\n", data.display())
        );
        assert!(!db.exists());
    }
}

#[test]
fn a_byte_order_mark_before_the_header_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("bom.csv");
    std::fs::write(
        &data,
        "\u{feff}isbn,title,author,year,price_cents,genre,stock\n9780001000001,T,A,2000,100,poetry,1\n",
    )
    .unwrap();
    let books = bookstore::load_books(&data).unwrap();
    assert_eq!(books.len(), 1);
}

#[test]
fn a_quoted_title_with_a_comma_loads() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("quoted.csv");
    std::fs::write(
        &data,
        concat!(
            "isbn,title,author,year,price_cents,genre,stock\n",
            "9780001000001,\"Love, Actually\",Richard Curtis,2003,1999,romance,4\n",
            "9780001000002,\"The \"\"Best\"\" Book\", Ann Other ,2001,1500,poetry,2\n",
        ),
    )
    .unwrap();
    let books = bookstore::load_books(&data).unwrap();
    let book = |isbn: &str, title: &str, author: &str, year, price_cents, genre: &str, stock| Book {
        isbn: isbn.to_owned(),
        title: title.to_owned(),
        author: author.to_owned(),
        year,
        price_cents,
        genre: genre.to_owned(),
        stock,
    };
    assert_eq!(
        books,
        [
            book(
                "9780001000001",
                "Love, Actually",
                "Richard Curtis",
                2003,
                1999,
                "romance",
                4
            ),
            book(
                "9780001000002",
                "The \"Best\" Book",
                "Ann Other",
                2001,
                1500,
                "poetry",
                2
            ),
        ]
    );

    // Imported whole: the title is one column, comma and all.
    let db = Db::open_in_memory(Notifier::new()).unwrap();
    bookstore::create_schema(&db).unwrap();
    assert_eq!(bookstore::import(&db, "quoted.csv", &books).unwrap(), 2);
    let titles = db
        .query("Book Load", "SELECT title FROM books ORDER BY isbn", (), |row| {
            row.get::<_, String>(0)
        })
        .unwrap();
    assert_eq!(titles, ["Love, Actually", "The \"Best\" Book"]);
}

#[test]
fn a_record_that_is_not_utf8_names_its_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("latin1.csv");
    let mut text = b"isbn,title,author,year,price_cents,genre,stock\n9780001000001,T,A,2000,100,poetry,1\n".to_vec();
    text.extend_from_slice(b"9780001000002,Caf\xe9,A,2000,100,poetry,1\n");
    std::fs::write(&data, text).unwrap();
    let err = bookstore::load_books(&data).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}:3: field 2 is not valid UTF-8", data.display())
    );
}

#[test]
fn help_lists_every_option_and_exits_zero() {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = bookstore::run_cli(&["--help".to_owned()], &Notifier::new(), &mut out, &mut err);
    assert_eq!(code, 0);
    assert!(err.is_empty());
    assert_eq!(String::from_utf8(out).unwrap(), HELP);
}

#[test]
fn bad_arguments_exit_2_with_a_message_and_the_usage() {
    let cases: [(&[&str], &str); 4] = [
        (&["--bogus"], "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\nUsage: bookstore [OPTIONS] [DATA_FILE]\n\nFor more information, try '--help'.\n"),
        (&["--db"], "error: a value is required for '--db <DATABASE_FILE>' but none was supplied\n\nFor more information, try '--help'.\n"),
        (&["--serve", "nowhere"], "error: invalid value 'nowhere' for '--serve [<ADDR>]': invalid socket address syntax\n\nFor more information, try '--help'.\n"),
        (&["a.csv", "b.csv"], "error: unexpected argument 'b.csv' found\n\nUsage: bookstore [OPTIONS] [DATA_FILE]\n\nFor more information, try '--help'.\n"),
    ];
    for (args, expected) in cases {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = bookstore::run_cli(&args, &Notifier::new(), &mut out, &mut err);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(String::from_utf8(err).unwrap(), expected, "{args:?}");
    }
}

/// `bookstore --help`, exactly.
const HELP: &str = "\
Loads a CSV file of books into a SQLite database, runs a mix of requests on it and logs every statement and request through notify's log subscribers (stderr), then prints a summary of every event (stdout)

Usage: bookstore [OPTIONS] [DATA_FILE]

Arguments:
  [DATA_FILE]  The data file, CSV with the header isbn,title,author,year,price_cents,genre,stock [default: examples/data/books.csv]

Options:
      --db <DATABASE_FILE>   Use this SQLite database file and keep it (its tables are dropped and re-created). Without it, a new temporary file is used and removed at exit
      --serve [<ADDR>]       Serve the live page of the requests' events on ADDR [default: 127.0.0.1:7878] and run the requests once a second until stopped (a DATA_FILE goes before it, or write --serve=ADDR)
      --traces <COUNT>       With --serve: how many finished traces the live page keeps (older ones are forgotten) [default: 100]
      --color <WHEN>         Colour the log lines: `auto` when stderr, where the log goes, is a terminal (and NO_COLOR is unset) [default: auto] [possible values: auto, always, never]
      --log-format <FORMAT>  The log lines: Rails-style text, or one JSON object or logfmt line per event with its trace and span ids [default: rails] [possible values: rails, json, logfmt]
  -h, --help                 Print help

RUST_LOG=info hides the SQL lines; RUST_LOG=debug (the default) shows them.
";
