//! notify events through `OpenTelemetryExporter` into opentelemetry_sdk's in-memory exporter.

use std::collections::HashMap;
use std::time::Duration;

use notify_core::{event::Outcome, instrument_event, Event, Handle, Notifier, Pattern, Payload};
use notify_opentelemetry::{span_id, trace_id, OpenTelemetryExporter};
use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

#[test]
fn a_span_per_event_with_ids_times_typed_attributes_status_and_exception() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let notifier = Notifier::new();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        notify_core::Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
    );
    let _s = exporter.subscribe(&notifier, Pattern::all());

    notifier.instrument(
        "request.http",
        || {
            Payload::new()
                .with("path", "/books")
                .with("cached", false)
                .with("ratio", 0.25)
                .with("delta", -3_i64)
                .with("huge", u64::MAX)
                .with("took", Duration::from_micros(5))
        },
        |_| {
            let _ = notifier.instrument_result(
                "query.sql",
                || Payload::new().with("rows", 2_u64),
                |_| {
                    std::thread::sleep(Duration::from_millis(2));
                    "x".parse::<u8>()
                },
            );
        },
    );
    exporter.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    let events = seen.lock().unwrap();
    assert_eq!(spans.len(), 2);
    assert_eq!(exporter.exported(), 2);
    let (query, request) = (&spans[0], &spans[1]);
    let (query_event, request_event) = (&events[0], &events[1]);

    // Ids: the notify trace id, the event id as span id, the parent's id as parent span id.
    assert_eq!(request.span_context.trace_id(), trace_id(request_event.trace_id()));
    assert_eq!(query.span_context.trace_id(), request.span_context.trace_id());
    assert_eq!(request.span_context.span_id(), span_id(request_event.id()));
    assert_eq!(query.span_context.span_id(), span_id(query_event.id()));
    assert_eq!(query.parent_span_id, request.span_context.span_id());
    assert_eq!(request.parent_span_id, SpanId::INVALID);
    assert!(query.span_context.is_sampled());
    assert_eq!(query.span_kind, SpanKind::Internal);
    assert_eq!(request.instrumentation_scope.name(), "notify");

    // Times.
    assert_eq!(query.start_time, query_event.start_time());
    assert_eq!(query.end_time, query_event.end_time());
    assert!(query.end_time.duration_since(query.start_time).unwrap() >= Duration::from_millis(2));

    // Typed attributes.
    assert_eq!(attribute(request, "path"), Some(&Value::from("/books")));
    assert_eq!(attribute(request, "cached"), Some(&Value::Bool(false)));
    assert_eq!(attribute(request, "ratio"), Some(&Value::F64(0.25)));
    assert_eq!(attribute(request, "delta"), Some(&Value::I64(-3)));
    assert_eq!(attribute(request, "huge"), Some(&Value::from(u64::MAX.to_string())));
    assert_eq!(attribute(request, "took"), Some(&Value::I64(5_000)));
    assert_eq!(attribute(query, "rows"), Some(&Value::I64(2)));
    assert_eq!(request.status, Status::Unset);

    // The error: status, exception event, not an attribute.
    assert_eq!(query.status, Status::error("invalid digit found in string"));
    assert_eq!(attribute(query, "exception"), None);
    assert_eq!(query.events.len(), 1);
    let exception = &query.events[0];
    assert_eq!(exception.name, "exception");
    assert_eq!(exception.timestamp, query.end_time);
    assert_eq!(
        exception.attributes,
        [
            KeyValue::new("exception.type", "core::num::error::ParseIntError"),
            KeyValue::new("exception.message", "invalid digit found in string"),
        ]
    );
}

