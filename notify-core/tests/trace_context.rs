//! W3C trace context across real processes: this test binary started twice, each process
//! continuing one incoming trace.

use std::collections::HashSet;
use std::process::Command;

use notify_core::trace_context::{self, TraceParent};
use notify_core::{Context, Event, Notifier, Payload, Subscriber};

const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const CHILD: &str = "NOTIFY_TRACE_CONTEXT_CHILD";
const EVENTS: usize = 20_000;

/// In a child process: continues `INCOMING` with `EVENTS` events (requests with one query each)
/// and prints one line per event: `span <id> <parent id> <trace id> <parent is remote>`.
fn child() {
    let notifier = Notifier::new();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _s = notifier.subscribe(
        notify_core::Pattern::all(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
    );
    let (context, _) = trace_context::extract_values([INCOMING], []);
    context.in_scope(|| {
        for _ in 0..EVENTS / 2 {
            notifier.instrument("request.http", Payload::new, |_| {
                notifier.instrument("query.sql", Payload::new, |_| ())
            });
        }
    });
    for e in seen.lock().unwrap().iter() {
        let parent = e.parent_id().map_or(0, |p| p.get());
        println!(
            "span {:016x} {parent:016x} {} {}",
            e.id().get(),
            e.trace_id(),
            e.parent_is_remote()
        );
    }
}

/// The span lines of one run of this test in a child process.
fn run_child() -> Vec<(u64, u64, String, bool)> {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            "two_processes_continuing_one_trace_share_no_span_id",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        // libtest writes "test NAME ... " before the test's own output, on the same line.
        .filter_map(|l| l.split_once("span ").map(|(_, rest)| rest))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
            (hex(f[0]), hex(f[1]), f[2].to_owned(), f[3] == "true")
        })
        .collect()
}

#[test]
fn two_processes_continuing_one_trace_share_no_span_id() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let incoming: TraceParent = INCOMING.parse().unwrap();
    let (a, b) = (run_child(), run_child());
    let mut ids = HashSet::new();
    for spans in [&a, &b] {
        assert_eq!(spans.len(), EVENTS);
        let own: HashSet<u64> = spans.iter().map(|s| s.0).collect();
        assert_eq!(own.len(), EVENTS, "no id repeats within a process");
        for (id, parent, trace, remote) in spans {
            assert_ne!(*id, 0);
            assert_eq!(
                trace,
                &incoming.trace_id().to_string(),
                "one trace across both processes"
            );
            // Requests are children of the remote caller, queries of their request.
            assert_eq!(*remote, *parent == incoming.parent_id().get());
            assert!(*remote || own.contains(parent));
        }
        ids.extend(own);
    }
    assert_eq!(ids.len(), 2 * EVENTS, "no span id shared between the two processes");
    assert_eq!(a.iter().filter(|s| s.3).count(), EVENTS / 2);
    // The outgoing traceparent of an event names the event.
    let notifier = Notifier::new();
    let _s = notifier.subscribe("call.http", Subscriber::event(|_: &Event| {}));
    let header = Context::from_traceparent(&incoming)
        .in_scope(|| notifier.instrument("call.http", Payload::new, |_| Context::current().traceparent()))
        .unwrap();
    assert_eq!(header.trace_id(), incoming.trace_id());
    assert_ne!(
        header.parent_id(),
        incoming.parent_id(),
        "the local event is the callee's parent"
    );
}
