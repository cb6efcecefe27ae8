//! Core NATS mode against a real nats-server: round trip, queue groups, authentication, bad
//! messages, and the exact accounting of events across a server restart.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use notify_core::{
    context::TransactionId, event::EventId, event::Outcome, Event, Notifier, Pattern, Payload, Subscriber, Value,
};
use notify_nats::{ConnectErrorKind, DecodeError, Encoding, Exporter, ImportError, Importer, NatsOptions, Overflow};
use support::{recorder, NatsServer};

const WAIT: Duration = Duration::from_secs(20);

#[test]
fn events_round_trip_with_name_times_ids_outcome_and_payload_in_both_encodings() {
    let server = NatsServer::start();
    for encoding in [Encoding::Binary, Encoding::Json] {
        let remote = Notifier::new();
        let seen = recorder(&remote, Pattern::all());
        let importer = Importer::builder(NatsOptions::new(server.url()))
            .subject("*.sql")
            .start(&remote)
            .unwrap();

        let local = Notifier::new();
        let sent = recorder(&local, Pattern::all());
        let exporter = Exporter::builder(NatsOptions::new(server.url()))
            .encoding(encoding)
            .start()
            .unwrap();
        let _ = local.subscribe(Pattern::glob("*.sql").unwrap(), exporter.subscriber());
        local.instrument("request.http", Payload::new, |_| {
            local.instrument(
                "query.sql",
                || Payload::new().with("sql", "SELECT 1").with("rows", 3_u64),
                |p| {
                    p.insert("cached", false);
                },
            );
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                local.instrument(
                    "insert.sql",
                    || Payload::new().with("wait", Duration::from_micros(7)),
                    |_| panic!("boom"),
                )
            }));
        });

        let stats = exporter.flush(WAIT).unwrap();
        assert_eq!(
            (stats.published, stats.exported, stats.dropped.total(), stats.pending),
            (2, 2, 0, 0)
        );
        let got = importer.wait_until(WAIT, |s| s.events == 2);
        assert_eq!(got.events, 2, "{got:?}");

        let sent = sent.lock().unwrap();
        let sent: Vec<&Event> = sent.iter().filter(|e| e.name().ends_with(".sql")).collect();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        for (a, b) in sent.iter().zip(seen.iter()) {
            assert_eq!(a.name(), b.name());
            assert_eq!(a.start_time(), b.start_time());
            assert_eq!(a.duration(), b.duration());
            assert_eq!(
                (a.id(), a.parent_id(), a.transaction_id()),
                (b.id(), b.parent_id(), b.transaction_id())
            );
            assert_eq!(a.outcome(), b.outcome());
            assert_eq!(a.trace_id(), b.trace_id());
            assert_eq!(a.payload(), b.payload());
        }
        assert_eq!(seen[0].payload().get("rows"), Some(&Value::U64(3)));
        assert_eq!(seen[1].outcome(), Outcome::Panicked);
        assert!(seen[0].parent_id().is_some(), "the parent (request.http) id travels");
        assert_eq!(
            seen[0].trace_id(),
            seen[1].trace_id(),
            "one request, one trace, across processes"
        );
        exporter.shutdown(WAIT);
        importer.shutdown();
    }
}