#[test]
fn panicked_and_cancelled_outcomes() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let notifier = Notifier::new();
    let _s = exporter.subscribe(&notifier, Pattern::all());
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("boom.job", Payload::new, |_| panic!("boom"))
    }));
    let mut handle: Handle = notifier.build_handle("stop.job", Payload::new());
    handle.start().unwrap();
    handle.set_outcome(Outcome::Cancelled);
    handle.finish().unwrap();
    exporter.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    assert_eq!(spans[0].status, Status::error("panicked"));
    assert_eq!(attribute(&spans[0], "notify.outcome"), Some(&Value::from("panicked")));
    assert_eq!(spans[1].status, Status::error("cancelled"));
    assert_eq!(attribute(&spans[1], "notify.outcome"), Some(&Value::from("cancelled")));
}

#[instrument_event("request.otel_tree", fields(n))]
async fn request(n: u64) -> u64 {
    notify_core::instrument("auth.otel_tree", || Payload::new().with("n", n), |_| ());
    let (a, b) = tokio::join!(query(n, 0), query(n, 1));
    tokio::time::sleep(Duration::from_millis(n % 3)).await;
    a + b
}

#[instrument_event("query.otel_tree", fields(n, part))]
async fn query(n: u64, part: u64) -> u64 {
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(1 + part)).await;
    n + part
}

#[test]
fn a_hundred_concurrent_requests_on_tokio_give_a_hundred_traces_each_the_right_tree() {
    let memory = InMemorySpanExporter::default();
    // The default pipeline: a batch processor around the exporter.
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let _s = exporter.subscribe(Notifier::global(), Pattern::glob("*.otel_tree").unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..100).map(|n| tokio::spawn(request(n))).collect();
        for (n, task) in tasks.into_iter().enumerate() {
            assert_eq!(task.await.unwrap(), 2 * n as u64 + 1);
        }
    });
    exporter.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 400);

    let mut traces: HashMap<_, Vec<&SpanData>> = HashMap::new();
    for span in &spans {
        traces.entry(span.span_context.trace_id()).or_default().push(span);
    }
    assert_eq!(traces.len(), 100, "exactly one trace per request");
    let n_of = |span: &SpanData| match attribute(span, "n") {
        Some(Value::I64(n)) => *n,
        other => panic!("no n: {other:?}"),
    };
    let mut requests_seen = Vec::new();
    for spans in traces.values() {
        let roots: Vec<_> = spans.iter().filter(|s| s.parent_span_id == SpanId::INVALID).collect();
        assert_eq!(roots.len(), 1, "{spans:#?}");
        let root = roots[0];
        assert_eq!(root.name, "request.otel_tree");
        let mut children: Vec<_> = spans
            .iter()
            .filter(|s| s.parent_span_id != SpanId::INVALID)
            .map(|s| {
                assert_eq!(
                    s.parent_span_id,
                    root.span_context.span_id(),
                    "{s:#?} not under {root:#?}"
                );
                assert_eq!(n_of(s), n_of(root));
                s.name.to_string()
            })
            .collect();
        children.sort();
        assert_eq!(children, ["auth.otel_tree", "query.otel_tree", "query.otel_tree"]);
        requests_seen.push(n_of(root));
    }
    requests_seen.sort();
    assert_eq!(requests_seen, (0..100).collect::<Vec<_>>());
    exporter.shutdown(Duration::from_secs(5)).unwrap();
}

#[instrument_event("located.otel_code")]
fn located() -> u8 {
    7
}

#[test]
fn events_with_a_source_location_carry_code_attributes() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    // `#[instrument_event]` callsites publish on the global notifier; the name is this test's own.
    let _s = exporter.subscribe(Notifier::global(), Pattern::from("located.otel_code"));
    assert_eq!(located(), 7);
    let notifier = Notifier::new();
    let _n = exporter.subscribe(&notifier, Pattern::all());
    notifier.instrument("nowhere.otel_code", Payload::new, |_| ());

    exporter.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    let located = spans
        .iter()
        .find(|s| s.name == "located.otel_code")
        .expect("the macro's span");
    assert_eq!(
        attribute(located, "code.file.path"),
        Some(&Value::from("notify-opentelemetry/tests/spans.rs"))
    );
    assert_eq!(attribute(located, "code.module.name"), Some(&Value::from("spans")));
    assert!(matches!(attribute(located, "code.line.number"), Some(Value::I64(line)) if *line > 0));
    // An event instrumented by name has no location, hence no code attributes.
    let by_name = spans
        .iter()
        .find(|s| s.name == "nowhere.otel_code")
        .expect("the named span");
    assert_eq!(attribute(by_name, "code.file.path"), None);
    assert_eq!(attribute(by_name, "code.line.number"), None);
}

