//! The OTLP exporter's variables, as the OpenTelemetry specification defines them
//! (<https://opentelemetry.io/docs/specs/otel/protocol/exporter/>): endpoint, protocol, timeout
//! and headers, each with its `_TRACES_` form that wins over the general one.

use std::fmt;
use std::time::Duration;

use super::ConfigError;

/// `OTEL_TRACES_EXPORTER`: `otlp` turns OTLP export on (to the protocol's default endpoint unless
/// one is set), `none` turns it off whatever else is set. Any other exporter is an error.
pub const OTEL_TRACES_EXPORTER: &str = "OTEL_TRACES_EXPORTER";
/// `OTEL_EXPORTER_OTLP_ENDPOINT`: the OTLP base URL. Over HTTP spans go to `<endpoint>/v1/traces`
/// (`http://collector:4318` -> `http://collector:4318/v1/traces`); over gRPC to the URL as given
/// (`http://collector:4317`). Setting it turns OTLP export on.
pub const OTEL_EXPORTER_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the URL spans go to, used as given; wins over the base.
pub const OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the default), `http/json` or `grpc` (cargo
/// feature `otlp-grpc`).
pub const OTEL_EXPORTER_OTLP_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`: as `OTEL_EXPORTER_OTLP_PROTOCOL`, for spans; wins over it.
pub const OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
/// `OTEL_EXPORTER_OTLP_TIMEOUT`: how long one export request may take, in milliseconds (default
/// 10000).
pub const OTEL_EXPORTER_OTLP_TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`: as `OTEL_EXPORTER_OTLP_TIMEOUT`, for spans; wins over it.
pub const OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT";
/// `OTEL_EXPORTER_OTLP_HEADERS`: headers sent with every export request (HTTP headers, or gRPC
/// metadata), as `key=value` pairs separated by commas, values percent-encoded
/// (`api-key=s3cr%3Dt,x-tenant=acme`). Its value is never repeated in an error.
pub const OTEL_EXPORTER_OTLP_HEADERS: &str = "OTEL_EXPORTER_OTLP_HEADERS";
/// `OTEL_EXPORTER_OTLP_TRACES_HEADERS`: as `OTEL_EXPORTER_OTLP_HEADERS`, for spans; replaces it.
pub const OTEL_EXPORTER_OTLP_TRACES_HEADERS: &str = "OTEL_EXPORTER_OTLP_TRACES_HEADERS";

/// The OTLP variables, in the order they are read.
pub(crate) const OTLP_VARIABLES: [&str; 9] = [
    OTEL_TRACES_EXPORTER,
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_EXPORTER_OTLP_TIMEOUT,
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS,
];

/// The specification's default timeout of one export request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How spans travel to the collector (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// `grpc`: OTLP/gRPC (opentelemetry-otlp's tonic exporter; cargo feature `otlp-grpc`), default
    /// endpoint `http://localhost:4317`.
    Grpc,
    /// `http/protobuf` (the default): OTLP/HTTP with protobuf bodies, default endpoint
    /// `http://localhost:4318/v1/traces`.
    HttpProtobuf,
    /// `http/json`: OTLP/HTTP with JSON bodies, default endpoint as `http/protobuf`'s.
    HttpJson,
}

impl OtlpProtocol {
    /// The variable's value naming this protocol (`"grpc"`, `"http/protobuf"`, `"http/json"`).
    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::HttpProtobuf => "http/protobuf",
            OtlpProtocol::HttpJson => "http/json",
        }
    }

    /// The endpoint spans go to when no endpoint variable is set (the specification's defaults).
    pub fn default_traces_endpoint(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "http://localhost:4317",
            OtlpProtocol::HttpProtobuf | OtlpProtocol::HttpJson => "http://localhost:4318/v1/traces",
        }
    }
}