/// During a rolling upgrade (importers of version 2 refuse version 3 batches) an exporter keeps
/// writing version 2 on request: its messages say so in the body and the header, and decode.
#[test]
fn an_exporter_writes_wire_version_2_on_request_and_its_messages_decode() {
    let server = NatsServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (client, mut raw) = runtime.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let raw = client.subscribe("notify.>").await.unwrap();
        client.flush().await.unwrap();
        (client, raw)
    });
    let remote = Notifier::new();
    let seen = recorder(&remote, Pattern::all());
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    for (version, events) in [(2_u16, 3_u64), (notify_nats::WIRE_VERSION, 2)] {
        let local = Notifier::new();
        let exporter = Exporter::builder(NatsOptions::new(server.url()))
            .wire_version(version)
            .start()
            .unwrap();
        let _ = local.subscribe(Pattern::all(), exporter.subscriber());
        for rows in 0..events {
            local.instrument(
                "query.sql",
                || Payload::new().with("sql", "SELECT 1").with("rows", rows),
                |_| (),
            );
        }
        assert_eq!(exporter.flush(WAIT).unwrap().exported, events);
        // The events may come in more than one message (rounds): each says its version.
        let mut rows = Vec::new();
        while (rows.len() as u64) < events {
            let message = runtime
                .block_on(async { tokio::time::timeout(WAIT, futures_util::StreamExt::next(&mut raw)).await })
                .unwrap()
                .unwrap();
            let headers = message.headers.as_ref().unwrap();
            assert_eq!(
                headers.get(notify_nats::VERSION_HEADER).map(|v| v.as_str()),
                Some(version.to_string().as_str())
            );
            assert_eq!(message.payload[2], version as u8, "the version after the magic");
            let (source, decoded) = notify_nats::decode_batch(Encoding::Binary, &message.payload).unwrap();
            assert_eq!(source, exporter.source());
            rows.extend(decoded.iter().map(|e| e.payload().get("rows").cloned()));
        }
        let want: Vec<Option<Value>> = (0..events).map(|rows| Some(Value::U64(rows))).collect();
        assert_eq!(rows, want);
        exporter.shutdown(WAIT);
    }
    let got = importer.wait_until(WAIT, |s| s.events == 5);
    assert_eq!(
        (got.events, got.malformed, got.unsupported_version),
        (5, 0, 0),
        "{got:?}"
    );
    assert_eq!(seen.lock().unwrap().len(), 5);
    importer.shutdown();
    drop(client);
}

/// Versions other than 2 and 3 are not written: an error from `start`, naming them, before
/// connecting (nothing listens on port 1).
#[test]
fn an_unsupported_wire_version_is_an_error_at_start() {
    for version in [0, 1, 4, u16::MAX] {
        let Err(error) = Exporter::builder(NatsOptions::new("nats://127.0.0.1:1"))
            .wire_version(version)
            .start()
        else {
            panic!("version {version} was accepted");
        };
        assert_eq!(error.kind(), ConnectErrorKind::WireVersion);
        assert_eq!(
            error.to_string(),
            format!("notify-nats exporters write wire version 2 or 3, not {version}")
        );
    }
}

/// A payload with every kind of value, owned keys and nesting.
fn every_value_kind() -> Payload {
    let header = String::from("x-request-id");
    let mut payload = Payload::new()
        .with("null", Value::Null)
        .with("bool", true)
        .with("i64", i64::MIN)
        .with("u64", u64::MAX)
        .with("i128", i128::MIN)
        .with("u128", u128::MAX)
        .with("f64", -0.1)
        .with("str", "ünïcödé \u{1F980}")
        .with("duration", Duration::new(3, 999_999_999))
        .with(
            "time",
            SystemTime::UNIX_EPOCH + Duration::new(1_764_547_200, 123_456_789),
        )
        .with("before_1970", SystemTime::UNIX_EPOCH - Duration::new(86_400, 1))
        .with(
            "list",
            Value::List(vec![
                Value::Null,
                1_u8.into(),
                "two".into(),
                Value::List(vec![3.5.into()]),
            ]),
        )
        .with(
            "map",
            Payload::new()
                .with("inner", Payload::new().with("deep", Duration::from_nanos(1)))
                .with("tags", ["a", "b"]),
        )
        .with(header, "abc");
    payload.record_error(&std::fmt::Error);
    payload
}

