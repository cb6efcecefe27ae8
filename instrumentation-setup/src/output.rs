//! One stream of lines: events' lines, the application's `log` records and tracing events, all in
//! one format, filtered by one `RUST_LOG`, written to one sink.

use std::io::Write;
use std::sync::{Arc, Mutex};

use notify_core::Payload;
use notify_log::structured::{self, Format, Keys, RecordLine};
use tracing_subscriber::filter::{LevelFilter, Targets};

use crate::batched::{Batched, Stream};
use crate::config::LogFormat;
use crate::levels::SpanLevels;

/// Where lines go: standard error (development) or standard output (production), or a buffer
/// (tests).
pub(crate) enum Sink {
    Stdout,
    Stderr,
    Buffer(Arc<Mutex<Vec<u8>>>),
}

/// The shared writer of every line.
pub(crate) struct Output {
    pub(crate) format: LogFormat,
    pub(crate) color: bool,
    pub(crate) filter: Targets,
    /// The levels of the tracing bridge's spans, by event name.
    pub(crate) span_levels: SpanLevels,
    sink: Sink,
    /// Standard output's or error's lines in batches; `None` for a buffer, or when the writer
    /// thread could not start (lines are then written one by one).
    batched: Option<Batched>,
    keys: Keys,
}

impl Output {
    pub(crate) fn new(format: LogFormat, color: bool, filter: Targets, sink: Sink) -> Output {
        let batched = match sink {
            Sink::Stdout => Batched::start(Stream::Stdout).ok(),
            Sink::Stderr => Batched::start(Stream::Stderr).ok(),
            Sink::Buffer(_) => None,
        };
        Output {
            format,
            color,
            filter,
            span_levels: SpanLevels::default(),
            sink,
            batched,
            keys: Keys::default(),
        }
    }

    /// Whether `RUST_LOG` keeps a line of `level` for `target`.
    #[inline]
    pub(crate) fn enabled(&self, target: &str, level: log::Level) -> bool {
        self.filter.would_enable(target, &tracing_level(level))
    }

    /// Writes `line` and a newline: appended to the batch the writer thread writes next, or, once
    /// the guard is dropped, in one write of its own. Either way lines from several threads never
    /// mix.
    pub(crate) fn write_line(&self, line: &[u8]) {
        if let Some(batched) = &self.batched {
            if batched.push(line) {
                return;
            }
        }
        let mut buffer = Vec::with_capacity(line.len() + 1);
        buffer.extend_from_slice(line);
        buffer.push(b'\n');
        // A closed or full sink loses the line; a logger never takes the host down.
        let _ = match &self.sink {
            Sink::Stdout => std::io::stdout().lock().write_all(&buffer),
            Sink::Stderr => std::io::stderr().lock().write_all(&buffer),
            Sink::Buffer(b) => {
                b.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&buffer);
                Ok(())
            }
        };
    }

    /// Lines dropped because standard output did not keep up.
    pub(crate) fn lines_dropped(&self) -> u64 {
        self.batched.as_ref().map_or(0, Batched::dropped)
    }

    /// Writes the buffered lines and stops the writer thread; later lines are written one by one.
    pub(crate) fn close(&self) {
        if let Some(batched) = &self.batched {
            batched.close();
        }
        self.flush();
    }

    /// Writes a record that is not an event (a `log` record, a tracing event) in this output's
    /// format, with the current trace and span ids.
    pub(crate) fn write_record(&self, record: &RecordLine<'_>) {
        let mut line = Vec::with_capacity(256);
        match self.format {
            LogFormat::Json => structured::write_record(Format::Json, &self.keys, record, &mut line),
            LogFormat::Logfmt => structured::write_record(Format::Logfmt, &self.keys, record, &mut line),
            LogFormat::Dev => crate::rails::write_record(self.color, record, &mut line),
        }
        self.write_line(&line);
    }

    pub(crate) fn flush(&self) {
        if let Some(batched) = &self.batched {
            batched.flush();
        }
        let _ = match &self.sink {
            Sink::Stdout => std::io::stdout().flush(),
            Sink::Stderr => std::io::stderr().flush(),
            Sink::Buffer(_) => Ok(()),
        };
    }

    /// The most verbose level any directive keeps (`log`'s max level).
    pub(crate) fn max_level(&self) -> log::LevelFilter {
        let most = self
            .filter
            .iter()
            .map(|(_, level)| level)
            .chain(self.filter.default_level())
            .max()
            .unwrap_or(LevelFilter::OFF);
        log_level_filter(most)
    }
}

fn log_level_filter(level: LevelFilter) -> log::LevelFilter {
    if level == LevelFilter::OFF {
        log::LevelFilter::Off
    } else if level == LevelFilter::ERROR {
        log::LevelFilter::Error
    } else if level == LevelFilter::WARN {
        log::LevelFilter::Warn
    } else if level == LevelFilter::INFO {
        log::LevelFilter::Info
    } else if level == LevelFilter::DEBUG {
        log::LevelFilter::Debug
    } else {
        log::LevelFilter::Trace
    }
}

/// A tracing level as `log`'s.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) fn log_level(level: tracing_core::Level) -> log::Level {
    match level {
        tracing_core::Level::ERROR => log::Level::Error,
        tracing_core::Level::WARN => log::Level::Warn,
        tracing_core::Level::INFO => log::Level::Info,
        tracing_core::Level::DEBUG => log::Level::Debug,
        _ => log::Level::Trace,
    }
}

pub(crate) fn tracing_level(level: log::Level) -> tracing_core::Level {
    match level {
        log::Level::Error => tracing_core::Level::ERROR,
        log::Level::Warn => tracing_core::Level::WARN,
        log::Level::Info => tracing_core::Level::INFO,
        log::Level::Debug => tracing_core::Level::DEBUG,
        log::Level::Trace => tracing_core::Level::TRACE,
    }
}

/// The `log` logger the setup installs: an event's finished line (notify-log's
/// [`is_event_line`](notify_log::structured::is_event_line)) is written as it is, any other record
/// (the application's own `log::info!`) is formatted as the events are.
pub(crate) struct Lines(pub(crate) Arc<Output>);

impl log::Log for Lines {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.0.enabled(metadata.target(), metadata.level())
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.0.enabled(record.target(), record.level()) {
            return;
        }
        if structured::is_event_line() {
            // Already a finished line; `format_args!("{line}")` has it as one static piece.
            match record.args().as_str() {
                Some(line) => self.0.write_line(line.as_bytes()),
                None => self.0.write_line(record.args().to_string().as_bytes()),
            }
            return;
        }
        let message = match record.args().as_str() {
            Some(text) => std::borrow::Cow::Borrowed(text),
            None => std::borrow::Cow::Owned(record.args().to_string()),
        };
        let fields = Payload::new();
        self.0.write_record(&RecordLine {
            level: record.level(),
            target: record.target(),
            message: &message,
            fields: &fields,
            location: record.file().zip(record.line()),
        });
    }

    fn flush(&self) {
        self.0.flush();
    }
}
