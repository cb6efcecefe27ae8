//! OTLP for real (issue 46): notify events exported through opentelemetry-otlp's `SpanExporter`,
//! over gRPC (tonic) and over HTTP/protobuf (reqwest), to an OTLP receiver the test starts on a
//! loopback port (tests/support/receiver.rs). The exporters services deploy await tokio I/O: the
//! collector runs them on the application's runtime, or on one of its own in a plain thread.

#[path = "support/receiver.rs"]
mod receiver;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::{Notifier, Pattern, Payload};
use notify_opentelemetry::{span_id, ExportStats, OpenTelemetryExporter, KIND_KEY};
use opentelemetry_otlp::{Protocol as OtlpProtocol, WithExportConfig};
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode};
use receiver::{Protocol, Received, Receiver};

/// opentelemetry-otlp's exporter to `receiver`, built inside `runtime`'s context (tonic's channel
/// must be made inside a runtime; reqwest's client may be).
fn otlp_exporter(receiver: &Receiver, protocol: Protocol, timeout: Duration) -> opentelemetry_otlp::SpanExporter {
    // Features unify across the workspace: another package's dependency builds reqwest with
    // `rustls-no-provider`, whose client builder panics without a process-wide provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match protocol {
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(receiver.endpoint())
            .with_timeout(timeout)
            .build()
            .unwrap(),
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(OtlpProtocol::HttpBinary)
            .with_endpoint(receiver.endpoint())
            .with_timeout(timeout)
            .build()
            .unwrap(),
    }
}

/// A current-thread runtime for a plain-thread application: the exporter is built inside it and
/// the collector is handed it.
fn own_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An exporter to `receiver` over `protocol`, in a plain thread: the OTLP exporter built inside a
/// runtime the collector then owns.
fn plain_thread_exporter(
    receiver: &Receiver,
    protocol: Protocol,
    configure: impl FnOnce(
        notify_opentelemetry::Builder<opentelemetry_otlp::SpanExporter>,
    ) -> notify_opentelemetry::Builder<opentelemetry_otlp::SpanExporter>,
) -> OpenTelemetryExporter {
    let runtime = own_runtime();
    let otlp = {
        let _inside = runtime.enter();
        otlp_exporter(receiver, protocol, Duration::from_secs(5))
    };
    configure(
        OpenTelemetryExporter::builder(otlp)
            .service_name("otlp-test")
            .scheduled_delay(Duration::from_millis(20))
            .runtime(runtime),
    )
    .build()
}

/// A request: a server root with a client child (an error), an internal grandchild, and a
/// panicked sibling.
fn publish_request(notifier: &Notifier) {
    notifier.instrument(
        "request.http",
        || Payload::new().with(KIND_KEY, "server"),
        |_| {
            let _ = notifier.instrument_result(
                "call.http",
                || Payload::new().with(KIND_KEY, "client"),
                |_| -> Result<(), std::io::Error> {
                    notifier.instrument("query.sql", || Payload::new().with("rows", 3_u64), |_| ());
                    Err(std::io::Error::other("upstream refused"))
                },
            );
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                notifier.instrument("render.template", Payload::new, |_| panic!("template broke"))
            }));
        },
    );
}

fn by_name(spans: &[Received]) -> HashMap<String, Vec<Received>> {
    let mut map: HashMap<String, Vec<Received>> = HashMap::new();
    for span in spans {
        map.entry(span.span.name.clone()).or_default().push(span.clone());
    }
    map
}

/// The receiver got `requests` requests' spans, each tree whole: ids, parents, kinds, status,
/// service.name.
fn assert_requests_arrived(receiver: &Receiver, requests: usize, ids: &Ids) {
    let spans = wait_for(receiver, requests * 4);
    assert_eq!(spans.len(), requests * 4);
    let named = by_name(&spans);
    assert_eq!(named["request.http"].len(), requests);
    let mut recorded = ids.0.lock().unwrap().clone();
    recorded.sort();
    let mut received: Vec<Vec<u8>> = spans.iter().map(|s| s.span.span_id.clone()).collect();
    received.sort();
    assert_eq!(received, recorded, "every span id, once");
    let index: HashMap<Vec<u8>, &Received> = spans.iter().map(|s| (s.span.span_id.clone(), s)).collect();
    for span in &spans {
        assert_eq!(span.service_name.as_deref(), Some("otlp-test"));
        let s = &span.span;
        let status = s.status.as_ref().map(|s| s.code).unwrap_or_default();
        match s.name.as_str() {
            "request.http" => {
                assert!(s.parent_span_id.is_empty(), "a root");
                assert_eq!(s.kind, SpanKind::Server as i32);
                assert_eq!(status, StatusCode::Unset as i32);
            }
            "call.http" => {
                assert_eq!(s.kind, SpanKind::Client as i32);
                assert_eq!(status, StatusCode::Error as i32);
                assert_eq!(s.status.as_ref().unwrap().message, "upstream refused");
                let parent = index[&s.parent_span_id];
                assert_eq!(parent.span.name, "request.http");
                assert_eq!(parent.span.trace_id, s.trace_id);
            }
            "query.sql" => {
                assert_eq!(s.kind, SpanKind::Internal as i32);
                assert_eq!(status, StatusCode::Unset as i32);
                assert_eq!(index[&s.parent_span_id].span.name, "call.http");
            }
            "render.template" => {
                assert_eq!(status, StatusCode::Error as i32);
                assert_eq!(s.status.as_ref().unwrap().message, "panicked");
                assert_eq!(index[&s.parent_span_id].span.name, "request.http");
            }
            other => panic!("unexpected span {other}"),
        }
    }
}

