//! Issue 47: OTLP/HTTP with protobuf bodies (the default protocol) to a real receiver on a loopback
//! port, the base endpoint given (`/v1/traces` appended, as the specification says), from plain
//! threads. One process, one setup.

#[path = "support/otlp.rs"]
mod otlp;
#[path = "../../notify-opentelemetry/tests/support/receiver.rs"]
mod receiver;

use receiver::{Protocol, Receiver};

#[test]
fn i47_1_http_protobuf_export_delivers_spans_with_service_name_and_parents() {
    let receiver = Receiver::start(Protocol::HttpProtobuf);
    let traces = receiver.endpoint();
    let base = traces.strip_suffix("/v1/traces").unwrap();
    let (guard, lines) = otlp::init(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", base),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "5000"),
    ]);
    otlp::publish_requests_from_threads(4, 5);
    drop(guard);
    otlp::assert_requests_arrived(&receiver, 20);
    otlp::assert_no_warnings(&lines);
}
