//! [`Slot`]: one queued event.

use std::sync::Arc;

use notify_core::Event;

/// One queued event with the flush generation it was accepted in.
#[derive(Clone)]
pub(crate) struct Slot {
    pub(crate) event: Arc<Event>,
    pub(crate) gen: usize,
}
