//! [`Slot`]: one queued event.

use std::sync::Arc;

use notify_core::Event;

/// One queued event with the flush generation it was accepted in.
#[derive(Clone)]
pub(crate) struct Slot {
    pub(crate) event: Arc<Event>,
    pub(crate) gen: usize,
}

/// A slot in a mailbox's first place: the event beside the lock, the generation (0 or 1) in a
/// byte of the state's padding.
impl crate::mailbox_core::Compact for Slot {
    type Head = Arc<Event>;

    #[inline]
    fn split(self) -> (Arc<Event>, u8) {
        debug_assert!(self.gen < 2, "a flush generation is 0 or 1");
        (self.event, self.gen as u8)
    }

    #[inline]
    fn join(event: Arc<Event>, gen: u8) -> Slot {
        Slot {
            event,
            gen: usize::from(gen),
        }
    }
}