#[test]
fn the_span_kind_comes_from_the_otel_kind_entry_and_is_not_an_attribute() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let notifier = Notifier::new();
    let _s = exporter.subscribe(&notifier, Pattern::all());
    for kind in ["server", "CLIENT", "producer", "consumer", "internal", "sideways"] {
        notifier.instrument(
            "kind.otel",
            || Payload::new().with(notify_opentelemetry::KIND_KEY, kind),
            |_| (),
        );
    }
    notifier.instrument("kind.otel", || Payload::new().with("otel.kind", 3_i64), |_| ());
    notifier.instrument("kind.otel", Payload::new, |_| ());
    exporter.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    let kinds: Vec<SpanKind> = spans.iter().map(|s| s.span_kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            SpanKind::Server,
            SpanKind::Client,
            SpanKind::Producer,
            SpanKind::Consumer,
            SpanKind::Internal,
            SpanKind::Internal,
            SpanKind::Internal,
            SpanKind::Internal
        ]
    );
    assert!(spans.iter().all(|s| attribute(s, "otel.kind").is_none()));
}

/// A SpanExporter that remembers the resource it was given.
#[derive(Debug, Default)]
struct ResourceProbe(std::sync::Arc<std::sync::Mutex<Option<opentelemetry_sdk::Resource>>>);

impl opentelemetry_sdk::trace::SpanExporter for ResourceProbe {
    async fn export(&self, _: Vec<SpanData>) -> opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        *self.0.lock().unwrap() = Some(resource.clone());
    }
}

#[test]
fn the_builders_service_name_reaches_the_span_exporter_in_its_resource() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let exporter = OpenTelemetryExporter::builder(ResourceProbe(seen.clone()))
        .service_name("bookstore")
        .build();
    let service = opentelemetry::Key::from_static_str("service.name");
    assert_eq!(exporter.resource().get(&service), Some(Value::from("bookstore")));
    let given = seen.lock().unwrap().clone().expect("set_resource was called");
    assert_eq!(given.get(&service), Some(Value::from("bookstore")));
    // A whole resource, with the builder's service name on top.
    let resource = opentelemetry_sdk::Resource::builder_empty()
        .with_attribute(KeyValue::new("deployment.environment.name", "test"))
        .with_service_name("overridden")
        .build();
    let exporter = OpenTelemetryExporter::builder(ResourceProbe::default())
        .resource(resource)
        .service_name("shop")
        .build();
    assert_eq!(exporter.resource().get(&service), Some(Value::from("shop")));
    assert_eq!(
        exporter
            .resource()
            .get(&opentelemetry::Key::from_static_str("deployment.environment.name")),
        Some(Value::from("test"))
    );
}

#[test]
fn a_parent_from_a_traceparent_is_flagged_remote() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let notifier = Notifier::new();
    let _s = exporter.subscribe(&notifier, Pattern::all());
    let header: notify_core::trace_context::TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        .parse()
        .unwrap();
    notify_core::Context::from_traceparent(&header).in_scope(|| {
        notifier.instrument("request.remote", Payload::new, |_| {
            notifier.instrument("query.remote", Payload::new, |_| ());
        });
    });
    exporter.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    let (query, request) = (&spans[0], &spans[1]);
    assert_eq!(request.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert!(request.parent_span_is_remote);
    assert_eq!(
        request.span_context.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(query.parent_span_id, request.span_context.span_id());
    assert!(!query.parent_span_is_remote);
}
