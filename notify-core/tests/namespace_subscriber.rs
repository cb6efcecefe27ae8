//! Subscriber types with a method per event of a namespace (issue 19, item 1): AS::N's
//! `ActiveSupport::Subscriber`, `attach_to` and `detach_from`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use notify_core::{
    context::EventContext, context::TransactionId, failure::SubscriberFailure, subscriber::Method, subscriber::Methods,
    subscriber::MethodsError, subscriber::NamespaceSubscriber, subscriber::SubscriberKind, Event, Notifier, Payload,
};

/// A metrics-style subscriber: three methods of three kinds.
#[derive(Default)]
struct Metrics {
    sql: AtomicU64,
    rows: AtomicU64,
    instantiations: AtomicU64,
    transaction_starts: AtomicU64,
    transaction_finishes: AtomicU64,
}

impl Metrics {
    fn sql(&self, event: &Event) {
        assert_eq!(event.name(), "sql.active_record");
        self.sql.fetch_add(1, Ordering::SeqCst);
        let rows = event.payload().get("rows").and_then(|v| v.as_i64()).unwrap_or(0);
        self.rows.fetch_add(rows as u64, Ordering::SeqCst);
    }

    fn instantiation(&self, name: &str, start: SystemTime, finish: SystemTime, _txn: TransactionId, _: &Payload) {
        assert_eq!(name, "instantiation.active_record");
        assert!(finish >= start);
        self.instantiations.fetch_add(1, Ordering::SeqCst);
    }

    fn transaction_start(&self, _: &str, _: &EventContext, _: &Payload) {
        self.transaction_starts.fetch_add(1, Ordering::SeqCst);
    }

    fn transaction_finish(&self, _: &str, _: &EventContext, _: &Payload) {
        self.transaction_finishes.fetch_add(1, Ordering::SeqCst);
    }

    fn counts(&self) -> [u64; 5] {
        [
            self.sql.load(Ordering::SeqCst),
            self.rows.load(Ordering::SeqCst),
            self.instantiations.load(Ordering::SeqCst),
            self.transaction_starts.load(Ordering::SeqCst),
            self.transaction_finishes.load(Ordering::SeqCst),
        ]
    }
}

impl NamespaceSubscriber for Metrics {
    fn methods() -> Methods<Metrics> {
        Methods::new("active_record")
            .event("sql", Metrics::sql)
            .timed("instantiation", Metrics::instantiation)
            .evented("transaction", Metrics::transaction_start, Metrics::transaction_finish)
    }
}

fn instrument_all(notifier: &Notifier) {
    notifier.instrument("sql.active_record", || Payload::new().with("rows", 3_u64), |_| ());
    notifier.instrument("instantiation.active_record", Payload::new, |_| ());
    notifier.instrument("transaction.active_record", Payload::new, |_| ());
    // No method handles these.
    notifier.instrument("cache_miss.active_record", Payload::new, |_| ());
    notifier.instrument("sql.other", Payload::new, |_| ());
}

#[test]
fn n1_metrics_subscriber_counts_exactly_until_detached() {
    let notifier = Notifier::new();
    let attached = Metrics::default().attach_to(&notifier).unwrap();
    assert_eq!(
        attached.event_names().collect::<Vec<_>>(),
        [
            "sql.active_record",
            "instantiation.active_record",
            "transaction.active_record"
        ]
    );
    assert_eq!(notifier.subscriber_count(), 3);
    assert!(!notifier.listening("cache_miss.active_record"));
    assert_eq!(
        notifier
            .listeners_for("transaction.active_record")
            .iter()
            .map(|(id, kind)| (id.get(), *kind))
            .collect::<Vec<_>>(),
        [(3, SubscriberKind::Evented)],
        "each method is subscribed as the kind it declares"
    );

    instrument_all(&notifier);
    assert_eq!(attached.subscriber().counts(), [1, 3, 1, 1, 1]);
    instrument_all(&notifier);
    assert_eq!(attached.subscriber().counts(), [2, 6, 2, 2, 2]);

    assert_eq!(attached.detach(), 3);
    assert_eq!(notifier.subscriber_count(), 0);
    instrument_all(&notifier);
    assert_eq!(attached.subscriber().counts(), [2, 6, 2, 2, 2], "nothing after detach");
    assert_eq!(attached.detach(), 0);
}

