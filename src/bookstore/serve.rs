//! `--serve [ADDR]`: the bookstore as a live demo of notify-web's page.

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use notify_core::{Notifier, Pattern};
use notify_log::LogSubscriber;
use notify_pool::WorkerPool;
use notify_web::{TraceRecorder, WebOptions, WebServer};

use super::{create_schema, import, load_books, run_requests, AppError, AppLog, Db, Options, SqlLog};

/// Where `--serve` without an address listens.
pub const DEFAULT_SERVE_ADDR: &str = "127.0.0.1:7878";

/// How often the serve loop runs the request mix (17 requests): a bounded rate of about 17
/// requests per second.
pub const SERVE_ROUND: Duration = Duration::from_secs(1);

/// Imports the data file as [`run`](super::run) does, serves notify-web's page for every event
/// on `addr`, prints `Serving the live page on http://ADDR/` to `out`, then runs the request mix
/// once per [`SERVE_ROUND`] until the process is stopped (or `rounds` rounds, when given).
///
/// # Errors
/// [`AppError::Serve`] when `addr` cannot be bound; what [`run`](super::run) returns otherwise.
pub fn serve(
    options: &Options,
    addr: SocketAddr,
    notifier: &Notifier,
    out: &mut dyn Write,
    rounds: Option<u64>,
) -> Result<(), AppError> {
    let books = load_books(&options.data)?;
    let recorder = TraceRecorder::new(WebOptions::new());
    let pool = WorkerPool::global();
    let subscription = recorder.subscribe(pool, notifier, Pattern::all());
    let server = WebServer::start(addr, recorder).map_err(AppError::Serve)?;
    let _ = writeln!(
        out,
        "Serving the live page on http://{}/ (Ctrl-C to stop)",
        server.local_addr()
    );
    let _ = out.flush();
    let sql_log = SqlLog { color: options.color }.attach_to(notifier)?;
    let app_log = AppLog { color: options.color }.attach_to(notifier)?;
    let result = (|| {
        let db = Db::open(&options.database, notifier.clone())?;
        create_schema(&db)?;
        import(&db, &options.data.display().to_string(), &books)?;
        let mut round = 0;
        while rounds.is_none_or(|n| round < n) {
            let started = Instant::now();
            run_requests(&db, &books)?;
            round += 1;
            std::thread::sleep(SERVE_ROUND.saturating_sub(started.elapsed()));
        }
        Ok::<_, AppError>(())
    })();
    sql_log.detach();
    app_log.detach();
    let _ = subscription.unsubscribe();
    drop(server);
    result
}
