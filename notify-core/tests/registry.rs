//! shared/cases/registry.md, one test per case (named after its id), with exact outcomes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use notify_core::{
    context::TransactionId, event::Callsite, event::Interest, event::Outcome, failure::FailurePolicy,
    failure::SubscriberErrors, failure::SubscriberFailure, subscriber::EventOptions, subscriber::SubscriberKind, Event,
    EventedSubscriber, Notifier, NotifyError, Pattern, Payload, SilenceableSubscriber, Subscriber,
};

type Log = Arc<Mutex<Vec<String>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

/// An event-object subscriber that appends "<tag>:<event name>" to `log`.
fn recorder(log: &Log, tag: &'static str) -> Subscriber {
    let log = log.clone();
    Subscriber::event(move |e: &Event| log.lock().unwrap().push(format!("{tag}:{}", e.name())))
}

/// An evented subscriber that appends "<tag>.start:<name>" / "<tag>.finish:<name>".
struct Evented(Log, &'static str);

impl EventedSubscriber for Evented {
    fn start(&self, name: &str, _: &notify_core::context::EventContext, _: &Payload) {
        self.0.lock().unwrap().push(format!("{}.start:{name}", self.1));
    }
    fn finish(&self, name: &str, _: &notify_core::context::EventContext, _: &Payload) {
        self.0.lock().unwrap().push(format!("{}.finish:{name}", self.1));
    }
}

/// A silenceable subscriber silenced while its flag is set.
struct Switch(Log, &'static str, Arc<AtomicBool>);

impl EventedSubscriber for Switch {
    fn start(&self, name: &str, _: &notify_core::context::EventContext, _: &Payload) {
        self.0.lock().unwrap().push(format!("{}.start:{name}", self.1));
    }
    fn finish(&self, name: &str, _: &notify_core::context::EventContext, _: &Payload) {
        self.0.lock().unwrap().push(format!("{}.finish:{name}", self.1));
    }
}

impl SilenceableSubscriber for Switch {
    fn silenced(&self, _: &str) -> bool {
        self.2.load(Ordering::SeqCst)
    }
}

fn collect_failures(notifier: &Notifier) -> Arc<Mutex<Vec<SubscriberFailure>>> {
    let failures = Arc::new(Mutex::new(Vec::new()));
    let sink = failures.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.clone()));
    failures
}

#[test]
fn r1_subscribe_while_in_flight_waits_for_the_next_event() {
    let notifier = Notifier::new();
    let seen = log();
    let _ = notifier.subscribe("x", recorder(&seen, "early"));

    // With a handle.
    let mut handle = notifier.build_handle("x", Payload::new());
    handle.start().unwrap();
    let late = log();
    let late_sub = notifier.subscribe("x", recorder(&late, "late"));
    handle.finish().unwrap();
    assert_eq!(entries(&late), Vec::<String>::new());
    assert_eq!(entries(&seen), ["early:x"]);
    notifier.instrument("x", Payload::new, |_| ());
    assert_eq!(entries(&late), ["late:x"]);
    late_sub.unsubscribe().unwrap();

    // Inside instrument's block.
    let late2 = log();
    let notifier2 = notifier.clone();
    let late2_clone = late2.clone();
    let value = notifier.instrument("x", Payload::new, move |_| {
        let _ = notifier2.subscribe("x", recorder(&late2_clone, "late2"));
        7
    });
    assert_eq!(value, 7);
    assert_eq!(entries(&late2), Vec::<String>::new());
    notifier.instrument("x", Payload::new, |_| ());
    assert_eq!(entries(&late2), ["late2:x"]);
}

#[test]
fn r2_unsubscribe_while_in_flight_still_gets_the_finish() {
    let notifier = Notifier::new();
    let seen = log();
    let subscription = notifier.subscribe("x", Subscriber::evented(Evented(seen.clone(), "e")));
    let mut handle = notifier.build_handle("x", Payload::new());
    handle.start().unwrap();
    subscription.unsubscribe().unwrap();
    handle.finish().unwrap();
    notifier.instrument("x", Payload::new, |_| ());
    assert_eq!(entries(&seen), ["e.start:x", "e.finish:x"]);
}

/// Four subscribers of four kinds on "x"; `failing` says which ones panic.
fn four_kinds(notifier: &Notifier, calls: &Log, timed_panics: bool, event_panics: bool) {
    let c = calls.clone();
    let _ = notifier.subscribe(
        "x",
        Subscriber::timed(
            move |_: &str, _: SystemTime, _: SystemTime, _: TransactionId, _: &Payload| {
                c.lock().unwrap().push("timed".into());
                if timed_panics {
                    panic!("timed failed");
                }
            },
        )
        .named("timed-one"),
    );
    let c = calls.clone();
    let _ = notifier.subscribe(
        "x",
        Subscriber::monotonic(move |_: &str, _: Instant, _: Instant, _: TransactionId, _: &Payload| {
            c.lock().unwrap().push("monotonic".into());
        }),
    );
    let c = calls.clone();
    let _ = notifier.subscribe(
        "x",
        Subscriber::event(move |_: &Event| {
            c.lock().unwrap().push("event".into());
            if event_panics {
                panic!("event failed");
            }
        })
        .named("event-one"),
    );
    let _ = notifier.subscribe("x", Subscriber::evented(Evented(calls.clone(), "evented")));
}

#[test]
fn r3_one_failing_subscriber_among_kinds() {
    let notifier = Notifier::new();
    let failures = collect_failures(&notifier);
    let calls = log();
    four_kinds(&notifier, &calls, true, false);
    let runs = AtomicUsize::new(0);
    let value = notifier.instrument("x", Payload::new, |_| {
        runs.fetch_add(1, Ordering::SeqCst);
        42
    });
    assert_eq!(value, 42);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let mut got = entries(&calls);
    got.sort();
    assert_eq!(
        got,
        ["event", "evented.finish:x", "evented.start:x", "monotonic", "timed"]
    );
    let failures = failures.lock().unwrap().clone();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].subscriber(), "timed-one");
    assert_eq!(failures[0].kind(), SubscriberKind::Timed);
    assert_eq!(failures[0].subscription().get(), 1);
    assert_eq!(failures[0].event(), "x");
    assert_eq!(failures[0].message(), "timed failed");
}

