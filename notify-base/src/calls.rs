//! How the delivery loops call subscribers: an event's arguments are gathered once per delivery
//! (a [`Clocked`] or a [`Phase`]), and each call passes one pointer to them.
//!
//! [`TimedSubscriber::call`] takes nine machine words (a name is two, a `SystemTime` or an
//! `Instant` two each), three more than x86-64 passes in registers, so a loop calling it through
//! its vtable pushed three words on the stack and moved six registers per subscriber (19
//! instructions around each call); an evented `start` or `finish` moved four. The listener groups
//! hold the crate-private traits of this module instead ([`CallClocked`], [`CallEvented`],
//! [`CallSilenceable`]), implemented for every subscriber type: the loop passes two registers,
//! and the unpacking is compiled into each subscriber type's own method (for a closure, inlined
//! into its body). The public traits do not change.
//!
//! The silenceable group's trait has the evented one as its supertrait and is called through its
//! own vtable, so no trait-object upcast is needed (the workspace's Rust is 1.85).

use std::time::{Instant, SystemTime};

use crate::context::EventContext;
use crate::event::Event;
use crate::kinds::{EventedSubscriber, MonotonicSubscriber, SilenceableSubscriber, TimedSubscriber};
use crate::payload::Payload;
use crate::transaction_id::TransactionId;

/// The arguments of one timed (`C` = [`SystemTime`]) or monotonic (`C` = [`Instant`]) delivery.
pub(crate) struct Clocked<'a, C> {
    pub(crate) name: &'a str,
    pub(crate) start: C,
    pub(crate) finish: C,
    pub(crate) transaction_id: TransactionId,
    pub(crate) payload: &'a Payload,
}

impl<'a, C> Clocked<'a, C> {
    /// The arguments of an event named `name` between the edges `(start, finish)`.
    #[inline(always)]
    pub(crate) fn new(
        name: &'a str,
        (start, finish): (C, C),
        transaction_id: TransactionId,
        payload: &'a Payload,
    ) -> Self {
        Clocked {
            name,
            start,
            finish,
            transaction_id,
            payload,
        }
    }
}

/// The arguments of an evented or silenceable `start` or `finish`.
pub(crate) struct Phase<'a> {
    pub(crate) name: &'a str,
    pub(crate) context: &'a EventContext,
    pub(crate) payload: &'a Payload,
}

/// A timed (`C` = [`SystemTime`], a [`TimedSubscriber`]) or monotonic (`C` = [`Instant`], a
/// [`MonotonicSubscriber`]) subscriber called with its arguments behind one pointer.
pub(crate) trait CallClocked<C>: Send + Sync + 'static {
    /// The subscriber's `call` with `args`.
    fn call_clocked(&self, args: &Clocked<'_, C>);
}

impl<S: TimedSubscriber> CallClocked<SystemTime> for S {
    #[inline]
    fn call_clocked(&self, args: &Clocked<'_, SystemTime>) {
        self.call(args.name, args.start, args.finish, args.transaction_id, args.payload);
    }
}

impl<S: MonotonicSubscriber> CallClocked<Instant> for S {
    #[inline]
    fn call_clocked(&self, args: &Clocked<'_, Instant>) {
        self.call(args.name, args.start, args.finish, args.transaction_id, args.payload);
    }
}

/// An [`EventedSubscriber`] whose `start` and `finish` take their arguments behind one pointer
/// (`enter` and `exit` as they are: four words, all in registers).
pub(crate) trait CallEvented: Send + Sync + 'static {
    /// [`EventedSubscriber::start`] with `args`.
    fn start_with(&self, args: &Phase<'_>);
    /// [`EventedSubscriber::finish`] with `args`.
    fn finish_with(&self, args: &Phase<'_>);
    /// [`EventedSubscriber::enter`].
    fn enter_with(&self, name: &str, context: &EventContext);
    /// [`EventedSubscriber::exit`].
    fn exit_with(&self, name: &str, context: &EventContext);
    /// [`EventedSubscriber::publish`].
    fn publish_with(&self, event: &Event);
}

impl<S: EventedSubscriber> CallEvented for S {
    #[inline]
    fn start_with(&self, args: &Phase<'_>) {
        self.start(args.name, args.context, args.payload);
    }

    #[inline]
    fn finish_with(&self, args: &Phase<'_>) {
        self.finish(args.name, args.context, args.payload);
    }

    #[inline]
    fn enter_with(&self, name: &str, context: &EventContext) {
        self.enter(name, context);
    }

    #[inline]
    fn exit_with(&self, name: &str, context: &EventContext) {
        self.exit(name, context);
    }

    fn publish_with(&self, event: &Event) {
        self.publish(event);
    }
}

/// A [`SilenceableSubscriber`]: [`CallEvented`] and its `silenced`.
pub(crate) trait CallSilenceable: CallEvented {
    /// [`SilenceableSubscriber::silenced`].
    fn is_silenced(&self, name: &str) -> bool;
}

impl<S: SilenceableSubscriber> CallSilenceable for S {
    #[inline]
    fn is_silenced(&self, name: &str) -> bool {
        self.silenced(name)
    }
}
