//! Redaction (issue 17): a secret planted in a payload, a macro field, an error recorded by `err`
//! and a value recorded during the body is absent from what every subscriber kind receives and
//! from the serialised events, for every way an event is made.
//! Macro tests use the global notifier, whose policy is set once for this test binary.
//! Needs the features `redaction` and `serde` (Cargo.toml's `required-features`: what subscribers
//! saw is checked as JSON too); the macro's test also `macros`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

#[cfg(feature = "macros")]
use notify_core::instrument_event;
use notify_core::{
    context::EventContext, context::TransactionId, event::EventId, record, redaction::Redaction,
    redaction::RedactionBuilder, redaction::RedactionError, Event, EventedSubscriber, Notifier, OwnedEventSubscriber,
    Payload, SilenceableSubscriber, Subscriber, Value,
};

const SECRET: &str = "hunter2-s3cr3t";

fn policy() -> Redaction {
    Redaction::builder()
        .key("password")
        .key_glob("*_token")
        .key_regex("(?i)^authorization$")
        .value_regex(r"Bearer \S+")
        .build()
        .expect("valid policy")
}

/// Everything any subscriber saw, as text: `Debug` of each payload and JSON of each event.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn push(&self, what: &str, payload: &Payload) {
        let json = serde_json::to_string(payload).expect("payload serialises");
        self.0.lock().unwrap().push(format!("{what}: {payload:?} {json}"));
    }

    fn push_event(&self, what: &str, event: &Event) {
        let json = serde_json::to_string(event).expect("event serialises");
        self.0.lock().unwrap().push(format!("{what}: {event:?} {json}"));
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// Asserts that every kind saw something, none saw the secret, and the marker shows.
    fn assert_clean(&self, kinds: &[&str]) {
        let lines = self.lines();
        for kind in kinds {
            assert!(
                lines.iter().any(|l| l.starts_with(kind)),
                "{kind} saw nothing: {lines:#?}"
            );
        }
        for line in &lines {
            assert!(!line.contains(SECRET), "secret leaked: {line}");
            assert!(!line.contains("hunter2"), "part of the secret leaked: {line}");
        }
        assert!(lines.iter().any(|l| l.contains("[FILTERED]")), "{lines:#?}");
    }
}

