//! The command line of `examples/bookstore.rs`, parsed with `clap`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Parser, ValueEnum};
use notify_core::Notifier;
use notify_log::ColorChoice;

use super::{render_summary, run, serve, signals, LogFormat, Options, DEFAULT_SERVE_ADDR};

/// Loads a CSV file of books into a SQLite database, runs a mix of requests on it and logs every
/// statement and request through notify's log subscribers (stderr), then prints a summary of
/// every event (stdout).
#[derive(Debug, Parser)]
#[command(
    name = "bookstore",
    after_help = "RUST_LOG=info hides the SQL lines; RUST_LOG=debug (the default) shows them."
)]
struct Cli {
    /// The data file, CSV with the header isbn,title,author,year,price_cents,genre,stock
    /// [default: examples/data/books.csv]
    #[arg(value_name = "DATA_FILE")]
    data: Option<PathBuf>,

    /// Use this SQLite database file and keep it (its tables are dropped and re-created). Without
    /// it, a new temporary file is used and removed at exit
    #[arg(long, value_name = "DATABASE_FILE")]
    db: Option<PathBuf>,

    /// Serve the live page of the requests' events on ADDR [default: 127.0.0.1:7878] and run the
    /// requests once a second until stopped (a DATA_FILE goes before it, or write --serve=ADDR)
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_SERVE_ADDR)]
    serve: Option<SocketAddr>,

    /// With --serve: how many finished traces the live page keeps (older ones are forgotten)
    #[arg(long, value_name = "COUNT", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    traces: u32,

    /// Colour the log lines: `auto` when stderr, where the log goes, is a terminal (and NO_COLOR
    /// is unset)
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorWhen::Auto)]
    color: ColorWhen,

    /// The log lines: Rails-style text, or one JSON object or logfmt line per event with its trace
    /// and span ids
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormatArg::Rails)]
    log_format: LogFormatArg,
}

/// `--log-format FORMAT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormatArg {
    Rails,
    Json,
    Logfmt,
}

impl LogFormatArg {
    fn format(self) -> LogFormat {
        match self {
            LogFormatArg::Rails => LogFormat::Rails,
            LogFormatArg::Json => LogFormat::Json,
            LogFormatArg::Logfmt => LogFormat::Logfmt,
        }
    }
}

/// `--color WHEN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// The log subscribers' choice. The example's logger (`env_logger`, see
    /// `examples/bookstore.rs`) writes to standard error, so `auto` asks about that handle.
    fn choice(self) -> ColorChoice {
        match self {
            ColorWhen::Auto => ColorChoice::for_sink(&std::io::stderr()),
            ColorWhen::Always => ColorChoice::Always,
            ColorWhen::Never => ColorChoice::Never,
        }
    }
}

/// The data file committed in the repository, `examples/data/books.csv`.
///
/// ```
/// assert!(notify_app::bookstore::default_data_file().ends_with("examples/data/books.csv"));
/// ```
pub fn default_data_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data/books.csv")
}

/// Runs the example with command-line `args` (without the program name) on `notifier`: the
/// summary (and `--help`) goes to `out`, errors to `err`. Returns the exit code: 0 on success,
/// 1 when the run failed (a missing or malformed data file, a database error), 2 for bad
/// arguments (clap's message and usage).
///
/// Without `--db` the database is a new file `bookstore-XXXXXX.sqlite` in the temporary directory
/// ([`std::env::temp_dir`]), removed before this function returns, whether the run succeeded or
/// not; with `--db FILE` the file is kept. So that Ctrl-C removes it too, a run on a temporary
/// database and `--serve` handle SIGINT and SIGTERM (on Unix; installed once per process): the
/// first one stops `--serve` within 100 ms (exit code 0) or lets a run finish and exits with 130,
/// the database removed; a second one ends the process at once.
///
/// ```
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let code = notify_app::bookstore::run_cli(&["--bogus".to_owned()], &notify_core::Notifier::new(), &mut out, &mut err);
/// assert_eq!(code, 2);
/// assert!(String::from_utf8(err)?.starts_with("error: unexpected argument '--bogus' found"));
/// # Ok::<(), std::string::FromUtf8Error>(())
/// ```
pub fn run_cli(args: &[String], notifier: &Notifier, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let cli = match Cli::try_parse_from(std::iter::once("bookstore").chain(args.iter().map(String::as_str))) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            let _ = write!(err, "{}", e.render());
            return 2;
        }
        Err(e) => {
            // --help
            let _ = write!(out, "{}", e.render());
            return 0;
        }
    };
    let (database, temporary) = match cli.db {
        Some(path) => (path, None),
        None => {
            let created = tempfile::Builder::new()
                .prefix("bookstore-")
                .suffix(".sqlite")
                .tempfile();
            match created {
                Ok(file) => {
                    let path = file.into_temp_path();
                    (path.to_path_buf(), Some(path))
                }
                Err(e) => {
                    let dir = std::env::temp_dir();
                    let _ = writeln!(err, "error: cannot create a database file in {}: {e}", dir.display());
                    return 1;
                }
            }
        }
    };
    let mut options = Options::new(cli.data.unwrap_or_else(default_data_file), database);
    options.serve = cli.serve;
    options.traces = cli.traces as usize;
    options.color = cli.color.choice();
    options.log_format = cli.log_format.format();
    let stop = if temporary.is_some() || options.serve.is_some() {
        signals::stop_on_signals().unwrap_or_else(|e| {
            let _ = writeln!(err, "warning: {e}; Ctrl-C will not remove the temporary database");
            Arc::default()
        })
    } else {
        Arc::default()
    };
    let code = run_options(&options, temporary.is_some(), &stop, notifier, out, err);
    if let Some(path) = temporary {
        if let Err(e) = path.close() {
            let _ = writeln!(
                err,
                "warning: cannot remove the temporary database {}: {e}",
                options.database.display()
            );
        }
    }
    code
}

