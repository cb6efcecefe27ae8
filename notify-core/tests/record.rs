//! `notify_core::record`: facts added to the current event from code that does not hold it.

use std::sync::{Arc, Mutex};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber, Value};

/// Each finished event's name and payload, in finish order.
type Seen = Arc<Mutex<Vec<(String, Payload)>>>;

/// A notifier whose every event's payload is collected.
fn collecting() -> (Notifier, Seen) {
    let notifier = Notifier::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push((e.name().to_owned(), e.payload().clone()))),
    );
    (notifier, seen)
}

#[test]
fn one_key_recorded_many_times_keeps_its_last_value_and_pushes_out_no_other_key() {
    let (notifier, seen) = collecting();
    notifier.instrument("job.record", Payload::new, |_| {
        notify_core::record("user_id", 42_u64);
        for i in 0..300_u64 {
            notify_core::record("progress", i);
        }
    });
    let seen = seen.lock().unwrap();
    let payload = &seen[0].1;
    assert_eq!(payload.len(), 2, "{payload:?}");
    assert_eq!(payload.get("user_id"), Some(&Value::U64(42)));
    assert_eq!(payload.get("progress"), Some(&Value::U64(299)));
}

/// The library's own report lines (`log::error!`, target `notify`).
#[cfg(feature = "log")]
struct Reports(Mutex<Vec<(String, String)>>);

#[cfg(feature = "log")]
impl log::Log for Reports {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((record.target().to_owned(), record.args().to_string()));
    }
    fn flush(&self) {}
}

#[cfg(feature = "log")]
static REPORTS: Reports = Reports(Mutex::new(Vec::new()));

/// Issue 33 item 7: the facts dropped past the per-thread limit are counted, exactly, and the
/// first drop of the process is reported once.
#[test]
fn past_256_distinct_facts_waiting_on_a_thread_the_oldest_are_dropped_and_counted() {
    #[cfg(feature = "log")]
    {
        log::set_logger(&REPORTS).unwrap();
        log::set_max_level(log::LevelFilter::Trace);
    }
    let (notifier, seen) = collecting();
    let keys: Vec<&'static str> = (0..300).map(|i| &*format!("k{i}").leak()).collect();
    // No other test of this binary records more than 256 facts on a thread: the count is exact.
    let before = notify_core::event::records_dropped();
    notifier.instrument("many.record", Payload::new, |_| {
        for (i, key) in keys.iter().enumerate() {
            notify_core::record(key, i as u64);
        }
        // A key already waiting is replaced in place: no drop.
        notify_core::record(keys[299], 0_u64);
    });
    assert_eq!(notify_core::event::records_dropped() - before, 44);
    {
        let seen = seen.lock().unwrap();
        let payload = &seen[0].1;
        let got: Vec<&str> = payload.iter().map(|(k, _)| k).collect();
        assert_eq!(got, keys[44..], "the 256 newest, in record order");
        assert_eq!(payload.get(keys[299]), Some(&Value::U64(0)));
    }
    // A second event that drops as many: counted, not reported again.
    notifier.instrument("many.record", Payload::new, |_| {
        keys.iter().for_each(|key| notify_core::record(key, 1_u64))
    });
    assert_eq!(notify_core::event::records_dropped() - before, 88);
    #[cfg(feature = "log")]
    {
        let reports = REPORTS.0.lock().unwrap();
        let drops: Vec<&(String, String)> = reports
            .iter()
            .filter(|(_, line)| line.contains("records_dropped"))
            .collect();
        assert_eq!(drops.len(), 1, "{reports:?}");
        assert_eq!(drops[0].0, "notify");
    }
}

#[test]
fn a_handle_finished_on_another_thread_gets_the_facts_recorded_in_its_scope_here() {
    let (notifier, seen) = collecting();
    let mut handle = notifier.build_handle("moved.record", Payload::new().with("given", 1_u64));
    handle.start().unwrap();
    {
        let _entered = handle.enter();
        notify_core::record("status", 200_u64);
        notify_core::record("status", 201_u64);
    }
    // Started, not current: this fact belongs to no event.
    notify_core::record("status", 500_u64);
    std::thread::spawn(move || handle.finish().unwrap()).join().unwrap();
    // Nothing waits on this thread any more: a later event here gets none of those facts.
    notifier.instrument("later.record", Payload::new, |_| ());
    let seen = seen.lock().unwrap();
    let payloads: Vec<(&str, Vec<(&str, &Value)>)> = seen
        .iter()
        .map(|(name, p)| (name.as_str(), p.iter().collect()))
        .collect();
    assert_eq!(
        payloads,
        [
            (
                "moved.record",
                vec![("given", &Value::U64(1)), ("status", &Value::U64(201))]
            ),
            ("later.record", vec![]),
        ]
    );
}

#[test]
fn facts_recorded_on_a_thread_that_exited_reach_the_handle_finished_later() {
    let (notifier, seen) = collecting();
    let for_thread = notifier.clone();
    let mut handle = std::thread::spawn(move || {
        let mut handle = for_thread.build_handle("orphan.record", Payload::new());
        handle.start().unwrap();
        handle.in_scope(|| notify_core::record("step", "started on a thread that then exits"));
        handle
    })
    .join()
    .unwrap();
    handle.finish().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[0].1.get("step"),
        Some(&Value::from("started on a thread that then exits"))
    );
}
