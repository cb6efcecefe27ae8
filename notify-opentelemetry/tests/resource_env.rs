//! service.name by the OpenTelemetry specification's precedence (issue 46 item 4): the builder's
//! value, then OTEL_SERVICE_NAME, then `service.name` in OTEL_RESOURCE_ATTRIBUTES, then the SDK's
//! `unknown_service:<executable>`. Each case runs in a child process of this test binary with its
//! own environment (the environment is process-wide: no test here sets it in this process).

use std::process::Command;

use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry_sdk::trace::InMemorySpanExporter;

/// The child's side: builds an exporter (with `NOTIFY_TEST_BUILDER_NAME` as the builder's service
/// name when set) and prints its resource's `service.name`.
#[test]
#[ignore = "run as a child process by i46_4_service_name_precedence"]
fn child_prints_the_service_name() {
    let mut builder = OpenTelemetryExporter::builder(InMemorySpanExporter::default());
    if let Ok(name) = std::env::var("NOTIFY_TEST_BUILDER_NAME") {
        builder = builder.service_name(name);
    }
    let exporter = builder.build();
    let service = opentelemetry::Key::from_static_str("service.name");
    let name = exporter
        .resource()
        .get(&service)
        .map(|v| v.to_string())
        .unwrap_or_default();
    println!("service.name=<{name}>");
}

fn service_name(builder: Option<&str>, service_env: Option<&str>, attributes_env: Option<&str>) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--exact",
            "child_prints_the_service_name",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES")
        .env_remove("NOTIFY_TEST_BUILDER_NAME");
    if let Some(name) = builder {
        child.env("NOTIFY_TEST_BUILDER_NAME", name);
    }
    if let Some(name) = service_env {
        child.env("OTEL_SERVICE_NAME", name);
    }
    if let Some(attributes) = attributes_env {
        child.env("OTEL_RESOURCE_ATTRIBUTES", attributes);
    }
    let output = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The test harness may print its "test ... " prefix on the same line.
    let (_, rest) = stdout
        .split_once("service.name=<")
        .unwrap_or_else(|| panic!("no service.name line in {stdout}"));
    rest.split_once(">\n").map_or(rest, |(name, _)| name).to_owned()
}

#[test]
fn i46_4_service_name_precedence() {
    let attributes = Some("service.name=attr-svc,deployment.environment=test");
    // Both variables: OTEL_SERVICE_NAME wins (the SDK's detectors alone gave attr-svc).
    assert_eq!(service_name(None, Some("env-svc"), attributes), "env-svc");
    // The builder wins over both.
    assert_eq!(service_name(Some("code-svc"), Some("env-svc"), attributes), "code-svc");
    // OTEL_RESOURCE_ATTRIBUTES alone.
    assert_eq!(service_name(None, None, attributes), "attr-svc");
    // OTEL_SERVICE_NAME alone.
    assert_eq!(service_name(None, Some("env-svc"), None), "env-svc");
    // Nothing: the SDK's default, "unknown_service:" and the executable's name.
    let default = service_name(None, None, None);
    assert!(default.starts_with("unknown_service:resource_env"), "{default}");
}
