//! Both tracing directions and log -> notify, on one thread each (tracing's `with_default`), each
//! test with its own notifier or its own event names.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify_core::{event::Outcome, payload::EXCEPTION_KEY, Event, Notifier, Pattern, Payload, Subscriber, Value};
use notify_tracing::{EventNames, NotifyLayer, NotifyLogger, TracingForwarder, BRIDGE_FIELD};
use support::Capture;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::prelude::*;

/// Every event `notifier` delivers, in finish order.
fn collect(notifier: &Notifier, pattern: impl Into<Pattern>) -> Arc<Mutex<Vec<Event>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _ = notifier.subscribe(
        pattern,
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
    );
    seen
}

// ---- tracing -> notify ----

#[test]
fn layer_publishes_closed_spans_with_fields_duration_and_parent() {
    let notifier = Notifier::new();
    let seen = collect(&notifier, Pattern::glob("*.shop").unwrap());
    let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier));
    tracing::subscriber::with_default(subscriber, || {
        let request = tracing::info_span!(target: "shop", "request", path = "/cart", status = tracing::field::Empty);
        request.in_scope(|| {
            let query =
                tracing::debug_span!(target: "shop", "query", table = "books", rows = 3_u64, ratio = 0.5, hit = true);
            query.in_scope(|| std::thread::sleep(Duration::from_millis(3)));
        });
        request.record("status", 200_i64);
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let (query, request) = (&seen[0], &seen[1]);
    assert_eq!(query.name(), "query.shop");
    assert_eq!(request.name(), "request.shop");
    assert_eq!(query.parent_id(), Some(request.id()));
    assert_eq!(query.trace_id(), request.trace_id());
    assert_eq!(request.parent_id(), None);
    assert!(query.duration() >= Duration::from_millis(3));
    assert!(request.duration() >= query.duration());
    let p = query.payload();
    assert_eq!(p.get("table"), Some(&Value::from("books")));
    assert_eq!(p.get("rows"), Some(&Value::U64(3)));
    assert_eq!(p.get("ratio"), Some(&Value::F64(0.5)));
    assert_eq!(p.get("hit"), Some(&Value::Bool(true)));
    // Recorded after creation, before close.
    assert_eq!(request.payload().get("path"), Some(&Value::from("/cart")));
    assert_eq!(request.payload().get("status"), Some(&Value::I64(200)));
    assert_eq!(request.outcome(), Outcome::Completed);
}

#[test]
fn layer_publishes_events_with_level_message_and_span_parent() {
    let notifier = Notifier::new();
    let seen = collect(&notifier, Pattern::all());
    let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info_span!(target: "shop", "checkout").in_scope(|| {
            tracing::warn!(target: "shop::stock", isbn = "978", left = 1_i64, "low stock: {} left", 1);
        });
    });
    let seen = seen.lock().unwrap();
    let (warn, checkout) = (&seen[0], &seen[1]);
    assert_eq!(warn.name(), "warn.shop::stock");
    assert_eq!(warn.payload().get("message").unwrap().to_string(), "low stock: 1 left");
    assert_eq!(warn.payload().get("level"), Some(&Value::from("WARN")));
    assert_eq!(warn.payload().get("left"), Some(&Value::I64(1)));
    assert_eq!(warn.parent_id(), Some(checkout.id()));
}

#[test]
fn layer_names_are_configurable_and_none_skips_the_callsite() {
    let notifier = Notifier::new();
    let seen = collect(&notifier, Pattern::all());
    let names = EventNames::default()
        .spans(|meta| (meta.target() == "db").then(|| format!("{}.sql", meta.name())))
        .events(|_| None);
    let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier).names(names));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info_span!(target: "db", "query").in_scope(|| tracing::info!(target: "db", "not published"));
        tracing::info_span!(target: "web", "request").in_scope(|| {});
    });
    let names: Vec<_> = seen.lock().unwrap().iter().map(|e| e.name().to_owned()).collect();
    assert_eq!(names, ["query.sql"]);
}

#[test]
fn layer_publishes_nothing_and_keeps_no_state_when_nobody_listens() {
    let notifier = Notifier::new();
    let layer = NotifyLayer::with_notifier(notifier.clone());
    let subscriber = tracing_subscriber::registry().with(layer.clone());
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(target: "quiet", "work", n = 1);
        span.in_scope(|| tracing::info!(target: "quiet", "hello"));
        assert!(format!("{layer:?}").contains("open_spans: 0"), "{layer:?}");
        // A subscription made while the span is open reaches later spans only.
        let seen = collect(&notifier, "work.quiet");
        drop(span);
        assert!(seen.lock().unwrap().is_empty());
        tracing::info_span!(target: "quiet", "work").in_scope(|| {});
        assert_eq!(seen.lock().unwrap().len(), 1);
    });
}

