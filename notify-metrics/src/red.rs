//! RED metrics of notify-http's events: OpenTelemetry's HTTP semantic conventions
//! (`http.server.request.duration`, `http.client.request.duration`) and their labels.

use std::borrow::Cow;

use notify_core::event::Outcome;
use notify_core::payload::EXCEPTION_KEY;
use notify_core::{Event, Value};
use notify_http::keys;

use crate::histogram::Labels;

/// OpenTelemetry's name of the server's request duration histogram (unit `s`), exposed to
/// Prometheus as `http_server_request_duration_seconds`.
pub const HTTP_SERVER_REQUEST_DURATION: &str = "http.server.request.duration";

/// OpenTelemetry's name of the client's request duration histogram (unit `s`), exposed to
/// Prometheus as `http_client_request_duration_seconds`.
pub const HTTP_CLIENT_REQUEST_DURATION: &str = "http.client.request.duration";

/// The name of the duration histogram of other events ([`PrometheusExporter::events`](crate::PrometheusExporter::events)),
/// exposed as `notify_event_duration_seconds` (label `event`).
pub const NOTIFY_EVENT_DURATION: &str = "notify.event.duration";

/// The bucket bounds, in seconds, that OpenTelemetry's HTTP semantic conventions advise for
/// `http.server.request.duration` and `http.client.request.duration`.
pub const HTTP_DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// The attribute OpenTelemetry's conventions add to a failed request: the status code for a
/// failing status, else the error's type, else `_OTHER`.
pub const ERROR_TYPE: &str = "error.type";

/// The methods the HTTP conventions name; any other is recorded as `_OTHER` (a client sending
/// made-up methods must not make series).
const KNOWN_METHODS: &[&str] = &[
    "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE",
];

/// The server labels (OpenTelemetry attribute -> Prometheus label): `http.request.method`,
/// `http.route` (when the server layer found one: never the raw path, whose values are
/// unbounded), `http.response.status_code` (when a response head was made), `error.type` (when
/// it failed).
pub(crate) fn server_labels(event: &Event) -> Labels {
    let mut labels = Labels::with_capacity(4);
    method(event, &mut labels);
    if let Some(route) = event.payload().get(keys::ROUTE) {
        labels.push((Cow::Borrowed("http_route"), text(route)));
    }
    status_and_error(event, &mut labels);
    labels
}

/// The client labels: `http.request.method`, `server.address`, `server.port` (when the URI named
/// them), `http.response.status_code`, `error.type`, as the conventions list for
/// `http.client.request.duration`.
pub(crate) fn client_labels(event: &Event) -> Labels {
    let mut labels = Labels::with_capacity(5);
    method(event, &mut labels);
    if let Some(address) = event.payload().get(keys::SERVER_ADDRESS) {
        labels.push((Cow::Borrowed("server_address"), text(address)));
    }
    if let Some(port) = event.payload().get(keys::SERVER_PORT) {
        labels.push((Cow::Borrowed("server_port"), text(port)));
    }
    status_and_error(event, &mut labels);
    labels
}

fn method(event: &Event, labels: &mut Labels) {
    let method = match event.payload().get(keys::METHOD).and_then(Value::as_str) {
        Some(m) => KNOWN_METHODS
            .iter()
            .find(|known| **known == m)
            .copied()
            .unwrap_or("_OTHER"),
        None => "_OTHER",
    };
    labels.push((Cow::Borrowed("http_request_method"), Cow::Borrowed(method)));
}

fn status_and_error(event: &Event, labels: &mut Labels) {
    let status = event.payload().get(keys::STATUS_CODE);
    if let Some(status) = status {
        labels.push((Cow::Borrowed("http_response_status_code"), text(status)));
    }
    let error = match (event.payload().get(EXCEPTION_KEY), event.outcome()) {
        // A failing status (notify-http's classifier): the status code, as the conventions say.
        (Some(_), _) if status.is_some() => status.map(text),
        // The inner service's error before a response: its type.
        (Some(exception), _) => Some(match exception.as_exception() {
            Some((type_name, _)) => Cow::Owned(type_name.to_owned()),
            None => Cow::Borrowed("_OTHER"),
        }),
        (None, Outcome::Completed) => None,
        // The client went away or the handler panicked: notify's outcome names it.
        (None, other) => Some(Cow::Borrowed(other.as_str())),
    };
    if let Some(error) = error {
        labels.push((Cow::Borrowed("error_type"), error));
    }
}

/// A payload value as label text (static text borrowed).
fn text(value: &Value) -> Cow<'static, str> {
    match value {
        Value::Str(text) => match text.as_static() {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(text.to_string()),
        },
        other => Cow::Owned(other.to_string()),
    }
}