struct Evented(Seen, &'static str);

impl EventedSubscriber for Evented {
    fn start(&self, _: &str, _: &EventContext, payload: &Payload) {
        self.0.push(&format!("{} start", self.1), payload);
    }
    fn finish(&self, _: &str, _: &EventContext, payload: &Payload) {
        self.0.push(&format!("{} finish", self.1), payload);
    }
}

impl SilenceableSubscriber for Evented {
    fn silenced(&self, _: &str) -> bool {
        false
    }
}

struct Owned(Seen);

impl OwnedEventSubscriber for Owned {
    fn deliver(&self, event: &Arc<Event>) {
        self.0.push_event("owned", event);
    }
}

const ALL_KINDS: [&str; 8] = [
    "timed",
    "monotonic",
    "event",
    "owned",
    "evented start",
    "evented finish",
    "silenceable start",
    "silenceable finish",
];
const PUBLISHED_KINDS: [&str; 4] = ["timed", "monotonic", "event", "owned"];

/// Subscribes one subscriber of every kind to `pattern` on `notifier`.
fn subscribe_all_kinds(notifier: &Notifier, pattern: &str) -> Seen {
    let seen = Seen::default();
    let s = seen.clone();
    let _ = notifier.subscribe(
        pattern,
        Subscriber::timed(
            move |_: &str, _: SystemTime, _: SystemTime, _: TransactionId, p: &Payload| s.push("timed", p),
        ),
    );
    let s = seen.clone();
    let _ = notifier.subscribe(
        pattern,
        Subscriber::monotonic(move |_: &str, _: Instant, _: Instant, _: TransactionId, p: &Payload| {
            s.push("monotonic", p)
        }),
    );
    let s = seen.clone();
    let _ = notifier.subscribe(pattern, Subscriber::event(move |e: &Event| s.push_event("event", e)));
    let _ = notifier.subscribe(pattern, Subscriber::owned(Owned(seen.clone())));
    let _ = notifier.subscribe(pattern, Subscriber::evented(Evented(seen.clone(), "evented")));
    let _ = notifier.subscribe(pattern, Subscriber::silenceable(Evented(seen.clone(), "silenceable")));
    seen
}

fn redacting_notifier(pattern: &str) -> (Notifier, Seen) {
    let notifier = Notifier::new();
    notifier.set_redaction(policy());
    let seen = subscribe_all_kinds(&notifier, pattern);
    (notifier, seen)
}

#[test]
fn instrument_payload_and_recorded_values_are_redacted_for_every_kind() {
    let (notifier, seen) = redacting_notifier("login.app");
    notifier.instrument(
        "login.app",
        || Payload::new().with("user", "ann").with("password", SECRET),
        |payload| {
            payload.insert("session_token", SECRET.to_owned());
            record("header", format!("Bearer {SECRET}"));
        },
    );
    seen.assert_clean(&ALL_KINDS);
    let lines = seen.lines();
    assert!(
        lines
            .iter()
            .all(|l| !l.starts_with("event:") || l.contains("\"user\":\"ann\"")),
        "{lines:#?}"
    );
    // The entries recorded during the body are there, redacted.
    let finish = lines.iter().find(|l| l.starts_with("evented finish")).unwrap();
    assert!(finish.contains("\"session_token\":\"[FILTERED]\""), "{finish}");
    assert!(finish.contains("\"header\":\"[FILTERED]\""), "{finish}");
}

#[test]
fn instrument_result_error_message_is_redacted() {
    let (notifier, seen) = redacting_notifier("charge.app");
    let result: Result<(), String> = notifier.instrument_result("charge.app", Payload::new, |_| {
        Err(format!("gateway refused Bearer {SECRET}"))
    });
    assert!(result.is_err());
    seen.assert_clean(&ALL_KINDS);
}

#[test]
fn handle_payload_set_before_and_after_start_is_redacted() {
    let (notifier, seen) = redacting_notifier("job.app");
    let mut handle = notifier.build_handle("job.app", Payload::new().with("password", SECRET));
    handle.start().unwrap();
    handle.payload_mut().insert("api_token", SECRET.to_owned());
    handle.record_error(&format!("failed with Bearer {SECRET}"));
    handle.finish().unwrap();
    seen.assert_clean(&ALL_KINDS);
}

#[test]
fn publish_publish_event_and_remote_events_are_redacted() {
    let (notifier, seen) = redacting_notifier("cache.app");
    let now = SystemTime::now();
    notifier.publish(
        "cache.app",
        now,
        now,
        TransactionId::new(1),
        Payload::new().with("password", SECRET),
    );
    let at = Instant::now();
    notifier.publish_event(Event::new(
        "cache.app",
        at,
        at,
        Payload::new().with("Authorization", SECRET),
    ));
    let remote = Event::at_wall_clock(
        "cache.app",
        now,
        Duration::from_micros(3),
        Payload::new().with("auth", format!("Bearer {SECRET}")),
    )
    .with_ids(EventId::new(7), None, TransactionId::new(9));
    notifier.publish_event(remote);
    seen.assert_clean(&PUBLISHED_KINDS);
    assert_eq!(seen.lines().iter().filter(|l| l.starts_with("event:")).count(), 3);
}

// ---------------------------------------------------------------------------------------------
// The macro (global notifier)
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "macros")]
fn global() -> &'static Notifier {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| Notifier::global().set_redaction(policy()));
    Notifier::global()
}

