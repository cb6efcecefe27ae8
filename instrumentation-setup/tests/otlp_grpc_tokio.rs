//! Issue 47: `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` in a tokio service: the setup is called inside a
//! current-thread runtime (`#[tokio::main(flavor = "current_thread")]`'s), requests are its tasks,
//! and the guard is dropped on the runtime's only thread. The exporter runs on a runtime of its
//! own, so neither the export nor the guard's flush waits for the application's thread. A real
//! OTLP/gRPC receiver on a loopback port. One process, one setup.

#[path = "support/otlp.rs"]
mod otlp;
#[path = "../../notify-opentelemetry/tests/support/receiver.rs"]
mod receiver;

use receiver::{Protocol, Receiver};

#[tokio::test(flavor = "current_thread")]
async fn i47_1_grpc_export_inside_a_tokio_runtime_delivers_spans_with_service_name_and_parents() {
    // The receiver has a runtime of its own: made and dropped outside this async context.
    let receiver = tokio::task::spawn_blocking(|| Receiver::start(Protocol::Grpc))
        .await
        .unwrap();
    let endpoint = receiver.endpoint();
    let (guard, lines) = otlp::init(&[
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &endpoint),
    ]);
    let tasks: Vec<_> = (0..20)
        .map(|n| {
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                otlp::publish_request(n);
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    drop(guard);
    tokio::task::spawn_blocking(move || {
        otlp::assert_requests_arrived(&receiver, 20);
        otlp::assert_no_warnings(&lines);
    })
    .await
    .unwrap();
}
