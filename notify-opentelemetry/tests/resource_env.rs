//! Without a service name from the builder, the resource is the SDK's default, which reads
//! OTEL_SERVICE_NAME. (Its own test binary: it sets the environment variable before any thread.)

use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry_sdk::trace::InMemorySpanExporter;

#[test]
fn otel_service_name_names_the_service_unless_the_builder_does() {
    std::env::set_var("OTEL_SERVICE_NAME", "from-env");
    let service = opentelemetry::Key::from_static_str("service.name");
    let exporter = OpenTelemetryExporter::new(InMemorySpanExporter::default());
    assert_eq!(
        exporter.resource().get(&service),
        Some(opentelemetry::Value::from("from-env"))
    );
    let exporter = OpenTelemetryExporter::builder(InMemorySpanExporter::default())
        .service_name("from-code")
        .build();
    assert_eq!(
        exporter.resource().get(&service),
        Some(opentelemetry::Value::from("from-code"))
    );
    std::env::remove_var("OTEL_SERVICE_NAME");
    let exporter = OpenTelemetryExporter::new(InMemorySpanExporter::default());
    // The SDK's default: "unknown_service:" and the executable's name.
    let default = exporter.resource().get(&service).expect("a service name").to_string();
    assert!(default.starts_with("unknown_service:resource_env"), "{default}");
}
