//! [`TraceSink`]: the recorder as a [`Sink`] of notify-export's collector, with tail sampling in
//! front of its trace store done by a collector too.

use std::sync::Arc;
use std::time::Duration;

use notify_core::Event;
use notify_export::{ready, Collector, ExportError, Sink, SinkError, SinkFuture};

use crate::recorder::TraceRecorder;

/// How long a flush or shutdown of the sink waits for the tail-sampling collector behind it (its
/// sink only stores events in memory: it finishes at once unless the process is starved).
const TAIL_WAIT: Duration = Duration::from_secs(10);

/// The live page's [`Sink`]: what [`TraceRecorder::subscribe`] puts behind its collector, as
/// notify-opentelemetry's `SpanSink` is behind the OpenTelemetry exporter's. Make one with
/// [`TraceRecorder::sink`] to put the recorder behind a collector configured otherwise.
///
/// Each batch goes into the recorder's per-name statistics, every event of it. The trace store
/// takes the batch too, unless [`WebOptions::tail_sampling`](crate::WebOptions::tail_sampling)
/// is set: then the sink hands the batch on to a second collector (named `"notify-web-traces"`,
/// its own thread) that tail-samples ([`CollectorBuilder::tail_sampling`](notify_export::CollectorBuilder::tail_sampling))
/// and stores the traces it keeps, so the statistics still see every event while the store
/// keeps the traces tail sampling chose. What that collector drops is counted by cause in its
/// counters ([`WebSubscription::tail_collector`](crate::WebSubscription::tail_collector), and
/// [`RecorderCounts::tail_dropped`](crate::RecorderCounts::tail_dropped) for tail sampling's
/// choices).
///
/// It never refuses a batch. [`Sink::flush`] and [`Sink::shutdown`] flush and shut down the
/// tail-sampling collector (waiting at most 10 s): after a flush of the collector in front, what
/// it had taken is in the store; after its shutdown, tail sampling has decided every trace it held.
///
/// ```
/// use std::time::Duration;
/// use notify_core::{Notifier, Pattern, Payload};
/// use notify_export::Collector;
/// use notify_web::{TraceRecorder, WebOptions};
///
/// let recorder = TraceRecorder::new(WebOptions::new());
/// let collector = Collector::builder("page", recorder.sink()).max_batch_size(64).build();
/// let now = std::time::Instant::now();
/// collector.push(&std::sync::Arc::new(notify_core::Event::new("job.run", now, now, Payload::new())));
/// collector.force_flush(Duration::from_secs(5))?;
/// assert_eq!(recorder.traces()[0].events()[0].name(), "job.run");
/// # Ok::<(), notify_export::ExportError>(())
/// ```
pub struct TraceSink {
    recorder: TraceRecorder,
    /// The collector that tail-samples in front of the trace store, when configured.
    tail: Option<Collector>,
}

impl TraceSink {
    /// The collector that tail-samples in front of the trace store, when
    /// [`WebOptions::tail_sampling`](crate::WebOptions::tail_sampling) is set.
    pub fn tail_collector(&self) -> Option<&Collector> {
        self.tail.as_ref()
    }
}

impl std::fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceSink")
            .field("options", self.recorder.options())
            .field("tail", &self.tail)
            .finish()
    }
}

impl TraceRecorder {
    /// A [`TraceSink`] recording into this recorder. With
    /// [`WebOptions::tail_sampling`](crate::WebOptions::tail_sampling) set, this starts the
    /// tail-sampling collector behind it (a thread, until the sink is shut down or dropped).
    ///
    /// # Panics
    /// When that collector's thread cannot be spawned.
    pub fn sink(&self) -> TraceSink {
        let tail = self.options().tail.clone().map(|config| {
            let collector = Collector::builder("notify-web-traces", Stored(self.clone()))
                .scheduled_delay(Duration::from_millis(100))
                .tail_sampling(config)
                .build();
            self.count_tail_of(&collector);
            collector
        });
        TraceSink {
            recorder: self.clone(),
            tail,
        }
    }
}

impl Sink for TraceSink {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        match &self.tail {
            None => self.recorder.record_batch(batch, true),
            Some(tail) => {
                self.recorder.record_batch(batch, false);
                for event in batch {
                    // Counted by the tail collector when its queue is full or it is shut down.
                    tail.push(event);
                }
            }
        }
        ready(Ok(()))
    }

    fn flush(&mut self) -> SinkFuture<'_> {
        ready(match &self.tail {
            Some(tail) => tail.force_flush(TAIL_WAIT).map(drop).map_err(tail_error),
            None => Ok(()),
        })
    }

    fn shutdown(&mut self) -> SinkFuture<'_> {
        ready(match &self.tail {
            Some(tail) => tail.shutdown(TAIL_WAIT).map(drop).map_err(tail_error),
            None => Ok(()),
        })
    }
}

/// A sink never used (never shut down by a collector) stops its tail-sampling collector: the
/// recorder keeps a handle to it for its counters, which would keep it running.
impl Drop for TraceSink {
    fn drop(&mut self) {
        if let Some(tail) = &self.tail {
            // Already shut down (the usual case: `Sink::shutdown` ran) answers at once.
            let _ = tail.shutdown(TAIL_WAIT);
        }
    }
}

fn tail_error(error: ExportError) -> SinkError {
    SinkError::new(format!("notify-web-traces: {error}"))
}

/// The tail-sampling collector's sink: the traces it keeps go into the store (the statistics
/// took every event in front of it).
struct Stored(TraceRecorder);

impl Sink for Stored {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        self.0.store_batch(batch);
        ready(Ok(()))
    }
}