#[test]
fn notify_events_inside_an_entered_span_are_its_children() {
    let notifier = Notifier::new();
    let seen = collect(&notifier, Pattern::all());
    let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier.clone()));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(target: "app", "job");
        span.in_scope(|| notifier.instrument("query.sql", Payload::new, |_| ()));
        // Not entered: not a parent.
        notifier.instrument("query.sql", Payload::new, |_| ());
        drop(span);
    });
    let seen = seen.lock().unwrap();
    let names: Vec<_> = seen.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["query.sql", "query.sql", "job.app"]);
    assert_eq!(seen[0].parent_id(), Some(seen[2].id()));
    assert_eq!(seen[0].trace_id(), seen[2].trace_id());
    assert_eq!(seen[1].parent_id(), None);
}

#[test]
fn instrument_err_records_the_exception_and_a_panic_marks_the_span_panicked() {
    #[tracing::instrument(target = "bank", err)]
    fn withdraw(amount: u64) -> Result<u64, String> {
        Err(format!("insufficient funds for {amount}"))
    }

    let notifier = Notifier::new();
    let seen = collect(&notifier, Pattern::glob("*.bank").unwrap());
    let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier));
    tracing::subscriber::with_default(subscriber, || {
        let _ = withdraw(5);
        let _ = std::panic::catch_unwind(|| {
            let _span = tracing::info_span!(target: "bank", "audit").entered();
            panic!("audit failed");
        });
    });
    let seen = seen.lock().unwrap();
    let names: Vec<_> = seen.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["error.bank", "withdraw.bank", "audit.bank"]);
    let Some(Value::Exception { message, .. }) = seen[1].payload().get(EXCEPTION_KEY) else {
        panic!("no exception: {:?}", seen[1].payload());
    };
    assert_eq!(message, "insufficient funds for 5");
    assert_eq!(seen[1].payload().get("amount"), Some(&Value::U64(5)));
    assert_eq!(seen[2].outcome(), Outcome::Panicked);
}

// ---- notify -> tracing ----

#[test]
fn notify_events_become_nested_spans_with_payload_fields() {
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _s = TracingForwarder::new().subscribe(&notifier, Pattern::glob("*.n2t").unwrap());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(capture.clone()), || {
        notifier.instrument(
            "request.n2t",
            || Payload::new().with("path", "/books"),
            |payload| {
                notifier.instrument(
                    "query.n2t",
                    || Payload::new().with("table", "books"),
                    |p| {
                        tracing::info!("inside the query");
                        p.insert("rows", 3_u64);
                    },
                );
                payload.insert("status", 200_u64);
            },
        );
    });
    let spans = capture.spans();
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let (request, query) = (&spans[0], &spans[1]);
    assert_eq!((request.name.as_str(), request.target.as_str()), ("request", "n2t"));
    assert_eq!((query.name.as_str(), query.target.as_str()), ("query", "n2t"));
    assert_eq!(request.level, "INFO");
    assert_eq!(query.parent, Some(request.id));
    assert_eq!(request.parent, None);
    assert_eq!(query.fields["table"], "books");
    assert!(query.fields.contains_key(BRIDGE_FIELD));
    assert!(
        spans.iter().all(|s| s.closed && s.entered == 1 && s.exited == 1),
        "{spans:#?}"
    );
    // The tracing event inside the query is in both spans.
    let events = capture.events();
    assert_eq!(events[0].scope, [request.id, query.id]);
}

#[test]
fn keys_added_by_the_block_are_recorded_at_finish_once_declared() {
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _s = TracingForwarder::new().subscribe(&notifier, "load.n2t_keys");
    tracing::subscriber::with_default(tracing_subscriber::registry().with(capture.clone()), || {
        for _ in 0..2 {
            notifier.instrument(
                "load.n2t_keys",
                || Payload::new().with("id", 7_u64),
                |p| {
                    p.insert("rows", 1_u64);
                },
            );
        }
    });
    let spans = capture.spans();
    assert_eq!(spans[0].fields.get("rows"), None, "the first event declares `rows`");
    assert_eq!(spans[1].fields.get("rows").map(String::as_str), Some("1"));
    assert_eq!(spans[1].fields["id"], "7");
}

