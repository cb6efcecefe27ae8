//! Poison messages against a real nats-server (issue 33): a batch whose payload value nests 1,500
//! lists deep (3 KB) overflowed the importer thread's stack and aborted the process, and JetStream
//! redelivered it on every restart. Now it is counted as malformed, the importer goes on, and a
//! JetStream message that cannot be imported is terminated, never redelivered.
//!
//! A regression aborts this whole test binary (stack overflow), which fails the run.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use notify_core::{Event, Notifier, Pattern, Payload, Subscriber, Value};
use notify_nats::{DecodeError, Encoding, ImportError, Importer, JetStream, NatsOptions};
use support::NatsServer;

const WAIT: Duration = Duration::from_secs(20);
const LEVELS: usize = 1_500;

/// A good batch of one event `good.test`.
fn good(encoding: Encoding) -> Vec<u8> {
    let now = Instant::now();
    let event = Arc::new(Event::new("good.test", now, now, Payload::new().with("k", 1_u64)));
    notify_nats::encode_batch(encoding, 7, &[event])
}

/// A batch of one event whose payload value `v` is `LEVELS` lists inside one another, built by
/// splicing the bytes of a batch whose `v` is null (building such a `Value` and dropping it would
/// recurse as deep in this process).
fn deep(encoding: Encoding) -> Vec<u8> {
    let now = Instant::now();
    let event = Arc::new(Event::new("deep.test", now, now, Payload::new().with("v", Value::Null)));
    let body = notify_nats::encode_batch(encoding, 7, &[event]);
    match encoding {
        Encoding::Binary => {
            // Wire version 3: the payload is the event's last field: key "v" (a new string of
            // the batch's string table: 0, length 1, "v"), variant 7 (Null).
            assert!(body.ends_with(&[0, 1, b'v', 7]), "{body:?}");
            let mut out = body[..body.len() - 1].to_vec();
            for _ in 0..LEVELS {
                out.extend_from_slice(&[11, 1]); // variant 11 (List), one item
            }
            out.push(7);
            assert!((3_000..3_100).contains(&out.len()), "{}", out.len());
            out
        }
        _ => {
            let text = String::from_utf8(body).unwrap();
            let null = r#"["v","Null"]"#;
            assert_eq!(text.matches(null).count(), 1, "{text}");
            let nested = format!(
                r#"["v",{}"Null"{}]"#,
                r#"{"List":["#.repeat(LEVELS),
                "]}".repeat(LEVELS)
            );
            text.replace(null, &nested).into_bytes()
        }
    }
}

fn recorder(notifier: &Notifier) -> Arc<Mutex<Vec<String>>> {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.name().to_owned())),
    );
    seen
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const TOO_DEEP: &str = "payload value nested deeper than 32 lists and maps";

#[test]
fn a_deeply_nested_message_is_counted_as_malformed_and_the_importer_goes_on() {
    let server = NatsServer::start();
    let remote = Notifier::new();
    let seen = recorder(&remote);
    let errors: Arc<Mutex<Vec<ImportError>>> = Arc::default();
    let sink = errors.clone();
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .on_error(move |e| sink.lock().unwrap().push(e.clone()))
        .start(&remote)
        .unwrap();
    runtime().block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        for (subject, body) in [
            ("notify.deep.postcard", deep(Encoding::Binary)),
            ("notify.deep.json", deep(Encoding::Json)),
            ("notify.good.test", good(Encoding::Binary)),
        ] {
            client.publish(subject, body.into()).await.unwrap();
        }
        client.flush().await.unwrap();
    });
    let stats = importer.wait_until(WAIT, |s| s.events + s.malformed >= 3);
    assert_eq!(
        (stats.messages, stats.events, stats.malformed, stats.unsupported_version),
        (3, 1, 2, 0),
        "{stats:?}"
    );
    assert_eq!(*seen.lock().unwrap(), ["good.test"]);
    let errors = errors.lock().unwrap();
    assert_eq!(
        errors[0],
        ImportError {
            subject: "notify.deep.postcard".into(),
            error: DecodeError::Malformed {
                encoding: Encoding::Binary,
                reason: TOO_DEEP.into()
            }
        }
    );
    // The limit stops the JSON one too, before serde_json's own (128 levels); the column depends
    // on the digits of the event's random id.
    assert_eq!(errors[1].subject, "notify.deep.json");
    let DecodeError::Malformed {
        encoding: Encoding::Json,
        reason,
    } = &errors[1].error
    else {
        panic!("{:?}", errors[1])
    };
    assert!(reason.starts_with(&format!("{TOO_DEEP} at line 1 column ")), "{reason}");
    assert_eq!(errors.len(), 2);
    importer.shutdown();
}