/// The OTLP destination and how to reach it.
#[derive(Clone, PartialEq, Eq)]
pub struct Otlp {
    /// The protocol.
    pub protocol: OtlpProtocol,
    /// The URL spans go to: `http://host:4318/v1/traces` over HTTP, `http://host:4317` over gRPC.
    pub traces_endpoint: String,
    /// The limit of one export request (connection and answer included).
    pub timeout: Duration,
    /// Headers (gRPC metadata) of every export request: names in lower case, values decoded.
    /// `Debug` shows their names only.
    pub headers: Vec<(String, String)>,
    /// The variable that turned export on and its value (for an error about the `opentelemetry`
    /// feature).
    pub(crate) enabled_by: (&'static str, String),
    /// The variable that set the protocol, when one did.
    pub(crate) protocol_from: Option<&'static str>,
}

impl fmt::Debug for Otlp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values are credentials as often as not (`authorization`, `api-key`).
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Otlp")
            .field("protocol", &self.protocol)
            .field("traces_endpoint", &self.traces_endpoint)
            .field("timeout", &self.timeout)
            .field("headers", &headers)
            .finish_non_exhaustive()
    }
}

impl Otlp {
    /// The variable that turned export on (`OTEL_EXPORTER_OTLP_ENDPOINT`, ...) and its value.
    pub(crate) fn enabled_by(&self) -> (&'static str, &str) {
        (self.enabled_by.0, &self.enabled_by.1)
    }

    /// The variable that asked for `grpc`, when the protocol is gRPC.
    pub(crate) fn grpc_from(&self) -> Option<&'static str> {
        (self.protocol == OtlpProtocol::Grpc)
            .then_some(self.protocol_from)
            .flatten()
    }
}