#[test]
fn every_payload_key_becomes_a_field_with_eight_keys_and_past_eight() {
    // Up to 8 keys the bridge gathers the field values on the stack, past 8 in a `Vec`: both
    // carry every key's value, in spans and in events-at-finish mode.
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _spans = TracingForwarder::new().subscribe(&notifier, Pattern::glob("*.n2t_wide").unwrap());
    let _events = TracingForwarder::new()
        .events_at_finish()
        .subscribe(&notifier, Pattern::glob("*.n2t_wide").unwrap());
    let payload = |n: u64| (0..n).fold(Payload::new(), |p, i| p.with(format!("k{i}"), i * 10));
    tracing::subscriber::with_default(tracing_subscriber::registry().with(capture.clone()), || {
        notifier.instrument("eight.n2t_wide", || payload(8), |_| ());
        notifier.instrument("twelve.n2t_wide", || payload(12), |_| ());
    });
    let spans = capture.spans();
    let events = capture.events();
    assert_eq!((spans.len(), events.len()), (2, 2), "{spans:#?} {events:#?}");
    for (fields, n) in [
        (&spans[0].fields, 8),
        (&spans[1].fields, 12),
        (&events[0].fields, 8),
        (&events[1].fields, 12),
    ] {
        for i in 0..n {
            assert_eq!(fields.get(&format!("k{i}")), Some(&(i * 10).to_string()), "{fields:?}");
        }
        assert!(fields.contains_key(BRIDGE_FIELD));
        assert_eq!(
            fields.len(),
            n as usize + 1 + usize::from(fields.contains_key("notify.duration_ns"))
        );
    }
    assert!(events.iter().all(|e| e.fields.contains_key("notify.duration_ns")));
}

#[test]
fn events_at_finish_mode_emits_one_tracing_event_with_duration() {
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _s = TracingForwarder::new()
        .events_at_finish()
        .subscribe(&notifier, "query.n2t_events");
    tracing::subscriber::with_default(tracing_subscriber::registry().with(capture.clone()), || {
        notifier.instrument(
            "query.n2t_events",
            || Payload::new().with("table", "orders"),
            |_| {
                std::thread::sleep(Duration::from_millis(2));
            },
        );
    });
    assert!(capture.spans().is_empty());
    let events = capture.events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].name.as_str(), events[0].target.as_str()),
        ("query", "n2t_events")
    );
    assert_eq!(events[0].fields["table"], "orders");
    let ns: u64 = events[0].fields["notify.duration_ns"].parse().unwrap();
    assert!(ns >= 2_000_000, "{ns}");
}

#[test]
fn a_published_event_is_one_tracing_event_with_its_duration_in_both_modes() {
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _spans = TracingForwarder::new().subscribe(&notifier, "query.n2t_published");
    let _events = TracingForwarder::new()
        .events_at_finish()
        .subscribe(&notifier, "query.n2t_published");
    let start = std::time::Instant::now();
    // As notify-nats' Importer republishes an event of another process.
    let event = Event::new(
        "query.n2t_published",
        start,
        start + Duration::from_millis(12),
        Payload::new().with("table", "orders"),
    );
    tracing::subscriber::with_default(tracing_subscriber::registry().with(capture.clone()), || {
        notifier.publish_event(event)
    });
    assert!(capture.spans().is_empty(), "a span cannot be given past times");
    let events = capture.events();
    let seen: Vec<(&str, &str, &str, &str)> = events
        .iter()
        .map(|e| {
            let field = |key: &str| e.fields.get(key).map_or("", String::as_str);
            (
                e.name.as_str(),
                e.target.as_str(),
                field("table"),
                field("notify.duration_ns"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("query", "n2t_published", "orders", "12000000"),
            ("query", "n2t_published", "orders", "12000000")
        ]
    );
}

#[test]
fn the_bridge_is_silenced_when_tracing_filters_its_level_out() {
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _s = TracingForwarder::new()
        .level(tracing::Level::DEBUG)
        .subscribe(&notifier, "query.n2t_quiet");
    // A global filter (per-layer filters only choose which layer records; tracing's `enabled` stays
    // true for them, so they do not silence the bridge).
    let subscriber = tracing_subscriber::registry()
        .with(LevelFilter::INFO)
        .with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        // The first event makes the callsite; from then on tracing's interest silences the bridge.
        notifier.instrument("query.n2t_quiet", Payload::new, |_| ());
        assert!(!notifier.listening("query.n2t_quiet"));
    });
    assert!(capture.spans().is_empty());
}

// ---- both directions ----

