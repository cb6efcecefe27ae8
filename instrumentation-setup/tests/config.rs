//! Issue 47 item 1: every variable's invalid value is an error naming it, never a panic.

use instrumentation_setup::{Config, ConfigError, LogFormat};

fn error(vars: &[(&str, &str)]) -> ConfigError {
    Config::from_vars(vars.iter().copied()).expect_err("an invalid value is an error")
}

#[test]
fn i47_1_nothing_set_is_a_valid_configuration() {
    let config = Config::from_vars([]).unwrap();
    assert!(config.otlp.is_none() && config.sampler.is_none() && config.filter.is_none());
    assert!(config.nats_url.is_none() && config.prometheus.is_none() && config.web.is_none());
    assert!(!config.no_color);
}

#[test]
fn i47_1_otel_service_name_empty() {
    let e = error(&[("OTEL_SERVICE_NAME", " ")]);
    assert_eq!(e.variable(), "OTEL_SERVICE_NAME");
    assert_eq!(
        e.to_string(),
        r#"environment variable OTEL_SERVICE_NAME=" ": expected a service name, not an empty one"#
    );
}

#[test]
fn i47_1_otlp_endpoint_not_a_url() {
    let e = error(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")]);
    assert_eq!(e.variable(), "OTEL_EXPORTER_OTLP_ENDPOINT");
    assert_eq!(e.reason(), "expected an http:// or https:// URL");
    let e = error(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://")]);
    assert_eq!(e.reason(), "expected a host after the scheme (http://collector:4318)");
    let e = error(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x")]);
    assert_eq!(e.variable(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
}

#[test]
fn i47_1_otlp_endpoint_gives_the_traces_path() {
    let config = Config::from_vars([("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")]).unwrap();
    let otlp = config.otlp.unwrap();
    assert_eq!(otlp.traces_endpoint, "http://127.0.0.1:4318/v1/traces");
    assert!(!otlp.json);
    let config = Config::from_vars([
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/spans"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    ])
    .unwrap();
    let otlp = config.otlp.unwrap();
    assert_eq!(otlp.traces_endpoint, "http://b:4318/spans");
    assert!(otlp.json);
}

#[test]
fn i47_1_otlp_protocol() {
    let e = error(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")]);
    assert_eq!(e.variable(), "OTEL_EXPORTER_OTLP_PROTOCOL");
    assert_eq!(e.reason(), "expected http/protobuf or http/json");
    let e = error(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
    assert!(e.reason().starts_with("grpc is not supported yet"), "{e}");
}

#[test]
fn i47_1_traces_sampler() {
    let e = error(&[("OTEL_TRACES_SAMPLER", "sometimes")]);
    assert_eq!(e.variable(), "OTEL_TRACES_SAMPLER");
    assert_eq!(
        e.reason(),
        "expected one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio"
    );
    let e = error(&[("OTEL_TRACES_SAMPLER", "jaeger_remote")]);
    assert!(e.reason().starts_with("this sampler is not supported"), "{e}");
    for (name, ratio) in [("always_on", 1.0), ("always_off", 0.0), ("parentbased_always_off", 0.0)] {
        let s = Config::from_vars([("OTEL_TRACES_SAMPLER", name)])
            .unwrap()
            .sampler
            .unwrap();
        assert_eq!((s.name, s.ratio), (name, ratio));
    }
}

#[test]
fn i47_1_traces_sampler_arg() {
    for bad in ["1.5", "-0.1", "half", "NaN"] {
        let e = error(&[
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", bad),
        ]);
        assert_eq!(e.variable(), "OTEL_TRACES_SAMPLER_ARG", "{bad}");
        assert_eq!(
            e.reason(),
            "expected a ratio from 0.0 to 1.0 (0.25 keeps a quarter of the traces)"
        );
    }
    // Checked also when the sampler is unset: a typo does not pass silently.
    assert_eq!(
        error(&[("OTEL_TRACES_SAMPLER_ARG", "x")]).variable(),
        "OTEL_TRACES_SAMPLER_ARG"
    );
    let s = Config::from_vars([
        ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "0.1"),
    ])
    .unwrap()
    .sampler
    .unwrap();
    assert_eq!(s.ratio, 0.1);
}

#[test]
fn i47_1_rust_log() {
    let e = error(&[("RUST_LOG", "info,sql=loud")]);
    assert_eq!(e.variable(), "RUST_LOG");
    assert!(
        e.to_string()
            .starts_with(r#"environment variable RUST_LOG="info,sql=loud": "#),
        "{e}"
    );
    assert!(Config::from_vars([("RUST_LOG", "warn,sql=debug,my_app::db=trace")])
        .unwrap()
        .filter
        .is_some());
}

#[test]
fn i47_1_no_color_any_non_empty_value() {
    assert!(Config::from_vars([("NO_COLOR", "1")]).unwrap().no_color);
    assert!(Config::from_vars([("NO_COLOR", "false")]).unwrap().no_color);
    assert!(!Config::from_vars([("NO_COLOR", "")]).unwrap().no_color);
}

#[test]
fn i47_1_log_format() {
    let e = error(&[("NOTIFY_LOG_FORMAT", "xml")]);
    assert_eq!(e.variable(), "NOTIFY_LOG_FORMAT");
    assert_eq!(e.reason(), "expected dev, json or logfmt");
    assert_eq!(
        Config::from_vars([("NOTIFY_LOG_FORMAT", "logfmt")]).unwrap().log_format,
        Some(LogFormat::Logfmt)
    );
}

#[test]
fn i47_1_nats_url_is_never_repeated() {
    let e = error(&[("NOTIFY_NATS_URL", "nats://user:hunter2@/x")]);
    assert_eq!(e.variable(), "NOTIFY_NATS_URL");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert_eq!(
        e.to_string(),
        "environment variable NOTIFY_NATS_URL (value not shown): expected NATS servers as nats://host:port, separated by commas"
    );
    assert!(Config::from_vars([("NOTIFY_NATS_URL", "nats://a:4222, nats://b:4222")]).is_ok());
}

#[test]
fn i47_1_nats_prefix() {
    for bad in ["", "a..b", "orders.*", "with space"] {
        assert_eq!(
            error(&[("NOTIFY_NATS_PREFIX", bad)]).variable(),
            "NOTIFY_NATS_PREFIX",
            "{bad:?}"
        );
    }
}

#[test]
fn i47_1_prometheus_address() {
    let e = error(&[("NOTIFY_PROMETHEUS_ADDRESS", "localhost")]);
    assert_eq!(e.variable(), "NOTIFY_PROMETHEUS_ADDRESS");
    assert_eq!(e.reason(), "expected ip:port (127.0.0.1:9464, [::1]:9464)");
}

#[test]
fn i47_1_web_address_and_token() {
    assert_eq!(
        error(&[("NOTIFY_WEB_ADDRESS", ":7878")]).variable(),
        "NOTIFY_WEB_ADDRESS"
    );
    let e = error(&[("NOTIFY_WEB_TOKEN", "")]);
    assert_eq!(e.variable(), "NOTIFY_WEB_TOKEN");
    assert_eq!(
        e.to_string(),
        "environment variable NOTIFY_WEB_TOKEN (value not shown): expected a token, not an empty one"
    );
}

/// A sink's variable in a build without that sink's feature is an error naming it, returned
/// before anything is installed (`cargo test -p instrumentation-setup --no-default-features`).
#[cfg(not(feature = "nats"))]
#[test]
fn i47_1_sink_variable_without_its_feature() {
    use instrumentation_setup::{Setup, SetupError};
    let config = Config::from_vars([("NOTIFY_NATS_URL", "nats://127.0.0.1:4222")]).unwrap();
    match Setup::production().config(config).init() {
        Err(SetupError::Config(e)) => {
            assert_eq!(e.variable(), "NOTIFY_NATS_URL");
            assert_eq!(
                e.reason(),
                "set, but instrumentation-setup was built without its `nats` feature"
            );
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a NATS URL without the nats feature was accepted"),
    }
    // Nothing was installed: the `log` logger is still free.
    assert!(log::set_boxed_logger(Box::new(NoLog)).is_ok());
}

#[cfg(not(feature = "nats"))]
struct NoLog;
#[cfg(not(feature = "nats"))]
impl log::Log for NoLog {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        false
    }
    fn log(&self, _: &log::Record<'_>) {}
    fn flush(&self) {}
}