#[test]
fn r3_two_failures_are_reported_in_run_order() {
    let notifier = Notifier::new();
    let failures = collect_failures(&notifier);
    let calls = log();
    four_kinds(&notifier, &calls, true, true);
    assert_eq!(notifier.instrument("x", Payload::new, |_| 1), 1);
    assert_eq!(entries(&calls).len(), 5);
    let messages: Vec<String> = failures
        .lock()
        .unwrap()
        .iter()
        .map(|f| f.message().to_owned())
        .collect();
    assert_eq!(messages, ["timed failed", "event failed"]);
}

#[test]
fn r3_strict_mode_raises_one_aggregate_after_all_ran() {
    let notifier = Notifier::new();
    let failures = collect_failures(&notifier);
    notifier.set_failure_policy(FailurePolicy::Strict);
    let calls = log();
    four_kinds(&notifier, &calls, true, true);
    let runs = AtomicUsize::new(0);
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("x", Payload::new, |_| runs.fetch_add(1, Ordering::SeqCst))
    }))
    .unwrap_err();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        entries(&calls).len(),
        5,
        "every subscriber ran before the aggregate failure"
    );
    let errors = panic.downcast::<SubscriberErrors>().unwrap();
    let messages: Vec<&str> = errors.failures().iter().map(SubscriberFailure::message).collect();
    assert_eq!(messages, ["timed failed", "event failed"]);
    assert_eq!(
        errors.to_string(),
        "2 subscriber(s) failed:\n  subscriber `timed-one` (timed, subscription #1) panicked on `x`: timed failed\n  \
         subscriber `event-one` (event, subscription #3) panicked on `x`: event failed"
    );
    assert_eq!(failures.lock().unwrap().len(), 2);
}

#[test]
fn r3_detach_policy_removes_the_subscriber_and_publishes_subscriber_failed() {
    let notifier = Notifier::new();
    let failures = collect_failures(&notifier);
    notifier.set_failure_policy(FailurePolicy::Detach);
    let calls = log();
    four_kinds(&notifier, &calls, true, false);
    let failed = log();
    let _ = notifier.subscribe(notify_core::failure::SUBSCRIBER_FAILED, {
        let failed = failed.clone();
        Subscriber::event(move |e: &Event| {
            let p = e.payload();
            failed.lock().unwrap().push(format!(
                "{} {} {} {}",
                p.get("subscription").unwrap(),
                p.get("subscriber").unwrap(),
                p.get("event").unwrap(),
                p.get("message").unwrap()
            ));
        })
    });
    notifier.instrument("x", Payload::new, |_| ());
    assert_eq!(entries(&failed), ["1 timed-one x timed failed"]);
    assert_eq!(failures.lock().unwrap().len(), 1);
    assert_eq!(
        notifier.listeners_for("x").iter().map(|l| l.1).collect::<Vec<_>>(),
        [
            SubscriberKind::Monotonic,
            SubscriberKind::Event,
            SubscriberKind::Evented
        ]
    );
    calls.lock().unwrap().clear();
    notifier.instrument("x", Payload::new, |_| ());
    assert!(!entries(&calls).contains(&"timed".to_owned()));
    assert_eq!(entries(&failed).len(), 1);
}

