//! `publish` / `publish_event` to evented and silenceable subscribers: their `publish`, never
//! `start`/`finish`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use notify_core::{
    context::EventContext, context::TransactionId, failure::SubscriberFailure, Event, EventedSubscriber, Notifier,
    Payload, SilenceableSubscriber, Subscriber,
};

/// Every call, as text.
#[derive(Default)]
struct Calls {
    seen: Mutex<Vec<String>>,
    silenced: AtomicBool,
    panics: bool,
}

impl EventedSubscriber for Calls {
    fn start(&self, name: &str, _: &EventContext, _: &Payload) {
        self.seen.lock().unwrap().push(format!("start {name}"));
    }
    fn finish(&self, name: &str, _: &EventContext, _: &Payload) {
        self.seen.lock().unwrap().push(format!("finish {name}"));
    }
    fn publish(&self, event: &Event) {
        if self.panics {
            panic!("publish of {} failed", event.name());
        }
        let ms = event.duration().as_millis();
        self.seen
            .lock()
            .unwrap()
            .push(format!("publish {} {ms}ms", event.name()));
    }
}

impl SilenceableSubscriber for Calls {
    fn silenced(&self, _: &str) -> bool {
        self.silenced.load(Ordering::SeqCst)
    }
}

#[test]
fn evented_and_unsilenced_silenceable_subscribers_get_published_events_through_publish() {
    let notifier = Notifier::new();
    let (evented, silenceable) = (Arc::new(Calls::default()), Arc::new(Calls::default()));
    let _e = notifier.subscribe("job.publish", Subscriber::evented(evented.clone()));
    let _s = notifier.subscribe("job.publish", Subscriber::silenceable(silenceable.clone()));
    let start = Instant::now();
    notifier.publish_event(Event::new(
        "job.publish",
        start,
        start + Duration::from_millis(7),
        Payload::new(),
    ));
    let wall = SystemTime::now();
    notifier.publish(
        "job.publish",
        wall,
        wall + Duration::from_millis(3),
        TransactionId::new(1),
        Payload::new(),
    );
    silenceable.silenced.store(true, Ordering::SeqCst);
    notifier.publish_event(Event::new("job.publish", start, start, Payload::new()));
    assert_eq!(
        *evented.seen.lock().unwrap(),
        [
            "publish job.publish 7ms",
            "publish job.publish 3ms",
            "publish job.publish 0ms"
        ]
    );
    assert_eq!(
        *silenceable.seen.lock().unwrap(),
        ["publish job.publish 7ms", "publish job.publish 3ms"],
        "not once silenced"
    );
}

#[test]
fn a_panicking_publish_is_that_subscribers_failure_and_the_others_still_run() {
    let notifier = Notifier::new();
    let failures = Arc::new(Mutex::new(Vec::new()));
    let sink = failures.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| {
        sink.lock()
            .unwrap()
            .push((f.event().to_owned(), f.message().to_owned()))
    });
    let bad = Arc::new(Calls {
        panics: true,
        ..Calls::default()
    });
    let good = Arc::new(Calls::default());
    let _b = notifier.subscribe("job.publish_fails", Subscriber::evented(bad));
    let _g = notifier.subscribe("job.publish_fails", Subscriber::evented(good.clone()));
    let start = Instant::now();
    notifier.publish_event(Event::new("job.publish_fails", start, start, Payload::new()));
    assert_eq!(*good.seen.lock().unwrap(), ["publish job.publish_fails 0ms"]);
    assert_eq!(
        *failures.lock().unwrap(),
        [(
            "job.publish_fails".to_owned(),
            "publish of job.publish_fails failed".to_owned()
        )]
    );
}