/// The OTLP configuration from `var` (a variable's value by name, or a [`ConfigError`] when it is
/// not UTF-8): `None` when export is off. Every variable that is set is checked, also one a more
/// specific variable overrides (a typo must not pass silently).
pub(crate) fn from_vars(
    var: &dyn Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<Option<Otlp>, ConfigError> {
    let exporter = match var(OTEL_TRACES_EXPORTER)? {
        None => None,
        Some(value) => match value.trim() {
            "otlp" => Some(true),
            "none" => Some(false),
            _ => {
                return Err(ConfigError::new(
                    OTEL_TRACES_EXPORTER,
                    &value,
                    "expected otlp or none (the only exporters this setup has)",
                ))
            }
        },
    };
    let base = var(OTEL_EXPORTER_OTLP_ENDPOINT)?
        .map(|url| check_url(OTEL_EXPORTER_OTLP_ENDPOINT, url))
        .transpose()?;
    let traces = var(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)?
        .map(|url| check_url(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, url))
        .transpose()?;
    let protocol = most_specific(
        var,
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
        OTEL_EXPORTER_OTLP_PROTOCOL,
        protocol,
    )?;
    let timeout = most_specific(
        var,
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
        OTEL_EXPORTER_OTLP_TIMEOUT,
        timeout,
    )?;
    let headers = most_specific(
        var,
        OTEL_EXPORTER_OTLP_TRACES_HEADERS,
        OTEL_EXPORTER_OTLP_HEADERS,
        headers,
    )?;

    // What turned export on: `OTEL_TRACES_EXPORTER=otlp`, else the first OTLP variable set.
    let enabled_by = match exporter {
        Some(false) => return Ok(None),
        Some(true) => Some(OTEL_TRACES_EXPORTER),
        None => [
            (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, traces.is_some()),
            (OTEL_EXPORTER_OTLP_ENDPOINT, base.is_some()),
        ]
        .into_iter()
        .chain(protocol.as_ref().map(|(from, _)| (*from, true)))
        .chain(timeout.as_ref().map(|(from, _)| (*from, true)))
        .chain(headers.as_ref().map(|(from, _)| (*from, true)))
        .find_map(|(variable, set)| set.then_some(variable)),
    };
    let Some(enabled_by) = enabled_by else {
        return Ok(None);
    };
    let enabled_by = (enabled_by, var(enabled_by)?.unwrap_or_default());
    let (protocol_from, protocol) = match protocol {
        Some((from, protocol)) => (Some(from), protocol),
        None => (None, OtlpProtocol::HttpProtobuf),
    };
    let traces_endpoint = match (traces, base) {
        (Some(url), _) => url,
        (None, Some(base)) if protocol == OtlpProtocol::Grpc => base,
        (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
        (None, None) => protocol.default_traces_endpoint().to_owned(),
    };
    Ok(Some(Otlp {
        protocol,
        traces_endpoint,
        timeout: timeout.map_or(DEFAULT_TIMEOUT, |(_, t)| t),
        headers: headers.map(|(_, h)| h).unwrap_or_default(),
        enabled_by,
        protocol_from,
    }))
}

/// The value of `specific` when set, else of `general`, parsed by `parse`; both are parsed when
/// both are set. With the variable it came from.
fn most_specific<T>(
    var: &dyn Fn(&'static str) -> Result<Option<String>, ConfigError>,
    specific: &'static str,
    general: &'static str,
    parse: fn(&'static str, &str) -> Result<T, ConfigError>,
) -> Result<Option<(&'static str, T)>, ConfigError> {
    let general = var(general)?
        .map(|value| parse(general, &value).map(|parsed| (general, parsed)))
        .transpose()?;
    let specific = var(specific)?
        .map(|value| parse(specific, &value).map(|parsed| (specific, parsed)))
        .transpose()?;
    Ok(specific.or(general))
}

fn protocol(variable: &'static str, value: &str) -> Result<OtlpProtocol, ConfigError> {
    match value.trim() {
        "grpc" => Ok(OtlpProtocol::Grpc),
        "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
        "http/json" => Ok(OtlpProtocol::HttpJson),
        _ => Err(ConfigError::new(
            variable,
            value,
            "expected grpc, http/protobuf or http/json",
        )),
    }
}

fn timeout(variable: &'static str, value: &str) -> Result<Duration, ConfigError> {
    match value.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(ConfigError::new(
            variable,
            value,
            "expected a timeout in milliseconds, a whole number above 0 (10000)",
        )),
    }
}

/// `key=value` pairs separated by commas, values percent-encoded (W3C baggage's format, as the
/// specification says); blank entries are skipped, as the SDKs do.
fn headers(variable: &'static str, value: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut headers = Vec::new();
    for (n, entry) in value.split(',').enumerate().map(|(i, e)| (i + 1, e.trim())) {
        if entry.is_empty() {
            continue;
        }
        let Some((name, encoded)) = entry.split_once('=') else {
            return Err(ConfigError::new(
                variable,
                value,
                format!("entry {n} has no `=`; expected key=value pairs separated by commas"),
            ));
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(ConfigError::new(
                variable,
                value,
                format!("entry {n}: expected a header name (letters, digits, `-`, `_`, ...) before `=`"),
            ));
        }
        let decoded = percent_encoding::percent_decode_str(encoded.trim()).decode_utf8();
        let decoded = match decoded {
            Ok(v) if v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)) => v.into_owned(),
            _ => {
                return Err(ConfigError::new(
                    variable,
                    value,
                    format!("entry {n} ({name}): the decoded value must be printable ASCII"),
                ))
            }
        };
        headers.push((name.to_ascii_lowercase(), decoded));
    }
    Ok(headers)
}

/// A byte of an HTTP field name (RFC 9110's `tchar`).
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn check_url(variable: &'static str, url: String) -> Result<String, ConfigError> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| ConfigError::new(variable, &url, "expected an http:// or https:// URL"))?;
    let authority = rest.split('/').next().unwrap_or("");
    if authority.is_empty() || authority.contains(char::is_whitespace) {
        return Err(ConfigError::new(
            variable,
            &url,
            "expected a host after the scheme (http://collector:4318)",
        ));
    }
    if url.starts_with("https://") {
        return Err(ConfigError::new(
            variable,
            &url,
            "https is not supported by this build (no TLS in its OTLP client); use http:// to a local collector",
        ));
    }
    Ok(url)
}
