//! The main example: a bookstore on a real SQLite file, every statement logged like Rails does.
//!
//! ```text
//! cargo run --release --example bookstore                # SQL lines (debug) and requests (info)
//! RUST_LOG=info cargo run --release --example bookstore  # requests only: the SQL log subscriber is silenced
//! cargo run --release --example bookstore -- --db my.sqlite path/to/books.csv   # keep the database
//! cargo run --release --example bookstore -- --log-format json     # one JSON object per event (logfmt: --log-format logfmt)
//! cargo run --release --example bookstore -- --help
//! ```
//!
//! Without `--db` the database is a temporary file, removed at exit (also on Ctrl-C).
//!
//! The code is in `src/bookstore/` so the integration test `tests/bookstore.rs` runs the same thing.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("debug"))
        .format(|buf, record| writeln!(buf, "{}", record.args()))
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = notify_app::bookstore::run_cli(
        &args,
        notify_core::Notifier::global(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    ExitCode::from(code)
}