#[test]
fn r4_slow_first_subscriber_does_not_shift_the_timestamps() {
    let notifier = Notifier::new();
    let times: Arc<Mutex<Vec<(SystemTime, SystemTime)>>> = Arc::new(Mutex::new(Vec::new()));
    for sleep in [true, false] {
        let times = times.clone();
        let _ = notifier.subscribe(
            "x",
            Subscriber::timed(
                move |_: &str, start: SystemTime, finish: SystemTime, _: TransactionId, _: &Payload| {
                    if sleep {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    times.lock().unwrap().push((start, finish));
                },
            ),
        );
    }
    notifier.instrument("x", Payload::new, |_| ());
    let times = times.lock().unwrap();
    assert_eq!(times.len(), 2);
    assert_eq!(times[0], times[1]);
}

#[test]
fn r5_unsubscribe_by_name_is_narrow() {
    let notifier = Notifier::new();
    let seen = log();
    let _ = notifier.subscribe(Pattern::glob("*.world").unwrap(), recorder(&seen, "a"));
    let b = notifier.subscribe("hi.world", recorder(&seen, "b"));
    let _ = notifier.subscribe("hi.world", recorder(&seen, "c"));
    let _ = notifier.subscribe(Pattern::all(), recorder(&seen, "d"));
    assert_eq!(notifier.unsubscribe_name("hi.world"), 2);
    notifier.instrument("hi.world", Payload::new, |_| ());
    notifier.instrument("hello.world", Payload::new, |_| ());
    assert_eq!(entries(&seen), ["d:hi.world", "a:hello.world", "d:hello.world"]);
    assert_eq!(b.unsubscribe(), Err(NotifyError::NotFound));
    assert_eq!(b.unsubscribe(), Err(NotifyError::NotFound));
}

#[test]
fn r5_unsubscribing_a_handle_twice_says_not_found() {
    let notifier = Notifier::new();
    let seen = log();
    let a = notifier.subscribe("x", recorder(&seen, "a"));
    assert_eq!(a.unsubscribe(), Ok(()));
    assert_eq!(a.unsubscribe(), Err(NotifyError::NotFound));
    assert_eq!(
        a.unsubscribe().unwrap_err().to_string(),
        "subscription not found: it was already removed"
    );
}

#[test]
fn r6_reentrant_subscriber_instruments_subscribes_and_unsubscribes_itself() {
    let notifier = Notifier::new();
    let seen = log();
    let _ = notifier.subscribe("nested", recorder(&seen, "nested"));
    let own: Arc<Mutex<Option<notify_core::Subscription>>> = Arc::new(Mutex::new(None));
    let (n, s, o) = (notifier.clone(), seen.clone(), own.clone());
    let subscription = notifier.subscribe(
        "outer",
        Subscriber::event(move |_: &Event| {
            s.lock().unwrap().push("reentrant:outer".into());
            n.instrument("nested", Payload::new, |_| ());
            let _ = n.subscribe("outer", recorder(&s, "added"));
            if let Some(me) = o.lock().unwrap().take() {
                me.unsubscribe().unwrap();
            }
        }),
    );
    *own.lock().unwrap() = Some(subscription);
    notifier.instrument("outer", Payload::new, |_| ());
    assert_eq!(entries(&seen), ["reentrant:outer", "nested:nested"]);
    notifier.instrument("outer", Payload::new, |_| ());
    assert_eq!(entries(&seen), ["reentrant:outer", "nested:nested", "added:outer"]);
}

/// One subscription of R7's churn thread: its pattern, and the sequence numbers bracketing it.
struct Window {
    pattern: Pattern,
    subscribing_at: u64,
    subscribed_at: u64,
    unsubscribing_at: u64,
    unsubscribed_at: u64,
    delivered: Arc<Mutex<Vec<usize>>>,
}

#[test]
fn r7_cache_fill_races_subscription_churn() {
    const NAMES: usize = 10_000;
    let notifier = Notifier::new();
    let seq = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let progress = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(std::sync::Barrier::new(2));
    let windows_done = Arc::new(AtomicUsize::new(0));

    let instrumenter = {
        let (notifier, seq, progress, done) = (notifier.clone(), seq.clone(), progress.clone(), done.clone());
        let (ready, windows_done) = (ready.clone(), windows_done.clone());
        std::thread::spawn(move || {
            ready.wait();
            let mut spans = Vec::with_capacity(NAMES);
            for i in 0..NAMES {
                // Pace against the churn (never lockstep): every 50 events, let it complete a
                // window, so subscriptions and cache fills really overlap.
                while i % 50 == 0 && windows_done.load(Ordering::SeqCst) < i / 50 {
                    std::thread::yield_now();
                }
                let name = format!("r7.n{i}");
                let start = seq.fetch_add(1, Ordering::SeqCst);
                notifier.instrument(&name, || Payload::new().with("i", i), |_| ());
                let end = seq.fetch_add(1, Ordering::SeqCst);
                spans.push((start, end));
                progress.store(i, Ordering::SeqCst);
            }
            done.store(true, Ordering::SeqCst);
            spans
        })
    };
    let churner = {
        let (notifier, seq, progress, done) = (notifier.clone(), seq.clone(), progress.clone(), done.clone());
        let (ready, windows_done) = (ready.clone(), windows_done.clone());
        std::thread::spawn(move || {
            let mut windows = Vec::new();
            let mut k = 0_usize;
            ready.wait();
            while !done.load(Ordering::SeqCst) || windows.len() < 3 {
                let pattern = match k % 3 {
                    0 => Pattern::exact(format!("r7.n{}", progress.load(Ordering::SeqCst) + 3)),
                    1 => Pattern::glob("r7.*").unwrap(),
                    #[cfg(feature = "regex")]
                    _ => Pattern::regex(r"^r7\.n\d*[02468]$").unwrap(),
                    // Without the feature, a second glob.
                    #[cfg(not(feature = "regex"))]
                    _ => Pattern::glob("r7.n*2").unwrap(),
                };
                k += 1;
                let delivered = Arc::new(Mutex::new(Vec::new()));
                let sink = delivered.clone();
                let subscribing_at = seq.fetch_add(1, Ordering::SeqCst);
                let subscription = notifier.subscribe(
                    pattern.clone(),
                    Subscriber::event(move |e: &Event| {
                        let i = e.payload().get("i").and_then(|v| v.as_i64()).unwrap() as usize;
                        sink.lock().unwrap().push(i);
                    }),
                );
                let subscribed_at = seq.fetch_add(1, Ordering::SeqCst);
                // Hold the subscription while the instrumenter makes progress, so events fall
                // inside the window (unless the instrumenter is done).
                let from = progress.load(Ordering::SeqCst);
                for _ in 0..1000 {
                    if progress.load(Ordering::SeqCst) >= from + 3 || done.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::yield_now();
                }
                let unsubscribing_at = seq.fetch_add(1, Ordering::SeqCst);
                subscription.unsubscribe().unwrap();
                let unsubscribed_at = seq.fetch_add(1, Ordering::SeqCst);
                windows_done.fetch_add(1, Ordering::SeqCst);
                windows.push(Window {
                    pattern,
                    subscribing_at,
                    subscribed_at,
                    unsubscribing_at,
                    unsubscribed_at,
                    delivered,
                });
            }
            windows
        })
    };
    let spans = instrumenter.join().unwrap();
    let windows = churner.join().unwrap();
    assert!(!windows.is_empty());
    let mut checked = 0;
    for w in &windows {
        let delivered = w.delivered.lock().unwrap();
        let mut seen = vec![0_u8; NAMES];
        for &i in delivered.iter() {
            seen[i] += 1;
        }
        for (i, &(start, end)) in spans.iter().enumerate() {
            let name = format!("r7.n{i}");
            if !w.pattern.matches(&name) {
                assert_eq!(
                    seen[i], 0,
                    "{name} delivered to {:?} which does not match it",
                    w.pattern
                );
                continue;
            }
            assert!(seen[i] <= 1, "{name} delivered {} times to {:?}", seen[i], w.pattern);
            if start > w.subscribed_at && end < w.unsubscribing_at {
                assert_eq!(seen[i], 1, "{name} missed by {:?}", w.pattern);
                checked += 1;
            }
            if end < w.subscribing_at || start > w.unsubscribed_at {
                assert_eq!(seen[i], 0, "{name} delivered to {:?} outside its lifetime", w.pattern);
            }
        }
    }
    assert!(checked > 0, "no event fell inside a subscription window");
    assert_eq!(notifier.subscriber_count(), 0);
}

#[test]
fn r8_pattern_added_after_a_name_was_cached() {
    let notifier = Notifier::new();
    let seen = log();
    // A pattern subscription elsewhere makes "query.sql" go through (and fill) the pattern cache.
    let _ = notifier.subscribe(Pattern::glob("render.*").unwrap(), recorder(&seen, "render"));
    notifier.instrument("query.sql", Payload::new, |_| ());
    assert!(!notifier.listening("query.sql"));
    let _ = notifier.subscribe(Pattern::glob("*.sql").unwrap(), recorder(&seen, "sql"));
    notifier.instrument("query.sql", Payload::new, |_| ());
    assert_eq!(entries(&seen), ["sql:query.sql"]);

    // Without any pattern before (a regular expression: feature `regex`).
    #[cfg(feature = "regex")]
    {
        let plain = Notifier::new();
        let seen = log();
        plain.instrument("query.sql", Payload::new, |_| ());
        let _ = plain.subscribe(Pattern::regex(r"\.sql$").unwrap(), recorder(&seen, "re"));
        plain.instrument("query.sql", Payload::new, |_| ());
        assert_eq!(entries(&seen), ["re:query.sql"]);
    }
}

static R8_SITE: Callsite = Callsite::new("r8site.query");

#[test]
fn r8_pattern_added_after_a_callsite_was_cached() {
    R8_SITE.instrument(Payload::new, |_| ());
    assert_eq!(R8_SITE.interest(), Interest::Never);
    let seen = log();
    let subscription = notify_core::subscribe(Pattern::glob("r8site.*").unwrap(), recorder(&seen, "glob"));
    assert_eq!(R8_SITE.interest(), Interest::Sometimes);
    R8_SITE.instrument(Payload::new, |_| ());
    assert_eq!(entries(&seen), ["glob:r8site.query"]);
    subscription.unsubscribe().unwrap();
}

static R9_SITE: Callsite = Callsite::new("r9site.x");

#[test]
fn r9_a_subscription_ends_and_the_fast_path_returns() {
    let seen = log();
    let subscription = notify_core::subscribe("r9site.x", recorder(&seen, "s"));
    R9_SITE.instrument(Payload::new, |_| ());
    assert_eq!(R9_SITE.interest(), Interest::Sometimes);
    assert!(notify_core::listening("r9site.x"));
    subscription.unsubscribe().unwrap();
    R9_SITE.instrument(Payload::new, |_| ());
    assert!(!notify_core::listening("r9site.x"));
    assert_eq!(R9_SITE.interest(), Interest::Never);
    assert_eq!(entries(&seen), ["s:r9site.x"]);

    // The same for a dynamic name on a notifier of its own.
    let notifier = Notifier::new();
    let s = notifier.subscribe("x", recorder(&seen, "t"));
    notifier.instrument("x", Payload::new, |_| ());
    s.unsubscribe().unwrap();
    notifier.instrument("x", Payload::new, |_| ());
    assert!(!notifier.listening("x"));
}

static R10_SITE: Callsite = Callsite::new("r10site.x");

#[test]
fn r10_subscribers_on_another_thread() {
    let seen = log();
    let subscription = {
        let seen = seen.clone();
        std::thread::spawn(move || notify_core::subscribe("r10site.x", recorder(&seen, "s")))
            .join()
            .unwrap()
    };
    std::thread::spawn(|| {
        R10_SITE.instrument(Payload::new, |_| ());
        notify_core::instrument("r10site.x", Payload::new, |_| ());
    })
    .join()
    .unwrap();
    R10_SITE.instrument(Payload::new, |_| ());
    notify_core::instrument("r10site.x", Payload::new, |_| ());
    assert_eq!(entries(&seen), ["s:r10site.x"; 4]);
    subscription.unsubscribe().unwrap();
}

/// Subscribes R11's three subscribers (or the last two) and returns their shared log.
fn r11_registry(
    notifier: &Notifier,
    with_first: bool,
    silence: &Arc<AtomicBool>,
) -> (Log, Vec<notify_core::Subscription>) {
    let seen = log();
    let mut subs = Vec::new();
    if with_first {
        subs.push(notifier.subscribe("x", recorder(&seen, "first").named("first")));
    }
    let s = seen.clone();
    subs.push(
        notifier.subscribe(
            "x",
            Subscriber::event_with(
                EventOptions {
                    cpu_time: true,
                    allocations: false,
                },
                move |e: &Event| {
                    s.lock().unwrap().push(format!("cpu:{}", e.cpu_time().is_some()));
                },
            )
            .named("cpu"),
        ),
    );
    subs.push(notifier.subscribe(
        "x",
        Subscriber::silenceable(Switch(seen.clone(), "switch", silence.clone())),
    ));
    (seen, subs)
}

#[test]
fn r11_removing_one_subscription_keeps_the_others_whole() {
    let silence = Arc::new(AtomicBool::new(false));
    let notifier = Notifier::new();
    let (seen, subs) = r11_registry(&notifier, true, &silence);
    subs[0].unsubscribe().unwrap();
    let reference = Notifier::new();
    let (reference_seen, _) = r11_registry(&reference, false, &silence);

    let kinds = |n: &Notifier| n.listeners_for("x").iter().map(|l| l.1).collect::<Vec<_>>();
    assert_eq!(kinds(&notifier), kinds(&reference));
    assert_eq!(kinds(&notifier), [SubscriberKind::Event, SubscriberKind::Silenceable]);
    for silenced in [false, true, false] {
        silence.store(silenced, Ordering::SeqCst);
        assert_eq!(notifier.listening("x"), reference.listening("x"));
        notifier.instrument("x", Payload::new, |_| ());
        reference.instrument("x", Payload::new, |_| ());
    }
    let expected = [
        "switch.start:x",
        "switch.finish:x",
        "cpu:true",
        "cpu:true",
        "switch.start:x",
        "switch.finish:x",
        "cpu:true",
    ];
    assert_eq!(entries(&seen), expected);
    assert_eq!(entries(&reference_seen), expected);
}

#[test]
fn r12_invalid_input_changes_nothing() {
    let notifier = Notifier::new();
    let seen = log();
    let _ = notifier.subscribe("query.sql", recorder(&seen, "s"));
    let before = (
        notifier.subscriber_count(),
        notifier.listening("query.sql"),
        notifier.listening("other.sql"),
    );

    #[cfg(feature = "regex")]
    {
        let result = Pattern::regex("query.(sql").map(|p| notifier.subscribe(p, recorder(&seen, "bad")));
        let err = result.unwrap_err();
        assert_eq!(err.pattern(), "query.(sql");
        assert_eq!(err.position(), Some(6));
        assert_eq!(
            err.to_string(),
            "invalid regex pattern `query.(sql` at byte 6: unclosed group"
        );
    }

    let err = Pattern::glob("").unwrap_err();
    assert_eq!(err.to_string(), "invalid glob pattern ``: the pattern is empty");

    let after = (
        notifier.subscriber_count(),
        notifier.listening("query.sql"),
        notifier.listening("other.sql"),
    );
    assert_eq!(before, after);
    assert_eq!(after, (1, true, false));
}

#[test]
fn r14_subscription_churn_leaves_nothing_behind() {
    let notifier = Notifier::new();
    let seen = log();
    // A pattern subscription keeps the pattern cache in use through the churn.
    let pattern = notifier.subscribe(Pattern::glob("keep.*").unwrap(), recorder(&seen, "keep"));
    notifier.instrument("keep.x", Payload::new, |_| ());
    for i in 0..100_000 {
        let name = format!("churn.{i}");
        let s = notifier.subscribe(name.as_str(), Subscriber::event(|_: &Event| {}));
        if i % 1000 == 0 {
            notifier.instrument(&name, Payload::new, |_| ());
        }
        s.unsubscribe().unwrap();
    }
    pattern.unsubscribe().unwrap();
    assert_eq!(notifier.subscriber_count(), 0);
    assert_eq!(entries(&seen), ["keep:keep.x"]);
}

#[test]
fn handle_misuse_is_an_error_and_drop_finishes() {
    let notifier = Notifier::new();
    let seen: Arc<Mutex<Vec<Outcome>>> = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let _ = notifier.subscribe(
        "h",
        Subscriber::event(move |e: &Event| s.lock().unwrap().push(e.outcome())),
    );
    let mut handle = notifier.build_handle("h", Payload::new());
    assert_eq!(handle.finish(), Err(NotifyError::NotStarted));
    handle.start().unwrap();
    assert_eq!(handle.start(), Err(NotifyError::AlreadyStarted));
    handle.finish().unwrap();
    assert_eq!(handle.finish(), Err(NotifyError::AlreadyFinished));
    assert_eq!(handle.start(), Err(NotifyError::AlreadyStarted));
    {
        let mut guard = notifier.build_handle("h", Payload::new());
        guard.start().unwrap();
    }
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut guard = notifier.build_handle("h", Payload::new());
        guard.start().unwrap();
        panic!("inside");
    }));
    assert!(panicked.is_err());
    assert_eq!(
        *seen.lock().unwrap(),
        [Outcome::Completed, Outcome::Completed, Outcome::Panicked]
    );
}