/// The span ids notify recorded (an event-object subscriber beside the exporter).
#[derive(Clone, Default)]
struct Ids(Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

impl Ids {
    fn subscribe(&self, notifier: &Notifier) {
        let ids = self.0.clone();
        let _ = notifier.subscribe(
            Pattern::all(),
            notify_core::Subscriber::event(move |e: &notify_core::Event| {
                ids.lock().unwrap().push(span_id(e.id()).to_bytes().to_vec())
            }),
        );
    }
}

/// Waits (up to 30 s) until the receiver holds at least `n` spans.
fn wait_for(receiver: &Receiver, n: usize) -> Vec<Received> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let spans = receiver.spans();
        if spans.len() >= n || Instant::now() > deadline {
            return spans;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn exported_all(stats: &ExportStats, n: u64) {
    assert_eq!(
        (stats.exported, stats.dropped(), stats.received()),
        (n, 0, n),
        "{stats}"
    );
}

#[test]
fn i46_3_grpc_export_from_a_plain_thread_delivers_every_span_whole() {
    let receiver = Receiver::start(Protocol::Grpc);
    let exporter = plain_thread_exporter(&receiver, Protocol::Grpc, |b| b);
    let notifier = Notifier::new();
    let ids = Ids::default();
    ids.subscribe(&notifier);
    let _s = exporter.subscribe(&notifier, Pattern::all());
    for _ in 0..25 {
        publish_request(&notifier);
    }
    exported_all(&exporter.force_flush().unwrap(), 100);
    assert_requests_arrived(&receiver, 25, &ids);
    exported_all(&exporter.shutdown(Duration::from_secs(10)).unwrap(), 100);
}

#[test]
fn i46_3_http_protobuf_export_from_a_plain_thread_delivers_every_span_whole() {
    let receiver = Receiver::start(Protocol::HttpProtobuf);
    // The default runtime choice: no runtime on this thread, so the collector makes its own.
    let otlp = otlp_exporter(&receiver, Protocol::HttpProtobuf, Duration::from_secs(5));
    let exporter = OpenTelemetryExporter::builder(otlp)
        .service_name("otlp-test")
        .max_batch_size(7)
        .build();
    let notifier = Notifier::new();
    let ids = Ids::default();
    ids.subscribe(&notifier);
    let _s = exporter.subscribe(&notifier, Pattern::all());
    for _ in 0..25 {
        publish_request(&notifier);
    }
    exported_all(&exporter.force_flush().unwrap(), 100);
    assert!(
        receiver.requests() >= 100 / 7,
        "batches of at most 7: {} requests",
        receiver.requests()
    );
    assert_requests_arrived(&receiver, 25, &ids);
    exported_all(&exporter.shutdown(Duration::from_secs(10)).unwrap(), 100);
}

/// Issue 46 item 1: a tokio service exporting through opentelemetry-otlp's exporter received 0
/// of 100 spans ("there is no reactor running"). Built inside the service's runtime, the
/// collector exports on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i46_1_a_tokio_service_exporting_through_otlp_delivers_every_span() {
    for protocol in [Protocol::Grpc, Protocol::HttpProtobuf] {
        let receiver = tokio::task::spawn_blocking(move || Receiver::start(protocol))
            .await
            .unwrap();
        let otlp = otlp_exporter(&receiver, protocol, Duration::from_secs(5));
        let exporter = OpenTelemetryExporter::builder(otlp)
            .service_name("otlp-test")
            .scheduled_delay(Duration::from_millis(20))
            .build();
        assert!(
            format!("{exporter:?}").contains("application's runtime"),
            "{exporter:?}"
        );
        let notifier = Notifier::new();
        let ids = Ids::default();
        ids.subscribe(&notifier);
        let _s = exporter.subscribe(&notifier, Pattern::all());
        // Requests handled by the service's tasks.
        let tasks: Vec<_> = (0..25)
            .map(|_| {
                let notifier = notifier.clone();
                tokio::spawn(async move { publish_request(&notifier) })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let flushing = exporter.clone();
        let stats = tokio::task::spawn_blocking(move || flushing.force_flush())
            .await
            .unwrap()
            .unwrap();
        exported_all(&stats, 100);
        let receiver = tokio::task::spawn_blocking(move || {
            assert_requests_arrived(&receiver, 25, &ids);
            receiver
        })
        .await
        .unwrap();
        let closing = exporter.clone();
        let stats = tokio::task::spawn_blocking(move || closing.shutdown(Duration::from_secs(10)))
            .await
            .unwrap()
            .unwrap();
        exported_all(&stats, 100);
        tokio::task::spawn_blocking(move || drop(receiver)).await.unwrap();
    }
}

/// The receiver is down when export starts, comes up, goes down mid-run and comes back: every
/// span is either delivered (and counted exported) or counted an exporter error, never both,
/// never lost; the publishers never wait (drop-newest policy, a loose liveness bound).
#[test]
fn i46_3_receiver_down_at_start_then_restarted_mid_run_counts_are_exact() {
    for protocol in [Protocol::Grpc, Protocol::HttpProtobuf] {
        let mut receiver = Receiver::stopped(protocol);
        let exporter = plain_thread_exporter(&receiver, protocol, |b| b.max_batch_size(4).on_drops(|_| {}));
        let notifier = Notifier::new();
        let _s = exporter.subscribe(&notifier, Pattern::all());
        let slowest = AtomicU64::new(0);
        let publish = |n: usize| {
            for _ in 0..n {
                let started = Instant::now();
                publish_request(&notifier);
                slowest.fetch_max(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            }
        };
        publish(5);
        let down = exporter.force_flush().unwrap();
        assert_eq!(
            (down.exported, down.dropped_exporter_error),
            (0, 20),
            "{protocol:?} down: {down}"
        );
        receiver.resume();
        publish(5);
        let up = exporter.force_flush().unwrap();
        assert_eq!(
            (up.exported, up.dropped_exporter_error),
            (20, 20),
            "{protocol:?} up: {up}"
        );
        receiver.pause();
        publish(5);
        let again = exporter.force_flush().unwrap();
        receiver.resume();
        publish(5);
        let stats = exporter.shutdown(Duration::from_secs(30)).unwrap();
        assert_eq!(stats.received(), 80, "{protocol:?}: {stats}");
        assert_eq!(
            stats.exported + stats.dropped_exporter_error,
            80,
            "{protocol:?}: {stats}"
        );
        assert_eq!(stats.dropped(), stats.dropped_exporter_error, "{protocol:?}: {stats}");
        assert!(
            again.dropped_exporter_error > up.dropped_exporter_error,
            "{protocol:?}: the pause was seen: {again}"
        );
        assert!(
            stats.exported >= 40,
            "{protocol:?}: after each restart the spans arrive: {stats}"
        );
        assert_eq!(
            receiver.spans().len() as u64,
            stats.exported,
            "{protocol:?}: exported means received"
        );
        let slowest = Duration::from_micros(slowest.into_inner());
        assert!(
            slowest < Duration::from_secs(1),
            "{protocol:?}: a publisher waited {slowest:?}"
        );
    }
}

/// A receiver that answers each request after 300 ms, behind a small queue: publishers never wait
/// for it (the policy drops the newest, counted), and what was exported is exactly what arrived.
#[test]
fn i46_3_a_slow_receiver_never_holds_publishers_and_counts_stay_exact() {
    let receiver = Receiver::start(Protocol::Grpc);
    receiver.set_delay(Duration::from_millis(300));
    let exporter = plain_thread_exporter(&receiver, Protocol::Grpc, |b| {
        b.queue_capacity(64).max_batch_size(32).on_drops(|_| {})
    });
    let notifier = Notifier::new();
    let _s = exporter.subscribe(&notifier, Pattern::all());
    let started = Instant::now();
    for _ in 0..500 {
        publish_request(&notifier);
    }
    let publishing = started.elapsed();
    let stats = exporter.shutdown(Duration::from_secs(60)).unwrap();
    assert_eq!(stats.received(), 2_000, "{stats}");
    assert_eq!(stats.exported + stats.dropped_queue_full, 2_000, "{stats}");
    assert!(stats.dropped_queue_full > 0, "the queue overflowed: {stats}");
    assert_eq!(receiver.spans().len() as u64, stats.exported);
    // A liveness bound, not a timing: 2,000 events behind a receiver needing 300 ms per batch
    // would take seconds if publishers waited for it.
    assert!(publishing < Duration::from_secs(2), "publishing took {publishing:?}");
}

/// The sink contract (notify_export::testing) with the OTLP exporter over gRPC as the far end.
#[test]
fn the_span_sink_passes_the_sink_contract_over_otlp() {
    let receiver = Receiver::start(Protocol::Grpc);
    let runtime = own_runtime();
    let otlp = {
        let _inside = runtime.enter();
        otlp_exporter(&receiver, Protocol::Grpc, Duration::from_secs(5))
    };
    let report = notify_export::testing::check_sink(notify_opentelemetry::SpanSink::new(otlp), runtime, || {
        receiver.spans().iter().map(Received::seen).collect()
    });
    assert_eq!(report.stats.exported, notify_export::testing::CONTRACT_EVENTS as u64);
}