#[test]
fn both_directions_installed_deliver_every_event_once() {
    let capture = Capture::default();
    let notifier = Notifier::new();
    let seen = collect(&notifier, Pattern::all());
    let _s = TracingForwarder::new().subscribe(&notifier, Pattern::all());
    let subscriber = tracing_subscriber::registry()
        .with(NotifyLayer::with_notifier(notifier.clone()))
        .with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        // From notify: one notify event, one tracing span.
        notifier.instrument("query.sql", Payload::new, |_| {
            // From tracing: one tracing span, one notify event.
            tracing::info_span!(target: "lib", "fetch").in_scope(|| {});
        });
    });
    let names: Vec<_> = seen.lock().unwrap().iter().map(|e| e.name().to_owned()).collect();
    assert_eq!(names, ["fetch.lib", "query.sql"]);
    let spans: Vec<_> = capture.spans().into_iter().map(|s| s.name).collect();
    assert_eq!(spans, ["query", "fetch"]);
    // And the tracing span from tracing nests under the bridged one, the notify event likewise.
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].parent_id(), Some(seen[1].id()));
    assert_eq!(capture.spans()[1].parent, Some(capture.spans()[0].id));
}

// ---- log -> notify ----

#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl log::Log for Lines {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }
    fn log(&self, record: &log::Record<'_>) {
        self.0
            .lock()
            .unwrap()
            .push(format!("{} {}", record.level(), record.args()));
    }
    fn flush(&self) {}
}

fn record(logger: &dyn log::Log, level: log::Level, target: &str, text: &str) {
    logger.log(
        &log::Record::builder()
            .args(format_args!("{text}"))
            .level(level)
            .target(target)
            .module_path_static(Some("shop::db"))
            .file_static(Some("src/db.rs"))
            .line(Some(42))
            .build(),
    );
}

#[test]
fn log_records_become_events_and_still_reach_the_forward_logger() {
    let notifier = Notifier::new();
    let seen = collect(&notifier, Pattern::glob("*.db").unwrap());
    let lines = Lines::default();
    let logger = NotifyLogger::with_notifier(notifier.clone()).forward_to(lines.clone());
    record(&logger, log::Level::Warn, "db", "slow query");
    record(&logger, log::Level::Debug, "db", "plan");
    record(&logger, log::Level::Info, "web", "GET /");
    let seen = seen.lock().unwrap();
    let names: Vec<_> = seen.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["warn.db", "debug.db"]);
    let p = seen[0].payload();
    assert_eq!(p.get("message").unwrap().to_string(), "slow query");
    assert_eq!(p.get("level"), Some(&Value::from("WARN")));
    assert_eq!(p.get("module_path"), Some(&Value::from("shop::db")));
    assert_eq!(p.get("file"), Some(&Value::from("src/db.rs")));
    assert_eq!(p.get("line"), Some(&Value::U64(42)));
    // The forward logger got what it is enabled for, whether notify listened or not.
    assert_eq!(*lines.0.lock().unwrap(), ["WARN slow query", "INFO GET /"]);
    // Enabled when notify listens (debug.db) or the forward logger wants it (info).
    let enabled =
        |level, target| log::Log::enabled(&logger, &log::Metadata::builder().level(level).target(target).build());
    assert!(enabled(log::Level::Debug, "db"));
    assert!(!enabled(log::Level::Debug, "web"));
    assert!(enabled(log::Level::Info, "web"));
}

#[test]
fn a_subscriber_that_logs_does_not_loop_through_the_logger() {
    let notifier = Notifier::new();
    let lines = Lines::default();
    let logger = Arc::new(NotifyLogger::with_notifier(notifier.clone()).forward_to(lines.clone()));
    let count = Arc::new(Mutex::new(0));
    let (inner, counter) = (logger.clone(), count.clone());
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| {
            *counter.lock().unwrap() += 1;
            record(&*inner, log::Level::Info, "audit", &format!("saw {}", e.name()));
        }),
    );
    record(&*logger, log::Level::Warn, "db", "slow query");
    assert_eq!(*count.lock().unwrap(), 1);
    assert_eq!(*lines.0.lock().unwrap(), ["WARN slow query", "INFO saw warn.db"]);
}