#[test]
fn a_panicking_body_finishes_its_event_as_panicked_and_the_panic_goes_on() {
    let notifier = Notifier::new();
    let seen: Arc<Mutex<Vec<(Outcome, String)>>> = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let _ = notifier.subscribe(
        "p",
        Subscriber::event(move |e: &Event| {
            s.lock()
                .unwrap()
                .push((e.outcome(), format!("{:?}", e.payload().get("step"))));
        }),
    );
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("p", Payload::new, |p| {
            p.insert("step", 1_u64);
            panic!("body failed");
        })
    }));
    assert_eq!(*result.unwrap_err().downcast::<&str>().unwrap(), "body failed");
    assert_eq!(*seen.lock().unwrap(), [(Outcome::Panicked, "Some(U64(1))".to_owned())]);
}

#[test]
#[cfg(feature = "testing")]
fn errors_are_recorded_in_the_payload() {
    let notifier = Notifier::new();
    let (result, events) = notify_core::testing::capture_notifications(&notifier, "parse", || {
        notifier.instrument_result("parse", Payload::new, |_| "x".parse::<u8>())
    });
    assert!(result.is_err());
    assert_eq!(
        events[0].payload().get("exception"),
        Some(&notify_core::Value::Exception {
            type_name: "core::num::error::ParseIntError".into(),
            message: "invalid digit found in string".into()
        })
    );
}