/// Every field of an event survives export and import in both encodings: name, wall-clock start,
/// duration, the four ids, outcome, CPU time, allocation count, and a payload holding every kind
/// of value (null, 128-bit integers, times before 1970, nested lists and maps, owned keys), each
/// coming back as the same variant.
#[test]
fn every_event_field_and_value_kind_survives_export_and_import_in_both_encodings() {
    let server = NatsServer::start();
    for encoding in [Encoding::Binary, Encoding::Json] {
        let remote = Notifier::new();
        let seen = recorder(&remote, Pattern::all());
        let importer = Importer::builder(NatsOptions::new(server.url()))
            .subject("*.kinds")
            .start(&remote)
            .unwrap();
        let local = Notifier::new();
        let exporter = Exporter::builder(NatsOptions::new(server.url()))
            .encoding(encoding)
            .start()
            .unwrap();
        let _ = local.subscribe(Pattern::glob("*.kinds").unwrap(), exporter.subscriber());
        let start = SystemTime::UNIX_EPOCH + Duration::new(1_764_547_200, 987_654_321);
        let sent = Event::at_wall_clock("all.kinds", start, Duration::from_nanos(42_001), every_value_kind())
            .with_ids(EventId::new(11), Some(EventId::new(10)), TransactionId::new(99))
            .with_trace_id(notify_core::TraceId::new(0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c).unwrap())
            .with_cpu_time(Some(Duration::from_nanos(40_000)))
            .with_allocations(Some(17))
            .with_outcome(Outcome::Cancelled);
        local.publish_event(sent.clone());
        let bare = Event::at_wall_clock("bare.kinds", start, Duration::ZERO, Payload::new());
        local.publish_event(bare.clone());

        assert_eq!(exporter.flush(WAIT).unwrap().exported, 2);
        assert_eq!(importer.wait_until(WAIT, |s| s.events == 2).events, 2);
        let seen = seen.lock().unwrap();
        for (a, b) in [&sent, &bare].into_iter().zip(seen.iter()) {
            assert_eq!(
                (a.name(), a.start_time(), a.end_time(), a.duration()),
                (b.name(), b.start_time(), b.end_time(), b.duration()),
                "{encoding:?}"
            );
            assert_eq!(
                (a.id(), a.parent_id(), a.transaction_id(), a.trace_id()),
                (b.id(), b.parent_id(), b.transaction_id(), b.trace_id())
            );
            assert_eq!(
                (a.outcome(), a.cpu_time(), a.idle_time(), a.allocations()),
                (b.outcome(), b.cpu_time(), b.idle_time(), b.allocations())
            );
            assert_eq!(a.payload(), b.payload(), "{encoding:?}");
        }
        // Each value comes back as its own variant, not as text.
        let p = seen[0].payload();
        assert_eq!(p.get("null"), Some(&Value::Null));
        assert_eq!(p.get("i128"), Some(&Value::I128(i128::MIN)));
        assert_eq!(p.get("u128"), Some(&Value::U128(u128::MAX)));
        assert_eq!(
            p.get("before_1970").and_then(Value::as_time),
            Some(SystemTime::UNIX_EPOCH - Duration::new(86_400, 1))
        );
        assert_eq!(
            p.get("map")
                .and_then(Value::as_map)
                .and_then(|m| m.get("inner"))
                .and_then(Value::as_map)
                .and_then(|m| m.get("deep")),
            Some(&Value::Duration(Duration::from_nanos(1)))
        );
        assert_eq!(p.keys().last(), Some("exception"));
        assert_eq!(seen[1].cpu_time(), None);
        exporter.shutdown(WAIT);
        importer.shutdown();
    }
}

#[test]
fn a_queue_group_shares_the_events_among_its_importers() {
    let server = NatsServer::start();
    let remote = Notifier::new();
    let seen = recorder(&remote, Pattern::all());
    let importers: Vec<Importer> = (0..3)
        .map(|_| {
            Importer::builder(NatsOptions::new(server.url()))
                .queue_group("workers")
                .start(&remote)
                .unwrap()
        })
        .collect();
    let local = Notifier::new();
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    let _ = local.subscribe("job.worker", exporter.subscriber());
    for _ in 0..60 {
        for _ in 0..50 {
            local.instrument("job.worker", Payload::new, |_| ());
        }
        exporter.flush(WAIT).unwrap(); // one message at least per round
    }
    let stats = exporter.shutdown(WAIT).stats;
    assert_eq!((stats.exported, stats.dropped.total()), (3_000, 0));
    assert!(stats.messages >= 60, "{stats:?}");
    let total = || importers.iter().map(|i| i.stats().events).sum::<u64>();
    let deadline = std::time::Instant::now() + WAIT;
    while total() < 3_000 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let counts: Vec<u64> = importers.iter().map(|i| i.stats().events).collect();
    assert_eq!(total(), 3_000, "{counts:?}");
    assert!(
        counts.iter().all(|&n| n > 0 && n < 3_000),
        "each importer takes a share: {counts:?}"
    );
    assert_eq!(seen.lock().unwrap().len(), 3_000);
}

