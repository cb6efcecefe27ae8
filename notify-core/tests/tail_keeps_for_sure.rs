//! Issue 48: `TailSampling::keeps_for_sure`, what an exemplar relies on to point only to a trace
//! the tail sampler keeps, agrees with `TailSampler`'s decision.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::export::{TailSampler, TailSampling};
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber};

/// Collects the shared events a notifier publishes.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Arc<Event>>>>);

impl OwnedEventSubscriber for Collect {
    fn deliver(&self, event: &Arc<Event>) {
        self.0.lock().unwrap().push(event.clone());
    }
}

fn offer_all(sampler: &mut TailSampler, events: &[Arc<Event>], now: Instant, kept: &mut Vec<Arc<Event>>) {
    for event in events {
        sampler.offer(event.clone(), now, kept);
    }
}

/// Issue 48: `TailSampling::keeps_for_sure` never says "kept" of an event whose trace the sampler
/// then drops (what an exemplar relies on), over a mix of errors, slow roots, slow children and
/// the ratio; and it does say so for every error, slow root and trace in the ratio.
#[test]
fn i48_keeps_for_sure_agrees_with_the_samplers_decision() {
    let policy = TailSampling::new().slower_than(Duration::from_millis(20)).ratio(0.3);
    let notifier = Notifier::new();
    let collect = Collect::default();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::owned(collect.clone()));
    let mut mix = Vec::new();
    for n in 0..60_u32 {
        notifier.instrument("root.tail", Payload::new, |_| {
            let _ = notifier.instrument_result("child.tail", Payload::new, |_| {
                if n % 7 == 0 {
                    Err("refused")
                } else {
                    Ok(())
                }
            });
            if n % 5 == 0 {
                // A slow child: slowness counts only for the local root.
                notifier.instrument("slow_child.tail", Payload::new, |_| {
                    std::thread::sleep(Duration::from_millis(25))
                });
            } else if n % 11 == 0 {
                std::thread::sleep(Duration::from_millis(25));
            }
        });
        mix.push(std::mem::take(&mut *collect.0.lock().unwrap()));
    }
    let mut sampler = TailSampler::new(policy.clone());
    let now = Instant::now();
    let (mut sure, mut kept_traces) = (0, 0);
    for events in &mix {
        let mut kept = Vec::new();
        offer_all(&mut sampler, events, now, &mut kept);
        let trace_kept = !kept.is_empty();
        kept_traces += usize::from(trace_kept);
        for event in events {
            if policy.keeps_for_sure(event) {
                sure += 1;
                assert!(trace_kept, "{} said kept, trace dropped", event.name());
            }
        }
        let root = events.last().unwrap();
        // Every reason the sampler keeps a trace for is seen on some event of it.
        assert_eq!(
            trace_kept,
            events.iter().any(|e| policy.keeps_for_sure(e)),
            "{:?}",
            root.trace_id()
        );
    }
    assert!(
        sure > 0 && kept_traces > 0 && kept_traces < mix.len(),
        "{sure} {kept_traces}"
    );
}