#[test]
#[cfg(feature = "testing")]
fn parent_ids_follow_nesting_and_ids_are_unique() {
    let notifier = Notifier::new();
    let (_, events) = notify_core::testing::capture_notifications(&notifier, Pattern::all(), || {
        notifier.instrument("outer", Payload::new, |_| {
            notifier.instrument("inner", Payload::new, |_| ());
            notifier.instrument("inner", Payload::new, |_| ());
        });
    });
    assert_eq!(
        events.iter().map(Event::name).collect::<Vec<_>>(),
        ["inner", "inner", "outer"]
    );
    let outer = &events[2];
    assert_eq!(outer.parent_id(), None);
    assert_eq!(events[0].parent_id(), Some(outer.id()));
    assert_eq!(events[1].parent_id(), Some(outer.id()));
    assert_ne!(events[0].id(), events[1].id());
    assert!(events
        .iter()
        .all(|e| e.transaction_id() == notify_core::context::transaction_id()));
    assert_eq!(notify_core::context::current_event_id(), None);
}

#[test]
fn silenced_subscribers_cost_no_payload_and_no_callbacks() {
    let notifier = Notifier::new();
    let seen = log();
    let quiet = Arc::new(AtomicBool::new(true));
    let _ = notifier.subscribe("s", Subscriber::silenceable(Switch(seen.clone(), "q", quiet.clone())));
    let built = AtomicUsize::new(0);
    let payload = || {
        built.fetch_add(1, Ordering::SeqCst);
        Payload::new()
    };
    assert!(!notifier.listening("s"));
    notifier.instrument("s", payload, |_| ());
    assert_eq!(built.load(Ordering::SeqCst), 0);
    quiet.store(false, Ordering::SeqCst);
    assert!(notifier.listening("s"));
    notifier.instrument("s", payload, |_| ());
    assert_eq!(built.load(Ordering::SeqCst), 1);
    assert_eq!(entries(&seen), ["q.start:s", "q.finish:s"]);
}

