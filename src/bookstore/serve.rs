//! `--serve [ADDR]`: the bookstore as a live demo of notify-web's page.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use notify_core::{Notifier, Pattern};
use notify_web::{TraceRecorder, WebOptions, WebServer};

use super::{create_schema, import, load_books, run_requests, AppError, Db, Logs, Options};

/// Where `--serve` without an address listens.
pub const DEFAULT_SERVE_ADDR: &str = "127.0.0.1:7878";

/// How often the serve loop runs the request mix (17 requests): a bounded rate of about 17
/// requests per second.
pub const SERVE_ROUND: Duration = Duration::from_secs(1);

/// How long stopping waits for the page's collector to record what is queued.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// How often a sleeping serve loop looks at its stop flag.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Imports the data file as [`run`](super::run) does, serves notify-web's page for every event
/// on `addr`, prints `Serving the live page on http://ADDR/ (Ctrl-C to stop)` to `out`, then runs
/// the request mix once per [`SERVE_ROUND`] until `stop` is set (looked at between rounds and
/// every 100 ms while waiting for the next one) or, when given, `rounds` rounds ran; then prints
/// `Stopped after N rounds of requests` and returns, the server and the subscribers gone.
///
/// # Errors
/// [`AppError::Serve`] when `addr` cannot be bound; what [`run`](super::run) returns otherwise.
pub fn serve(
    options: &Options,
    addr: SocketAddr,
    notifier: &Notifier,
    out: &mut dyn Write,
    rounds: Option<u64>,
    stop: &AtomicBool,
) -> Result<(), AppError> {
    let books = load_books(&options.data)?;
    let recorder = TraceRecorder::new(WebOptions::new().traces(options.traces));
    let live = recorder.subscribe(notifier, Pattern::all());
    let server = WebServer::start(addr, recorder).map_err(AppError::Serve)?;
    let _ = writeln!(
        out,
        "Serving the live page on http://{}/ (Ctrl-C to stop)",
        server.local_addr()
    );
    let _ = out.flush();
    let logs = Logs::attach(options.log_format, options.color, notifier)?;
    let result = (|| {
        let db = Db::open(&options.database, notifier.clone())?;
        create_schema(&db)?;
        import(&db, &options.data.display().to_string(), &books)?;
        let stopped = || stop.load(Ordering::Relaxed);
        let mut round = 0;
        while rounds.is_none_or(|n| round < n) && !stopped() {
            let next = Instant::now() + SERVE_ROUND;
            run_requests(&db, &books)?;
            round += 1;
            while !stopped() {
                let left = next.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(STOP_CHECK));
            }
        }
        Ok::<_, AppError>(round)
    })();
    logs.detach();
    // Records what is queued, then stops the collector's thread.
    let _ = live.shutdown(SHUTDOWN_WAIT);
    drop(server);
    let rounds = result?;
    let _ = writeln!(out, "Stopped after {rounds} rounds of requests");
    Ok(())
}
