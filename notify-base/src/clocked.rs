//! How the timed and monotonic groups are called: the event's five arguments gathered once per
//! event in a [`Clocked`], and one pointer to it passed per subscriber.
//!
//! [`TimedSubscriber::call`] takes nine machine words (a name is two, a `SystemTime` or an
//! `Instant` two each), three more than x86-64 passes in registers, so a loop calling it through
//! its vtable pushed three words on the stack and moved six registers per subscriber (19
//! instructions around each call). Each subscriber's vtable here holds [`CallTimed::call_clocked`]
//! instead, compiled for that subscriber's type: the loop passes two registers, and the unpacking
//! is inlined into the subscriber's own code (for a closure, into its body).

use std::time::{Instant, SystemTime};

use crate::payload::Payload;
use crate::subscriber::{MonotonicSubscriber, TimedSubscriber};
use crate::transaction_id::TransactionId;

/// The arguments of one timed (`C` = [`SystemTime`]) or monotonic (`C` = [`Instant`]) delivery.
#[derive(Clone, Copy)]
pub(crate) struct Clocked<'a, C> {
    pub(crate) name: &'a str,
    pub(crate) start: C,
    pub(crate) finish: C,
    pub(crate) transaction_id: TransactionId,
    pub(crate) payload: &'a Payload,
}

/// A [`TimedSubscriber`] called with its arguments behind one pointer.
pub(crate) trait CallTimed: Send + Sync + 'static {
    /// [`TimedSubscriber::call`] with `args`.
    fn call_clocked(&self, args: &Clocked<'_, SystemTime>);
}

impl<S: TimedSubscriber> CallTimed for S {
    #[inline]
    fn call_clocked(&self, args: &Clocked<'_, SystemTime>) {
        self.call(args.name, args.start, args.finish, args.transaction_id, args.payload);
    }
}

/// A [`MonotonicSubscriber`] called with its arguments behind one pointer.
pub(crate) trait CallMonotonic: Send + Sync + 'static {
    /// [`MonotonicSubscriber::call`] with `args`.
    fn call_clocked(&self, args: &Clocked<'_, Instant>);
}

impl<S: MonotonicSubscriber> CallMonotonic for S {
    #[inline]
    fn call_clocked(&self, args: &Clocked<'_, Instant>) {
        self.call(args.name, args.start, args.finish, args.transaction_id, args.payload);
    }
}