#[cfg(feature = "macros")]
#[instrument_event("login.redaction_macro", fields(user, password = password.to_owned()), err, ret)]
fn log_in(user: &str, password: &str) -> Result<String, String> {
    record("header", format!("Bearer {password}"));
    if user == "ann" {
        Ok(format!("Bearer {password}"))
    } else {
        Err(format!("no such user; Bearer {password}"))
    }
}

#[test]
#[cfg(feature = "macros")]
fn macro_fields_err_ret_and_recorded_values_are_redacted() {
    let notifier = global();
    let seen = subscribe_all_kinds(notifier, "login.redaction_macro");
    assert!(log_in("ann", SECRET).is_ok());
    assert!(log_in("bob", SECRET).is_err());
    seen.assert_clean(&ALL_KINDS);
    let events = seen
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("event:"))
        .collect::<Vec<_>>();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(events[0].contains("\"user\":\"ann\""), "{}", events[0]);
    assert!(events[1].contains("\"user\":\"bob\""), "{}", events[1]);
}

// ---------------------------------------------------------------------------------------------
// Policy behaviour
// ---------------------------------------------------------------------------------------------

#[test]
fn keyed_hash_is_equal_for_equal_values_and_applied_once_per_event() {
    let notifier = Notifier::new();
    notifier.set_redaction(
        Redaction::builder()
            .key("password")
            .keyed_hash(b"k".repeat(32))
            .build()
            .unwrap(),
    );
    let seen = subscribe_all_kinds(&notifier, "hash.app");
    for password in [SECRET, SECRET, "other"] {
        notifier.instrument("hash.app", || Payload::new().with("password", password), |_| ());
    }
    seen.assert_clean_of_secret_only();
    let hashes = |kind: &str| {
        seen.lines()
            .iter()
            .filter(|l| l.starts_with(kind))
            .map(|l| {
                let at = l.find("hmac:").unwrap_or_else(|| panic!("no hash in {l}"));
                l[at..at + 21].to_owned()
            })
            .collect::<Vec<_>>()
    };
    let started = hashes("evented start");
    assert_eq!(started.len(), 3);
    assert_eq!(started[0], started[1], "equal values, equal hashes");
    assert_ne!(started[0], started[2]);
    // Hashed once: finish and the event see what start saw, not a hash of the hash.
    assert_eq!(hashes("evented finish"), started);
    assert_eq!(hashes("timed"), started);
    let mut alone = Payload::new().with("password", SECRET);
    notifier.redaction().unwrap().redact(&mut alone);
    assert_eq!(alone.get("password"), Some(&Value::from(started[0].clone())));
    // Another key gives other hashes.
    let other = Redaction::builder()
        .key("password")
        .keyed_hash(b"j".repeat(32))
        .build()
        .unwrap();
    let mut p = Payload::new().with("password", SECRET);
    other.redact(&mut p);
    assert_ne!(p.get("password"), alone.get("password"));
}

impl Seen {
    fn assert_clean_of_secret_only(&self) {
        for line in self.lines() {
            assert!(!line.contains(SECRET), "secret leaked: {line}");
        }
    }
}

#[test]
fn invalid_pattern_is_an_error_naming_it_and_changes_nothing() {
    let notifier = Notifier::new();
    notifier.set_redaction(Redaction::builder().key("password").marker("***").build().unwrap());
    let err: RedactionError = Redaction::builder()
        .key("token")
        .key_regex("(unclosed")
        .value_regex("fine")
        .build()
        .unwrap_err();
    assert_eq!(err.pattern, "(unclosed");
    assert_eq!(
        err.to_string(),
        "invalid redaction pattern `(unclosed` at byte 0: unclosed group"
    );
    let err = Redaction::builder().value_regex("[z-a]").build().unwrap_err();
    assert_eq!(err.pattern, "[z-a]");
    let err = Redaction::builder().key_glob("").build().unwrap_err();
    assert_eq!(err.reason, "empty pattern");
    // The notifier keeps its policy.
    let seen = subscribe_all_kinds(&notifier, "keep.app");
    notifier.instrument(
        "keep.app",
        || Payload::new().with("password", SECRET).with("token", "visible"),
        |_| (),
    );
    seen.assert_clean_of_secret_only();
    let lines = seen.lines();
    let event = lines.iter().find(|l| l.starts_with("event:")).unwrap();
    assert!(event.contains("\"password\":\"***\""), "{event}");
    assert!(event.contains("\"token\":\"visible\""), "{event}");
}

