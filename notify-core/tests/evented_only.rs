//! An event whose listeners are all evented takes a path of its own in `instrument` (no general
//! `Active`; notify-base/src/dispatch.rs, `run_evented`). It must behave exactly as the general
//! path: the same scenario runs on a notifier that takes it and on one that cannot (a silenceable
//! subscriber, always silenced, sends every event down the general path), and the two logs agree,
//! beside checks of what each step must show.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use notify_core::context::EventContext;
use notify_core::event::{Callsite, EventId, Location};
use notify_core::{Context, EventedSubscriber, Notifier, Pattern, Payload, SilenceableSubscriber, Subscriber, TraceId};

/// What the evented subscribers saw, one line per call.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Ids as small ordinals in order of first appearance (random ids differ between runs; the
/// relations between them must not). 12 is the explicit parent of step 4 and kept as is.
#[derive(Default)]
struct Ordinals(HashMap<u64, usize>);

impl Ordinals {
    fn of(&mut self, id: Option<EventId>) -> String {
        match id.map(EventId::get) {
            None => "-".into(),
            Some(12) => "12".into(),
            Some(id) => {
                let next = self.0.len();
                format!("#{}", self.0.entry(id).or_insert(next))
            }
        }
    }
}

struct Recorder {
    log: Log,
    ordinals: Arc<Mutex<Ordinals>>,
}

impl Recorder {
    fn line(&self, edge: &str, name: &str, event: &EventContext, payload: Option<&Payload>) {
        let mut ordinals = self.ordinals.lock().unwrap();
        let (id, parent) = (ordinals.of(Some(event.id())), ordinals.of(event.parent_id()));
        let payload = payload.map(|p| format!("{p:?}")).unwrap_or_default();
        self.log.0.lock().unwrap().push(format!(
            "{edge} {name} id={id} parent={parent} outcome={:?} sampled={} duration={:?} {payload}",
            event.outcome(),
            event.is_sampled(),
            event.duration(),
        ));
    }
}

impl EventedSubscriber for Recorder {
    fn start(&self, name: &str, event: &EventContext, payload: &Payload) {
        self.line("start", name, event, Some(payload));
    }

    fn finish(&self, name: &str, event: &EventContext, payload: &Payload) {
        self.line("finish", name, event, Some(payload));
    }
}

/// Panics at the start of `op.bad` events.
struct PanicsOnBad;

impl EventedSubscriber for PanicsOnBad {
    fn start(&self, name: &str, _: &EventContext, _: &Payload) {
        if name == "op.bad" {
            panic!("refused {name}");
        }
    }

    fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
}

/// Re-instruments its own event on `op.deep` (recursion, cut by the delivery depth limit).
struct Recurses(Notifier);

impl EventedSubscriber for Recurses {
    fn start(&self, name: &str, _: &EventContext, _: &Payload) {
        if name == "op.deep" {
            self.0.instrument("op.deep", Payload::new, |_| ());
        }
    }

    fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
}

/// Always silenced: hears nothing, but its presence makes every event ask it (the general path).
struct Silenced;

impl EventedSubscriber for Silenced {
    fn start(&self, _: &str, _: &EventContext, _: &Payload) {
        unreachable!("silenced")
    }

    fn finish(&self, _: &str, _: &EventContext, _: &Payload) {
        unreachable!("silenced")
    }
}

impl SilenceableSubscriber for Silenced {
    fn silenced(&self, _: &str) -> bool {
        true
    }
}

