//! Redaction end to end (issue 17, item 4): a secret planted in a payload, a macro field, an
//! error recorded by `err` and values recorded during the body is absent from everything
//! OpenTelemetry receives — every span's name, attributes, events (with their attributes),
//! links, status and resource — through `OpenTelemetryExporter`, and through the other route
//! (notify -> tracing bridge -> tracing-opentelemetry). opentelemetry_sdk's in-memory exporter
//! holds what would be exported. (notify-opentelemetry exports spans only: there is no metric
//! path to scan.)
//!
//! Its own test binary: it sets the global notifier's policy.

#[path = "../../notify-core/tests/support/secrets.rs"]
mod secrets;

use notify_core::Pattern;
use notify_opentelemetry::OpenTelemetryExporter;
use notify_tracing::TracingForwarder;
use opentelemetry::trace::{Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::prelude::*;

/// Every piece of text a span carries, one string per piece, the whole `Debug` last.
fn texts(span: &SpanData) -> Vec<String> {
    let mut out = vec![span.name.to_string()];
    for kv in &span.attributes {
        out.push(format!("{}={}", kv.key, kv.value));
    }
    for event in span.events.iter() {
        out.push(event.name.to_string());
        for kv in &event.attributes {
            out.push(format!("{}={}", kv.key, kv.value));
        }
    }
    for link in span.links.iter() {
        for kv in &link.attributes {
            out.push(format!("{}={}", kv.key, kv.value));
        }
    }
    if let Status::Error { description } = &span.status {
        out.push(description.to_string());
    }
    out.push(format!("{span:?}"));
    out
}

fn assert_spans_clean(what: &str, spans: &[SpanData]) {
    for span in spans {
        for text in texts(span) {
            secrets::assert_clean(what, text.as_bytes());
        }
    }
    let all = spans.iter().map(|s| format!("{s:?}")).collect::<String>();
    secrets::assert_redacted(what, all.as_bytes());
}

#[test]
fn secrets_are_absent_from_the_spans_the_exporter_makes() {
    let _serial = secrets::serial();
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let subscription = exporter.subscribe(secrets::global(), Pattern::glob("*.secrets").unwrap());
    secrets::plant();
    subscription.unsubscribe().unwrap();
    exporter.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, secrets::EVENTS);
    assert_spans_clean("the spans of OpenTelemetryExporter", &spans);

    let hash = secrets::hashed_secret();
    let attribute = |span: &SpanData, key: &str| {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(attribute(&spans[0], "password"), Some(hash.clone()));
    assert_eq!(attribute(&spans[0], "user").as_deref(), Some("ann"));
    assert_eq!(attribute(&spans[1], "api_token"), Some(hash.clone()));
    assert_eq!(attribute(&spans[3], "session_token"), Some(hash));
    // The error: its status and exception event carry the hashed message.
    let Status::Error { description } = &spans[2].status else {
        panic!("{:?}", spans[2].status)
    };
    assert!(description.starts_with("hmac:"), "{description}");
    let exception = &spans[2].events.events[0];
    assert_eq!(exception.name, "exception");
    assert!(
        exception
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == "exception.message" && kv.value.as_str().starts_with("hmac:")),
        "{exception:?}"
    );
}

#[test]
fn secrets_are_absent_from_the_spans_tracing_opentelemetry_makes_from_the_bridge() {
    let _serial = secrets::serial();
    let memory = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(memory.clone())
        .build();
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("redaction")));
    let bridge = TracingForwarder::new().subscribe(secrets::global(), Pattern::glob("*.secrets").unwrap());
    tracing::subscriber::with_default(subscriber, secrets::plant);
    bridge.unsubscribe().unwrap();
    provider.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 4, "{spans:#?}");
    assert_spans_clean("the spans of tracing-opentelemetry", &spans);
}
