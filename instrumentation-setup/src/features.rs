//! Which sinks this build has: a sink's variable without its cargo feature is an error.

use crate::config::{Config, ConfigError, NOTIFY_NATS_URL, NOTIFY_PROMETHEUS_ADDRESS, NOTIFY_WEB_ADDRESS};

/// The sinks' cargo features, as this build has them.
pub(crate) const BUILT: Features = Features {
    opentelemetry: cfg!(feature = "opentelemetry"),
    otlp_grpc: cfg!(feature = "otlp-grpc"),
    nats: cfg!(feature = "nats"),
    prometheus: cfg!(feature = "prometheus"),
    web: cfg!(feature = "web"),
};

#[derive(Clone, Copy)]
pub(crate) struct Features {
    opentelemetry: bool,
    otlp_grpc: bool,
    nats: bool,
    prometheus: bool,
    web: bool,
}

/// A variable set for a sink this build left out is an error, not a sink silently missing.
pub(crate) fn check(config: &Config, enabled: Features) -> Result<(), ConfigError> {
    let missing = |variable: &'static str, value: Option<String>, enabled: bool, feature: &str| match value {
        Some(value) if !enabled => Err(ConfigError::new(
            variable,
            &value,
            format!("set, but instrumentation-setup was built without its `{feature}` feature"),
        )),
        _ => Ok(()),
    };
    if let Some(otlp) = &config.otlp {
        let (variable, value) = otlp.enabled_by();
        missing(variable, Some(value.to_owned()), enabled.opentelemetry, "opentelemetry")?;
        if let Some(variable) = otlp.grpc_from() {
            if !enabled.otlp_grpc {
                return Err(ConfigError::new(
                    variable,
                    "grpc",
                    "grpc needs instrumentation-setup's `otlp-grpc` feature (tonic); without it use http/protobuf \
                     (the collector's port 4318)",
                ));
            }
        }
    }
    missing(NOTIFY_NATS_URL, config.nats_url.clone(), enabled.nats, "nats")?;
    missing(
        NOTIFY_PROMETHEUS_ADDRESS,
        config.prometheus.map(|a| a.to_string()),
        enabled.prometheus,
        "prometheus",
    )?;
    missing(
        NOTIFY_WEB_ADDRESS,
        config.web.map(|a| a.to_string()),
        enabled.web,
        "web",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each sink's variable in a build without that sink's feature: an error naming it (the
    /// workspace's builds turn every feature on, so the features are given here).
    #[test]
    fn i47_1_each_sink_variable_without_its_feature_is_an_error() {
        let config = Config::from_vars([
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("NOTIFY_NATS_URL", "nats://u:secret@127.0.0.1:4222"),
            ("NOTIFY_PROMETHEUS_ADDRESS", "127.0.0.1:9464"),
            ("NOTIFY_WEB_ADDRESS", "127.0.0.1:7878"),
        ])
        .unwrap();
        let all = Features {
            opentelemetry: true,
            otlp_grpc: true,
            nats: true,
            prometheus: true,
            web: true,
        };
        assert!(check(&config, all).is_ok());
        let cases = [
            (
                Features {
                    opentelemetry: false,
                    ..all
                },
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "opentelemetry",
            ),
            (Features { nats: false, ..all }, "NOTIFY_NATS_URL", "nats"),
            (
                Features {
                    prometheus: false,
                    ..all
                },
                "NOTIFY_PROMETHEUS_ADDRESS",
                "prometheus",
            ),
            (Features { web: false, ..all }, "NOTIFY_WEB_ADDRESS", "web"),
        ];
        for (features, variable, feature) in cases {
            let error = check(&config, features).unwrap_err();
            assert_eq!(error.variable(), variable);
            assert_eq!(
                error.reason(),
                format!("set, but instrumentation-setup was built without its `{feature}` feature")
            );
            assert!(!error.to_string().contains("secret"), "{error}");
        }
    }

    /// `grpc` in a build without `otlp-grpc`: an error naming the variable that asked for it; the
    /// headers that turned export on are named without their value.
    #[test]
    fn i47_1_grpc_without_its_feature_is_an_error_naming_the_variable() {
        let all = Features {
            opentelemetry: true,
            otlp_grpc: true,
            nats: true,
            prometheus: true,
            web: true,
        };
        let no_grpc = Features {
            otlp_grpc: false,
            ..all
        };
        for variable in ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] {
            let config = Config::from_vars([(variable, "grpc")]).unwrap();
            assert!(check(&config, all).is_ok());
            let error = check(&config, no_grpc).unwrap_err();
            assert_eq!(error.variable(), variable);
            assert_eq!(
                error.to_string(),
                format!(
                    "environment variable {variable}=\"grpc\": grpc needs instrumentation-setup's `otlp-grpc` \
                     feature (tonic); without it use http/protobuf (the collector's port 4318)"
                )
            );
        }
        let config = Config::from_vars([("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]).unwrap();
        assert!(check(&config, no_grpc).is_ok());
        let config = Config::from_vars([("OTEL_EXPORTER_OTLP_HEADERS", "api-key=secret")]).unwrap();
        let error = check(
            &config,
            Features {
                opentelemetry: false,
                ..no_grpc
            },
        )
        .unwrap_err();
        assert_eq!(error.variable(), "OTEL_EXPORTER_OTLP_HEADERS");
        assert_eq!(
            error.to_string(),
            "environment variable OTEL_EXPORTER_OTLP_HEADERS (value not shown): set, but instrumentation-setup was \
             built without its `opentelemetry` feature"
        );
    }
}
