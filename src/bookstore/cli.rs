//! The command line of `examples/bookstore.rs`.

use std::io::Write;
use std::path::PathBuf;

use notify_core::Notifier;

use super::{render_summary, run, serve, AppError, Options, DEFAULT_SERVE_ADDR};

const USAGE: &str = "usage: bookstore [--db DATABASE_FILE] [--serve [ADDR]] [DATA_FILE]\n\
\n\
Loads DATA_FILE (default: examples/data/books.csv) into the SQLite file DATABASE_FILE\n\
(default: bookstore-<pid>.sqlite in the temporary directory, one per run), runs a mix of requests and logs them.\n\
RUST_LOG=info hides the SQL lines; RUST_LOG=debug (the default) shows them.\n\
--serve [ADDR] serves the live page of the requests' events on ADDR (default 127.0.0.1:7878)\n\
and keeps running the requests, once a second, until stopped.";

/// The data file committed in the repository, `examples/data/books.csv`.
///
/// ```
/// assert!(notify_app::bookstore::default_data_file().ends_with("examples/data/books.csv"));
/// ```
pub fn default_data_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data/books.csv")
}

/// Runs the example with command-line `args` (without the program name) on `notifier`: the
/// summary goes to `out`, errors to `err`. Returns the exit code: 0 on success, 1 when the run
/// failed (a missing or malformed data file, a database error), 2 for bad arguments.
///
/// ```
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let code = notify_app::bookstore::run_cli(&["--bogus".to_owned()], &notify_core::Notifier::new(), &mut out, &mut err);
/// assert_eq!(code, 2);
/// assert!(String::from_utf8(err)?.starts_with("error: unknown option `--bogus`"));
/// # Ok::<(), std::string::FromUtf8Error>(())
/// ```
pub fn run_cli(args: &[String], notifier: &Notifier, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let options = match parse(args) {
        Ok(Some(options)) => options,
        Ok(None) => {
            let _ = writeln!(out, "{USAGE}");
            return 0;
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}\n\n{USAGE}");
            return 2;
        }
    };
    if let Some(addr) = options.serve {
        return match serve(&options, addr, notifier, out, None) {
            Ok(()) => 0,
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                1
            }
        };
    }
    match run(&options, notifier) {
        Ok(report) => {
            let _ = writeln!(
                out,
                "\n{} books imported, {} requests; database {}\n\n{}",
                report.books,
                report.requests,
                options.database.display(),
                render_summary(&report.summary)
            );
            0
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            1
        }
    }
}

/// The options, or `None` for `--help`.
fn parse(args: &[String]) -> Result<Option<Options>, AppError> {
    let mut data = None;
    let mut database = None;
    let mut serve = None;
    let mut args = args.iter().peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--db" => {
                let path = args
                    .next()
                    .ok_or_else(|| AppError::Usage("`--db` needs a file name".to_owned()))?;
                database = Some(PathBuf::from(path));
            }
            "--serve" => {
                let given = args.next_if(|a| a.parse::<std::net::SocketAddr>().is_ok());
                let addr = given.map_or(DEFAULT_SERVE_ADDR, |a| a.as_str());
                serve = Some(addr.parse().expect("a valid address"));
            }
            option if option.starts_with('-') => {
                return Err(AppError::Usage(format!("unknown option `{option}`")));
            }
            file if data.is_none() => data = Some(PathBuf::from(file)),
            extra => return Err(AppError::Usage(format!("unexpected argument `{extra}`"))),
        }
    }
    let mut options = Options::new(
        data.unwrap_or_else(default_data_file),
        database.unwrap_or_else(|| std::env::temp_dir().join(format!("bookstore-{}.sqlite", std::process::id()))),
    );
    options.serve = serve;
    // The example's logger (env_logger, see examples/bookstore.rs) writes to standard error.
    options.color = notify_log::ColorChoice::for_sink(&std::io::stderr());
    Ok(Some(options))
}
