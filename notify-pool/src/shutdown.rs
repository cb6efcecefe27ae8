//! The owner of a pool's threads: shutdown (drain until a deadline, stop, bounded join, the
//! report), the dedicated threads' pools, and the drop of the last handle.

use std::sync::Arc;
use std::time::Instant;

use crate::sync::Mutex;
use crate::unwind::quietly;
use crate::worker::{self, PoolInner};
use crate::{ShutdownReport, WorkerPool};
use notify_core::escape::Escaped;

pub(crate) struct Owner {
    pub(crate) inner: Arc<PoolInner>,
    /// The pools of one thread each that dedicated subscriptions run on.
    pub(crate) dedicated: Mutex<Dedicated>,
    /// Set by the first shutdown; later calls return it.
    pub(crate) report: Mutex<Option<ShutdownReport>>,
    /// The events the shutdown abandoned (they stay counted in the pools; `pending` hides them).
    pub(crate) abandoned: std::sync::atomic::AtomicU64,
}

impl Drop for Owner {
    fn drop(&mut self) {
        if self.report.get_mut().is_some() {
            return;
        }
        let deadline = Instant::now().checked_add(WorkerPool::DROP_DEADLINE);
        if !worker::on_any_worker() {
            let report = self.shutdown(deadline);
            report_dropped(&self.inner.shared.name, &report);
            return;
        }
        // The last clone was dropped on a thread of a notify pool (a callback's closure held it):
        // on one of this pool's own threads, waiting here for the queued events would wait for
        // this very thread; on another pool's, it would hold that pool's worker for up to the
        // drop deadline (and two pools dropping each other would wait for each other), as flush
        // and `Overflow::Block` refuse to. A short-lived thread shuts the pool down instead,
        // delivering what is queued (for at most the drop deadline) and joining the workers
        // (this one included, once it is back in its loop).
        let (pools, retired) = self.pools();
        let handoff = pools.clone();
        let name = self.inner.shared.name.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("{name}-shutdown"))
            .spawn(move || {
                let report = finish(&handoff, deadline, retired);
                report_dropped(&name, &report);
            });
        if spawned.is_err() {
            // No thread for the hand-off: stop without draining (what is queued is abandoned).
            for pool in &pools {
                pool.close();
            }
            for pool in &pools {
                pool.stop();
            }
        }
    }
}

/// The dedicated threads' pools, and what the ended ones left.
#[derive(Default)]
pub(crate) struct Dedicated {
    /// Running (or ending, not yet joined) dedicated pools.
    pub(crate) pools: Vec<Arc<PoolInner>>,
    /// Dedicated threads started so far (names them).
    pub(crate) started: u64,
    /// Callbacks delivered by dedicated threads that ended and were joined.
    pub(crate) retired_delivered: u64,
}

impl Dedicated {
    /// Joins and forgets the dedicated pools whose subscription was closed and whose thread ended,
    /// keeping their delivered count.
    pub(crate) fn reap(&mut self) {
        let mut retired = 0;
        self.pools.retain(|pool| {
            if pool.retired() {
                pool.join(None);
                retired += pool.delivered();
                false
            } else {
                true
            }
        });
        self.retired_delivered += retired;
    }
}

/// Shuts `pools` down: refuses new events, drains until `deadline`, stops the threads, and joins
/// them, waiting at most [`WorkerPool::STOP_GRACE`] more (when there is a deadline) for the
/// callbacks in progress; threads still in a callback then are detached and named in the report.
/// `retired_delivered`: callbacks delivered by dedicated threads that already ended.
pub(crate) fn finish(pools: &[Arc<PoolInner>], deadline: Option<Instant>, retired_delivered: u64) -> ShutdownReport {
    for pool in pools {
        pool.close();
    }
    let mut drained = true;
    for pool in pools {
        drained &= pool.drain(deadline);
    }
    for pool in pools {
        pool.stop();
    }
    let until = deadline.map(|_| Instant::now() + WorkerPool::STOP_GRACE);
    let mut detached = Vec::new();
    for pool in pools {
        detached.extend(pool.join(until));
    }
    // Publishers that entered before the close finish their publish (refused, dropped or
    // abandoned), so the report counts each of their events exactly once.
    for pool in pools {
        pool.wait_publishers(until);
    }
    ShutdownReport {
        delivered: retired_delivered + pools.iter().map(|p| p.delivered()).sum::<u64>(),
        abandoned: pools.iter().map(|p| p.pending()).sum(),
        drained,
        detached,
    }
}

impl Owner {
    /// The shared pool and the live dedicated ones (ended dedicated threads are joined and
    /// forgotten first), with the callbacks the ended ones delivered.
    pub(crate) fn pools(&self) -> (Vec<Arc<PoolInner>>, u64) {
        let mut dedicated = self.dedicated.lock();
        dedicated.reap();
        let mut pools = vec![self.inner.clone()];
        pools.extend(dedicated.pools.iter().cloned());
        (pools, dedicated.retired_delivered)
    }

    pub(crate) fn shutdown(&self, deadline: Option<Instant>) -> ShutdownReport {
        // This thread's publishing batch holds the door shutdown waits for: it ends first.
        crate::publish::end();
        let mut report = self.report.lock();
        if let Some(done) = &*report {
            return done.clone();
        }
        // Close first, so no dedicated subscription can be added meanwhile from another thread.
        self.inner.close();
        let (pools, retired) = self.pools();
        let done = finish(&pools, deadline, retired);
        self.abandoned
            .store(done.abandoned, std::sync::atomic::Ordering::Release);
        *report = Some(done.clone());
        done
    }
}

/// Writes to stderr what the drop of a pool's last clone abandoned, if anything.
pub(crate) fn report_dropped(name: &str, report: &ShutdownReport) {
    if report.abandoned == 0 && report.detached.is_empty() {
        return;
    }
    quietly(|| {
        eprintln!(
            "notify-pool: worker pool `{}` dropped: {} queued events abandoned after {:?}{}",
            Escaped::new(name),
            report.abandoned,
            WorkerPool::DROP_DEADLINE,
            if report.detached.is_empty() {
                String::new()
            } else {
                let names: Vec<String> = report.detached.iter().map(|n| Escaped::new(n).to_string()).collect();
                format!("; threads still in a callback, detached: {}", names.join(", "))
            }
        );
    });
}