#[test]
fn key_matchers_globs_regexes_case_insensitivity_and_value_kinds() {
    let policy = Redaction::builder()
        .key("Password")
        .key_glob("x-*-key")
        .key_regex("secret")
        .value_regex(r"^4[0-9]{15}$")
        .case_insensitive(true)
        .build()
        .unwrap();
    let mut p = Payload::new()
        .with("PASSWORD", "a")
        .with("X-Api-Key", "b")
        .with("client_SECRET_id", 5_u64)
        .with("card", 4_111_111_111_111_111_u64)
        .with("count", 4_u64)
        .with("x-api-keys", "kept")
        .with("flag", true);
    assert_eq!(policy.redact(&mut p), 4);
    let text = |k: &str| p.get(k).unwrap().to_string();
    assert_eq!(text("PASSWORD"), "[FILTERED]");
    assert_eq!(text("X-Api-Key"), "[FILTERED]");
    assert_eq!(text("client_SECRET_id"), "[FILTERED]");
    assert_eq!(text("card"), "[FILTERED]");
    assert_eq!(p.get("count"), Some(&Value::U64(4)));
    assert_eq!(text("x-api-keys"), "kept");
    assert_eq!(p.get("flag"), Some(&Value::Bool(true)));
    assert_eq!(
        p.keys().collect::<Vec<_>>(),
        [
            "PASSWORD",
            "X-Api-Key",
            "client_SECRET_id",
            "card",
            "count",
            "x-api-keys",
            "flag"
        ]
    );

    // Case-sensitive by default; an error keeps its type name, its message is replaced.
    let strict = Redaction::builder()
        .key("Password")
        .value_regex("Bearer")
        .build()
        .unwrap();
    let mut p = Payload::new().with("password", "a");
    p.record_error(&"Bearer x".to_owned());
    assert_eq!(strict.redact(&mut p), 1);
    assert_eq!(p.get("password"), Some(&Value::from("a")));
    match p.get("exception") {
        Some(Value::Exception { type_name, message }) => {
            assert_eq!(type_name, "alloc::string::String");
            assert_eq!(message, "[FILTERED]");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn clearing_the_policy_stops_redaction() {
    let (notifier, seen) = redacting_notifier("clear.app");
    assert!(notifier.clear_redaction().is_some());
    assert!(notifier.redaction().is_none());
    notifier.instrument("clear.app", || Payload::new().with("password", "plain"), |_| ());
    assert!(seen.lines().iter().all(|l| l.contains("plain")));
}

// ---------------------------------------------------------------------------------------------
// Nested values (issue 17, item 1): lists and maps are redacted inside
// ---------------------------------------------------------------------------------------------

/// A payload with secrets at every depth: under a matched key of a nested map, in a map inside a
/// list, as a list item a value pattern matches, as a number inside a list, and a whole map under
/// a matched key.
fn nested_secrets() -> Payload {
    Payload::new()
        .with("user", Payload::new().with("name", "ann").with("password", SECRET))
        .with(
            "sessions",
            Value::List(vec![
                Payload::new().with("id", 1_u64).with("refresh_token", SECRET).into(),
                Payload::new()
                    .with("id", 2_u64)
                    .with(
                        "meta",
                        Payload::new().with("Authorization", SECRET).with("ip", "10.0.0.1"),
                    )
                    .into(),
            ]),
        )
        .with("headers", vec![format!("Bearer {SECRET}"), "Accept: */*".to_owned()])
        .with("cards", vec![4_111_111_111_111_111_u64, 7])
        .with("password", Payload::new().with("old", SECRET).with("new", SECRET))
        .with(
            "ok",
            Value::List(vec![Value::Null, true.into(), Value::List(vec!["plain".into()])]),
        )
}

/// `nested_secrets()` as the policy below leaves it, with `r` the replacement of each secret.
fn nested_redacted(r: impl Fn(&str) -> Value) -> Payload {
    Payload::new()
        .with("user", Payload::new().with("name", "ann").with("password", r(SECRET)))
        .with(
            "sessions",
            Value::List(vec![
                Payload::new().with("id", 1_u64).with("refresh_token", r(SECRET)).into(),
                Payload::new()
                    .with("id", 2_u64)
                    .with(
                        "meta",
                        Payload::new().with("Authorization", r(SECRET)).with("ip", "10.0.0.1"),
                    )
                    .into(),
            ]),
        )
        .with(
            "headers",
            Value::List(vec![r(&format!("Bearer {SECRET}")), "Accept: */*".into()]),
        )
        .with("cards", Value::List(vec![r("4111111111111111"), 7_u64.into()]))
        .with("password", r(&format!("{{old: {SECRET}, new: {SECRET}}}")))
        .with(
            "ok",
            Value::List(vec![Value::Null, true.into(), Value::List(vec!["plain".into()])]),
        )
}

fn nested_policy() -> RedactionBuilder {
    Redaction::builder()
        .key("password")
        .key_glob("*_token")
        .key_regex("(?i)^authorization$")
        .value_regex(r"Bearer \S+")
        .value_regex(r"^4[0-9]{15}$")
}

#[test]
fn nested_lists_and_maps_are_redacted_inside_to_the_exact_structure() {
    let policy = nested_policy().build().unwrap();
    let mut p = nested_secrets();
    // user.password, sessions[0].refresh_token, sessions[1].meta.Authorization, headers[0],
    // cards[0], and the whole map under "password".
    assert_eq!(policy.redact(&mut p), 6);
    assert_eq!(p, nested_redacted(|_| Value::from("[FILTERED]")));
    // Redacting again leaves the same structure (matched keys get the marker again).
    policy.redact(&mut p);
    assert_eq!(p, nested_redacted(|_| Value::from("[FILTERED]")));

    // Key patterns reach map keys at any depth even without value patterns.
    let keys_only = Redaction::builder().key("password").build().unwrap();
    let mut deep = Payload::new().with(
        "a",
        Value::List(vec![Value::List(vec![Payload::new()
            .with("b", Payload::new().with("password", 42_u64))
            .into()])]),
    );
    assert_eq!(keys_only.redact(&mut deep), 1);
    assert_eq!(
        deep,
        Payload::new().with(
            "a",
            Value::List(vec![Value::List(vec![Payload::new()
                .with("b", Payload::new().with("password", "[FILTERED]"))
                .into()])]),
        )
    );
}

#[test]
fn keyed_hash_works_inside_nested_values() {
    let policy = nested_policy().keyed_hash(b"k".repeat(32)).build().unwrap();
    let hash = |text: &str| {
        let mut alone = Payload::new().with("password", text.to_owned());
        policy.redact(&mut alone);
        alone.get("password").unwrap().clone()
    };
    assert!(hash(SECRET).as_str().unwrap().starts_with("hmac:"));
    let mut p = nested_secrets();
    assert_eq!(policy.redact(&mut p), 6);
    // Equal secrets hash equal at every depth (and as a top-level value).
    assert_eq!(p, nested_redacted(hash));
}

/// Captures the payload each subscriber kind saw, in order.
#[derive(Clone, Default)]
struct Payloads(Arc<Mutex<Vec<(&'static str, Payload)>>>);

struct EventedPayloads(Payloads);

impl EventedSubscriber for EventedPayloads {
    fn start(&self, _: &str, _: &EventContext, payload: &Payload) {
        (self.0).0.lock().unwrap().push(("start", payload.clone()));
    }
    fn finish(&self, _: &str, _: &EventContext, payload: &Payload) {
        (self.0).0.lock().unwrap().push(("finish", payload.clone()));
    }
}

#[test]
fn nested_values_are_redacted_for_every_kind_and_hashed_once_per_event() {
    let notifier = Notifier::new();
    notifier.set_redaction(nested_policy().keyed_hash(b"k".repeat(32)).build().unwrap());
    let seen = subscribe_all_kinds(&notifier, "nested.app");
    let payloads = Payloads::default();
    let _ = notifier.subscribe("nested.app", Subscriber::evented(EventedPayloads(payloads.clone())));
    let p = payloads.clone();
    let _ = notifier.subscribe(
        "nested.app",
        Subscriber::event(move |e: &Event| p.0.lock().unwrap().push(("event", e.payload().clone()))),
    );
    notifier.instrument("nested.app", nested_secrets, |payload| {
        // The body changes a sibling inside a nested map that was redacted at start, and records
        // a nested secret: the hash made at start stays as it is, the new secret is hashed.
        let Some(Value::Map(user)) = payload.get_mut("user") else {
            panic!("user is a map")
        };
        user.insert("name", "bob");
        record("late", Payload::new().with("api_token", SECRET));
    });
    seen.assert_clean_of_secret_only();
    assert!(seen.lines().iter().any(|l| l.starts_with("owned")));

    let policy = notifier.redaction().unwrap();
    let hash = |text: &str| {
        let mut alone = Payload::new().with("password", text.to_owned());
        policy.redact(&mut alone);
        alone.get("password").unwrap().clone()
    };
    let started = nested_redacted(hash);
    let mut finished = started.clone();
    let Some(Value::Map(user)) = finished.get_mut("user") else {
        panic!()
    };
    user.insert("name", "bob");
    finished.insert("late", Payload::new().with("api_token", hash(SECRET)));
    let payloads = payloads.0.lock().unwrap().clone();
    assert_eq!(
        payloads,
        [("start", started), ("finish", finished.clone()), ("event", finished)]
    );
}

/// Issue 47 item 4: header keys and redaction keys meet. A header notify-http records as
/// `http.request.header.<name>` (OpenTelemetry's attribute) is redacted by a key matcher for the
/// header's name alone, exact, glob or regex, in requests and responses; other keys are not
/// matched by their last segment (`user.x-api-key` is not a header attribute).
#[test]
fn i47_4_header_attributes_are_matched_by_the_header_name() {
    use notify_core::redaction::FILTERED;
    let policy = Redaction::builder()
        .key("x-api-key")
        .key_glob("x-*-token")
        .key_regex("^x-secret-[0-9]+$")
        .build()
        .unwrap();
    let mut payload = Payload::new()
        .with("http.request.header.x-api-key", "k-1")
        .with("http.response.header.x-api-key", "k-2")
        .with("http.request.header.x-csrf-token", "t-1")
        .with("http.request.header.x-secret-7", "s-7")
        .with("http.request.header.accept", "*/*")
        .with("user.x-api-key", "kept")
        .with("http.request.header.", "kept too");
    assert_eq!(policy.redact(&mut payload), 4);
    for key in [
        "http.request.header.x-api-key",
        "http.response.header.x-api-key",
        "http.request.header.x-csrf-token",
        "http.request.header.x-secret-7",
    ] {
        assert_eq!(payload.get(key), Some(&Value::from(FILTERED)), "{key}");
    }
    assert_eq!(payload.get("http.request.header.accept"), Some(&Value::from("*/*")));
    assert_eq!(payload.get("user.x-api-key"), Some(&Value::from("kept")));
    assert!(policy.matches_key("http.request.header.x-api-key"));
    assert!(!policy.matches_key("http.request.header.accept"));
}
