//! # notify-base
//!
//! The library behind [notify-core](https://docs.rs/notify-core): the registry, the engine
//! (AS::N's fanout), dispatch, the notifier, callsites, handles, events, payloads and the
//! context. **Depend on `notify-core`**, which re-exports this crate's items sorted: the everyday
//! API at its root (`notify_core::Notifier` is [`Notifier`]) and the rest in one public module per
//! concept (`notify_core::event::Callsite` is [`Callsite`]), together with `#[instrument_event]`.
//! This crate's root is flat (every public item of its private modules, `pub use module::*`);
//! notify-core's lib.rs is the one list of where each item is shown. The documentation, its
//! examples and the guarantees are written for `notify_core::...` paths.
//!
//! Why two crates: `#[instrument_event]` lives in a proc-macro crate built on syn, and a crate
//! that re-exports a proc-macro is compiled only after it. Kept apart from the macro, this crate
//! compiles beside syn, and notify-core (a few re-exports) after both, as serde is a facade over
//! serde_core and serde_derive (docs/build-time.md has the measurements). Its features are
//! notify-core's of the same name.

#![warn(missing_docs)]
// docs.rs (nightly) marks each item that needs a feature with that feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Layers, each using only the ones above it (docs/architecture.md):
// value types -> registry snapshot -> fanout (the engine) -> dispatch -> facades -> this file.
mod alloc;
mod callee;
mod calls;
mod cold_box;
mod context;
mod cpu_clock;
mod error;
pub mod escape;
mod event;
mod event_id;
mod failure;
mod fanout_end;
// Under loom only its model uses it: the fanout pins through arc-swap there.
#[cfg_attr(loom, allow(dead_code))]
mod hazard;
mod id_type;
mod ids;
mod kinds;
mod name_map;
mod overflow;
mod pattern;
mod payload;
mod recent;
mod record;
// The spare list of owned events exporters gave back (notify-export's collector fills it).
mod recycle;
#[cfg(feature = "redaction")]
mod redaction;
// Without the feature: no policy type, and the hooks that would apply one do nothing.
pub mod baggage;
mod propagated;
#[cfg(not(feature = "redaction"))]
#[path = "redaction_off.rs"]
mod redaction;
mod remote;
mod sampling;
mod scope;
#[cfg(feature = "serde")]
mod serde_impls;
mod subscriber;
mod subscription;
mod suppress;
mod sync;
mod tags;
mod thread_counter;
pub mod trace_context;
mod trace_error;
mod trace_flags;
mod trace_id;
mod tracestate;
mod transaction_id;

mod registry;

mod fanout;

mod dispatch;

mod callsite;
mod future;
mod handle;
mod instrumenter;
mod location;
mod macro_support;
mod namespace_subscriber;
mod notifier;
#[cfg(feature = "testing")]
pub mod testing;

// The re-export rule: every public item of a private module is public at the crate root, and
// only there (`pub use module::*`); `macro_support` is for generated code (`__private`).
pub use crate::alloc::*;
pub use crate::callsite::*;
pub use crate::context::*;
pub use crate::error::*;
pub use crate::event::*;
pub use crate::event_id::*;
pub use crate::failure::*;
pub use crate::fanout_end::defer_to_fanout_end;
pub use crate::future::*;
pub use crate::handle::*;
pub use crate::id_type::EventIdError;
pub use crate::ids::*;
pub use crate::instrumenter::*;
pub use crate::kinds::*;
pub use crate::location::*;
pub use crate::namespace_subscriber::*;
pub use crate::notifier::*;
pub use crate::overflow::Overflow;
pub use crate::pattern::*;
pub use crate::payload::*;
pub use crate::propagated::{
    baggage, trace_state, with_baggage, Propagated, PropagatedEntered, PropagatedGuard, WithPropagated,
};
pub use crate::record::*;
pub use crate::recycle::*;
#[cfg(feature = "redaction")]
pub use crate::redaction::*;
pub use crate::remote::*;
pub use crate::sampling::Sampler;
pub use crate::scope::{Scope, ScopeEntered};
pub use crate::subscriber::*;
pub use crate::subscription::*;
pub use crate::suppress::*;
pub use crate::tags::{tagged, Tagged, Tags, TagsGuard};
pub use crate::trace_id::*;
pub use crate::transaction_id::*;