#[test]
fn a_wrong_token_is_a_clear_error_at_connect() {
    let server = NatsServer::start_with_token("s3cret");
    for options in [
        NatsOptions::new(server.url()).token("wrong"),
        NatsOptions::new(server.url()),
    ] {
        let err = Exporter::builder(options.clone()).start().unwrap_err();
        assert_eq!(err.kind(), ConnectErrorKind::Authorization, "{err}");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("authorization refused by {}", server.url())),
            "{text}"
        );
        let err = Importer::builder(options).start(&Notifier::new()).unwrap_err();
        assert_eq!(err.kind(), ConnectErrorKind::Authorization, "{err}");
    }
    // The right token works end to end.
    let remote = Notifier::new();
    let importer = Importer::builder(NatsOptions::new(server.url()).token("s3cret"))
        .start(&remote)
        .unwrap();
    let exporter = Exporter::builder(NatsOptions::new(server.url()).token("s3cret"))
        .start()
        .unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());
    local.instrument("login.auth", Payload::new, |_| ());
    assert_eq!(exporter.flush(WAIT).unwrap().exported, 1);
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 1).events, 1);
}

/// Issue 33 item 13: `nats://user:pass@host` was refused by a server started with that user and
/// password (async-nats 0.51 does not send URL credentials), and the password showed in
/// `ConnectError` and `NatsOptions`' Debug.
#[test]
fn url_credentials_are_accepted_and_never_printed() {
    const PASSWORD: &str = "Pa55-w0rd-in-url";
    let server = NatsServer::start_with_user("app", PASSWORD);
    let address = server.url().trim_start_matches("nats://").to_owned();
    let good = NatsOptions::new(format!("nats://app:{PASSWORD}@{address}"));
    assert_eq!(good.servers(), server.url());
    assert!(!format!("{good:?}").contains(PASSWORD), "{good:?}");
    let remote = Notifier::new();
    let seen = recorder(&remote, Pattern::all());
    let importer = Importer::builder(good.clone()).start(&remote).unwrap();
    let exporter = Exporter::builder(good).start().unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());
    local.instrument("login.auth", Payload::new, |_| ());
    assert_eq!(exporter.flush(WAIT).unwrap().exported, 1);
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 1).events, 1);
    assert_eq!(seen.lock().unwrap().len(), 1);

    // A wrong password in the URL: refused, and the error shows neither password.
    let wrong = NatsOptions::new(format!("nats://app:Wr0ng-{PASSWORD}@{address}"));
    let err = Exporter::builder(wrong.clone()).start().unwrap_err();
    assert_eq!(err.kind(), ConnectErrorKind::Authorization, "{err}");
    let err = Importer::builder(wrong).start(&Notifier::new()).unwrap_err();
    assert_eq!(err.kind(), ConnectErrorKind::Authorization, "{err}");
    let text = format!("{err} {err:?}");
    assert!(
        text.starts_with(&format!("authorization refused by {}: ", server.url())),
        "{text}"
    );
    assert!(!text.contains(PASSWORD) && !text.contains("Wr0ng"), "{text}");
}

#[test]
fn no_server_is_a_clear_error_at_connect() {
    let server = NatsServer::start();
    let url = server.url();
    drop(server);
    let err = Exporter::builder(NatsOptions::new(&url).connection_timeout(Duration::from_secs(1)))
        .start()
        .unwrap_err();
    assert_eq!(err.kind(), ConnectErrorKind::Unreachable, "{err}");
    assert!(
        err.to_string().starts_with(&format!("could not connect to {url}")),
        "{err}"
    );
}

