//! The [`Resource`] given to the `SpanExporter`, `service.name` by the specification's precedence.

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;

/// The resource: `given` (else the SDK's default, which reads `OTEL_RESOURCE_ATTRIBUTES` and
/// `OTEL_SERVICE_NAME` through its detectors) with `service.name` set by the OpenTelemetry
/// specification's precedence: the builder's `service_name`, then `OTEL_SERVICE_NAME` (when no
/// resource was given: a given resource is the application's word), then `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES`, then the SDK's `unknown_service:<executable>`. The SDK's detectors
/// alone let `OTEL_RESOURCE_ATTRIBUTES` win over `OTEL_SERVICE_NAME` (issue 46), hence the
/// explicit step. `env` reads an environment variable (tests pass their own).
pub(crate) fn resource(
    given: Option<Resource>,
    service_name: Option<String>,
    env: impl Fn(&str) -> Option<String>,
) -> Resource {
    let from_env = || {
        env("OTEL_SERVICE_NAME")
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
    };
    let (base, name) = match given {
        Some(resource) => (resource, service_name),
        None => (Resource::builder().build(), service_name.or_else(from_env)),
    };
    match name {
        None => base,
        Some(name) => Resource::builder_empty()
            .with_attributes(base.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())))
            .with_service_name(name)
            .build(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(resource: &Resource) -> String {
        resource
            .get(&opentelemetry::Key::from_static_str("service.name"))
            .map(|v| v.to_string())
            .unwrap_or_default()
    }

    fn env(name: &str) -> Option<String> {
        (name == "OTEL_SERVICE_NAME").then(|| "env-svc".to_owned())
    }

    #[test]
    fn i46_4_the_builder_wins_then_otel_service_name() {
        assert_eq!(service(&resource(None, Some("code-svc".into()), env)), "code-svc");
        assert_eq!(service(&resource(None, None, env)), "env-svc");
        // A blank OTEL_SERVICE_NAME is not a name.
        assert_ne!(service(&resource(None, None, |_| Some("  ".into()))), "  ");
        // A given resource keeps its name unless the builder names the service.
        let given = Resource::builder_empty()
            .with_service_name("given-svc")
            .with_attribute(KeyValue::new("k", 1))
            .build();
        assert_eq!(service(&resource(Some(given.clone()), None, env)), "given-svc");
        let renamed = resource(Some(given), Some("code-svc".into()), env);
        assert_eq!(service(&renamed), "code-svc");
        assert_eq!(
            renamed.get(&opentelemetry::Key::from_static_str("k")),
            Some(opentelemetry::Value::from(1))
        );
    }
}