#[test]
fn publish_and_publish_event_reach_the_timing_groups() {
    let notifier = Notifier::new();
    let seen = log();
    let s = seen.clone();
    let _ = notifier.subscribe(
        "pub",
        Subscriber::timed(
            move |name: &str, start: SystemTime, finish: SystemTime, id: TransactionId, _: &Payload| {
                s.lock().unwrap().push(format!(
                    "timed:{name}:{}ms:{id}",
                    finish.duration_since(start).unwrap().as_millis()
                ));
            },
        ),
    );
    let _ = notifier.subscribe("pub", recorder(&seen, "event"));
    let _ = notifier.subscribe("pub", Subscriber::evented(Evented(seen.clone(), "evented")));
    let start = SystemTime::now();
    notifier.publish(
        "pub",
        start,
        start + Duration::from_millis(3),
        TransactionId::new(9),
        Payload::new(),
    );
    let now = Instant::now();
    notifier.publish_event(Event::new("pub", now, now + Duration::from_millis(4), Payload::new()));
    let txn = notify_core::context::transaction_id();
    assert_eq!(
        entries(&seen),
        [
            "timed:pub:3ms:9".to_owned(),
            "event:pub".into(),
            format!("timed:pub:4ms:{txn}"),
            "event:pub".into()
        ]
    );
}

#[test]
fn stress_several_threads_subscribe_unsubscribe_and_instrument() {
    const PER_THREAD: usize = 20_000;
    let notifier = Notifier::new();
    let permanent = Arc::new(AtomicUsize::new(0));
    let p = permanent.clone();
    let _ = notifier.subscribe(
        Pattern::glob("stress.*").unwrap(),
        Subscriber::monotonic(move |_: &str, _: Instant, _: Instant, _: TransactionId, _: &Payload| {
            p.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let churners: Vec<_> = (0..2)
        .map(|t| {
            let (notifier, stop) = (notifier.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut cycles = 0;
                let mut max_seen = 0;
                while !stop.load(Ordering::Relaxed) {
                    let count = Arc::new(AtomicUsize::new(0));
                    let c = count.clone();
                    let name = if t == 0 { "stress.a" } else { "stress.b" };
                    let s = notifier.subscribe(
                        name,
                        Subscriber::event(move |_: &Event| {
                            c.fetch_add(1, Ordering::Relaxed);
                        }),
                    );
                    std::thread::yield_now();
                    s.unsubscribe().unwrap();
                    max_seen = max_seen.max(count.load(Ordering::Relaxed));
                    cycles += 1;
                }
                (cycles, max_seen)
            })
        })
        .collect();
    let instrumenters: Vec<_> = ["stress.a", "stress.b"]
        .into_iter()
        .map(|name| {
            let notifier = notifier.clone();
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    assert_eq!(notifier.instrument(name, Payload::new, |_| i), i);
                }
            })
        })
        .collect();
    for t in instrumenters {
        t.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for t in churners {
        let (cycles, max_seen) = t.join().unwrap();
        assert!(cycles > 0);
        assert!(max_seen <= PER_THREAD);
    }
    assert_eq!(permanent.load(Ordering::Relaxed), 2 * PER_THREAD);
    assert_eq!(notifier.subscriber_count(), 1);
}

/// An evented subscriber that panics in `silenced`.
struct BadSilence;

impl EventedSubscriber for BadSilence {
    fn start(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
    fn finish(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
}

impl SilenceableSubscriber for BadSilence {
    fn silenced(&self, _: &str) -> bool {
        panic!("silenced failed")
    }
}

#[test]
fn a_panicking_silenced_is_a_reported_failure_under_every_policy() {
    for policy in [FailurePolicy::Report, FailurePolicy::Detach, FailurePolicy::Strict] {
        let notifier = Notifier::new();
        let failures = collect_failures(&notifier);
        notifier.set_failure_policy(policy);
        let _ = notifier.subscribe("x", Subscriber::silenceable(BadSilence).named("bad"));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            notifier.instrument("x", Payload::new, |_| 1)
        }));
        let failures = failures.lock().unwrap().clone();
        assert_eq!(failures.len(), 1, "{policy:?}");
        assert_eq!(
            (failures[0].subscriber(), failures[0].message()),
            ("bad", "silenced failed")
        );
        match policy {
            FailurePolicy::Report => assert_eq!(result.unwrap(), 1),
            FailurePolicy::Detach => {
                assert_eq!(result.unwrap(), 1);
                assert_eq!(notifier.subscriber_count(), 0);
            }
            FailurePolicy::Strict => {
                let errors = result.unwrap_err().downcast::<SubscriberErrors>().unwrap();
                assert_eq!(errors.failures().len(), 1);
            }
            other => unreachable!("policy {other:?} is not in this test's list"),
        }
    }
}

