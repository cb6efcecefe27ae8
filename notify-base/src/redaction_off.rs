//! Redaction compiled out (the feature `redaction` is off): there is no policy type, so no
//! notifier can hold one, and the per-event hook the dispatcher calls does nothing.

use std::sync::Arc;

use crate::payload::Payload;

/// Stands in for the policy type: it has no values, so `Option<Arc<Redaction>>` is always `None`.
pub(crate) enum Redaction {}

impl Redaction {
    pub(crate) fn redact(&self, _payload: &mut Payload) -> usize {
        match *self {}
    }
}

/// The redaction state of one event in flight: nothing to apply.
#[derive(Default)]
pub(crate) struct Pending;

impl Pending {
    /// Inline, and `policy` forgotten rather than dropped: it is always `None` (an
    /// `Arc<Redaction>` cannot be made), but its drop stayed an out-of-line call through the GOT
    /// once per listened event (six instructions and two taken branches).
    #[inline(always)]
    pub(crate) fn new(policy: Option<Arc<Redaction>>) -> Pending {
        std::mem::forget(policy);
        Pending
    }

    #[inline(always)]
    pub(crate) fn apply(&mut self, _payload: &mut Payload) {}
}
