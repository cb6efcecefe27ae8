//! Which headers an event records, and which of them are secrets.

use http::header::{HeaderName, AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION, SET_COOKIE};
use http::HeaderMap;
use notify_core::{Payload, Value};

/// What a sensitive header's value is replaced with: notify-core's default redaction marker.
pub const REDACTED: &str = "[FILTERED]";

/// The headers whose values are never recorded unless told otherwise: `authorization`,
/// `proxy-authorization`, `cookie`, `set-cookie`.
pub fn default_sensitive_headers() -> Vec<HeaderName> {
    vec![AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE, SET_COOKIE]
}

/// Which headers of a request or response go into the payload: none (the default), an allow
/// list ([`Headers::Only`]), a deny list ([`Headers::AllExcept`]) or all ([`Headers::All`]).
/// Whatever is recorded, the sensitive headers' values are [`REDACTED`] and the notifier's
/// redaction policy applies (a key matcher for a header's name matches its attribute key:
/// `Redaction::builder().key("x-api-key")` redacts `http.request.header.x-api-key`).
///
/// ```
/// use http::HeaderName;
/// use notify_http::{Headers, ServerLayer};
/// // Every request header but the two large ones.
/// let layer = ServerLayer::new().request_headers(Headers::AllExcept(vec![
///     HeaderName::from_static("cookie"),
///     HeaderName::from_static("x-forwarded-for"),
/// ]));
/// # drop(layer);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Headers {
    /// Every header.
    All,
    /// The headers named (an allow list; compared case-insensitively, as header names are).
    Only(Vec<HeaderName>),
    /// Every header but those named (a deny list).
    AllExcept(Vec<HeaderName>),
}

/// Headers to record and the sensitive ones among them.
#[derive(Clone, Debug)]
pub(crate) struct HeaderRecording {
    pub(crate) request: Option<Headers>,
    pub(crate) response: Option<Headers>,
    pub(crate) sensitive: Vec<HeaderName>,
}

impl Default for HeaderRecording {
    fn default() -> Self {
        HeaderRecording {
            request: None,
            response: None,
            sensitive: default_sensitive_headers(),
        }
    }
}

impl HeaderRecording {
    /// Records the request headers asked for under `http.request.header.<name>`.
    pub(crate) fn record_request(&self, headers: &HeaderMap, payload: &mut Payload) {
        if let Some(which) = &self.request {
            self.record(which, crate::keys::REQUEST_HEADER_PREFIX, headers, payload);
        }
    }

    /// Records the response headers asked for under `http.response.header.<name>`.
    pub(crate) fn record_response(&self, headers: &HeaderMap, payload: &mut Payload) {
        if let Some(which) = &self.response {
            self.record(which, crate::keys::RESPONSE_HEADER_PREFIX, headers, payload);
        }
    }

    /// Adds the chosen headers of `headers` to `payload`, each as `<prefix><lowercase name>` (the
    /// OpenTelemetry attribute names `http.request.header.<name>`): one value as text, repeated
    /// values as a list, bytes that are not UTF-8 replaced (lossy), sensitive values as
    /// [`REDACTED`]. The notifier's redaction policy applies afterwards, as to every payload.
    fn record(&self, which: &Headers, prefix: &str, headers: &HeaderMap, payload: &mut Payload) {
        match which {
            Headers::All => {
                for name in headers.keys() {
                    self.record_one(prefix, name, headers, payload);
                }
            }
            Headers::AllExcept(excluded) => {
                for name in headers.keys().filter(|name| !excluded.contains(name)) {
                    self.record_one(prefix, name, headers, payload);
                }
            }
            Headers::Only(names) => {
                for name in names {
                    if headers.contains_key(name) {
                        self.record_one(prefix, name, headers, payload);
                    }
                }
            }
        }
    }

    fn record_one(&self, prefix: &str, name: &HeaderName, headers: &HeaderMap, payload: &mut Payload) {
        let key = format!("{prefix}{}", name.as_str());
        let sensitive = self.sensitive.contains(name);
        let text = |value: &http::HeaderValue| -> Value {
            if sensitive {
                Value::from(REDACTED)
            } else {
                Value::from(String::from_utf8_lossy(value.as_bytes()).into_owned())
            }
        };
        let mut values = headers.get_all(name).iter();
        let value = match (values.next(), values.next()) {
            (None, _) => return,
            (Some(one), None) => text(one),
            (Some(first), Some(second)) => {
                let mut list = vec![text(first), text(second)];
                list.extend(values.map(text));
                Value::List(list)
            }
        };
        payload.insert(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn sensitive_values_are_replaced_repeated_ones_listed_and_bad_bytes_replaced() {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer secret"));
        headers.append("x-tag", HeaderValue::from_static("a"));
        headers.append("x-tag", HeaderValue::from_static("b"));
        headers.insert("x-raw", HeaderValue::from_bytes(b"caf\xe9").unwrap());
        headers.insert("x-skip", HeaderValue::from_static("no"));
        let recording = HeaderRecording {
            request: Some(Headers::Only(vec![
                AUTHORIZATION,
                HeaderName::from_static("x-tag"),
                HeaderName::from_static("x-raw"),
                HeaderName::from_static("x-absent"),
            ])),
            ..HeaderRecording::default()
        };
        let mut payload = Payload::new();
        recording.record_response(&headers, &mut payload);
        assert!(payload.is_empty(), "no response headers were asked for");
        recording.record_request(&headers, &mut payload);
        assert_eq!(payload.len(), 3);
        assert_eq!(
            payload.get("http.request.header.authorization"),
            Some(&Value::from(REDACTED))
        );
        assert_eq!(
            payload.get("http.request.header.x-tag"),
            Some(&Value::from(vec!["a", "b"]))
        );
        assert_eq!(
            payload.get("http.request.header.x-raw").and_then(Value::as_str),
            Some("caf\u{fffd}")
        );

        let all = HeaderRecording {
            response: Some(Headers::All),
            sensitive: Vec::new(),
            ..HeaderRecording::default()
        };
        let mut payload = Payload::new();
        all.record_response(&headers, &mut payload);
        assert_eq!(payload.len(), 4);
        assert_eq!(
            payload
                .get("http.response.header.authorization")
                .and_then(Value::as_str),
            Some("Bearer secret")
        );
    }

    #[test]
    fn i47_4_deny_list_records_every_header_but_those_named() {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer secret"));
        headers.append("x-tag", HeaderValue::from_static("a"));
        headers.insert("x-raw", HeaderValue::from_static("r"));
        headers.insert("x-skip", HeaderValue::from_static("no"));
        let except = HeaderRecording {
            request: Some(Headers::AllExcept(vec![
                HeaderName::from_static("x-tag"),
                AUTHORIZATION,
            ])),
            ..HeaderRecording::default()
        };
        let mut payload = Payload::new();
        except.record_request(&headers, &mut payload);
        let mut keys: Vec<&str> = payload.iter().map(|(k, _)| k).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["http.request.header.x-raw", "http.request.header.x-skip"]);

        assert_eq!(
            payload.get("http.request.header.x-skip").and_then(Value::as_str),
            Some("no")
        );
    }
}
