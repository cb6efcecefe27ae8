//! R13 (payload is lazy, nothing allocates when nobody listens) and the allocation count of
//! events, in a test binary of its own because it installs `CountingAllocator` as the global
//! allocator.

use std::sync::atomic::{AtomicUsize, Ordering};

use notify_core::{
    event::Callsite, event::CountingAllocator, payload::Text, subscriber::EventOptions, Event, Notifier, Payload,
    Subscriber, Value,
};

#[global_allocator]
static GLOBAL: CountingAllocator<std::alloc::System> = CountingAllocator::new(std::alloc::System);

static R13_SITE: Callsite = Callsite::new("r13.site");

#[test]
fn r13_payload_is_lazy_and_nothing_allocates_when_nobody_listens() {
    let notifier = Notifier::new();
    let payloads = AtomicUsize::new(0);
    let bodies = AtomicUsize::new(0);
    let payload = || {
        payloads.fetch_add(1, Ordering::SeqCst);
        Payload::new().with("sql", String::from("SELECT 1"))
    };
    // Warm up: the global notifier and the callsite registration allocate once.
    R13_SITE.instrument(payload, |_| ());
    notifier.instrument("r13.dynamic", payload, |_| ());
    payloads.store(0, Ordering::SeqCst);

    let before = notify_core::event::thread_allocations().expect("CountingAllocator is installed");
    let value = notifier.instrument("r13.dynamic", payload, |_| {
        bodies.fetch_add(1, Ordering::SeqCst);
        5
    });
    let site_value = R13_SITE.instrument(payload, |_| {
        bodies.fetch_add(1, Ordering::SeqCst);
        6
    });
    assert!(!notifier.listening("r13.dynamic"));
    let after = notify_core::event::thread_allocations().unwrap();
    assert_eq!((value, site_value), (5, 6));
    assert_eq!(payloads.load(Ordering::SeqCst), 0);
    assert_eq!(bodies.load(Ordering::SeqCst), 2);
    assert_eq!(after - before, 0);
}

#[test]
fn event_allocations_count_the_blocks_allocations_when_asked() {
    let notifier = Notifier::new();
    let counts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = counts.clone();
    let _ = notifier.subscribe(
        "alloc.block",
        Subscriber::event_with(
            EventOptions {
                cpu_time: false,
                allocations: true,
            },
            move |e: &Event| {
                sink.lock().unwrap().push(e.allocations());
            },
        ),
    );
    notifier.instrument("alloc.block", Payload::new, |_| {
        let a = vec![1_u8; 100];
        let b = vec![2_u8; 200];
        std::hint::black_box((a, b));
    });
    notifier.instrument("alloc.block", Payload::new, |_| ());
    assert_eq!(*counts.lock().unwrap(), [Some(2), Some(0)]);
}

#[test]
fn listening_never_allocates_even_through_patterns() {
    let notifier = Notifier::new();
    let _ = notifier.subscribe(
        notify_core::Pattern::glob("other.*").unwrap(),
        Subscriber::event(|_: &Event| {}),
    );
    let _ = notifier.subscribe("exact.name", Subscriber::event(|_: &Event| {}));
    let before = notify_core::event::thread_allocations().expect("CountingAllocator is installed");
    let answers = [
        notifier.listening("exact.name"),
        notifier.listening("other.thing"),
        notifier.listening("nobody.listens"),
    ];
    let after = notify_core::event::thread_allocations().unwrap();
    assert_eq!(answers, [true, true, false]);
    assert_eq!(after - before, 0);
}

/// Issue 15: `Value::from_static` stores text borrowed, so a payload of static keys, static text
/// and scalars (up to four entries, inline) is built and dropped without allocating; the same
/// literal through `ToValue` (`with("sql", "...")`) is copied, as is a shorter-lived `&str`,
/// which `with` still takes: inline (no allocation) up to `Text::INLINE_CAPACITY` (38) bytes,
/// one allocation each beyond.
#[test]
fn static_text_values_are_borrowed_and_allocate_nothing() {
    let before = notify_core::event::thread_allocations().expect("CountingAllocator is installed");
    let borrowed = Payload::new()
        .with("sql", Value::from_static("SELECT * FROM books WHERE id = ?"))
        .with("rows", 3_u64)
        .with("cached", false);
    let mut inserted = Payload::new();
    inserted.insert("db", Value::from_static("primary"));
    inserted.insert("db", Value::from("replica"));
    let during = notify_core::event::thread_allocations().unwrap();
    assert_eq!(
        borrowed.get("sql").and_then(Value::as_static_str),
        Some("SELECT * FROM books WHERE id = ?")
    );
    assert_eq!(inserted.get("db").and_then(Value::as_static_str), Some("replica"));
    drop((borrowed, inserted));
    assert_eq!(during - before, 0);

    let local = String::from("books");
    let before = notify_core::event::thread_allocations().unwrap();
    let copied = Payload::new()
        .with("sql", "SELECT * FROM books WHERE id = ?")
        .with("table", &local[..])
        .with("char", 'é');
    let after = notify_core::event::thread_allocations().unwrap();
    assert_eq!(after - before, 0, "short text copied inline");
    assert_eq!(copied.get("sql").and_then(Value::as_static_str), None);
    assert_eq!(
        copied.get("sql").and_then(Value::as_str),
        Some("SELECT * FROM books WHERE id = ?")
    );
    assert_eq!(copied.get("table").and_then(Value::as_str), Some("books"));
    assert_eq!(copied.get("char").and_then(Value::as_str), Some("é"));
    drop(copied);

    let exact = "x".repeat(Text::INLINE_CAPACITY);
    let longer = "x".repeat(Text::INLINE_CAPACITY + 1);
    let before = notify_core::event::thread_allocations().unwrap();
    let copied = Payload::new().with("exact", &exact[..]).with("longer", &longer[..]);
    let after = notify_core::event::thread_allocations().unwrap();
    assert_eq!(after - before, 1, "only the 39-byte text is allocated");
    assert_eq!(copied.get("exact").and_then(Value::as_str), Some(&exact[..]));
    assert_eq!(copied.get("longer").and_then(Value::as_str), Some(&longer[..]));
}