/// The scenario; returns the log and (failures, undelivered too deep).
fn scenario(notifier: &Notifier) -> (Vec<String>, u64, u64) {
    let log = Log::default();
    let ordinals = Arc::new(Mutex::new(Ordinals::default()));
    let recorder = || Recorder {
        log: log.clone(),
        ordinals: ordinals.clone(),
    };
    let _a = notifier.subscribe(Pattern::all(), Subscriber::evented(recorder()));
    let _b = notifier.subscribe(Pattern::all(), Subscriber::evented(PanicsOnBad));
    let _c = notifier.subscribe("op.deep", Subscriber::evented(Recurses(notifier.clone())));
    notifier.set_failure_hook(|_| {});
    notifier.set_max_delivery_depth(3);

    // 1. A payload, a value recorded by the body, a nested event (its parent is the outer one).
    let sum = notifier.instrument(
        "op",
        || Payload::new().with("k", 1_u64),
        |payload| {
            payload.insert("during", "body");
            notify_core::record("late", 2_u64);
            notifier.instrument("op.inner", Payload::new, |_| 40) + 2
        },
    );
    assert_eq!(sum, 42);
    // 2. A subscriber that panics at start: reported once, the event still finishes.
    notifier.instrument("op.bad", Payload::new, |_| ());
    // 3. A body that panics: finished as panicked, the panic goes on to the caller.
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        notifier.instrument("op.panics", Payload::new, |_| -> () { panic!("body") })
    }));
    assert!(unwound.is_err());
    // 4. An explicit parent.
    let parent = Context::new(TraceId::new(77).unwrap(), Some(EventId::new(12)));
    notifier.instrument_with_parent(parent, "op.child", Payload::new, |_| ());
    // 5. Recursion beyond the delivery depth limit.
    notifier.instrument("op.deep", Payload::new, |_| ());
    // 6. A payload closure that panics: nothing delivered, nothing left on the thread's stack.
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        notifier.instrument("op.nopayload", || panic!("payload"), |_| ())
    }));
    assert!(unwound.is_err());
    notifier.instrument("op.after", Payload::new, |_| ());
    (log.lines(), notifier.failures(), notifier.undelivered_too_deep())
}

#[test]
fn an_evented_only_event_behaves_as_through_the_general_path() {
    let fast = Notifier::new();
    let general = Notifier::new();
    let _silenced = general.subscribe(Pattern::all(), Subscriber::silenceable(Silenced));
    let (lines, failures, too_deep) = scenario(&fast);
    let (general_lines, general_failures, general_too_deep) = scenario(&general);
    assert_eq!(lines, general_lines);
    assert_eq!((failures, too_deep), (general_failures, general_too_deep));

    // And what each step must show (so that two equally wrong paths do not pass).
    let find = |prefix: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in {lines:#?}"))
            .clone()
    };
    assert!(find("start op id=#0 parent=-").contains(r#""k": U64(1)"#), "{lines:#?}");
    assert!(find("start op.inner id=#1 parent=#0").contains("outcome=Completed"));
    let outer_finish = find("finish op id=#0");
    assert!(
        outer_finish.contains(r#""during": Str("body")"#) && outer_finish.contains(r#""late": U64(2)"#),
        "{outer_finish}"
    );
    assert!(outer_finish.contains("duration=None"), "{outer_finish}");
    assert!(find("finish op.bad").contains("outcome=Completed"));
    assert!(find("finish op.panics").contains("outcome=Panicked"));
    assert!(find("start op.child").contains("parent=12"));
    assert!(!lines.iter().any(|l| l.contains("op.nopayload")), "{lines:#?}");
    assert!(
        find("start op.after").contains("parent=-"),
        "no frame left by the payload's panic"
    );
    assert_eq!(failures, 1);
    assert_eq!(too_deep, 1);
    // op.deep: three deliveries deep (the limit), the fourth refused.
    assert_eq!(lines.iter().filter(|l| l.starts_with("start op.deep")).count(), 3);
}

/// Through a callsite the event knows where it was instrumented, on this path as on the other.
#[test]
fn an_evented_only_callsite_event_has_its_location() {
    static SITE: Callsite = Callsite::at("evented_only.site", Location::new(file!(), line!(), module_path!()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    struct Where(Arc<Mutex<Vec<bool>>>);
    impl EventedSubscriber for Where {
        fn start(&self, _: &str, event: &EventContext, _: &Payload) {
            self.0.lock().unwrap().push(event.location().is_some());
        }
        fn finish(&self, _: &str, event: &EventContext, _: &Payload) {
            self.0.lock().unwrap().push(event.location().is_some());
        }
    }
    let _s = notify_core::subscribe("evented_only.site", Subscriber::evented(Where(seen.clone())));
    SITE.instrument(Payload::new, |_| ());
    assert_eq!(*seen.lock().unwrap(), [true, true]);
}
