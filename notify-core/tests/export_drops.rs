//! Exporter drops through the notifier's failure hook (issue 35 item 2): one report per burst,
//! counted in `Notifier::failures`, whatever the failure policy; nothing reported for an empty
//! report or a notifier that is gone.

use std::sync::{Arc, Mutex};

use notify_core::failure::{ExportDrops, FailurePolicy, SubscriberFailure};
use notify_core::subscriber::SubscriberKind;
use notify_core::{Event, Notifier, Payload, Subscriber};

struct Noop;

impl notify_core::OwnedEventSubscriber for Noop {
    fn deliver(&self, _: &Arc<Event>) {}
}

fn capture(notifier: &Notifier) -> Arc<Mutex<Vec<SubscriberFailure>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.clone()));
    seen
}

#[test]
fn a_report_reaches_the_hook_once_as_a_failure_of_the_subscription_and_is_counted() {
    let notifier = Notifier::new();
    let seen = capture(&notifier);
    let _other = notifier.subscribe("x", Subscriber::event(|_: &Event| {}));
    let exporter = notifier.subscribe("x", Subscriber::owned(Noop).named("spans"));
    let drops = ExportDrops::new("spans")
        .with("queue full", 9_000)
        .with("exporter error", 0)
        .with("shutdown", 13)
        .detail("broken pipe\n[INFO] forged");
    assert!(exporter.report_export_drops(drops.clone()));
    assert_eq!(notifier.failures(), 1);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let failure = &seen[0];
    assert_eq!(failure.export_drops(), Some(&drops));
    assert_eq!(failure.subscription(), exporter.id());
    assert_eq!(
        (failure.subscriber(), failure.kind(), failure.event()),
        ("spans", SubscriberKind::Owned, "")
    );
    assert!(!failure.in_drop());
    assert_eq!(
        failure.message(),
        "dropped 9013 events (queue full 9000, shutdown 13): broken pipe\\n[INFO] forged"
    );
    assert_eq!(
        failure.to_string(),
        "exporter `spans` (owned, subscription #2) dropped 9013 events (queue full 9000, shutdown 13): broken pipe\\n[INFO] forged"
    );
}

#[test]
fn a_panic_is_still_a_panic_without_export_drops() {
    let notifier = Notifier::new();
    let seen = capture(&notifier);
    let _s = notifier.subscribe("x", Subscriber::event(|_: &Event| panic!("boom")));
    notifier.instrument("x", Payload::new, |_| ());
    assert_eq!(seen.lock().unwrap()[0].export_drops(), None);
}

#[test]
fn an_empty_report_or_a_gone_notifier_reports_nothing() {
    let notifier = Notifier::new();
    let seen = capture(&notifier);
    let s = notifier.subscribe("x", Subscriber::event(|_: &Event| {}));
    assert!(!s.report_export_drops(ExportDrops::new("spans")));
    assert!(!s.report_export_drops(ExportDrops::new("spans").with("queue full", 0)));
    assert_eq!((notifier.failures(), seen.lock().unwrap().len()), (0, 0));
    drop(notifier);
    assert!(!s.report_export_drops(ExportDrops::new("spans").with("queue full", 1)));
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn after_an_unsubscribe_the_report_still_goes_through() {
    let notifier = Notifier::new();
    let seen = capture(&notifier);
    let s = notifier.subscribe("x", Subscriber::event(|_: &Event| {}));
    s.unsubscribe().unwrap();
    assert!(s.report_export_drops(ExportDrops::new("nats").with("shutdown", 4)));
    assert_eq!((notifier.failures(), seen.lock().unwrap().len()), (1, 1));
}

#[test]
fn the_policy_does_not_apply_strict_raises_nothing_detach_detaches_nothing() {
    for policy in [FailurePolicy::Strict, FailurePolicy::Detach] {
        let notifier = Notifier::new();
        let seen = capture(&notifier);
        notifier.set_failure_policy(policy);
        let s = notifier.subscribe("x", Subscriber::event(|_: &Event| {}));
        assert!(s.report_export_drops(ExportDrops::new("spans").with("queue full", 1)));
        assert_eq!(notifier.subscriber_count(), 1, "{policy:?}");
        assert!(notifier.listening("x"));
        assert_eq!(seen.lock().unwrap().len(), 1);
    }
}

#[test]
fn a_panicking_hook_is_swallowed_and_the_report_still_counted() {
    let notifier = Notifier::new();
    notifier.set_failure_hook(|_: &SubscriberFailure| panic!("hook"));
    let s = notifier.subscribe("x", Subscriber::event(|_: &Event| {}));
    assert!(s.report_export_drops(ExportDrops::new("spans").with("queue full", 1)));
    assert_eq!(notifier.failures(), 1);
}
