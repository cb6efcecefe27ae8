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
/// written to stderr. Dropped on one of the pool's own threads, it does nothing (a flush there
/// would wait for itself).
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
        if worker::on_worker_of(shared.family) || self.pool.flush_timeout(self.timeout) {
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

/// At exit: the events still pending on each live pool, written to stderr (nothing when none).
/// Runs from the C library's `exit`, after `main` returned; never unwinds.
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
            let mut pending = owner.inner.pending();
            if let Some(dedicated) = owner
                .dedicated
                .try_lock_until(Instant::now() + Duration::from_millis(100))
            {
                pending += dedicated.pools.iter().map(|pool| pool.pending()).sum::<u64>();
            }
            if pending > 0 {
                eprintln!(
                    "notify-pool: worker pool `{}`: {pending} queued events were never delivered: the process \
                     exited first (hold WorkerPool::flush_guard in main to deliver them)",
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