#[test]
fn a_handle_finished_during_an_unrelated_unwinding_is_completed() {
    let notifier = Notifier::new();
    let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::new(Mutex::new(Vec::new()));
    let sink = outcomes.clone();
    let _ = notifier.subscribe(
        "rollback",
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.outcome())),
    );
    struct Rollback(Notifier);
    impl Drop for Rollback {
        fn drop(&mut self) {
            let mut handle = self.0.build_handle("rollback", Payload::new());
            handle.start().unwrap();
            drop(handle);
            self.0.instrument("rollback", Payload::new, |_| ());
        }
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _tx = Rollback(notifier.clone());
        panic!("request failed");
    }));
    assert!(result.is_err());
    assert_eq!(*outcomes.lock().unwrap(), [Outcome::Completed, Outcome::Completed]);
}

#[test]
#[cfg(feature = "testing")]
fn out_of_order_and_cross_thread_finishes_leave_no_stale_parent() {
    let notifier = Notifier::new();
    let (_, events) = notify_core::testing::capture_notifications(&notifier, Pattern::all(), || {
        let mut a = notifier.build_handle("a", Payload::new());
        let mut b = notifier.build_handle("b", Payload::new());
        a.start().unwrap();
        // A started handle is not current: b nests under a only inside a's scope.
        a.in_scope(|| b.start().unwrap());
        a.finish().unwrap();
        b.finish().unwrap();
        notifier.instrument("c", Payload::new, |_| ());

        let mut sent = notifier.build_handle("sent", Payload::new());
        sent.start().unwrap();
        std::thread::spawn(move || sent.finish().unwrap()).join().unwrap();
        notifier.instrument("later", Payload::new, |_| ());
    });
    let names: Vec<(&str, Option<notify_core::event::EventId>)> =
        events.iter().map(|e| (e.name(), e.parent_id())).collect();
    let a = events[0].id();
    assert_eq!(
        names,
        [
            ("a", None),
            ("b", Some(a)),
            ("c", None),
            ("sent", None),
            ("later", None)
        ]
    );
    assert_eq!(notify_core::context::current_event_id(), None);
}

#[test]
fn cpu_time_is_not_measured_across_threads_and_handle_ids_survive_finish() {
    let notifier = Notifier::new();
    let cpu: Arc<Mutex<Vec<(String, bool, bool)>>> = Arc::new(Mutex::new(Vec::new()));
    let sink = cpu.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event_with(
            EventOptions {
                cpu_time: true,
                allocations: false,
            },
            move |e: &Event| {
                sink.lock()
                    .unwrap()
                    .push((e.name().to_owned(), e.cpu_time().is_some(), e.idle_time().is_some()));
            },
        ),
    );
    let mut here = notifier.build_handle("here", Payload::new());
    here.start().unwrap();
    here.finish().unwrap();
    assert!(here.id().is_some());
    let mut moved = notifier.build_handle("moved", Payload::new());
    moved.start().unwrap();
    std::thread::spawn(move || moved.finish().unwrap()).join().unwrap();
    assert_eq!(
        *cpu.lock().unwrap(),
        [("here".to_owned(), true, true), ("moved".to_owned(), false, false)]
    );
}

/// A silenceable subscriber of a silence group: counts its `silenced` calls, records its
/// `start`s under its label, follows its group's switch, and panics in `silenced` when asked to.
struct Grouped {
    label: &'static str,
    key: &'static str,
    quiet: Arc<AtomicBool>,
    asked: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<&'static str>>>,
    panics: bool,
}

impl EventedSubscriber for Grouped {
    fn start(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {
        self.seen.lock().unwrap().push(self.label);
    }
    fn finish(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
}

impl SilenceableSubscriber for Grouped {
    fn silenced(&self, _: &str) -> bool {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.panics {
            panic!("silenced failed");
        }
        self.quiet.load(Ordering::SeqCst)
    }
    fn silence_key(&self) -> Option<notify_core::subscriber::SilenceKey> {
        Some(notify_core::subscriber::SilenceKey::new(self.key))
    }
}

/// Subscribes to `name` one named `Grouped` per `(label, silence key, quiet, panics)` of
/// `members`, in order, sharing `asked` and `seen`.
fn subscribe_grouped(
    notifier: &Notifier,
    name: &str,
    members: &[(&'static str, &'static str, &Arc<AtomicBool>, bool)],
    asked: &Arc<AtomicUsize>,
    seen: &Arc<Mutex<Vec<&'static str>>>,
) {
    for &(label, key, quiet, panics) in members {
        let s = Grouped {
            label,
            key,
            quiet: quiet.clone(),
            asked: asked.clone(),
            seen: seen.clone(),
            panics,
        };
        let _ = notifier.subscribe(name, Subscriber::silenceable(s).named(label));
    }
}

#[test]
fn silence_groups_are_asked_once_per_event_exactly_and_deliver_in_subscription_order() {
    let notifier = Notifier::new();
    let failures = collect_failures(&notifier);
    let (a_quiet, b_quiet) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(true)));
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    // Interleaved: a1 b1 a2 b2 a3 (group "a" and group "b").
    for (label, key, quiet) in [
        ("a1", "test a", &a_quiet),
        ("b1", "test b", &b_quiet),
        ("a2", "test a", &a_quiet),
        ("b2", "test b", &b_quiet),
        ("a3", "test a", &a_quiet),
    ] {
        let s = Grouped {
            label,
            key,
            quiet: quiet.clone(),
            asked: asked.clone(),
            seen: seen.clone(),
            panics: false,
        };
        let _ = notifier.subscribe("x", Subscriber::silenceable(s));
    }
    let built = AtomicUsize::new(0);
    let run = || {
        notifier.instrument(
            "x",
            || {
                built.fetch_add(1, Ordering::SeqCst);
                Payload::new()
            },
            |_| (),
        )
    };
    run();
    assert_eq!(asked.swap(0, Ordering::SeqCst), 2, "one question per group");
    assert_eq!(built.load(Ordering::SeqCst), 0, "all silenced: no payload");
    assert!(!notifier.listening("x"));
    asked.store(0, Ordering::SeqCst);
    // The answer changes at run time: the very next event follows it.
    b_quiet.store(false, Ordering::SeqCst);
    run();
    assert_eq!(asked.swap(0, Ordering::SeqCst), 2);
    assert_eq!(*seen.lock().unwrap(), ["b1", "b2"]);
    a_quiet.store(false, Ordering::SeqCst);
    seen.lock().unwrap().clear();
    run();
    assert_eq!(
        *seen.lock().unwrap(),
        ["a1", "b1", "a2", "b2", "a3"],
        "subscription order"
    );
    a_quiet.store(true, Ordering::SeqCst);
    b_quiet.store(true, Ordering::SeqCst);
    seen.lock().unwrap().clear();
    run();
    assert!(seen.lock().unwrap().is_empty());

