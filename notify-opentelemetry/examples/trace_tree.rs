//! notify events as OpenTelemetry spans: three concurrent requests on tokio, exported through
//! notify-opentelemetry's exporter thread, printed as trace trees.
//!
//! ```sh
//! cargo run -p notify-opentelemetry --example trace_tree
//! ```
//!
//! The exporter here is the SDK's in-memory one so the example needs no collector; with OTLP it
//! would be `OpenTelemetryExporter::new(opentelemetry_otlp::SpanExporter::builder().with_tonic().build()?)`.

use std::time::Duration;

use notify_core::{instrument_event, Notifier, Pattern, Payload};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry::trace::SpanId;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};

#[instrument_event("request.shop", fields(path), err)]
async fn request(path: &'static str) -> Result<u64, String> {
    notify_core::instrument("auth.shop", || Payload::new().with("user", "reader"), |_| ());
    let (stock, price) = tokio::join!(query("SELECT stock FROM books"), query("SELECT price FROM books"));
    if path == "/fail" {
        return Err("out of stock".to_owned());
    }
    Ok(stock + price)
}

#[instrument_event("query.sql", fields(sql))]
async fn query(sql: &'static str) -> u64 {
    tokio::time::sleep(Duration::from_millis(2)).await;
    sql.len() as u64
}

fn print_tree(spans: &[SpanData], parent: SpanId, depth: usize) {
    for span in spans.iter().filter(|s| s.parent_span_id == parent) {
        let ms = span
            .end_time
            .duration_since(span.start_time)
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3;
        let attributes: Vec<String> = span
            .attributes
            .iter()
            .map(|kv| format!("{}={}", kv.key, kv.value))
            .collect();
        println!(
            "{:indent$}{} [{}] {ms:.2} ms {} {:?}",
            "",
            span.name,
            span.span_context.span_id(),
            attributes.join(" "),
            span.status,
            indent = 2 * depth
        );
        print_tree(spans, span.span_context.span_id(), depth + 1);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let _subscription = exporter.subscribe(Notifier::global(), Pattern::all());

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_time().build()?;
    runtime.block_on(async {
        let tasks: Vec<_> = ["/books", "/cart", "/fail"]
            .into_iter()
            .map(|path| tokio::spawn(request(path)))
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    });

    exporter.force_flush()?;
    let spans = memory.get_finished_spans()?;
    let mut traces: Vec<_> = spans.iter().map(|s| s.span_context.trace_id()).collect();
    traces.sort_by_key(|t| t.to_string());
    traces.dedup();
    for trace in traces {
        println!("trace {trace}");
        let in_trace: Vec<SpanData> = spans
            .iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .cloned()
            .collect();
        print_tree(&in_trace, SpanId::INVALID, 1);
    }
    exporter.shutdown(Duration::from_secs(5))?;
    Ok(())
}
