//! The payload keys of the events, OpenTelemetry's semantic-convention attribute names, so that
//! the OpenTelemetry bridge exports them as they are.

/// The kind of the event: `"server"` for a request served, `"client"` for a call made. The
/// OpenTelemetry bridge makes it the span kind.
pub const KIND: &str = "otel.kind";
/// The request method, as text (`"GET"`).
pub const METHOD: &str = "http.request.method";
/// The route template (`"/books/{id}"`), when the server layer has a
/// [`route_from`](crate::ServerLayer::route_from) that finds one.
pub const ROUTE: &str = "http.route";
/// The path of the request URI (`"/books/42"`), without the query.
pub const PATH: &str = "url.path";
/// The host a client call goes to (client events).
pub const SERVER_ADDRESS: &str = "server.address";
/// The port of a client call, when the URI names one (client events).
pub const SERVER_PORT: &str = "server.port";
/// The response status, an integer (`404`).
pub const STATUS_CODE: &str = "http.response.status_code";
/// The data bytes of the response body, an integer, as counted while it was sent (server) or
/// read (client): a body cut short counts what went through.
pub const BODY_SIZE: &str = "http.response.body.size";
/// Request headers asked for are recorded under this prefix and the lowercase header name.
pub const REQUEST_HEADER_PREFIX: &str = "http.request.header.";
/// Response headers asked for are recorded under this prefix and the lowercase header name.
pub const RESPONSE_HEADER_PREFIX: &str = "http.response.header.";
/// The prefix of the W3C baggage entries a server layer records when asked
/// ([`ServerLayer::record_baggage`](crate::ServerLayer::record_baggage)): `baggage.<key>`.
pub const BAGGAGE_PREFIX: &str = "baggage.";

/// The method as payload text: the standard methods as static text (no allocation), others
/// copied.
pub(crate) fn method(method: &http::Method) -> notify_core::Value {
    use http::Method;
    let known = match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => return notify_core::Value::from(method.as_str().to_owned()),
    };
    notify_core::Value::from(known)
}