/// [`Notifier::instrument`] on the global notifier.
///
/// ```
/// assert_eq!(notify_core::instrument("free_instrument.doc", notify_core::Payload::new, |_| 1), 1);
/// ```
#[inline]
pub fn instrument<T>(name: &str, payload: impl FnOnce() -> Payload, body: impl FnOnce(&mut Payload) -> T) -> T {
    Notifier::global().instrument(name, payload, body)
}

/// The calling thread's [`Instrumenter`] of the global notifier (AS::N's
/// `ActiveSupport::Notifications.instrumenter`): [`Notifier::instrumenter`] on
/// [`Notifier::global`]. Its id is [`transaction_id`].
///
/// ```
/// let instrumenter = notify_core::instrumenter();
/// assert_eq!(instrumenter.id(), notify_core::context::transaction_id());
/// instrumenter.start("free_instrumenter.doc", notify_core::Payload::new());
/// instrumenter.finish("free_instrumenter.doc", notify_core::Payload::new())?;
/// # Ok::<(), notify_core::NotifyError>(())
/// ```
pub fn instrumenter() -> Instrumenter {
    Notifier::global().instrumenter()
}

/// [`Notifier::subscribe`] on the global notifier.
///
/// ```
/// let s = notify_core::subscribe("free_subscribe.doc", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
/// assert!(notify_core::listening("free_subscribe.doc"));
/// s.unsubscribe()?;
/// # Ok::<(), notify_core::NotifyError>(())
/// ```
pub fn subscribe(pattern: impl Into<Pattern>, subscriber: impl Into<Subscriber>) -> Subscription {
    Notifier::global().subscribe(pattern, subscriber)
}

/// [`Notifier::subscribed`] on the global notifier.
///
/// ```
/// let n = notify_core::subscribed("free_subscribed.doc", notify_core::Subscriber::event(|_: &notify_core::Event| {}), || 1);
/// assert_eq!(n, 1);
/// ```
pub fn subscribed<T>(pattern: impl Into<Pattern>, subscriber: impl Into<Subscriber>, f: impl FnOnce() -> T) -> T {
    Notifier::global().subscribed(pattern, subscriber, f)
}

/// [`Notifier::unsubscribe_name`] on the global notifier.
///
/// ```
/// assert_eq!(notify_core::unsubscribe_name("nobody.doc"), 0);
/// ```
pub fn unsubscribe_name(name: &str) -> usize {
    Notifier::global().unsubscribe_name(name)
}

/// [`Notifier::listening`] on the global notifier.
///
/// ```
/// assert!(!notify_core::listening("free_listening.doc"));
/// ```
pub fn listening(name: &str) -> bool {
    Notifier::global().listening(name)
}

/// [`Notifier::publish`] on the global notifier.
///
/// ```
/// let now = std::time::SystemTime::now();
/// notify_core::publish("free_publish.doc", now, now, notify_core::context::transaction_id(), notify_core::Payload::new());
/// ```
pub fn publish(
    name: &str,
    start: std::time::SystemTime,
    finish: std::time::SystemTime,
    transaction_id: TransactionId,
    payload: Payload,
) {
    Notifier::global().publish(name, start, finish, transaction_id, payload);
}

/// For code generated by `#[instrument_event]` only; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::callsite::Callsite;
    pub use crate::handle::Handle;
    pub use crate::location::Location;
    pub use crate::payload::{Payload, Value};

    // What `#[instrument_event]` expands to calls these.
    pub use crate::macro_support::*;

    // For notify's own crates, hidden from notify-core's pages: notify-pool batches its hand-off
    // at the end of a fan-out (the fan-out is the engine's private business).
    pub use crate::fanout_end::defer_to_fanout_end;
    pub use crate::future::{Nothing, RecordOutput, RecordWith};

    /// The hash that places `name` in a notifier's cache of names resolved through patterns (its
    /// low bits pick the set): the benchmarks pick colliding names with it.
    pub fn name_cache_hash(name: &str) -> u64 {
        crate::registry::cache_hash(name)
    }
}
