//! Lines written in batches: a publishing thread appends its line to one shared buffer, and a
//! writer thread hands the buffer to standard output or error in one `write(2)` every
//! [`FLUSH_INTERVAL`] (sooner once [`WAKE_AT`] bytes wait), so a request's lines cost a copy, not
//! a system call each. The same trade as tracing-appender's `non_blocking` writer, without its
//! wake-up per line: lines still buffered when the process aborts are lost; a graceful stop
//! (dropping the setup's guard, or `log::logger().flush()`) writes them all.
//!
//! The buffer is bounded ([`CAPACITY`]): a line that does not fit, because the destination does
//! not keep up, is dropped and counted ([`Batched::dropped`]), and the count is written as a line
//! of its own once the buffer has room again, so a loss shows in the stream itself.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a line may wait in the buffer.
pub(crate) const FLUSH_INTERVAL: Duration = Duration::from_millis(50);
/// Buffered bytes that wake the writer before the interval ends.
pub(crate) const WAKE_AT: usize = 64 * 1024;
/// Buffered bytes beyond which a line is dropped (and counted).
pub(crate) const CAPACITY: usize = 8 * 1024 * 1024;

/// Where a batch goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn write(self, bytes: &[u8]) {
        // A closed or full stream loses the lines; a logger never takes the host down.
        let _ = match self {
            Stream::Stdout => std::io::stdout().lock().write_all(bytes),
            Stream::Stderr => std::io::stderr().lock().write_all(bytes),
        };
    }
}

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// Lines dropped since the last report line.
    unreported: u64,
    closed: bool,
}

struct Shared {
    stream: Stream,
    pending: Mutex<Pending>,
    wake: Condvar,
    /// Held while a batch is taken and written, so batches reach the stream in order whether
    /// the writer thread or a flush writes them.
    writing: Mutex<()>,
    dropped: std::sync::atomic::AtomicU64,
}

/// The shared buffer and its writer thread.
pub(crate) struct Batched {
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Batched {
    /// Starts the writer thread (`notify-lines`).
    ///
    /// # Errors
    /// The thread could not be spawned.
    pub(crate) fn start(stream: Stream) -> std::io::Result<Batched> {
        let shared = Arc::new(Shared {
            stream,
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            writing: Mutex::new(()),
            dropped: Default::default(),
        });
        let writer = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("notify-lines".into())
                .spawn(move || write_batches(&shared))?
        };
        Ok(Batched {
            shared,
            writer: Mutex::new(Some(writer)),
        })
    }

    /// Appends `line` and a newline; returns false, writing nothing, once [`close`](Self::close)d.
    pub(crate) fn push(&self, line: &[u8]) -> bool {
        let mut pending = lock(&self.shared.pending);
        if pending.closed {
            return false;
        }
        if pending.bytes.len() + line.len() + 1 > CAPACITY {
            pending.unreported += 1;
            self.shared.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return true;
        }
        if pending.unreported > 0 {
            let report = format!(
                "notify-lines: {} lines dropped: standard output did not keep up",
                pending.unreported
            );
            pending.bytes.extend_from_slice(report.as_bytes());
            pending.bytes.push(b'\n');
            pending.unreported = 0;
        }
        pending.bytes.extend_from_slice(line);
        pending.bytes.push(b'\n');
        if pending.bytes.len() >= WAKE_AT {
            self.shared.wake.notify_one();
        }
        true
    }

    /// Writes every buffered line now.
    pub(crate) fn flush(&self) {
        write_pending(&self.shared);
    }

    /// Lines dropped because the buffer was full, since the start.
    pub(crate) fn dropped(&self) -> u64 {
        self.shared.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes what is buffered and stops the writer thread; later lines are refused by
    /// [`push`](Self::push) (the caller writes them directly).
    pub(crate) fn close(&self) {
        lock(&self.shared.pending).closed = true;
        self.shared.wake.notify_one();
        if let Some(writer) = lock(&self.writer).take() {
            let _ = writer.join();
        }
        write_pending(&self.shared);
    }
}

impl Drop for Batched {
    fn drop(&mut self) {
        self.close();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves the buffer consistent (appends are whole lines).
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn write_batches(shared: &Shared) {
    loop {
        {
            let pending = lock(&shared.pending);
            let (pending, _) = shared
                .wake
                .wait_timeout_while(pending, FLUSH_INTERVAL, |p| !p.closed && p.bytes.len() < WAKE_AT)
                .unwrap_or_else(|e| e.into_inner());
            if pending.closed {
                return;
            }
        }
        write_pending(shared);
    }
}

/// Takes the buffer and writes it in one call, keeping batches in order.
fn write_pending(shared: &Shared) {
    let _writing = lock(&shared.writing);
    let batch = std::mem::take(&mut lock(&shared.pending).bytes);
    if !batch.is_empty() {
        shared.stream.write(&batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_beyond_the_capacity_are_dropped_counted_and_reported() {
        let batched = Batched::start(Stream::Stderr).unwrap();
        // Hold the writer off, so nothing drains while the buffer fills.
        let writing = lock(&batched.shared.writing);
        let line = vec![b'x'; 1023];
        let fits = CAPACITY / 1024;
        for _ in 0..fits + 5 {
            assert!(batched.push(&line));
        }
        assert_eq!(batched.dropped(), 5);
        assert_eq!(lock(&batched.shared.pending).bytes.len(), fits * 1024);
        // Room again: the next line is preceded by the report of the five.
        std::mem::take(&mut lock(&batched.shared.pending).bytes);
        assert!(batched.push(b"after"));
        let text = String::from_utf8(lock(&batched.shared.pending).bytes.clone()).unwrap();
        assert_eq!(
            text,
            "notify-lines: 5 lines dropped: standard output did not keep up\nafter\n"
        );
        lock(&batched.shared.pending).bytes.clear();
        drop(writing);
        batched.close();
        assert!(!batched.push(b"closed"), "a closed buffer refuses lines");
        assert_eq!(batched.dropped(), 5);
    }
}
