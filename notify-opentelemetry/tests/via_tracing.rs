//! The other route: notify events bridged into tracing (`notify_tracing::TracingForwarder`) and
//! exported by `tracing-opentelemetry`: six concurrent tokio jobs give six traces, each job's
//! steps under it. (Its own test binary: it sets the global tracing subscriber.)

use std::collections::HashMap;
use std::time::Duration;

use notify_core::{instrument_event, Notifier, Pattern, Payload};
use notify_tracing::TracingForwarder;
use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::prelude::*;

#[instrument_event("job.via_tracing", fields(n))]
async fn job(n: i64) {
    for step in 0..2_i64 {
        tokio::time::sleep(Duration::from_millis(1 + (n % 3) as u64)).await;
        notify_core::instrument(
            "step.via_tracing",
            || Payload::new().with("n", n).with("step", step),
            |_| (),
        );
    }
}

#[test]
fn six_concurrent_jobs_through_tracing_opentelemetry_nest_correctly() {
    let memory = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(memory.clone())
        .build();
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("notify-test")))
        .init();
    let _bridge = TracingForwarder::new().subscribe(Notifier::global(), Pattern::glob("*.via_tracing").unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let jobs: Vec<_> = (0..6).map(|n| tokio::spawn(job(n))).collect();
        for j in jobs {
            j.await.unwrap();
        }
    });
    provider.force_flush().unwrap();
    let spans = memory.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 18, "{spans:#?}");
    let n_of = |span: &SpanData| {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == "n")
            .map(|kv| kv.value.clone())
            .unwrap_or_else(|| panic!("no n: {span:#?}"))
    };
    let mut traces: HashMap<_, Vec<&SpanData>> = HashMap::new();
    for span in &spans {
        traces.entry(span.span_context.trace_id()).or_default().push(span);
    }
    assert_eq!(traces.len(), 6);
    for spans in traces.values() {
        let job = spans.iter().find(|s| s.name == "job").expect("a job span");
        assert_eq!(job.parent_span_id, SpanId::INVALID);
        let steps: Vec<_> = spans.iter().filter(|s| s.name == "step").collect();
        assert_eq!(steps.len(), 2);
        for step in steps {
            assert_eq!(step.parent_span_id, job.span_context.span_id());
            assert_eq!(n_of(step), n_of(job));
        }
        assert!(matches!(n_of(job), Value::I64(0..=5)));
    }
}
