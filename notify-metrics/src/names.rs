//! OpenTelemetry names as Prometheus names: what OpenTelemetry's Prometheus exporters (the
//! Collector's `prometheus` exporter, opentelemetry-go's and -java's) write for a metric name and
//! an attribute key, so a dashboard written for one works for the other.
//!
//! * An attribute key becomes a label name: every character other than `[a-zA-Z0-9_]` becomes
//!   `_` (`http.route` -> `http_route`); a key starting with a digit gets `key_` in front
//!   (`2xx` -> `key_2xx`), one starting with `__` (which Prometheus reserves) gets `key`
//!   (`__x` -> `key__x`). A key that is a Prometheus label name already stays as it is (the
//!   Collector would also turn `_id` into `key_id`; here `_id` stays, as notify-metrics always
//!   wrote it).
//! * A metric name: the same characters become `_`, runs of `_` become one; the unit's suffix is
//!   appended unless the name ends with it already (`http.server.request.duration` with unit `s`
//!   -> `http_server_request_duration_seconds`); a name starting with a digit gets `_` in front.

/// The label name OpenTelemetry's Prometheus exporters write for the attribute key `key`
/// (`"http.response.status_code"` -> `"http_response_status_code"`). `None` for an empty key,
/// which has no label name.
///
/// ```
/// use notify_metrics::prometheus_label_name;
/// assert_eq!(prometheus_label_name("http.route").as_deref(), Some("http_route"));
/// assert_eq!(prometheus_label_name("table").as_deref(), Some("table"));
/// assert_eq!(prometheus_label_name("2xx").as_deref(), Some("key_2xx"));
/// assert_eq!(prometheus_label_name("__name__").as_deref(), Some("key__name__"));
/// assert_eq!(prometheus_label_name("_id").as_deref(), Some("_id"));
/// assert_eq!(prometheus_label_name("çà-va").as_deref(), Some("key___va"));
/// assert_eq!(prometheus_label_name(""), None);
/// ```
pub fn prometheus_label_name(key: &str) -> Option<String> {
    let first = key.chars().next()?;
    if is_label_name(key) {
        return Some(key.to_owned());
    }
    let mut name: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect();
    if first.is_ascii_digit() {
        name.insert_str(0, "key_");
    } else if name.starts_with("__") {
        name.insert_str(0, "key");
    }
    Some(name)
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`: a Prometheus label name.
fn is_label_name(key: &str) -> bool {
    let mut bytes = key.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') && !key.starts_with("__")
}

/// The Prometheus name OpenTelemetry's Prometheus exporters write for the metric `name` with the
/// unit `unit` (UCUM, as OpenTelemetry writes units: `"s"`, `"ms"`, `"By"`, `"1"`, `"{request}"`),
/// before a counter's `_total`: `("http.server.request.duration", "s")` ->
/// `"http_server_request_duration_seconds"`. Units in braces (annotations) add nothing; `"1"` adds
/// nothing (a gauge's `_ratio` is left to the caller); another unit is added as written, its
/// characters sanitized (`"m/s"` -> `_m_per_s`). `None` for an empty name.
///
/// ```
/// use notify_metrics::prometheus_metric_name;
/// assert_eq!(prometheus_metric_name("http.server.request.duration", "s").as_deref(), Some("http_server_request_duration_seconds"));
/// assert_eq!(prometheus_metric_name("db.client.operation.duration_seconds", "s").as_deref(), Some("db_client_operation_duration_seconds"));
/// assert_eq!(prometheus_metric_name("http.server.response.body.size", "By").as_deref(), Some("http_server_response_body_size_bytes"));
/// assert_eq!(prometheus_metric_name("queue..depth", "{message}").as_deref(), Some("queue_depth"));
/// assert_eq!(prometheus_metric_name("2fa.checks", "1").as_deref(), Some("_2fa_checks"));
/// assert_eq!(prometheus_metric_name("", "s"), None);
/// ```
pub fn prometheus_metric_name(name: &str, unit: &str) -> Option<String> {
    if name.is_empty() {
        return None;
    }
    let mut out = collapse(name);
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if let Some(suffix) = unit_suffix(unit) {
        if !out.ends_with(&format!("_{suffix}")) {
            if !out.ends_with('_') {
                out.push('_');
            }
            out.push_str(&suffix);
        }
    }
    Some(out)
}

/// `text` with every character outside `[a-zA-Z0-9_:]` as `_` and runs of `_` as one.
fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = if c.is_ascii_alphanumeric() || c == ':' { c } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    out
}

/// The suffix of a UCUM unit, as OpenTelemetry's Prometheus translation names it.
fn unit_suffix(unit: &str) -> Option<String> {
    let known = match unit {
        "" | "1" => return None,
        u if u.starts_with('{') && u.ends_with('}') => return None,
        "d" => "days",
        "h" => "hours",
        "min" => "minutes",
        "s" => "seconds",
        "ms" => "milliseconds",
        "us" => "microseconds",
        "ns" => "nanoseconds",
        "By" => "bytes",
        "KiBy" => "kibibytes",
        "MiBy" => "mebibytes",
        "GiBy" => "gibibytes",
        "KBy" => "kilobytes",
        "MBy" => "megabytes",
        "GBy" => "gigabytes",
        "m" => "meters",
        "V" => "volts",
        "A" => "amperes",
        "J" => "joules",
        "W" => "watts",
        "g" => "grams",
        "Cel" => "celsius",
        "Hz" => "hertz",
        "%" => "percent",
        other => {
            let spelled = other.replace('/', "_per_");
            let spelled = collapse(&spelled);
            return Some(spelled.trim_matches('_').to_owned()).filter(|s| !s.is_empty());
        }
    };
    Some(known.to_owned())
}
