//! How tracing spans and events are named as notify events (tracing -> notify).

use std::fmt;
use std::sync::Arc;

use tracing_core::{Level, Metadata};

use crate::BRIDGE_FIELD;

type Mapping = Arc<dyn Fn(&Metadata<'_>) -> Option<String> + Send + Sync>;

/// The names that tracing spans and events get as notify events, following AS::N's
/// `"<method>.<namespace>"` convention with the tracing *target* as the namespace:
///
/// | tracing | notify event name (default) | example |
/// |---|---|---|
/// | span `name` of target `target` | `"<name>.<target>"` | `#[instrument]` on `my_app::db::load` → `"load.my_app::db"` |
/// | event at level `LEVEL` of target `target` | `"<level>.<target>"`, level in lower case | `warn!(target: "sql", …)` → `"warn.sql"` |
///
/// So `Pattern::glob("*.my_app::db")` is everything a module instruments, and
/// `Pattern::glob("error.*")` every error event. Either mapping can be replaced by a function of
/// the [`Metadata`] that returns the name, or `None` to never publish that span or event. The
/// function runs once per tracing callsite (the result is cached), never per span.
///
/// Spans and events made by [`TracingForwarder`](crate::TracingForwarder) (notify -> tracing)
/// are recognised by their [`BRIDGE_FIELD`] and never mapped, so installing both directions
/// delivers nothing twice.
///
/// ```
/// use notify_tracing::EventNames;
///
/// // "query.sqlx" for spans of target "sqlx::query"; no events.
/// let names = EventNames::default()
///     .spans(|meta| Some(format!("{}.{}", meta.name(), meta.target().split("::").next().unwrap_or(""))))
///     .events(|_| None);
/// # let _ = names;
/// ```
#[derive(Clone)]
pub struct EventNames {
    span: Mapping,
    event: Mapping,
}

impl Default for EventNames {
    fn default() -> EventNames {
        EventNames {
            span: Arc::new(|meta| Some(format!("{}.{}", meta.name(), meta.target()))),
            event: Arc::new(|meta| Some(format!("{}.{}", level_method(*meta.level()), meta.target()))),
        }
    }
}

impl EventNames {
    /// Names spans with `mapping` (`None`: never publish spans of that callsite).
    #[must_use]
    pub fn spans(mut self, mapping: impl Fn(&Metadata<'_>) -> Option<String> + Send + Sync + 'static) -> EventNames {
        self.span = Arc::new(mapping);
        self
    }

    /// Names events with `mapping` (`None`: never publish events of that callsite).
    #[must_use]
    pub fn events(mut self, mapping: impl Fn(&Metadata<'_>) -> Option<String> + Send + Sync + 'static) -> EventNames {
        self.event = Arc::new(mapping);
        self
    }

    /// The notify event name of a span or event callsite, `None` when it is not published (also
    /// for what the notify -> tracing bridge made).
    ///
    /// ```
    /// use notify_tracing::EventNames;
    /// tracing::subscriber::with_default(tracing_subscriber::registry(), || {
    ///     let span = tracing::info_span!(target: "my_app::db", "load");
    ///     let meta = span.metadata().unwrap();
    ///     assert_eq!(EventNames::default().name(meta).as_deref(), Some("load.my_app::db"));
    /// });
    /// ```
    pub fn name(&self, meta: &Metadata<'_>) -> Option<String> {
        if meta.fields().field(BRIDGE_FIELD).is_some() {
            return None;
        }
        if meta.is_span() {
            (self.span)(meta)
        } else {
            (self.event)(meta)
        }
    }
}

impl fmt::Debug for EventNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventNames").finish_non_exhaustive()
    }
}

/// `"error"`, `"warn"`, `"info"`, `"debug"` or `"trace"`.
pub(crate) fn level_method(level: Level) -> &'static str {
    match level {
        Level::ERROR => "error",
        Level::WARN => "warn",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        _ => "trace",
    }
}