#[test]
fn malformed_and_newer_messages_are_counted_and_reported_never_republished() {
    let server = NatsServer::start();
    let remote = Notifier::new();
    let seen = recorder(&remote, Pattern::all());
    let errors: Arc<Mutex<Vec<ImportError>>> = Arc::default();
    let sink = errors.clone();
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .on_error(move |e| sink.lock().unwrap().push(e.clone()))
        .start(&remote)
        .unwrap();

    let now = std::time::Instant::now();
    let event = Arc::new(Event::new("good.test", now, now, Payload::new().with("k", 1_u64)));
    let good = notify_nats::encode_batch(Encoding::Binary, 7, std::slice::from_ref(&event));
    let mut newer = good.clone();
    newer[2] = 4; // wire version 4 (after the 2-byte magic)
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        client
            .publish("notify.bad.test", "not an event batch".into())
            .await
            .unwrap();
        client.publish("notify.newer.test", newer.into()).await.unwrap();
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(notify_nats::ENCODING_HEADER, "xml");
        client
            .publish_with_headers("notify.xml.test", headers, good.clone().into())
            .await
            .unwrap();
        client
            .publish("notify.truncated.test", good[..good.len() - 3].to_vec().into())
            .await
            .unwrap();
        client.publish("notify.good.test", good.into()).await.unwrap();
        client.flush().await.unwrap();
    });
    // `messages` counts a message when it arrives, the outcome counters once it is handled: wait
    // for all five outcomes, not just the arrivals.
    let stats = importer.wait_until(WAIT, |s| {
        s.messages == 5 && s.events + s.malformed + s.unsupported_version >= 5
    });
    assert_eq!(
        (stats.messages, stats.events, stats.malformed, stats.unsupported_version),
        (5, 1, 3, 1),
        "{stats:?}"
    );
    let errors = errors.lock().unwrap();
    let subjects: Vec<&str> = errors.iter().map(|e| e.subject.as_str()).collect();
    assert_eq!(
        subjects,
        [
            "notify.bad.test",
            "notify.newer.test",
            "notify.xml.test",
            "notify.truncated.test"
        ]
    );
    assert_eq!(
        errors[1].error,
        DecodeError::UnsupportedVersion { found: 4, supported: 3 }
    );
    assert!(
        errors[2].to_string().contains("unknown Notify-Encoding \"xml\""),
        "{}",
        errors[2]
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].name(), seen[0].id()), ("good.test", event.id()));
}

#[test]
fn core_mode_counts_every_event_across_a_server_restart() {
    let mut server = NatsServer::start();
    let remote = Notifier::new();
    let finals = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = finals.clone();
    let _ = remote.subscribe(
        "final.test",
        Subscriber::event(move |_: &Event| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }),
    );
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .capacity(2_000)
        .overflow(Overflow::DropNewest)
        .flush_timeout(Duration::from_millis(500))
        .start()
        .unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());
    let publish_named = |name: &str, n: usize| {
        for _ in 0..n {
            local.instrument(name, Payload::new, |_| ());
        }
    };
    // While the server is up, publish in chunks the queue can hold.
    let publish = |n: usize| publish_named("tick.test", n);
    let publish_up = |name: &str, n: usize| {
        for _ in 0..n / 1_000 {
            publish_named(name, 1_000);
            exporter.flush(WAIT).unwrap();
        }
    };

    publish_up("tick.test", 10_000);
    let before = exporter.stats();
    assert_eq!((before.exported, before.dropped.total()), (10_000, 0));
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 10_000).events, 10_000);

    server.kill();
    publish(10_000); // the queue holds 2,000 while the server is down; the rest overflow
    std::thread::sleep(Duration::from_millis(300));
    let down = exporter.stats();
    // 2,000 queued, up to one round in flight, the rest dropped by the overflow policy.
    assert!(down.dropped.overflow >= 5_000 && down.pending >= 2_000, "{down:?}");
    assert_eq!(down.published, 20_000);
    assert_eq!(
        down.published,
        down.exported + down.dropped.total() + down.pending,
        "{down:?}"
    );

    server.restart();
    let after = exporter.flush(WAIT).unwrap();
    assert_eq!(after.pending, 0, "{after:?}");
    // Core NATS delivers only to subscriptions the server has: what was published before the
    // importer's subscription came back is lost for it. Probe until one event gets through.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let seen = importer.stats().events;
        publish_named("probe.test", 1);
        exporter.flush(WAIT).unwrap();
        if importer
            .wait_until(Duration::from_millis(200), |s| s.events > seen)
            .events
            > seen
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the importer never got its subscription back"
        );
    }
    let probes = exporter.stats().published - 20_000;
    publish_up("final.test", 10_000);
    let stats = exporter.shutdown(WAIT).stats;
    assert_eq!(stats.published, 30_000 + probes);
    assert_eq!(stats.pending, 0);
    assert_eq!(
        stats.exported + stats.dropped.total(),
        stats.published,
        "exported + dropped == published: {stats:?}"
    );
    assert!(
        stats.exported >= 20_000 + probes,
        "everything after the restart is exported: {stats:?}"
    );
    // Everything published with both sides connected arrives, once; nothing arrives that was
    // not exported (or lost with the connection after it may have reached the server).
    let final_count = || finals.load(std::sync::atomic::Ordering::Relaxed);
    importer.wait_until(WAIT, |_| final_count() >= 10_000);
    assert_eq!(final_count(), 10_000);
    let imported = importer.stats().events;
    assert!(
        imported <= stats.exported + stats.dropped.disconnected,
        "{imported} vs {stats:?}"
    );
}

