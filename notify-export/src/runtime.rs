//! [`ExportRuntime`]: the tokio runtime a collector drives its sink's futures on.

use std::future::Future;

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
    /// A runtime the collector owns (and drops when its thread ends).
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