#[test]
fn n2_methods_added_later_are_subscribed_and_detached_with_the_rest() {
    let notifier = Notifier::new();
    let mut attached = Metrics::default().attach_to(&notifier).unwrap();
    let extra = Arc::new(AtomicU64::new(0));
    let seen = extra.clone();
    attached
        .add_method(Method::event("cache_miss", move |_: &Metrics, _: &Event| {
            seen.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
    instrument_all(&notifier);
    assert_eq!(extra.load(Ordering::SeqCst), 1);
    assert_eq!(attached.subscriber().counts(), [1, 3, 1, 1, 1]);

    // Redefining a method replaces it: sql is counted once per event, not twice.
    attached
        .add_method(Method::event("sql", |m: &Metrics, _: &Event| {
            m.sql.fetch_add(10, Ordering::SeqCst);
        }))
        .unwrap();
    assert_eq!(notifier.subscriber_count(), 4);
    instrument_all(&notifier);
    assert_eq!(attached.subscriber().counts(), [11, 3, 2, 2, 2]);
    assert_eq!(
        attached.event_names().collect::<Vec<_>>(),
        [
            "instantiation.active_record",
            "transaction.active_record",
            "cache_miss.active_record",
            "sql.active_record"
        ]
    );

    assert!(attached.remove_method("cache_miss"));
    assert!(!attached.remove_method("cache_miss"));
    assert_eq!(attached.detach(), 3);
    instrument_all(&notifier);
    assert_eq!(extra.load(Ordering::SeqCst), 2);
    assert_eq!(attached.subscriber().counts(), [11, 3, 2, 2, 2]);
}

#[test]
fn n3_invalid_declarations_subscribe_nothing() {
    struct Bad;
    impl NamespaceSubscriber for Bad {
        fn methods() -> Methods<Bad> {
            Methods::new("db")
                .event("query", |_: &Bad, _: &Event| {})
                .event("query.slow", |_: &Bad, _: &Event| {})
        }
    }
    let notifier = Notifier::new();
    let err = Bad.attach_to(&notifier).unwrap_err();
    assert_eq!(
        err,
        MethodsError::InvalidMethod {
            namespace: "db".into(),
            method: "query.slow".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "invalid method `query.slow` in namespace `db`: a method name is non-empty, without dots or control characters"
    );
    assert_eq!(notifier.subscriber_count(), 0);

    for ns in ["", ".db", "db.", "a..b"] {
        let err = Methods::<()>::new(ns).attach(Arc::new(()), &notifier).unwrap_err();
        assert_eq!(err, MethodsError::InvalidNamespace(ns.into()));
    }
    let err = Methods::<()>::new("x\n[INFO  auth] admin").validate().unwrap_err();
    assert_eq!(err, MethodsError::InvalidNamespace("x\n[INFO  auth] admin".into()));
    assert_eq!(
        err.to_string(),
        r"invalid namespace `x\n[INFO  auth] admin`: a namespace is non-empty dot-separated words without control characters"
    );
    let err = Methods::<()>::new("db")
        .event("q\u{1b}]0;t\u{7}\u{202e}", |_: &(), _: &Event| {})
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r"invalid method `q\u{1b}]0;t\u{7}\u{202e}` in namespace `db`: a method name is non-empty, without dots or control characters"
    );
    assert_eq!(
        Methods::<()>::new("db")
            .attach(Arc::new(()), &notifier)
            .unwrap()
            .detach(),
        0,
        "no methods, nothing subscribed"
    );

    let mut attached = Metrics::default().attach_to(&notifier).unwrap();
    let err = attached
        .add_method(Method::event("", |_: &Metrics, _: &Event| {}))
        .unwrap_err();
    assert_eq!(
        err,
        MethodsError::InvalidMethod {
            namespace: "active_record".into(),
            method: String::new()
        }
    );
    drop(notifier);
    let err = attached
        .add_method(Method::event("late", |_: &Metrics, _: &Event| {}))
        .unwrap_err();
    assert_eq!(err, MethodsError::NotifierGone);
    assert_eq!(err.to_string(), "the notifier of the attachment was dropped");
    assert_eq!(attached.detach(), 0);
}

#[test]
fn n4_failures_name_the_type_and_method_and_the_others_still_run() {
    struct Failing;
    impl NamespaceSubscriber for Failing {
        fn methods() -> Methods<Failing> {
            Methods::new("db").event("query", |_: &Failing, _: &Event| panic!("boom"))
        }
    }
    let notifier = Notifier::new();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.subscriber().to_owned()));
    Failing.attach_to(&notifier).unwrap();
    let other = Arc::new(AtomicU64::new(0));
    let seen = other.clone();
    Methods::<()>::new("db")
        .event("query", move |_: &(), _: &Event| {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .attach(Arc::new(()), &notifier)
        .unwrap();
    let prior = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    assert_eq!(notifier.instrument("query.db", Payload::new, |_| 5), 5);
    std::panic::set_hook(prior);
    assert_eq!(
        *reports.lock().unwrap(),
        ["namespace_subscriber::n4_failures_name_the_type_and_method_and_the_others_still_run::Failing#query"]
    );
    assert_eq!(other.load(Ordering::SeqCst), 1);
}

#[test]
fn n5_one_value_on_two_notifiers_and_every_kind() {
    #[derive(Default)]
    struct All(AtomicU64);
    let methods = Methods::<All>::new("k")
        .event("event", |a: &All, _: &Event| {
            a.0.fetch_add(1, Ordering::SeqCst);
        })
        .monotonic("monotonic", |a: &All, _: &str, _, _, _: TransactionId, _: &Payload| {
            a.0.fetch_add(10, Ordering::SeqCst);
        })
        .owned("owned", |a: &All, _: &Arc<Event>| {
            a.0.fetch_add(100, Ordering::SeqCst);
        });
    let all = Arc::new(All::default());
    let (a, b) = (Notifier::new(), Notifier::new());
    let on_a = methods.attach(all.clone(), &a).unwrap();
    let on_b = methods.attach(all.clone(), &b).unwrap();
    for notifier in [&a, &b] {
        for name in ["event.k", "monotonic.k", "owned.k", "other.k"] {
            notifier.instrument(name, Payload::new, |_| ());
        }
    }
    assert_eq!(all.0.load(Ordering::SeqCst), 222);
    assert_eq!(on_a.detach(), 3);
    b.instrument("owned.k", Payload::new, |_| ());
    assert_eq!(all.0.load(Ordering::SeqCst), 322, "b is still attached");
    assert_eq!(on_b.detach(), 3);
}

#[test]
fn n6_subscriber_methods_derives_event_names_from_method_names() {
    struct Derived;
    impl NamespaceSubscriber for Derived {
        fn methods() -> Methods<Derived> {
            notify_core::subscriber::subscriber_methods!(Derived, "active_record", {
                event sql,
                timed instantiation,
            })
            .evented("transaction", Derived::edge, Derived::edge)
        }
    }
    impl Derived {
        fn sql(&self, _: &Event) {}
        fn instantiation(&self, _: &str, _: SystemTime, _: SystemTime, _: TransactionId, _: &Payload) {}
        fn edge(&self, _: &str, _: &EventContext, _: &Payload) {}
    }
    let notifier = Notifier::new();
    let attached = Derived.attach_to(&notifier).unwrap();
    assert_eq!(
        attached.event_names().collect::<Vec<_>>(),
        [
            "sql.active_record",
            "instantiation.active_record",
            "transaction.active_record"
        ]
    );
    assert_eq!(
        notifier
            .listeners_for("instantiation.active_record")
            .iter()
            .map(|(_, kind)| *kind)
            .collect::<Vec<_>>(),
        [SubscriberKind::Timed]
    );
    assert_eq!(attached.detach(), 3);
}

/// Which method of [`Ticks`] saw each event, by sequence number.
struct Ticks {
    /// Deliveries per event (index: the event's `seq`).
    seen: Vec<std::sync::atomic::AtomicU8>,
    /// Deliveries to the first and the second definition of `tick`.
    by_method: [AtomicU64; 2],
}

impl Ticks {
    fn saw(&self, method: usize, event: &Event) {
        let seq = event.payload().get("seq").and_then(|v| v.as_i64()).unwrap() as usize;
        self.seen[seq].fetch_add(1, Ordering::SeqCst);
        self.by_method[method].fetch_add(1, Ordering::SeqCst);
    }
}

impl NamespaceSubscriber for Ticks {
    fn methods() -> Methods<Ticks> {
        Methods::new("stress").event("tick", |t: &Ticks, e: &Event| t.saw(0, e))
    }
}

/// Issue 33 item 8: replacing a method is one registry change. Under a concurrent publisher each
/// event reaches the old method or the new one exactly once (it was delivered twice when the
/// new method was subscribed before the old one was removed).
#[test]
fn a_method_replaced_under_a_concurrent_publisher_delivers_each_event_exactly_once() {
    const EVENTS: usize = 100_000;
    let notifier = Notifier::new();
    let ticks = Ticks {
        seen: (0..EVENTS).map(|_| std::sync::atomic::AtomicU8::new(0)).collect(),
        by_method: [AtomicU64::new(0), AtomicU64::new(0)],
    };
    let mut attached = ticks.attach_to(&notifier).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let publisher = {
        let (notifier, done) = (notifier.clone(), done.clone());
        std::thread::spawn(move || {
            for seq in 0..EVENTS {
                notifier.instrument("tick.stress", || Payload::new().with("seq", seq as u64), |_| ());
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut replacements = 0_u64;
    while !done.load(Ordering::SeqCst) {
        let method = (replacements % 2 + 1) as usize % 2;
        attached
            .add_method(Method::event("tick", move |t: &Ticks, e: &Event| t.saw(method, e)))
            .unwrap();
        replacements += 1;
    }
    publisher.join().unwrap();
    assert!(replacements > 0);
    assert_eq!(
        notifier.subscriber_count(),
        1,
        "each replacement removed the old method"
    );
    let ticks = attached.subscriber();
    let counts: Vec<u8> = ticks.seen.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    let twice = counts.iter().filter(|c| **c > 1).count();
    let never = counts.iter().filter(|c| **c == 0).count();
    assert_eq!(
        (twice, never),
        (0, 0),
        "events delivered twice, never ({replacements} replacements)"
    );
    let by_method = ticks.by_method.iter().map(|c| c.load(Ordering::SeqCst)).sum::<u64>();
    assert_eq!(by_method, EVENTS as u64);
}