#[test]
fn shutdown_with_the_server_gone_reports_what_it_abandoned() {
    let mut server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .capacity(100)
        .start()
        .unwrap();
    server.kill();
    std::thread::sleep(Duration::from_millis(100));
    let now = std::time::Instant::now();
    for _ in 0..150 {
        exporter.export(&Arc::new(Event::new("lost.test", now, now, Payload::new())));
    }
    let report = exporter.shutdown(Duration::from_millis(300));
    assert!(!report.drained);
    let s = report.stats;
    assert_eq!((s.published, s.exported, s.pending), (150, 0, 0), "{s:?}");
    assert_eq!(s.dropped.overflow, 50, "{s:?}");
    assert_eq!(s.dropped.shutdown + s.dropped.disconnected, 100, "{s:?}");
    // After shutdown events are refused and counted.
    exporter.export(&Arc::new(Event::new("late.test", now, now, Payload::new())));
    let s = exporter.stats();
    assert_eq!((s.published, s.dropped.total()), (151, 151));
}

/// A frozen server (`kill -STOP`) still accepts bytes into its socket but processes nothing: a
/// round published meanwhile must not count as exported (async-nats's `flush` only writes the
/// socket; the exporter confirms with a real round trip), and instrumented code never waits.
#[test]
fn a_round_the_server_does_not_confirm_is_counted_as_disconnected_never_as_exported() {
    let mut server = NatsServer::start();
    let remote = Notifier::new();
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    let confirmation = Duration::from_millis(300);
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .flush_timeout(confirmation)
        .start()
        .unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());
    // Returns how long the instrumenting thread took for `n` events.
    let publish = |name: &str, n: usize| {
        let started = std::time::Instant::now();
        for _ in 0..n {
            local.instrument(name, Payload::new, |_| ());
        }
        started.elapsed()
    };
    let counts = |s: &notify_nats::ExporterStats| (s.published, s.exported, s.dropped.disconnected, s.pending);

    publish("before.test", 100);
    let up = exporter.flush(WAIT).unwrap();
    assert_eq!(counts(&up), (100, 100, 0, 0), "{up:?}");
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 100).events, 100);

    server.freeze();
    let took = publish("frozen.test", 100);
    assert!(
        took < Duration::from_secs(1),
        "instrumenting waited {took:?} for a frozen server"
    );
    // Resolved once the confirmation timed out: the 100 are unconfirmed, not exported.
    let frozen = exporter.flush(Duration::from_secs(3)).unwrap();
    assert_eq!(counts(&frozen), (200, 100, 100, 0), "{frozen:?}");
    assert_eq!(frozen.dropped.total(), 100, "{frozen:?}");

    // Resumed, the server handles what it had read (the frozen round reaches the importer, as
    // `Dropped::disconnected` allows) and confirms new rounds on the same connection.
    server.thaw();
    publish("after.test", 100);
    let after = exporter.flush(WAIT).unwrap();
    assert_eq!(counts(&after), (300, 200, 100, 0), "{after:?}");
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 300).events, 300);

    // Frozen, then killed (`kill -9`) before the confirmation: these never arrive anywhere, and
    // none is counted as exported. The round in flight is lost with the connection; what queued
    // behind it waits for a reconnection, and shutdown gives up on it.
    server.freeze();
    let took = publish("killed.test", 100);
    assert!(
        took < Duration::from_secs(1),
        "instrumenting waited {took:?} for a frozen server"
    );
    // The collector takes the batch within its scheduled delay; the sink publishes it at once.
    let deadline = std::time::Instant::now() + WAIT;
    while exporter.export_stats().dequeued < 400 {
        assert!(std::time::Instant::now() < deadline, "{:?}", exporter.export_stats());
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    server.kill();
    std::thread::sleep(confirmation * 2);
    let killed = exporter.stats();
    assert_eq!((killed.published, killed.exported), (400, 200), "{killed:?}");
    assert!(
        killed.dropped.disconnected > 100,
        "the round in flight is lost: {killed:?}"
    );
    assert_eq!(killed.dropped.disconnected + killed.pending, 200, "{killed:?}");
    let report = exporter.shutdown(Duration::from_millis(200));
    let s = report.stats;
    assert_eq!((s.published, s.exported, s.pending), (400, 200, 0), "{report:?}");
    assert_eq!(s.dropped.disconnected + s.dropped.shutdown, 200, "{report:?}");
    assert_eq!(s.dropped.total(), 200, "{report:?}");
    assert_eq!(importer.stats().events, 300);
}

