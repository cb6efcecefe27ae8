//! The development format: Rails-style lines for people, one per event, coloured on a terminal.
//!
//! ```text
//! Completed 200 OK in 3.1ms (GET /books/{id}) trace 4bf92f35
//!   Book Load (0.2ms)  SELECT title FROM books WHERE id = ?1  [7]
//!   Call GET http://127.0.0.1:41234/prices/7 -> 200 (1.2ms)
//!   load.my_app::db (0.4ms)  table=books
//! INFO catalog: price missing  book=7  trace 4bf92f35
//! ```
//!
//! `request.http` (notify-http's server event) is Rails' `Completed` line; `request.http_client`
//! a call; an event with a `sql` payload key a query (its `name`, the SQL, the `binds`); any other
//! event its name, duration and payload. Lines nested under a request are indented, as Rails
//! indents its SQL lines.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use anstyle::{AnsiColor, Style};
use notify_core::context::EventContext;
use notify_core::subscriber::EventedOptions;
use notify_core::{Event, EventedSubscriber, Notifier, Pattern, Payload, SilenceableSubscriber, Subscriber, Value};
use notify_core::{Subscription, TraceId};

use crate::output::Output;
use crate::rails::{paint, reason_phrase, short};

/// Level of events in the `sql` namespace (Rails logs SQL at debug); every other event is `info`.
pub(crate) fn level_of(name: &str) -> log::Level {
    match namespace(name) {
        Some("sql") => log::Level::Debug,
        _ => log::Level::Info,
    }
}

/// The level of event `name`'s line: a bridged tracing span's own level, else [`level_of`].
fn line_level(output: &Output, name: &str) -> log::Level {
    output.span_levels.get(name).unwrap_or_else(|| level_of(name))
}

/// The target a line of `name` is filtered by: its namespace (`RUST_LOG=sql=debug`).
pub(crate) fn namespace(name: &str) -> Option<&str> {
    name.split_once('.').map(|(_, ns)| ns)
}

/// Rails-style lines for every event.
#[derive(Clone)]
pub(crate) struct DevLog(pub(crate) Arc<Output>);

impl DevLog {
    pub(crate) fn subscribe(&self, notifier: &Notifier) -> Subscription {
        notifier.subscribe(
            Pattern::all(),
            Subscriber::silenceable_with(EventedOptions { duration: true }, self.clone()).named("development log"),
        )
    }

    fn line(&self, name: &str, trace_id: TraceId, nested: bool, duration: Option<Duration>, payload: &Payload) {
        let level = line_level(&self.0, name);
        if !self.0.enabled(namespace(name).unwrap_or(name), level) {
            return;
        }
        let color = self.0.color;
        let ms = duration.map_or_else(|| "?ms".to_owned(), |d| format!("{:.1}ms", d.as_secs_f64() * 1000.0));
        let get = |key: &str| payload.get(key).map(Value::escaped).map(|v| v.to_string());
        let mut line = String::with_capacity(128);
        if nested {
            line.push_str("  ");
        }
        if name == "request.http" {
            let status = get("http.response.status_code").unwrap_or_else(|| "-".into());
            let reason = payload
                .get("http.response.status_code")
                .and_then(Value::as_u64)
                .and_then(|code| u16::try_from(code).ok())
                .and_then(reason_phrase)
                .unwrap_or("");
            let route = get("http.route").or_else(|| get("url.path")).unwrap_or_default();
            let method = get("http.request.method").unwrap_or_default();
            let style = if status.starts_with('5') {
                AnsiColor::Red.on_default().bold()
            } else {
                Style::new().bold()
            };
            let _ = write!(
                line,
                "{} in {ms} ({method} {route}) trace {}",
                paint(color, style, format!("Completed {status} {reason}").trim_end()),
                short(trace_id)
            );
        } else if name == "request.http_client" {
            let _ = write!(
                line,
                "{} {} {} -> {} ({ms})",
                paint(color, AnsiColor::Magenta.on_default().bold(), "Call"),
                get("http.request.method").unwrap_or_default(),
                get("url.full").or_else(|| get("url.path")).unwrap_or_default(),
                get("http.response.status_code").unwrap_or_else(|| "-".into()),
            );
        } else if let Some(sql) = get("sql") {
            let title = get("name").unwrap_or_else(|| "SQL".into());
            let _ = write!(
                line,
                "{}  {}",
                paint(color, AnsiColor::Cyan.on_default().bold(), &format!("{title} ({ms})")),
                paint(color, AnsiColor::Blue.on_default().bold(), &sql)
            );
            if let Some(binds) = get("binds") {
                let _ = write!(line, "  {binds}");
            }
        } else {
            let _ = write!(line, "{}", paint(color, Style::new().bold(), &format!("{name} ({ms})")));
            for (key, value) in payload.iter() {
                let _ = write!(line, " {key}={}", value.escaped());
            }
        }
        if !nested && name != "request.http" {
            let _ = write!(line, " trace {}", short(trace_id));
        }
        self.0.write_line(line.as_bytes());
    }
}

impl EventedSubscriber for DevLog {
    fn start(&self, _name: &str, _event: &EventContext, _payload: &Payload) {}

    fn finish(&self, name: &str, event: &EventContext, payload: &Payload) {
        self.line(
            name,
            event.trace_id(),
            event.parent_id().is_some(),
            event.duration(),
            payload,
        );
    }

    fn publish(&self, event: &Event) {
        self.line(
            event.name(),
            event.trace_id(),
            event.parent_id().is_some(),
            Some(event.duration()),
            event.payload(),
        );
    }
}

impl SilenceableSubscriber for DevLog {
    fn silenced(&self, name: &str) -> bool {
        !self
            .0
            .enabled(namespace(name).unwrap_or(name), line_level(&self.0, name))
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;
    use std::sync::{Arc, Mutex};

    use notify_core::SilenceableSubscriber;
    use tracing_subscriber::filter::Targets;

    use super::DevLog;
    use crate::config::LogFormat;
    use crate::output::{Output, Sink};

    /// The development lines filter a bridged span at its own level: under `warn`, a
    /// `warn_span!`'s line is written and an `info_span!`'s is not; other events stay `INFO`
    /// (`sql` events `DEBUG`).
    #[test]
    fn i47_3_development_lines_filter_bridged_spans_at_their_level() {
        let filter = Targets::from_str("warn,sqlx=debug").unwrap();
        let output = Arc::new(Output::new(
            LogFormat::Dev,
            false,
            filter,
            Sink::Buffer(Arc::new(Mutex::new(Vec::new()))),
        ));
        output.span_levels.record("w.lib", log::Level::Warn);
        output.span_levels.record("i.lib", log::Level::Info);
        output.span_levels.record("t.sqlx", log::Level::Trace);
        output.span_levels.record("d.sqlx", log::Level::Debug);
        let dev = DevLog(output);
        assert!(!dev.silenced("w.lib"));
        assert!(dev.silenced("i.lib"));
        assert!(dev.silenced("t.sqlx"));
        assert!(!dev.silenced("d.sqlx"));
        assert!(dev.silenced("request.http"), "an event of notify's own is INFO");
    }
}
