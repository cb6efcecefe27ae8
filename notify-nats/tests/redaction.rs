//! Redaction end to end (issue 17, items 2 and 4) against a real nats-server: a secret planted in
//! a payload, a macro field, an error recorded by `err` and values recorded during the body is
//! absent from every message the exporter sends (subject, headers and body bytes, as a raw
//! subscriber receives them, in both encodings) and from the events imported on the other side;
//! and events imported from a process without a policy are redacted by the importing notifier's.
//!
//! Its own test binary: it sets the global notifier's policy.

#[path = "../../notify-core/tests/support/secrets.rs"]
mod secrets;
mod support;

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use futures_util::StreamExt as _;
use notify_core::{Event, Notifier, Pattern, Payload};
use notify_nats::{Encoding, Exporter, Importer, NatsOptions};
use secrets::SECRET;
use support::{recorder, NatsServer};

const WAIT: Duration = Duration::from_secs(20);
const END: &str = "notify.end.tap";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A raw subscriber to `notify.>` on its own thread, subscribed when this returns; it keeps every
/// message (subject, headers, body as text) until the [`END`] marker.
fn tap(url: String) -> JoinHandle<Vec<Vec<u8>>> {
    let (ready, subscribed) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        runtime().block_on(async {
            let client = async_nats::connect(url).await.unwrap();
            let mut messages = client.subscribe("notify.>").await.unwrap();
            client.flush().await.unwrap();
            ready.send(()).unwrap();
            let mut kept = Vec::new();
            loop {
                let message = tokio::time::timeout(WAIT, messages.next())
                    .await
                    .expect("the end marker within 20 s")
                    .expect("the subscription stays open");
                if message.subject.as_str() == END {
                    return kept;
                }
                let mut bytes = format!("{} {:?} ", message.subject, message.headers).into_bytes();
                bytes.extend_from_slice(&message.payload);
                kept.push(bytes);
            }
        })
    });
    subscribed.recv().expect("the tap subscribed");
    thread
}

/// Publishes the [`END`] marker after everything the server received so far.
fn end_tap(url: String, tap: JoinHandle<Vec<Vec<u8>>>) -> Vec<Vec<u8>> {
    runtime().block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        client.publish(END, "".into()).await.unwrap();
        client.flush().await.unwrap();
    });
    tap.join().expect("the tap thread")
}

fn text(events: &[Event]) -> String {
    events
        .iter()
        .map(|e| format!("{e:?} {}\n", serde_json::to_string(e).unwrap()))
        .collect()
}

#[test]
fn secrets_are_absent_from_nats_messages_and_imported_events() {
    let server = NatsServer::start();
    for encoding in [Encoding::Binary, Encoding::Json] {
        let remote = Notifier::new(); // no policy: whatever arrives is what was sent
        let imported = recorder(&remote, Pattern::all());
        let importer = Importer::builder(NatsOptions::new(server.url()))
            .subject("*.secrets")
            .start(&remote)
            .unwrap();
        let tap = tap(server.url());

        let exporter = Exporter::builder(NatsOptions::new(server.url()))
            .encoding(encoding)
            .start()
            .unwrap();
        let subscription = secrets::global().subscribe(Pattern::glob("*.secrets").unwrap(), exporter.subscriber());
        secrets::plant();
        subscription.unsubscribe().unwrap();
        let stats = exporter.flush(WAIT).unwrap();
        assert_eq!((stats.exported, stats.dropped.total()), (4, 0), "{stats:?}");
        let got = importer.wait_until(WAIT, |s| s.events == 4);
        assert_eq!(got.events, 4, "{got:?}");
        let messages = end_tap(server.url(), tap);

        assert!(!messages.is_empty());
        for message in &messages {
            secrets::assert_clean(&format!("a {encoding:?} NATS message"), message);
        }
        secrets::assert_redacted(&format!("the {encoding:?} NATS messages"), &messages.concat());
        let imported = imported.lock().unwrap();
        let names: Vec<&str> = imported.iter().map(Event::name).collect();
        assert_eq!(names, secrets::EVENTS);
        secrets::assert_redacted("the imported events", text(&imported).as_bytes());
        exporter.shutdown(WAIT);
        importer.shutdown();
    }
}

#[test]
fn events_imported_from_a_process_without_a_policy_are_redacted_by_the_importing_notifier() {
    let server = NatsServer::start();
    let remote = Notifier::new();
    remote.set_redaction(secrets::policy());
    let imported = recorder(&remote, Pattern::all());
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .subject("*.secrets")
        .start(&remote)
        .unwrap();
    let tap = tap(server.url());

    let local = Notifier::new(); // no policy
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    let _ = local.subscribe(Pattern::glob("*.secrets").unwrap(), exporter.subscriber());
    local.instrument(
        "payload.secrets",
        || Payload::new().with("user", "ann").with("password", SECRET),
        |payload| {
            payload.insert("session_token", SECRET.to_owned());
        },
    );
    let _ = local.instrument_result("err.secrets", Payload::new, |_| {
        Err::<(), _>(format!("refused: Bearer {SECRET}"))
    });
    exporter.flush(WAIT).unwrap();
    let got = importer.wait_until(WAIT, |s| s.events == 2);
    assert_eq!(got.events, 2, "{got:?}");
    let messages = end_tap(server.url(), tap);

    // The sender had no policy: the secret did travel (so the test can see it removed).
    let wire = messages.concat();
    assert!(wire.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()));
    let imported = imported.lock().unwrap();
    assert_eq!(
        imported.iter().map(Event::name).collect::<Vec<_>>(),
        ["payload.secrets", "err.secrets"]
    );
    let text = text(&imported);
    secrets::assert_redacted("events imported into a notifier with a policy", text.as_bytes());
    assert!(text.contains("\"user\":\"ann\""), "{text}");
    exporter.shutdown(WAIT);
    importer.shutdown();
}
