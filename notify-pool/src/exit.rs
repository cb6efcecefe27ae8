//! What happens to queued events when the process ends: [`FlushGuard`] delivers them when `main`
//! returns, and what is lost anyway is counted and written to stderr (at exit, or when the last
//! clone of a pool is dropped with events it could not deliver in time).

use std::sync::{Arc, Once, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::shutdown::Owner;
use crate::sync::Mutex;
use crate::unwind::quietly;
use crate::{worker, WorkerPool};
use notify_core::escape::Escaped;

/// Flushes its pool when dropped, waiting at most its timeout: hold one in `main` so that the
/// events queued when `main` returns are delivered, as `tracing-appender`'s `WorkerGuard` does
/// ([`WorkerPool::flush_guard`]). When the time runs out, the count of events still pending is
/// written to stderr. Dropped on a thread of any notify pool, it does nothing (a flush there
/// returns at once, see [`WorkerPool::flush`]).
#[must_use = "the guard flushes when dropped: bind it (`let _guard = ...`), `let _ = ...` drops it at once"]
#[derive(Debug)]
pub struct FlushGuard {
    pool: WorkerPool,
    timeout: Duration,
}

impl FlushGuard {
    pub(crate) fn new(pool: WorkerPool, timeout: Duration) -> FlushGuard {
        FlushGuard { pool, timeout }
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        let shared = &self.pool.owner.inner.shared;
        if worker::on_any_worker() || self.pool.flush_timeout(self.timeout) {
            return;
        }
        let pending = self.pool.pending();
        quietly(|| {
            eprintln!(
                "notify-pool: worker pool `{}`: {pending} events still pending after the flush guard waited {:?}; \
                 they are delivered only if the process lives on",
                Escaped::new(&shared.name),
                self.timeout
            );
        });
    }
}

/// The pools alive in this process, for the report at exit.
static LIVE: OnceLock<Mutex<Vec<Weak<Owner>>>> = OnceLock::new();

/// Registers `owner` for the report at exit (and, on the first call, the report itself).
pub(crate) fn watch(owner: &Arc<Owner>) {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(register_at_exit);
    let mut live = LIVE.get_or_init(|| Mutex::new(Vec::new())).lock();
    live.retain(|pool| pool.strong_count() > 0);
    live.push(Arc::downgrade(owner));
}

/// How long the report at exit waits for the callbacks in progress to return (100 ms, as
/// [`WorkerPool::STOP_GRACE`]).
const EXIT_GRACE: Duration = WorkerPool::STOP_GRACE;

/// At exit: each live pool that was not shut down is stopped (as [`WorkerPool::shutdown`] does
/// past its deadline: no new event is delivered, each worker ends after the callback it is
/// running, waited for at most [`EXIT_GRACE`]), then what will never be delivered is counted and
/// written to stderr (nothing when nothing is lost). Stopping first makes the count exact: the
/// workers no longer deliver events behind the report's back while the process ends (it said
/// "5000 never delivered" while some were still being written). A callback still running then
/// received its event: it is not counted as never delivered, and the report says how many were
/// running. Runs from the C library's `exit`, after `main` returned; never unwinds.
extern "C" fn at_exit() {
    quietly(|| {
        let Some(live) = LIVE.get() else { return };
        let Some(live) = live.try_lock_until(Instant::now() + Duration::from_millis(100)) else {
            return;
        };
        for owner in live.iter().filter_map(Weak::upgrade) {
            if owner.inner.state() != worker::RUNNING {
                continue; // shut down: its report said what was abandoned
            }
            let mut pools = vec![owner.inner.clone()];
            if let Some(dedicated) = owner
                .dedicated
                .try_lock_until(Instant::now() + Duration::from_millis(100))
            {
                pools.extend(dedicated.pools.iter().cloned());
            }
            for pool in &pools {
                pool.close();
                pool.stop();
            }
            let until = Instant::now() + EXIT_GRACE;
            let (mut lost, mut calling) = (0, 0);
            for pool in &pools {
                let (l, c) = pool.lost_at_exit(until);
                lost += l;
                calling += c;
            }
            if lost > 0 || calling > 0 {
                let running = match calling {
                    0 => String::new(),
                    1 => " (1 callback was still running)".to_owned(),
                    n => format!(" ({n} callbacks were still running)"),
                };
                eprintln!(
                    "notify-pool: worker pool `{}`: {lost} queued events were never delivered: the process \
                     exited first (hold WorkerPool::flush_guard in main to deliver them){running}",
                    Escaped::new(&owner.inner.shared.name)
                );
            }
        }
    });
}

#[cfg(any(unix, windows))]
fn register_at_exit() {
    extern "C" {
        fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
    }
    // SAFETY: `atexit` is the C standard library's, linked into every Rust program on these
    // targets; it only stores the pointer of `at_exit`, a function that lives as long as the
    // program, takes no argument and never unwinds (it catches every panic). A failure (the
    // table is full) only means no report at exit. Tested by tests/async_exit.rs.
    unsafe {
        atexit(at_exit);
    }
}

#[cfg(not(any(unix, windows)))]
fn register_at_exit() {}