#[test]
fn a_deeply_nested_jetstream_message_is_terminated_never_redelivered() {
    let server = NatsServer::start_jetstream();
    let js = JetStream::new("POISON");
    let remote = Notifier::new();
    let seen = recorder(&remote);
    let start = || {
        Importer::builder(NatsOptions::new(server.url()))
            .jetstream(js.clone())
            .queue_group("poison-test")
            .start(&remote)
            .unwrap()
    };
    let importer = start();
    let runtime = runtime();
    let client = runtime.block_on(async_nats::connect(server.url())).unwrap();
    // The server announces each terminated message on this subject.
    let mut terminated = runtime
        .block_on(client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.POISON.poison-test"))
        .unwrap();
    runtime.block_on(async {
        let context = async_nats::jetstream::new(client.clone());
        for (subject, body) in [
            ("notify.deep.postcard", deep(Encoding::Binary)),
            ("notify.deep.json", deep(Encoding::Json)),
            ("notify.good.test", good(Encoding::Binary)),
        ] {
            context.publish(subject, body.into()).await.unwrap().await.unwrap();
        }
    });
    let stats = importer.wait_until(WAIT, |s| s.events + s.malformed >= 3);
    assert_eq!((stats.messages, stats.events, stats.malformed), (3, 1, 2), "{stats:?}");
    let advisories = runtime.block_on(async {
        let mut count = 0;
        // Both terminations, then nothing more for 300 ms.
        while let Ok(Some(_)) = tokio::time::timeout(
            if count < 2 { WAIT } else { Duration::from_millis(300) },
            terminated.next(),
        )
        .await
        {
            count += 1;
        }
        count
    });
    assert_eq!(advisories, 2, "one termination per malformed message");
    importer.shutdown();

    // The consumer has nothing pending or redelivered; a new importer on it gets nothing.
    let info = runtime.block_on(async {
        let context = async_nats::jetstream::new(client.clone());
        let stream = context.get_stream("POISON").await.unwrap();
        stream.consumer_info("poison-test").await.unwrap()
    });
    assert_eq!(
        (
            info.num_ack_pending,
            info.num_redelivered,
            info.num_pending,
            info.ack_floor.stream_sequence
        ),
        (0, 0, 0, 3),
        "{info:?}"
    );
    let again = start();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(again.shutdown().messages, 0);
    assert_eq!(*seen.lock().unwrap(), ["good.test"]);
}

/// The exporting side: an event nesting past the limit is refused alone (counted as an encode
/// drop), so the events batched with it still arrive instead of making the message malformed.
#[test]
fn an_exporter_drops_an_event_nested_past_the_limit_alone() {
    let server = NatsServer::start();
    let remote = Notifier::new();
    let seen = recorder(&remote);
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    let exporter = notify_nats::Exporter::builder(NatsOptions::new(server.url()))
        .start()
        .unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());
    let nested = |levels: usize| {
        let mut value = Value::Null;
        for _ in 0..levels {
            value = Value::List(vec![value]);
        }
        value
    };
    for levels in [32, 33, 0] {
        local.instrument("nested.test", || Payload::new().with("v", nested(levels)), |_| ());
    }
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!(
        (
            stats.published,
            stats.exported,
            stats.dropped.encode,
            stats.dropped.total()
        ),
        (3, 2, 1, 1),
        "{stats:?}"
    );
    let imported = importer.wait_until(WAIT, |s| s.events >= 2);
    // One message, or two when the exporter's thread woke between the events.
    assert_eq!((imported.events, imported.malformed), (2, 0), "{imported:?}");
    assert!((1..=2).contains(&imported.messages), "{imported:?}");
    assert_eq!(*seen.lock().unwrap(), ["nested.test", "nested.test"]);
}
