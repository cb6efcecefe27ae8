//! Classifiers: which responses make an event a failure (tower-http's `classify` module, for
//! notify's events).
//!
//! A failure is recorded in the event's payload as its `exception` entry
//! ([`Value::Exception`](notify_core::Value::Exception)), which log subscribers and the
//! OpenTelemetry bridge already report as an error (span status `Error`). The event's
//! [`Outcome`](notify_core::event::Outcome) stays about how the request ended (completed, cancelled,
//! panicked), not about its status.

use std::ops::RangeInclusive;

use http::{HeaderMap, StatusCode};
use notify_core::escape::Excerpt;

/// What a [`Classify`] makes of a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Classification {
    /// The request succeeded.
    Success,
    /// The request failed: `kind` becomes the exception's type (`"http.status"`, `"grpc.status"`),
    /// `message` its message (`"500 Internal Server Error"`).
    Failure {
        /// A short, low-cardinality name of the kind of failure.
        kind: &'static str,
        /// What went wrong, for people.
        message: String,
    },
    /// Only the end of the response body can tell (gRPC, whose status travels in trailers):
    /// [`Classify::classify_end_of_stream`] decides.
    AtEndOfStream,
}

/// Decides from a response whether its event is a failure. Cheap to clone (it is cloned into
/// every listened request). Implement it for rules of your own.
///
/// ```
/// use notify_http::classify::{Classification, Classify};
/// use http::{HeaderMap, StatusCode};
///
/// /// 429 Too Many Requests and every 5xx are failures.
/// #[derive(Clone, Copy)]
/// struct Throttled;
/// impl Classify for Throttled {
///     fn classify_response(&self, status: StatusCode, _: &HeaderMap) -> Classification {
///         if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
///             Classification::Failure { kind: "http.status", message: status.to_string() }
///         } else {
///             Classification::Success
///         }
///     }
/// }
/// assert!(matches!(Throttled.classify_response(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new()), Classification::Failure { .. }));
/// ```
pub trait Classify: Clone + Send + Sync + 'static {
    /// Classifies a response from its status and headers, when its head arrives.
    fn classify_response(&self, status: StatusCode, headers: &HeaderMap) -> Classification;

    /// Classifies at the end of a response body that [`Classify::classify_response`] deferred
    /// ([`Classification::AtEndOfStream`]): `trailers` are the body's trailers, `None` when it had
    /// none. Returning [`Classification::AtEndOfStream`] again counts as success. The default is
    /// success.
    fn classify_end_of_stream(&self, trailers: Option<&HeaderMap>) -> Classification {
        let _ = trailers;
        Classification::Success
    }
}

fn status_failure(status: StatusCode) -> Classification {
    Classification::Failure {
        kind: "http.status",
        message: status.to_string(),
    }
}

/// 5xx responses are failures; every other status is a success (tower-http's
/// `ServerErrorsAsFailures`). The server layer's default: a 404 or 401 is the client's mistake,
/// not the service's.
///
/// ```
/// use notify_http::classify::{Classification, Classify, ServerErrorsAsFailures};
/// use http::{HeaderMap, StatusCode};
/// let c = ServerErrorsAsFailures;
/// assert_eq!(c.classify_response(StatusCode::NOT_FOUND, &HeaderMap::new()), Classification::Success);
/// assert_eq!(
///     c.classify_response(StatusCode::BAD_GATEWAY, &HeaderMap::new()),
///     Classification::Failure { kind: "http.status", message: "502 Bad Gateway".into() },
/// );
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerErrorsAsFailures;

impl Classify for ServerErrorsAsFailures {
    #[inline]
    fn classify_response(&self, status: StatusCode, _: &HeaderMap) -> Classification {
        if status.is_server_error() {
            status_failure(status)
        } else {
            Classification::Success
        }
    }
}

/// Statuses in a range are failures (tower-http's `StatusInRangeAsFailures`). The client layer's
/// default is `400..=599`: for the caller, a 4xx answer is an error too (OpenTelemetry's rule for
/// client spans).
///
/// ```
/// use notify_http::classify::{Classification, Classify, StatusInRangeAsFailures};
/// use http::{HeaderMap, StatusCode};
/// let c = StatusInRangeAsFailures::new(400..=599);
/// assert_eq!(c.classify_response(StatusCode::OK, &HeaderMap::new()), Classification::Success);
/// assert!(matches!(c.classify_response(StatusCode::NOT_FOUND, &HeaderMap::new()), Classification::Failure { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusInRangeAsFailures {
    range: RangeInclusive<u16>,
}