/// Rounds are confirmed pipelined (up to 4 on the wire at once): a freeze during a continuous
/// flow leaves rounds in flight. Each event is counted exactly once, and none as exported that the
/// server did not process: everything counted exported reaches the importer.
#[test]
fn pipelined_rounds_in_flight_at_a_freeze_are_counted_once_and_never_exported_unprocessed() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut server = NatsServer::start();
    let remote = Notifier::new();
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .flush_timeout(Duration::from_millis(300))
        .start()
        .unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());
    let flow = |n: u64| {
        for seq in 0..n {
            local.instrument("flow.test", || Payload::new().with("seq", seq), |_| ());
        }
    };
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                flow(100);
            }
        });
        std::thread::sleep(Duration::from_millis(150));
        server.freeze();
        std::thread::sleep(Duration::from_millis(150));
        stop.store(true, Ordering::Relaxed);
    });
    let frozen = exporter.flush(Duration::from_secs(20)).unwrap();
    assert_eq!(frozen.pending, 0, "{frozen:?}");
    assert_eq!(frozen.exported + frozen.dropped.total(), frozen.published, "{frozen:?}");
    assert!(frozen.exported > 0 && frozen.dropped.disconnected > 0, "{frozen:?}");
    server.thaw();
    let got = importer.wait_until(WAIT, |s| s.events >= frozen.exported).events;
    assert!(
        got >= frozen.exported,
        "exported {} but the importer got {got}",
        frozen.exported
    );
    // Confirmed again after the thaw, on the same connection.
    flow(1_000);
    let after = exporter.flush(WAIT).unwrap();
    assert_eq!(after.published, frozen.published + 1_000, "{after:?}");
    assert_eq!(after.exported + after.dropped.total(), after.published, "{after:?}");
    assert!(after.exported > frozen.exported, "{after:?}");
}

