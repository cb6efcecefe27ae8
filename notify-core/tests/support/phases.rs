//! Two evented subscribers for the tests of what an event that never starts delivers and reports,
//! shared by tests/hostile_subscribers.rs and tests/callsite_handle_failures.rs through
//! `#[path = "support/phases.rs"] mod phases;`.

use std::sync::{Arc, Mutex};

use notify_core::{context::EventContext, EventedSubscriber, Payload, SilenceableSubscriber};

/// Records `start NAME` and `finish NAME`, in call order.
pub struct PhaseRecorder(pub Arc<Mutex<Vec<String>>>);

impl EventedSubscriber for PhaseRecorder {
    fn start(&self, name: &str, _: &EventContext, _: &Payload) {
        self.0.lock().unwrap().push(format!("start {name}"));
    }
    fn finish(&self, name: &str, _: &EventContext, _: &Payload) {
        self.0.lock().unwrap().push(format!("finish {name}"));
    }
}

/// A silenceable subscriber whose `silenced` panics with "boom in silenced": counted as silenced
/// (its `start` and `finish`, which would panic too, are never called) and reported as a failure.
pub struct PanicsInSilenced;

impl EventedSubscriber for PanicsInSilenced {
    fn start(&self, _: &str, _: &EventContext, _: &Payload) {
        panic!("start of a silenced subscriber")
    }
    fn finish(&self, _: &str, _: &EventContext, _: &Payload) {
        panic!("finish of a silenced subscriber")
    }
}

impl SilenceableSubscriber for PanicsInSilenced {
    fn silenced(&self, _: &str) -> bool {
        panic!("boom in silenced")
    }
}