impl StatusInRangeAsFailures {
    /// Statuses in `range` (inclusive, e.g. `400..=599`) are failures. An empty range (`500..=400`)
    /// makes every status a success.
    pub fn new(range: RangeInclusive<u16>) -> StatusInRangeAsFailures {
        StatusInRangeAsFailures { range }
    }

    /// The range of failing statuses.
    pub fn range(&self) -> &RangeInclusive<u16> {
        &self.range
    }
}

impl Classify for StatusInRangeAsFailures {
    #[inline]
    fn classify_response(&self, status: StatusCode, _: &HeaderMap) -> Classification {
        if self.range.contains(&status.as_u16()) {
            status_failure(status)
        } else {
            Classification::Success
        }
    }
}

/// gRPC: the `grpc-status` of the response headers (a trailers-only response) or of the
/// trailers decides; 0 (`OK`) is a success, every other code a failure unless declared a success
/// with [`GrpcErrorsAsFailures::with_success`] (tower-http's `GrpcErrorsAsFailures`). A response
/// whose body ends without any `grpc-status`, or with one that is not a number, is a failure; a
/// non-200 HTTP status is a failure (gRPC always answers 200).
///
/// ```
/// use notify_http::classify::{Classification, Classify, GrpcErrorsAsFailures};
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// let c = GrpcErrorsAsFailures::new().with_success(5); // NOT_FOUND is fine here
/// assert_eq!(c.classify_response(StatusCode::OK, &HeaderMap::new()), Classification::AtEndOfStream);
/// let mut trailers = HeaderMap::new();
/// trailers.insert("grpc-status", HeaderValue::from_static("13"));
/// assert_eq!(
///     c.classify_end_of_stream(Some(&trailers)),
///     Classification::Failure { kind: "grpc.status", message: "grpc-status 13 (INTERNAL)".into() },
/// );
/// trailers.insert("grpc-status", HeaderValue::from_static("5"));
/// assert_eq!(c.classify_end_of_stream(Some(&trailers)), Classification::Success);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcErrorsAsFailures {
    /// Bit `n` set: code `n` (0..=16) is a success.
    successes: u32,
}

impl Default for GrpcErrorsAsFailures {
    fn default() -> Self {
        GrpcErrorsAsFailures::new()
    }
}

/// The names of gRPC's status codes 0..=16.
const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

impl GrpcErrorsAsFailures {
    /// Only `OK` (0) is a success.
    pub const fn new() -> GrpcErrorsAsFailures {
        GrpcErrorsAsFailures { successes: 1 }
    }

    /// Counts gRPC status `code` (0..=16, e.g. 5 for `NOT_FOUND`) as a success too. A code outside
    /// 0..=16 is ignored (it stays a failure).
    pub const fn with_success(mut self, code: u8) -> GrpcErrorsAsFailures {
        if code <= 16 {
            self.successes |= 1 << code;
        }
        self
    }

    fn classify_status(&self, headers: &HeaderMap) -> Option<Classification> {
        let value = headers.get("grpc-status")?;
        let code = value.to_str().ok().and_then(|text| text.trim().parse::<u32>().ok());
        Some(match code {
            Some(code) if code <= 16 && self.successes & (1 << code) != 0 => Classification::Success,
            Some(code) => Classification::Failure {
                kind: "grpc.status",
                message: match GRPC_CODES.get(code as usize) {
                    Some(name) => format!("grpc-status {code} ({name})"),
                    None => format!("grpc-status {code}"),
                },
            },
            None => Classification::Failure {
                kind: "grpc.status",
                // The peer's text, of any size: an excerpt of it (escaped, at most 64
                // characters and its length).
                message: format!(
                    "grpc-status \"{}\" is not a number",
                    Excerpt::new(&String::from_utf8_lossy(value.as_bytes()))
                ),
            },
        })
    }
}

impl Classify for GrpcErrorsAsFailures {
    fn classify_response(&self, status: StatusCode, headers: &HeaderMap) -> Classification {
        if status != StatusCode::OK {
            return status_failure(status);
        }
        self.classify_status(headers).unwrap_or(Classification::AtEndOfStream)
    }

