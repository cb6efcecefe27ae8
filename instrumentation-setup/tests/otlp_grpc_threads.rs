//! Issue 47: `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` exports through opentelemetry-otlp's tonic exporter
//! to a real OTLP/gRPC receiver on a loopback port, from an application without any tokio runtime:
//! requests on plain threads. One process, one setup.

#[path = "support/otlp.rs"]
mod otlp;
#[path = "../../notify-opentelemetry/tests/support/receiver.rs"]
mod receiver;

use receiver::{Protocol, Receiver};

#[test]
fn i47_1_grpc_export_from_plain_threads_delivers_spans_with_service_name_and_parents() {
    let receiver = Receiver::start(Protocol::Grpc);
    let endpoint = receiver.endpoint();
    let (guard, lines) = otlp::init(&[
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "5000"),
    ]);
    otlp::publish_requests_from_threads(4, 5);
    // The guard exports what is queued before it returns.
    drop(guard);
    otlp::assert_requests_arrived(&receiver, 20);
    otlp::assert_no_warnings(&lines);
}
