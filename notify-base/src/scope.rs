//! [`Scope`]: a [`Context`] and a [`Propagated`] record made current again and again, around
//! each poll of a future or of a response body.

use std::marker::PhantomData;

use crate::context::Context;
use crate::ids;
use crate::propagated::Propagated;

/// A context to attach and a [`Propagated`] record to make current, entered around each poll of
/// a future or body that runs in a request's scope (notify-http's server layer keeps one per
/// request, whether or not anybody listens).
///
/// Entering it is what [`Context::attach`] and [`Propagated::enter`] do together, with less
/// per entry: the context's frame is built, and its key drawn, once when the scope is made
/// rather than at every entry (entries cannot overlap: [`Scope::enter`] takes `&mut self`), and
/// the frame is kept in plain words (no 16-byte alignment), so a future that holds the scope
/// stays small to move.
///
/// ```
/// use notify_core::context::{self, Propagated, Scope};
/// use notify_core::{baggage::Baggage, Context};
///
/// let context = Context::new_trace();
/// let propagated = Propagated::new().with_baggage(Baggage::new().with("tenant", "acme").unwrap());
/// let mut scope = Scope::new(Some(context), propagated);
/// for _ in 0..2 {
///     let _entered = scope.enter();
///     assert_eq!(Context::current(), context);
///     assert_eq!(context::baggage().get("tenant"), Some("acme"));
/// }
/// assert!(Context::current().is_none());
/// assert!(context::baggage().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct Scope {
    /// The attached frame's key; 0: no context to attach (only the record is made current).
    key: u64,
    event: u64,
    /// The trace id's low and high halves (two words rather than a `u128`: 8-byte alignment).
    trace: [u64; 2],
    flags: u8,
    propagated: Propagated,
}

impl Scope {
    /// A scope attaching `context` (when `Some`) and making `propagated` current at each entry.
    /// Draws the frame's key from the thread's id generator (a few arithmetic operations).
    #[inline]
    pub fn new(context: Option<Context>, propagated: Propagated) -> Scope {
        let Some(context) = context else {
            return Scope {
                propagated,
                ..Scope::default()
            };
        };
        let frame = context.frame();
        Scope {
            key: ids::next_event_id(),
            event: frame.event,
            trace: [frame.trace as u64, (frame.trace >> 64) as u64],
            flags: frame.flags,
            propagated,
        }
    }

    /// A scope attaching a new trace ([`Context::new_trace`]: a random trace id, no parent) and
    /// making `propagated` current at each entry: [`Scope::new`] of a new trace, its trace id and
    /// the frame's key drawn together (what a served request without a `traceparent` makes).
    ///
    /// ```
    /// use notify_core::context::{Propagated, Scope};
    /// use notify_core::Context;
    ///
    /// let mut scope = Scope::new_trace(Propagated::new());
    /// let context = scope.context().unwrap();
    /// assert!(context.trace_id().is_some() && context.event_id().is_none());
    /// assert!(context.has_random_trace_id());
    /// let _entered = scope.enter();
    /// assert_eq!(Context::current(), context);
    /// ```
    #[inline]
    pub fn new_trace(propagated: Propagated) -> Scope {
        let (trace, key) = ids::random_trace_id_and_key();
        let trace = trace.get();
        Scope {
            key,
            event: 0,
            trace: [trace as u64, (trace >> 64) as u64],
            flags: ids::RANDOM,
            propagated,
        }
    }

    /// The context attached at each entry, if any.
    pub fn context(&self) -> Option<Context> {
        (self.key != 0).then(|| Context::of_frame(self.frame()))
    }

    /// The record made current at each entry.
    pub fn propagated(&self) -> &Propagated {
        &self.propagated
    }

    fn frame(&self) -> ids::Frame {
        ids::frame(
            self.event,
            u128::from(self.trace[0]) | (u128::from(self.trace[1]) << 64),
            self.flags,
        )
    }

    /// Attaches the context and makes the record current until the guard drops; then what was
    /// current before is current again.
    #[inline(always)]
    pub fn enter(&mut self) -> ScopeEntered<'_> {
        if self.key != 0 {
            ids::attach_keyed(self.frame(), self.key);
        }
        self.propagated.swap_with_current();
        ScopeEntered {
            scope: self,
            _not_send: PhantomData,
        }
    }
}

/// The guard of [`Scope::enter`]. Not `Send`: it must drop on the thread that entered.
#[must_use = "the scope is current only while the guard lives"]
#[derive(Debug)]
pub struct ScopeEntered<'a> {
    scope: &'a mut Scope,
    _not_send: PhantomData<*const ()>,
}

impl Drop for ScopeEntered<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // The record goes back where it came from, the frame leaves: one guard for both, its
        // drop inlined where the scope is entered.
        self.scope.propagated.swap_with_current();
        if self.scope.key != 0 {
            ids::leave(self.scope.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baggage::Baggage;
    use crate::event_id::EventId;
    use crate::trace_id::TraceId;

    #[test]
    fn i45_1_scope_enters_again_and_again_and_nests_with_other_frames() {
        let trace = TraceId::new(0x4bf9_0000_0000_0000_0000_0000_0000_0001).unwrap();
        let context = Context::remote(trace, EventId::new(7), true).with_random_trace_id(true);
        let propagated = Propagated::new().with_baggage(Baggage::new().with("k", "v").unwrap());
        let mut scope = Scope::new(Some(context), propagated);
        assert_eq!(
            scope.context(),
            Some(context),
            "the whole context round-trips, flags included"
        );
        for _ in 0..3 {
            let entered = scope.enter();
            assert_eq!(Context::current(), context);
            assert_eq!(crate::propagated::baggage().get("k"), Some("v"));
            let inner = Context::new(TraceId::new(5).unwrap(), Some(EventId::new(6)));
            {
                let _inner = inner.attach();
                assert_eq!(Context::current(), inner);
            }
            assert_eq!(Context::current(), context);
            drop(entered);
            assert!(Context::current().is_none());
            assert!(crate::propagated::baggage().is_empty());
        }
        assert_eq!(scope.propagated().baggage().get("k"), Some("v"), "moved back");
    }

    #[test]
    fn i45_1_scope_without_a_context_makes_only_the_record_current() {
        let outer = Context::new(TraceId::new(3).unwrap(), Some(EventId::new(4)));
        let _outer = outer.attach();
        let mut scope = Scope::new(None, Propagated::new());
        assert_eq!(scope.context(), None);
        let _entered = scope.enter();
        assert_eq!(Context::current(), outer, "nothing attached");
    }

    #[test]
    fn i45_1_a_scope_frame_left_out_of_order_is_removed_exactly() {
        let a = Context::new(TraceId::new(11).unwrap(), Some(EventId::new(12)));
        let mut scope = Scope::new(Some(a), Propagated::new());
        let entered = scope.enter();
        let b = Context::new(TraceId::new(13).unwrap(), Some(EventId::new(14)));
        let b_guard = b.attach();
        drop(entered);
        assert_eq!(Context::current(), b, "the scope's frame went from under b");
        drop(b_guard);
        assert!(Context::current().is_none());
    }
}