    // The first of a group panics: its failure is reported, the others are asked one by one.
    let c_quiet = Arc::new(AtomicBool::new(false));
    let asked_c = Arc::new(AtomicUsize::new(0));
    for (label, panics) in [("c1", true), ("c2", false), ("c3", false)] {
        let s = Grouped {
            label,
            key: "test c",
            quiet: c_quiet.clone(),
            asked: asked_c.clone(),
            seen: seen.clone(),
            panics,
        };
        let _ = notifier.subscribe("y", Subscriber::silenceable(s).named(label));
    }
    assert!(notifier.listening("y"), "c2 answers for the group when c1 panics");
    asked_c.store(0, Ordering::SeqCst);
    notifier.instrument("y", Payload::new, |_| ());
    assert_eq!(asked_c.load(Ordering::SeqCst), 3);
    assert_eq!(*seen.lock().unwrap(), ["c2", "c3"]);
    let failures = failures.lock().unwrap().clone();
    assert_eq!(failures.len(), 1);
    assert_eq!(
        (failures[0].subscriber(), failures[0].message()),
        ("c1", "silenced failed")
    );
}

#[test]
fn silence_groups_after_a_silenced_and_a_panicking_group_are_still_asked_in_order() {
    let notifier = Notifier::new();
    let failures = collect_failures(&notifier);
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (p_quiet, q_quiet, r_quiet) = (
        Arc::new(AtomicBool::new(true)),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // Groups in the order they are asked: "p" (silenced), "q" (its first panics), "r" (heard);
    // members interleaved: p1 q1 r1 p2 q2 r2.
    subscribe_grouped(
        &notifier,
        "z",
        &[
            ("p1", "test p", &p_quiet, false),
            ("q1", "test q", &q_quiet, true),
            ("r1", "test r", &r_quiet, false),
            ("p2", "test p", &p_quiet, false),
            ("q2", "test q", &q_quiet, false),
            ("r2", "test r", &r_quiet, false),
        ],
        &asked,
        &seen,
    );
    notifier.instrument("z", Payload::new, |_| ());
    // p1 for "p"; q1 (panics), then q2 for "q"; r1 for "r".
    assert_eq!(asked.swap(0, Ordering::SeqCst), 4);
    assert_eq!(*seen.lock().unwrap(), ["r1", "q2", "r2"], "subscription order");
    {
        let failures = failures.lock().unwrap();
        assert_eq!(failures.len(), 1, "the panicking silenced is reported once");
        assert_eq!(
            (failures[0].subscriber(), failures[0].message()),
            ("q1", "silenced failed")
        );
    }

    // Every group silenced (q2 too): nothing delivered, the panic reported again, no payload.
    q_quiet.store(true, Ordering::SeqCst);
    r_quiet.store(true, Ordering::SeqCst);
    seen.lock().unwrap().clear();
    let built = AtomicUsize::new(0);
    notifier.instrument(
        "z",
        || {
            built.fetch_add(1, Ordering::SeqCst);
            Payload::new()
        },
        |_| (),
    );
    assert_eq!(asked.swap(0, Ordering::SeqCst), 4);
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(built.load(Ordering::SeqCst), 0);
    assert_eq!(failures.lock().unwrap().len(), 2);

    // With an unconditional listener too, every group silenced: the listener alone gets the
    // event, each group asked once (the panicking one as above).
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = heard.clone();
    let _ = notifier.subscribe(
        "z",
        Subscriber::timed(
            move |_: &str, _: SystemTime, _: SystemTime, _: TransactionId, _: &Payload| {
                counter.fetch_add(1, Ordering::SeqCst);
            },
        ),
    );
    notifier.instrument("z", Payload::new, |_| ());
    assert_eq!(heard.load(Ordering::SeqCst), 1);
    assert_eq!(asked.swap(0, Ordering::SeqCst), 4);
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(failures.lock().unwrap().len(), 3);
}

#[test]
fn a_heard_group_before_a_panicking_group_keeps_its_members_in_subscription_order() {
    let notifier = Notifier::new();
    let failures = collect_failures(&notifier);
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::new(AtomicBool::new(false));
    // Groups in the order they are asked: "h" (heard, answered for without copying its members
    // until a later group needs them), then "q" (its first panics); members h1 q1 h2 q2.
    subscribe_grouped(
        &notifier,
        "w",
        &[
            ("h1", "test h", &heard, false),
            ("q1", "test q", &heard, true),
            ("h2", "test h", &heard, false),
            ("q2", "test q", &heard, false),
        ],
        &asked,
        &seen,
    );
    notifier.instrument("w", Payload::new, |_| ());
    // h1 for "h"; q1 (panics), then q2 for "q".
    assert_eq!(asked.swap(0, Ordering::SeqCst), 3);
    assert_eq!(*seen.lock().unwrap(), ["h1", "h2", "q2"], "subscription order");
    let failures = failures.lock().unwrap().clone();
    assert_eq!(failures.len(), 1, "the panicking silenced is reported once");
    assert_eq!(
        (failures[0].subscriber(), failures[0].message()),
        ("q1", "silenced failed")
    );
}