#[test]
fn a_thread_keeps_at_most_256_synchronous_spans_and_exits_the_oldest_past_that() {
    // Events started with the thread's instrumenter (synchronous events: each is current from
    // its start) and not finished yet leave their spans on this thread's stack; past 256 the
    // oldest is exited and dropped. (A `Handle` is not current from its start: its span is never
    // on this stack.)
    let capture = Capture::default();
    let notifier = Notifier::new();
    let bridge = TracingForwarder::new();
    let _s = bridge.clone().subscribe(&notifier, "job.n2t_many");
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(capture.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        let instrumenter = notifier.instrumenter();
        for _ in 0..300 {
            instrumenter.start("job.n2t_many", Payload::new());
        }
        assert_eq!(bridge.open_spans(), 256, "at most 256 kept on this thread");
        let spans = capture.spans();
        assert_eq!(spans.len(), 300);
        // Each span is a child of the one before (its event's parent), so tracing keeps them all
        // open while a child is; the 44 oldest are exited.
        let exited: Vec<usize> = spans.iter().map(|s| s.exited).collect();
        assert!(spans.iter().all(|s| s.entered == 1 && !s.closed), "{spans:#?}");
        assert!(exited[..44].iter().all(|&e| e == 1), "the 44 oldest exited: {exited:?}");
        assert!(
            exited[44..].iter().all(|&e| e == 0),
            "the 256 newest still entered: {exited:?}"
        );
        for _ in 0..300 {
            instrumenter.finish("job.n2t_many", Payload::new()).unwrap();
        }
        assert_eq!(bridge.open_spans(), 0);
    });
    let spans = capture.spans();
    assert!(
        spans.iter().all(|s| s.entered == 1 && s.exited == 1 && s.closed),
        "{spans:#?}"
    );
}

#[test]
fn a_handle_finished_on_another_thread_has_its_span_closed_there_and_never_entered_where_it_started() {
    // Issue 33 item 9: a started handle is not current, so its span is not entered at start and
    // nothing this thread emits meanwhile nests under it.
    let capture = Capture::default();
    let notifier = Notifier::new();
    let bridge = TracingForwarder::new();
    let _s = bridge
        .clone()
        .subscribe(&notifier, Pattern::glob("*.n2t_moved").unwrap());
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(capture.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        let mut handle = notifier.build_handle("job.n2t_moved", Payload::new().with("k", 1_u64));
        handle.start().unwrap();
        tracing::info!("between");
        let finisher = dispatch.clone();
        std::thread::spawn(move || {
            tracing::dispatcher::with_default(&finisher, || {
                handle.payload_mut().insert("k", 2_u64);
                handle.payload_mut().insert("rows", 3_u64);
                handle.finish().unwrap();
            })
        })
        .join()
        .unwrap();
        assert_eq!(bridge.open_spans(), 0);
        notifier.instrument("later.n2t_moved", Payload::new, |_| tracing::info!("inside later"));
        tracing::info!("after");
    });
    let spans = capture.spans();
    let names: Vec<_> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["job", "later"]);
    let (job, later) = (&spans[0], &spans[1]);
    assert_eq!((job.entered, job.exited, job.closed), (0, 0, true), "{job:#?}");
    assert_eq!(later.parent, None);
    assert_eq!((later.entered, later.exited, later.closed), (1, 1, true));
    // `k` keeps its value from the start (a replaced value is not reflected).
    assert_eq!(job.fields.get("k").map(String::as_str), Some("1"));
    let scopes: Vec<(String, Vec<u64>)> = capture
        .events()
        .into_iter()
        .map(|e| (e.fields["message"].clone(), e.scope))
        .collect();
    assert_eq!(
        scopes,
        [
            ("between".to_owned(), vec![]),
            ("inside later".to_owned(), vec![1]),
            ("after".to_owned(), vec![])
        ]
    );
}

#[test]
fn a_handle_started_on_a_thread_that_exits_is_closed_where_it_finishes_without_a_panic() {
    // A fmt layer with close events: its own thread-local buffer may be gone when the exiting
    // thread's thread-locals are dropped, so exiting or closing a span there would panic in it.
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _s = TracingForwarder::new().subscribe(&notifier, Pattern::glob("*.n2t_exit").unwrap());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::sink)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE);
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(capture.clone()).with(fmt));
    let starter = dispatch.clone();
    let for_thread = notifier.clone();
    let mut handle = std::thread::spawn(move || {
        tracing::dispatcher::with_default(&starter, || {
            let mut handle = for_thread.build_handle("job.n2t_exit", Payload::new());
            handle.start().unwrap();
            handle
        })
    })
    .join()
    .expect("the thread exits without a panic");
    // Finished after its thread is gone: nothing fails; the span (never entered) is closed here.
    tracing::dispatcher::with_default(&dispatch, || handle.finish().unwrap());
    let spans = capture.spans();
    assert_eq!(spans.len(), 1);
    assert_eq!(
        (spans[0].entered, spans[0].exited, spans[0].closed),
        (0, 0, true),
        "{spans:#?}"
    );
}