    fn classify_end_of_stream(&self, trailers: Option<&HeaderMap>) -> Classification {
        trailers
            .and_then(|t| self.classify_status(t))
            .unwrap_or_else(|| Classification::Failure {
                kind: "grpc.status",
                message: "the response ended without a grpc-status".to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn grpc(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-status", HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn server_errors_are_exactly_the_5xx() {
        for code in [100, 200, 204, 301, 400, 401, 404, 499] {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(
                ServerErrorsAsFailures.classify_response(status, &HeaderMap::new()),
                Classification::Success
            );
        }
        for code in [500, 503, 599] {
            let status = StatusCode::from_u16(code).unwrap();
            assert!(matches!(
                ServerErrorsAsFailures.classify_response(status, &HeaderMap::new()),
                Classification::Failure {
                    kind: "http.status",
                    ..
                }
            ));
        }
    }

    #[test]
    fn a_range_includes_both_ends_and_an_empty_range_fails_nothing() {
        let c = StatusInRangeAsFailures::new(400..=404);
        let class = |code| c.classify_response(StatusCode::from_u16(code).unwrap(), &HeaderMap::new());
        assert_eq!(class(399), Classification::Success);
        assert!(matches!(class(400), Classification::Failure { .. }));
        assert!(matches!(class(404), Classification::Failure { .. }));
        assert_eq!(class(405), Classification::Success);
        #[allow(clippy::reversed_empty_ranges)]
        let empty = StatusInRangeAsFailures::new(500..=400);
        assert_eq!(
            empty.classify_response(StatusCode::INTERNAL_SERVER_ERROR, &HeaderMap::new()),
            Classification::Success
        );
    }

    #[test]
    fn grpc_status_in_headers_trailers_or_missing() {
        let c = GrpcErrorsAsFailures::new();
        assert_eq!(c.classify_response(StatusCode::OK, &grpc("0")), Classification::Success);
        assert_eq!(
            c.classify_response(StatusCode::OK, &grpc("14")),
            Classification::Failure {
                kind: "grpc.status",
                message: "grpc-status 14 (UNAVAILABLE)".into()
            }
        );
        assert_eq!(
            c.classify_response(StatusCode::SERVICE_UNAVAILABLE, &HeaderMap::new()),
            Classification::Failure {
                kind: "http.status",
                message: "503 Service Unavailable".into()
            }
        );
        assert_eq!(c.classify_end_of_stream(Some(&grpc("0"))), Classification::Success);
        assert_eq!(
            c.classify_end_of_stream(Some(&grpc("99"))),
            Classification::Failure {
                kind: "grpc.status",
                message: "grpc-status 99".into()
            }
        );
        assert_eq!(
            c.classify_end_of_stream(Some(&grpc("oops"))),
            Classification::Failure {
                kind: "grpc.status",
                message: "grpc-status \"oops\" is not a number".into()
            }
        );
        assert_eq!(
            c.classify_end_of_stream(None),
            Classification::Failure {
                kind: "grpc.status",
                message: "the response ended without a grpc-status".into()
            }
        );
        // A code declared a success; out-of-range codes cannot be.
        let lenient = c.with_success(5).with_success(40);
        assert_eq!(
            lenient.classify_end_of_stream(Some(&grpc("5"))),
            Classification::Success
        );
        assert_eq!(lenient, GrpcErrorsAsFailures { successes: 1 | 1 << 5 });
    }

    /// Issue 44 item 5: a 64 KiB `grpc-status` made a 64 KiB exception message.
    #[test]
    fn i44_5_a_grpc_status_that_is_no_number_is_quoted_as_an_excerpt() {
        let huge = "9x".repeat(32 * 1024);
        let mut headers = HeaderMap::new();
        headers.insert("grpc-status", HeaderValue::from_str(&huge).unwrap());
        let Classification::Failure { kind, message } =
            GrpcErrorsAsFailures::new().classify_end_of_stream(Some(&headers))
        else {
            panic!("a success")
        };
        assert_eq!(kind, "grpc.status");
        assert_eq!(
            message,
            format!("grpc-status \"{}…[65536 bytes]\" is not a number", "9x".repeat(32))
        );
        assert_eq!(message.len(), 110);
    }
}
