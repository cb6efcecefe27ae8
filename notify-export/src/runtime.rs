//! [`ExportRuntime`]: the tokio runtime a collector drives its sink's futures on.

use std::future::Future;
use std::time::Duration;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// Where a [`Collector`](crate::Collector) runs its [`Sink`](crate::Sink)'s futures
/// ([`CollectorBuilder::runtime`](crate::CollectorBuilder::runtime)). Export always happens on the
/// collector's own thread; this says which tokio runtime's drivers (I/O, timers) serve it there.
///
/// * [`ExportRuntime::Handle`]: the application's runtime. The collector's thread runs each
///   future with [`Handle::block_on`]; the runtime's own threads drive its I/O. This is how an
///   exporter whose client was built in the application's runtime (opentelemetry-otlp over
///   tonic, reqwest, async-nats) works: its connections belong to that runtime. With a
///   current-thread runtime, its I/O only progresses while the runtime's thread awaits: call a
///   blocking [`force_flush`](crate::Collector::force_flush) or
///   [`shutdown`](crate::Collector::shutdown) from `spawn_blocking` there, not on the runtime's
///   thread itself.
/// * [`ExportRuntime::Owned`]: a runtime handed over to the collector, which runs each future with
///   [`Runtime::block_on`] on its thread (a current-thread runtime is then driven by that thread
///   alone). Build a client that must be created inside a runtime (tonic's channels are) within
///   `runtime.enter()`, then hand the runtime over.
/// * [`ExportRuntime::Auto`] (the default): the runtime of the thread that builds the collector
///   when it runs inside one ([`Handle::try_current`]), else a current-thread runtime with all
///   the drivers tokio was built with, owned by the collector: plain threads and tokio services
///   alike export through asynchronous clients.
#[derive(Debug, Default)]
#[non_exhaustive]
pub enum ExportRuntime {
    /// [`Handle::try_current`] at build time, else a current-thread runtime of the collector's own.
    #[default]
    Auto,
    /// The application's runtime.
    Handle(Handle),
    /// A runtime the collector owns (and drops when its thread ends). Its thread drives it while
    /// it waits for work too (when the runtime has its time driver), so that connections kept on
    /// it answer keep-alive pings and reconnect while nothing is exported.
    Owned(Runtime),
}

impl From<Handle> for ExportRuntime {
    fn from(handle: Handle) -> ExportRuntime {
        ExportRuntime::Handle(handle)
    }
}

impl From<Runtime> for ExportRuntime {
    fn from(runtime: Runtime) -> ExportRuntime {
        ExportRuntime::Owned(runtime)
    }
}

/// The runtime a collector's thread drives futures on, decided at build time.
pub(crate) enum Driver {
    Handle(Handle),
    Owned(Runtime),
}

impl Driver {
    /// Resolves `runtime` on the thread that builds the collector.
    ///
    /// # Panics
    /// When a runtime of the collector's own cannot be built (tokio's `Builder::build` failed:
    /// the process is out of file descriptors or threads).
    pub(crate) fn new(runtime: ExportRuntime) -> Driver {
        match runtime {
            ExportRuntime::Handle(handle) => Driver::Handle(handle),
            ExportRuntime::Owned(runtime) => Driver::Owned(runtime),
            ExportRuntime::Auto => match Handle::try_current() {
                Ok(handle) => Driver::Handle(handle),
                Err(_) => Driver::Owned(
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .thread_name("notify-export")
                        // Its blocking pool (name resolution) is the collector's too: what a
                        // client logs there is not bridged back into notify either.
                        .on_thread_start(notify_core::suppression::suppress_telemetry_on_this_thread)
                        .build()
                        .expect("notify-export: a current-thread tokio runtime for the collector"),
                ),
            },
        }
    }

    /// Runs `future` to completion on the collector's thread, with this runtime's drivers.
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        match self {
            Driver::Handle(handle) => handle.block_on(future),
            Driver::Owned(runtime) => runtime.block_on(future),
        }
    }

    /// Waits on the collector's thread until `wake` is notified or `timeout` passed. An owned
    /// runtime is driven meanwhile, so that what the sink's clients keep on it (a connection's
    /// keep-alive pings, a reconnection) goes on while the collector has nothing to export; the
    /// application's runtime runs on its own threads, so the thread just parks. `false` when the
    /// owned runtime has no time driver (the caller parks the thread instead from then on).
    pub(crate) fn idle(&self, wake: &tokio::sync::Notify, timeout: Duration) -> bool {
        let Driver::Owned(runtime) = self else {
            return false;
        };
        // A runtime given without `enable_time` panics at the timer: caught, and not tried again.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.block_on(async {
                let _ = tokio::time::timeout(timeout, wake.notified()).await;
            })
        }))
        .map_err(notify_core::failure::drop_panic_payload)
        .is_ok()
    }

    /// Enters this runtime's context on the calling thread (the collector's): a sink may then
    /// create tokio resources or spawn tasks while it makes its future, before it is polled.
    pub(crate) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        match self {
            Driver::Handle(handle) => handle.enter(),
            Driver::Owned(runtime) => runtime.enter(),
        }
    }

    /// What the collector's `Debug` shows.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Driver::Handle(handle) => match handle.runtime_flavor() {
                RuntimeFlavor::CurrentThread => "application's current-thread runtime",
                _ => "application's runtime",
            },
            Driver::Owned(_) => "own runtime",
        }
    }
}