/// Shutdown with nothing left to send returns at once, even while the server is gone (the
/// exporter's thread used to wait for a reconnection forever, and `shutdown` to join it).
#[test]
fn shutdown_with_nothing_pending_returns_while_the_server_is_gone() {
    let mut server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    let now = std::time::Instant::now();
    exporter.export(&Arc::new(Event::new("sent.test", now, now, Payload::new())));
    assert_eq!(exporter.flush(WAIT).unwrap().exported, 1);
    server.kill();
    // Let the client notice the connection is gone.
    std::thread::sleep(Duration::from_millis(300));
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(exporter.shutdown(Duration::from_secs(1)));
    });
    let report = finished
        .recv_timeout(Duration::from_secs(5))
        .expect("shutdown returned within 5 s");
    assert!(report.drained, "{report:?}");
    let s = report.stats;
    assert_eq!(
        (s.published, s.exported, s.dropped.total(), s.pending),
        (1, 1, 0, 0),
        "{s:?}"
    );
}

#[test]
fn an_invalid_prefix_or_subject_is_a_subject_error_naming_the_bad_token() {
    let server = NatsServer::start();
    let options = || NatsOptions::new(server.url());
    for (prefix, message) in [
        (
            "bad prefix",
            r#"prefix "bad prefix": token "bad prefix" contains whitespace"#,
        ),
        ("", r#"prefix "": empty token (token 1 of 1)"#),
        (
            "shop.*",
            r#"prefix "shop.*": token "*" holds a wildcard (`*`, `>`), not allowed here"#,
        ),
    ] {
        let err = Exporter::builder(options()).prefix(prefix).start().unwrap_err();
        assert_eq!(err.kind(), ConnectErrorKind::Subject, "{err}");
        assert_eq!(err.to_string(), format!("invalid NATS subject: {message}"));
    }
    for (subject, message) in [
        ("a b", r#"subject "notify.a b": token "a b" contains whitespace"#),
        (
            "a.>.b",
            r#"subject "notify.a.>.b": token ">" is allowed only as the last token"#,
        ),
        ("a..b", r#"subject "notify.a..b": empty token (token 3 of 4)"#),
    ] {
        let err = Importer::builder(options())
            .subject(subject)
            .start(&Notifier::new())
            .unwrap_err();
        assert_eq!(err.kind(), ConnectErrorKind::Subject, "{err}");
        assert_eq!(err.to_string(), format!("invalid NATS subject: {message}"));
    }
    let err = Importer::builder(options())
        .prefix("")
        .start(&Notifier::new())
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.to_string()),
        (
            ConnectErrorKind::Subject,
            r#"invalid NATS subject: subject ".>": empty token (token 1 of 2)"#.to_owned()
        )
    );
    let err = Importer::builder(options())
        .queue_group("dash boards")
        .start(&Notifier::new())
        .unwrap_err();
    assert_eq!(err.kind(), ConnectErrorKind::Subject, "{err}");
    // Valid ones still start.
    Exporter::builder(options()).prefix("shop.eu-1").start().unwrap();
    Importer::builder(options())
        .prefix("shop")
        .subject("*.sql")
        .start(&Notifier::new())
        .unwrap();
}

#[test]
fn a_process_that_exports_and_imports_the_same_subjects_does_not_send_imported_events_back() {
    let server = NatsServer::start();
    let notifier = Notifier::new();
    let seen = recorder(&notifier, Pattern::all());
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&notifier)
        .unwrap();
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    let _ = notifier.subscribe(Pattern::all(), exporter.subscriber());
    notifier.instrument("order.app", Payload::new, |_| ());
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!((stats.published, stats.exported), (1, 1));
    // The event comes back once through the importer, which republishes it here; the exporter's
    // subscriber gets it again and does not send it out a second time.
    let got = importer.wait_until(WAIT, |s| s.events == 1);
    assert_eq!(got.events, 1, "{got:?}");
    std::thread::sleep(Duration::from_millis(300));
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!(
        (stats.published, stats.exported, stats.not_reexported, stats.pending),
        (1, 1, 1, 0)
    );
    assert_eq!(importer.stats().events, 1, "nothing came back a second time");
    let names: Vec<String> = seen.lock().unwrap().iter().map(|e| e.name().to_owned()).collect();
    assert_eq!(names, ["order.app", "order.app"], "the local event, then its import");
    exporter.shutdown(WAIT);
    importer.shutdown();
}
