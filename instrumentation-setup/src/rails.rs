//! The development format's pieces that need no subscriber: a record's line, colour, the short
//! trace id, reason phrases (used by the development log subscriber and by the output).

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use notify_core::TraceId;
use notify_log::structured::RecordLine;

/// A record (the application's `log::info!`, a tracing event) as a development line:
/// `INFO target: message  key=value  trace 4bf92f35`.
pub(crate) fn write_record(color: bool, record: &RecordLine<'_>, out: &mut Vec<u8>) {
    let style = match record.level {
        log::Level::Error => AnsiColor::Red.on_default().bold(),
        log::Level::Warn => AnsiColor::Yellow.on_default().bold(),
        log::Level::Info => AnsiColor::Green.on_default(),
        log::Level::Debug => AnsiColor::Blue.on_default(),
        log::Level::Trace => AnsiColor::Magenta.on_default(),
    };
    let mut line = format!(
        "{} {}: {}",
        paint(color, style, record.level.as_str()),
        record.target,
        notify_core::escape::Escaped::new(record.message)
    );
    for (key, value) in record.fields.iter() {
        let _ = write!(line, "  {key}={}", value.escaped());
    }
    if let Some(trace) = notify_core::Context::current().trace_id() {
        let _ = write!(line, "  trace {}", short(trace));
    }
    out.extend_from_slice(line.as_bytes());
}

/// The first 8 hex digits of a trace id: enough to tell the requests of a development log apart.
pub(crate) fn short(trace_id: TraceId) -> String {
    let mut hex = trace_id.to_string();
    hex.truncate(8);
    hex
}

pub(crate) fn paint(color: bool, style: Style, text: &str) -> String {
    if color {
        format!("{style}{text}{style:#}")
    } else {
        text.to_owned()
    }
}

pub(crate) fn reason_phrase(code: u16) -> Option<&'static str> {
    Some(match code {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => return None,
    })
}
