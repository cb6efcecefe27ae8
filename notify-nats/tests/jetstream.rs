//! JetStream mode against a real `nats-server -js`: kill -9 in the middle of a stream, restart on
//! the same port and store directory, and count: nothing lost, nothing duplicated.

mod support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::{event::EventId, Event, Notifier, Pattern, Payload, Subscriber};
use notify_nats::{ConnectErrorKind, Exporter, Importer, JetStream, NatsOptions, Overflow};
use support::NatsServer;

const WAIT: Duration = Duration::from_secs(60);
const TOTAL: u64 = 50_000;

#[test]
fn jetstream_kill_9_mid_stream_loses_and_duplicates_nothing() {
    let mut server = NatsServer::start_jetstream();
    let js = JetStream::new("NOTIFY_TEST").ack_timeout(Duration::from_millis(500));

    let remote = Notifier::new();
    let seen: Arc<Mutex<Vec<(EventId, u64)>>> = Arc::default();
    let sink = seen.clone();
    let _ = remote.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| {
            let seq = e.payload().get("seq").and_then(|v| v.as_i64()).unwrap() as u64;
            sink.lock().unwrap().push((e.id(), seq));
        }),
    );
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .jetstream(js.clone())
        .queue_group("durable-test")
        .start(&remote)
        .unwrap();

    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .jetstream(js)
        .capacity(TOTAL as usize) // the whole stream fits: nothing may overflow while the server is down
        .overflow(Overflow::Block)
        .start()
        .unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());

    std::thread::scope(|s| {
        let producer = s.spawn(|| {
            for seq in 0..TOTAL {
                local.instrument("order.shop", || Payload::new().with("seq", seq), |_| ());
                if seq % 1_000 == 999 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        });
        // Kill -9 once part of the stream is stored and acknowledged, in the middle of it.
        let deadline = Instant::now() + WAIT;
        while exporter.stats().exported < TOTAL / 5 {
            assert!(
                Instant::now() < deadline,
                "export did not start: {:?}",
                exporter.stats()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        server.kill();
        let at_kill = exporter.stats();
        std::thread::sleep(Duration::from_millis(500));
        server.restart();
        producer.join().unwrap();
        assert!(at_kill.exported < TOTAL, "the server died mid-stream: {at_kill:?}");
        eprintln!("at kill: {at_kill:?}");
    });

    let stats = exporter.flush(WAIT).expect("everything acknowledged after the restart");
    assert_eq!(
        (stats.published, stats.exported, stats.dropped.total(), stats.pending),
        (TOTAL, TOTAL, 0, 0),
        "{stats:?}"
    );
    let imported = importer.wait_until(WAIT, |s| s.events >= TOTAL);
    // Give redeliveries of unacknowledged messages a moment to show up (they must be dropped).
    std::thread::sleep(Duration::from_millis(300));
    let imported_after = importer.stats();
    let seen = seen.lock().unwrap();
    let distinct: HashSet<u64> = seen.iter().map(|&(_, seq)| seq).collect();
    assert_eq!(distinct.len() as u64, TOTAL, "nothing lost: {imported:?}");
    assert_eq!(seen.len() as u64, TOTAL, "nothing duplicated: {imported_after:?}");
    assert_eq!(imported_after.events, TOTAL);
    assert_eq!((imported_after.malformed, imported_after.unsupported_version), (0, 0));
    eprintln!("exporter {stats:?}\nimporter {imported_after:?}");
    exporter.shutdown(WAIT);
    importer.shutdown();
}

#[test]
fn jetstream_needs_a_server_started_with_js() {
    let server = NatsServer::start();
    let err = Exporter::builder(NatsOptions::new(server.url()))
        .jetstream(JetStream::new("NOTIFY"))
        .start()
        .unwrap_err();
    assert_eq!(err.kind(), ConnectErrorKind::JetStream, "{err}");
    assert!(err.to_string().contains("is the server started with -js?"), "{err}");
}

#[test]
fn importers_sharing_a_durable_consumer_split_the_stream_once() {
    let server = NatsServer::start_jetstream();
    let js = JetStream::new("SHARED");
    let remote = Notifier::new();
    let count = Arc::new(Mutex::new(HashSet::new()));
    let sink = count.clone();
    let _ = remote.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| assert!(sink.lock().unwrap().insert(e.id()), "duplicate {}", e.id())),
    );
    let importers: Vec<Importer> = (0..2)
        .map(|_| {
            Importer::builder(NatsOptions::new(server.url()))
                .jetstream(js.clone())
                .queue_group("pair")
                .start(&remote)
                .unwrap()
        })
        .collect();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .jetstream(js)
        .start()
        .unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());
    for _ in 0..40 {
        for _ in 0..50 {
            local.instrument("view.page", Payload::new, |_| ());
        }
        exporter.flush(WAIT).unwrap();
    }
    let total = || importers.iter().map(|i| i.stats().events).sum::<u64>();
    let deadline = Instant::now() + WAIT;
    while total() < 2_000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let counts: Vec<u64> = importers.iter().map(|i| i.stats().events).collect();
    assert_eq!(total(), 2_000, "{counts:?}");
    assert_eq!(count.lock().unwrap().len(), 2_000);
    assert!(counts.iter().all(|&n| n > 0), "both importers take a share: {counts:?}");
}

/// JetStream re-sends until acknowledged; with the server gone for good, a shutdown gives up at
/// its deadline (the sink stops re-sending: `Settle::given_up`) and every event is counted.
#[test]
fn i46_a_jetstream_shutdown_with_the_server_gone_gives_up_at_its_deadline_and_counts_every_event() {
    let mut server = NatsServer::start_jetstream();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .jetstream(JetStream::new("NOTIFY_GONE").ack_timeout(Duration::from_millis(200)))
        .start()
        .unwrap();
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());
    server.kill();
    for seq in 0..50_u64 {
        local.instrument("order.gone", || Payload::new().with("seq", seq), |_| ());
    }
    let started = Instant::now();
    let report = exporter.shutdown(Duration::from_millis(500));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        started.elapsed()
    );
    assert!(!report.drained, "{report:?}");
    let s = report.stats;
    assert_eq!((s.published, s.exported, s.pending, s.held), (50, 0, 0, 0), "{s:?}");
    assert_eq!(s.dropped.total(), 50, "{s:?}");
    assert_eq!(s.dropped.shutdown + s.dropped.disconnected, 50, "{s:?}");
}
