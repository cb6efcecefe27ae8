//! tracing into the one stream: spans of tracing-instrumented libraries become notify events
//! (notify-tracing's [`NotifyLayer`]), nested under the current request and carrying its trace
//! id; tracing events become lines in the stream's format.

use std::fmt::Write as _;
use std::sync::Arc;

use notify_core::Payload;
use notify_log::structured::RecordLine;
use notify_tracing::{EventNames, NotifyLayer};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

use crate::output::Output;
use crate::SetupError;

/// Installs the global tracing subscriber: a registry with notify-tracing's layer (spans only;
/// events are lines) and the line writer, both filtered by `RUST_LOG`. Each span's event name is
/// recorded with the span's tracing level, so its line is written at that level
/// ([`SpanLevels`](crate::levels::SpanLevels)).
pub(crate) fn install(output: &Arc<Output>) -> Result<(), SetupError> {
    let defaults = EventNames::default();
    let levels = output.span_levels.clone();
    let names = EventNames::default()
        .spans(move |meta| {
            let name = defaults.name(meta)?;
            levels.record(&name, crate::output::log_level(*meta.level()));
            Some(name)
        })
        .events(|_| None);
    let spans = NotifyLayer::new().names(names).with_filter(output.filter.clone());
    let lines = EventLines(output.clone()).with_filter(output.filter.clone());
    let subscriber = tracing_subscriber::registry().with(spans).with(lines);
    tracing::subscriber::set_global_default(subscriber).map_err(|_| SetupError::AlreadySet("tracing subscriber"))
}

/// Writes each tracing event as a record line.
struct EventLines(Arc<Output>);

impl<S: Subscriber> Layer<S> for EventLines {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut fields = FieldsVisitor::default();
        event.record(&mut fields);
        self.0.write_record(&RecordLine {
            level: crate::output::log_level(*meta.level()),
            target: meta.target(),
            message: &fields.message,
            fields: &fields.payload,
            location: meta.file().zip(meta.line()),
        });
    }
}

/// A tracing event's `message` and its other fields as a payload.
#[derive(Default)]
struct FieldsVisitor {
    message: String,
    payload: Payload,
}

impl Visit for FieldsVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.payload.insert(field.name(), value.to_owned());
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.payload.insert(field.name(), value);
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.payload.insert(field.name(), value);
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.payload.insert(field.name(), value);
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.payload.insert(field.name(), value);
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.payload.insert(field.name(), format!("{value:?}"));
        }
    }
}
