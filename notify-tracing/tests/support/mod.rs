//! A tracing layer that records the spans and events it sees, for assertions.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// One span as a tracing subscriber saw it.
#[derive(Clone, Debug, Default)]
pub struct SeenSpan {
    pub id: u64,
    pub name: String,
    pub target: String,
    pub level: String,
    /// Field values as text (`Debug` of strings is unquoted).
    pub fields: BTreeMap<String, String>,
    pub parent: Option<u64>,
    pub closed: bool,
    /// Times entered and exited.
    pub entered: usize,
    pub exited: usize,
}

/// One event as a tracing subscriber saw it, with the names of its span scope (root first).
#[derive(Clone, Debug, Default)]
pub struct SeenEvent {
    pub name: String,
    pub target: String,
    pub fields: BTreeMap<String, String>,
    pub scope: Vec<u64>,
}

/// Spans are numbered in creation order (`SeenSpan::id` is that number, not the tracing id, which
/// the registry reuses after a close).
#[derive(Clone, Default)]
pub struct Capture {
    pub spans: Arc<Mutex<Spans>>,
    pub events: Arc<Mutex<Vec<SeenEvent>>>,
}

#[derive(Default)]
pub struct Spans {
    pub all: Vec<SeenSpan>,
    /// tracing id -> number, for open spans.
    pub live: BTreeMap<u64, u64>,
}

impl Spans {
    fn get_mut(&mut self, id: &Id) -> Option<&mut SeenSpan> {
        let n = *self.live.get(&id.into_u64())?;
        self.all.get_mut(n as usize)
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Capture {
    pub fn spans(&self) -> Vec<SeenSpan> {
        self.spans.lock().unwrap().all.clone()
    }

    pub fn events(&self) -> Vec<SeenEvent> {
        self.events.lock().unwrap().clone()
    }

    pub fn span(&self, id: u64) -> SeenSpan {
        self.spans.lock().unwrap().all[id as usize].clone()
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut spans = self.spans.lock().unwrap();
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .and_then(|p| spans.live.get(&p.id().into_u64()).copied());
        let n = spans.all.len() as u64;
        let span = SeenSpan {
            id: n,
            name: meta.name().to_owned(),
            target: meta.target().to_owned(),
            level: meta.level().to_string(),
            fields,
            parent,
            ..SeenSpan::default()
        };
        spans.all.push(span);
        spans.live.insert(id.into_u64(), n);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(span) = self.spans.lock().unwrap().get_mut(id) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let spans = self.spans.lock().unwrap();
        let scope = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .from_root()
                    .filter_map(|s| spans.live.get(&s.id().into_u64()).copied())
                    .collect()
            })
            .unwrap_or_default();
        drop(spans);
        self.events.lock().unwrap().push(SeenEvent {
            name: event.metadata().name().to_owned(),
            target: event.metadata().target().to_owned(),
            fields,
            scope,
        });
    }

    fn on_enter(&self, id: &Id, _ctx: Context<'_, S>) {
        if let Some(span) = self.spans.lock().unwrap().get_mut(id) {
            span.entered += 1;
        }
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        if let Some(span) = self.spans.lock().unwrap().get_mut(id) {
            span.exited += 1;
        }
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        if let Some(span) = spans.get_mut(&id) {
            span.closed = true;
        }
        spans.live.remove(&id.into_u64());
    }
}