/// Runs `options`; the exit code.
fn run_options(
    options: &Options,
    temporary: bool,
    stop: &AtomicBool,
    notifier: &Notifier,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    if let Some(addr) = options.serve {
        return match serve(options, addr, notifier, out, None, stop) {
            Ok(()) => 0,
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                1
            }
        };
    }
    match run(options, notifier) {
        Ok(_) if stop.load(Ordering::Relaxed) => {
            let _ = writeln!(err, "error: interrupted");
            130
        }
        Ok(report) => {
            let _ = writeln!(
                out,
                "\n{} books imported, {} requests; database {}{}\n\n{}",
                report.books,
                report.requests,
                options.database.display(),
                if temporary { " (temporary, removed at exit)" } else { "" },
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("bookstore").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn the_command_line_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_takes_an_optional_address() {
        let default: SocketAddr = DEFAULT_SERVE_ADDR.parse().unwrap();
        assert_eq!(parse(&[]).serve, None);
        assert_eq!(parse(&["--serve"]).serve, Some(default));
        assert_eq!(
            parse(&["--serve", "127.0.0.1:9090"]).serve,
            Some("127.0.0.1:9090".parse().unwrap())
        );
        assert_eq!(parse(&["--serve=[::1]:80"]).serve, Some("[::1]:80".parse().unwrap()));
        let cli = parse(&["books.csv", "--serve", "--db", "b.sqlite"]);
        assert_eq!(
            (cli.data, cli.serve, cli.db),
            (
                Some(PathBuf::from("books.csv")),
                Some(default),
                Some(PathBuf::from("b.sqlite"))
            )
        );
    }

    #[test]
    fn log_format_is_rails_unless_given_and_only_the_three_formats_parse() {
        assert_eq!(parse(&[]).log_format.format(), LogFormat::Rails);
        assert_eq!(parse(&["--log-format", "json"]).log_format.format(), LogFormat::Json);
        assert_eq!(parse(&["--log-format=logfmt"]).log_format.format(), LogFormat::Logfmt);
        let bad = Cli::try_parse_from(["bookstore", "--log-format", "xml"]).unwrap_err();
        assert!(
            bad.to_string().starts_with(
                "error: invalid value 'xml' for '--log-format <FORMAT>'\n  [possible values: rails, json, logfmt]"
            ),
            "{bad}"
        );
    }

    #[test]
    fn traces_is_a_positive_count_with_notify_webs_default() {
        assert_eq!(parse(&[]).traces, 100);
        assert_eq!(parse(&["--serve", "--traces", "5"]).traces, 5);
        let zero = Cli::try_parse_from(["bookstore", "--traces", "0"]).unwrap_err();
        assert!(
            zero.to_string()
                .starts_with("error: invalid value '0' for '--traces <COUNT>': 0 is not in 1.."),
            "{zero}"
        );
    }

    #[test]
    fn color_is_auto_unless_given() {
        assert_eq!(parse(&[]).color, ColorWhen::Auto);
        assert_eq!(parse(&["--color", "always"]).color.choice(), ColorChoice::Always);
        assert_eq!(parse(&["--color=never"]).color.choice(), ColorChoice::Never);
    }
}
