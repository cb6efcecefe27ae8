//! Issue 47 item 1: every variable's invalid value is an error naming it, never a panic.

use std::time::Duration;

use instrumentation_setup::{Config, ConfigError, LogFormat, OtlpProtocol};

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
    assert_eq!(otlp.protocol, OtlpProtocol::HttpProtobuf);
    assert_eq!(otlp.timeout, Duration::from_secs(10));
    assert!(otlp.headers.is_empty());
    let config = Config::from_vars([
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/spans"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    ])
    .unwrap();
    let otlp = config.otlp.unwrap();
    assert_eq!(otlp.traces_endpoint, "http://b:4318/spans");
    assert_eq!(otlp.protocol, OtlpProtocol::HttpJson);
    // A base with a path keeps it (the specification's rule for OTLP/HTTP).
    let otlp = Config::from_vars([("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318/collector")])
        .unwrap()
        .otlp
        .unwrap();
    assert_eq!(otlp.traces_endpoint, "http://a:4318/collector/v1/traces");
}

/// Over gRPC the base endpoint is used as given (no `/v1/traces`); the `_TRACES_` protocol wins.
#[test]
fn i47_1_otlp_grpc_endpoint_is_used_as_given() {
    let otlp = Config::from_vars([
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ])
    .unwrap()
    .otlp
    .unwrap();
    assert_eq!(
        (otlp.protocol, otlp.traces_endpoint.as_str()),
        (OtlpProtocol::Grpc, "http://collector:4317")
    );
    let otlp = Config::from_vars([
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
    ])
    .unwrap()
    .otlp
    .unwrap();
    assert_eq!(
        (otlp.protocol, otlp.traces_endpoint.as_str()),
        (OtlpProtocol::HttpProtobuf, "http://collector:4318/v1/traces")
    );
}

/// Any OTLP variable, or `OTEL_TRACES_EXPORTER=otlp`, turns export on, to the protocol's default
/// endpoint when none is set; `OTEL_TRACES_EXPORTER=none` turns it off.
#[test]
fn i47_1_otlp_defaults_and_traces_exporter() {
    let endpoint = |vars: &[(&str, &str)]| {
        Config::from_vars(vars.iter().copied())
            .unwrap()
            .otlp
            .map(|o| (o.protocol, o.traces_endpoint))
    };
    assert_eq!(
        endpoint(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]),
        Some((OtlpProtocol::Grpc, "http://localhost:4317".to_owned()))
    );
    assert_eq!(
        endpoint(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]),
        Some((OtlpProtocol::HttpProtobuf, "http://localhost:4318/v1/traces".to_owned()))
    );
    assert_eq!(
        endpoint(&[("OTEL_TRACES_EXPORTER", "otlp")]),
        Some((OtlpProtocol::HttpProtobuf, "http://localhost:4318/v1/traces".to_owned()))
    );
    assert_eq!(
        endpoint(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "500")]),
        Some((OtlpProtocol::HttpProtobuf, "http://localhost:4318/v1/traces".to_owned()))
    );
    assert_eq!(
        endpoint(&[
            ("OTEL_TRACES_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")
        ]),
        None
    );
    assert_eq!(endpoint(&[]), None);
    let e = error(&[("OTEL_TRACES_EXPORTER", "zipkin")]);
    assert_eq!(
        e.to_string(),
        r#"environment variable OTEL_TRACES_EXPORTER="zipkin": expected otlp or none (the only exporters this setup has)"#
    );
}

#[test]
fn i47_1_otlp_protocol() {
    let e = error(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")]);
    assert_eq!(e.variable(), "OTEL_EXPORTER_OTLP_PROTOCOL");
    assert_eq!(e.reason(), "expected grpc, http/protobuf or http/json");
    // The general variable is checked even when the specific one overrides it.
    let e = error(&[
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
    ]);
    assert_eq!(e.variable(), "OTEL_EXPORTER_OTLP_PROTOCOL");
    let e = error(&[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "GRPC ")]);
    assert_eq!(
        e.to_string(),
        r#"environment variable OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="GRPC ": expected grpc, http/protobuf or http/json"#
    );
}

#[test]
fn i47_1_otlp_timeout() {
    let timeout = |vars: &[(&str, &str)]| Config::from_vars(vars.iter().copied()).unwrap().otlp.unwrap().timeout;
    assert_eq!(
        timeout(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "2500")]),
        Duration::from_millis(2500)
    );
    assert_eq!(
        timeout(&[
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700")
        ]),
        Duration::from_millis(700)
    );
    for (variable, value) in [
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "0"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "-5"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1.5"),
    ] {
        let e = error(&[(variable, value)]);
        assert_eq!(
            e.to_string(),
            format!(
                "environment variable {variable}={value:?}: expected a timeout in milliseconds, a whole number \
                 above 0 (10000)"
            )
        );
    }
}

/// Headers: percent-decoded values, names in lower case, blank entries skipped; the specific
/// variable replaces the general one; a bad value is an error that never repeats the value.
#[test]
fn i47_1_otlp_headers() {
    let headers = |vars: &[(&str, &str)]| Config::from_vars(vars.iter().copied()).unwrap().otlp.unwrap().headers;
    assert_eq!(
        headers(&[("OTEL_EXPORTER_OTLP_HEADERS", "Api-Key=s3cr%3Dt, x-tenant = acme%20co ,")]),
        [
            ("api-key".to_owned(), "s3cr=t".to_owned()),
            ("x-tenant".to_owned(), "acme co".to_owned())
        ]
    );
    assert_eq!(
        headers(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"),
        ]),
        [("b".to_owned(), "2".to_owned())]
    );
    let config = Config::from_vars([("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20secret")]).unwrap();
    let debug = format!("{:?}", config.otlp.unwrap());
    assert!(debug.contains("authorization") && !debug.contains("secret"), "{debug}");
    for (value, reason) in [
        (
            "api-key",
            "entry 1 has no `=`; expected key=value pairs separated by commas",
        ),
        (
            "a=1,=secret",
            "entry 2: expected a header name (letters, digits, `-`, `_`, ...) before `=`",
        ),
        (
            "bad key=secret",
            "entry 1: expected a header name (letters, digits, `-`, `_`, ...) before `=`",
        ),
        (
            "k=line%0Abreak-secret",
            "entry 1 (k): the decoded value must be printable ASCII",
        ),
        ("k=%FFsecret", "entry 1 (k): the decoded value must be printable ASCII"),
    ] {
        for variable in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            let e = error(&[(variable, value)]);
            assert_eq!(
                e.to_string(),
                format!("environment variable {variable} (value not shown): {reason}")
            );
        }
    }
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
