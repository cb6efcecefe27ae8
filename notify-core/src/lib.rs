//! # notify-core
//!
//! Instrumentation and notifications in the manner of Rails' `ActiveSupport::Notifications`:
//! code *publishes named events* (`"query.sql"`), other code *subscribes* to them, and an event
//! that nobody listens to costs about as much as no instrumentation at all.
//!
//! ```
//! use notify_core::{Event, Notifier, Pattern, Payload, Subscriber};
//!
//! let notifier = Notifier::new();
//! // Subscribe an event-object subscriber to every "*.sql" event.
//! notifier.subscribe(Pattern::glob("*.sql")?, Subscriber::event(|event: &Event| {
//!     println!("{} took {:?}: {:?}", event.name(), event.duration(), event.payload());
//! }));
//! // Instrument a block: the payload closure runs only when someone listens.
//! let rows = notifier.instrument("query.sql", || Payload::new().with("sql", "SELECT * FROM books"), |payload| {
//!     payload.insert("rows", 3_u64);
//!     3
//! });
//! assert_eq!(rows, 3);
//! # Ok::<(), notify_core::PatternError>(())
//! ```
//!
//! ## Vocabulary
//!
//! * An **event name** is a string such as `"query.sql"`; a **payload** ([`Payload`]) is a small
//!   ordered map of facts about the event.
//! * A **subscriber** ([`Subscriber`]) is one of the kinds below; subscribing it with a
//!   **pattern** ([`Pattern`]) makes a **subscription** ([`Subscription`]).
//! * The **notifier** ([`Notifier`], AS::N's fanout) holds the subscriptions, grouped per event
//!   name into **listener groups**, one per kind, so dispatch never branches per subscriber.
//! * A **handle** ([`Handle`]) is an event started and finished in different places; a **callsite**
//!   ([`Callsite`]) is a `static` that caches whether anybody listens to its name.
//!
//! ## Free functions, instrumenters, transaction ids and trace ids
//!
//! The free functions ([`instrument`], [`subscribe`], [`subscribed`], [`unsubscribe_name`],
//! [`listening`], [`publish`]) are the [`Notifier`] methods on [`Notifier::global`], as AS::N's
//! module functions are. [`instrumenter`] (or [`Notifier::instrumenter`] for another notifier)
//! returns the calling thread's [`Instrumenter`], AS::N's per-thread instrumenter: `instrument`,
//! `start`/`finish` by name, `build_handle`, and its `id`, which is the thread's
//! [`transaction_id`] (what timed subscribers receive). A transaction id names a thread, not a
//! request; the events of one request, across threads and tasks, share a [`TraceId`] carried by
//! the [`Context`].
//!
//! ```
//! use notify_core::{Event, Notifier, Payload, Subscriber};
//! let notifier = Notifier::new();
//! notifier.subscribe(notify_core::Pattern::all(), Subscriber::event(|_: &Event| {}));
//! let instrumenter = notifier.instrumenter();
//! let request = instrumenter.start("request.app", Payload::new()).expect("listened");
//! instrumenter.instrument("sql.app", Payload::new, |_| {
//!     assert_eq!(notify_core::current_event_id().map(|id| id != request.id()), Some(true));
//! });
//! instrumenter.finish("request.app", Payload::new().with("status", 200_u64))?;
//! assert_eq!(instrumenter.id(), notify_core::transaction_id());
//! # Ok::<(), notify_core::NotifyError>(())
//! ```
//!
//! ## Subscriber kinds
//!
//! | kind | receives | constructor |
//! |---|---|---|
//! | timed | name, wall-clock start/finish, transaction id, payload | [`Subscriber::timed`] |
//! | monotonic | the same with [`std::time::Instant`] | [`Subscriber::monotonic`] |
//! | event object | `&Event` | [`Subscriber::event`], [`Subscriber::event_with`] |
//! | evented | `start` before the block, `finish` after | [`Subscriber::evented`] |
//! | silenceable | evented, asked `silenced(name)` on every event | [`Subscriber::silenceable`] |
//! | owned | `&Arc<Event>`, for queues and exporters | [`Subscriber::owned`] |
//! | async | `&Event` later, on a shared worker pool | `notify_pool::WorkerPool::subscribe` (crate `notify-pool`) |
//!
//! ## Subscriber types with a method per event
//!
//! A [`NamespaceSubscriber`] (AS::N's `ActiveSupport::Subscriber`) lists its namespace and its
//! methods ([`Methods`]); method `sql` of namespace `active_record` handles `"sql.active_record"`,
//! each method as the subscriber kind it declares. `attach_to(&notifier)` subscribes them all and
//! returns one [`Attachment`] that detaches them all; [`subscriber_methods!`] derives the event
//! names from the method names. Log subscribers (crate `notify-log`) are built on it.
//!
//! ## Failures
//!
//! A subscriber that panics never unwinds into instrumented code and never keeps the others from
//! running; see [`FailurePolicy`].
//!
//! ## Lines notify writes
//!
//! Every line the library writes itself (the default failure report, [`SubscriberFailure`]'s
//! `Display`, [`PatternError`]'s `Display`) escapes control characters of the names and messages it
//! quotes, and quotes long inputs truncated; see [`escape`], which log subscribers and the worker
//! pool use too ([`Value::escaped`] for payload values).

#![warn(missing_docs)]

// Layers, each using only the ones above it (docs/architecture.md):
// value types -> registry snapshot -> fanout (the engine) -> dispatch -> facades -> this file.
mod alloc;
mod callee;
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
mod name_map;
mod pattern;
mod payload;
mod recent;
mod record;
#[cfg(feature = "redaction")]
mod redaction;
// Without the feature: no policy type, and the hooks that would apply one do nothing.
#[cfg(not(feature = "redaction"))]
#[path = "redaction_off.rs"]
mod redaction;
mod remote;
#[cfg(feature = "serde")]
mod serde_impls;
mod subscriber;
mod subscription;
mod sync;
mod trace_id;
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
pub use crate::ids::*;
pub use crate::instrumenter::*;
pub use crate::location::*;
pub use crate::namespace_subscriber::*;
pub use crate::notifier::*;
pub use crate::pattern::*;
pub use crate::payload::*;
pub use crate::record::*;
#[cfg(feature = "redaction")]
pub use crate::redaction::*;
pub use crate::subscriber::*;
pub use crate::subscription::*;
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
/// assert_eq!(instrumenter.id(), notify_core::transaction_id());
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
/// notify_core::publish("free_publish.doc", now, now, notify_core::transaction_id(), notify_core::Payload::new());
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

#[cfg(feature = "macros")]
// Its examples capture events with `testing`: without that feature they are not collected as
// doctests (`doctest` is set only while rustdoc collects them; the rendered docs always have them).
#[cfg_attr(any(not(doctest), feature = "testing"), doc = include_str!("instrument_event.md"))]
pub use notify_macros::instrument_event;

/// For code generated by `#[instrument_event]` only; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::callsite::Callsite;
    pub use crate::handle::Handle;
    pub use crate::location::Location;
    pub use crate::payload::{Payload, Value};

    // What `#[instrument_event]` expands to calls these.
    pub use crate::macro_support::*;

    /// The hash that places `name` in a notifier's cache of names resolved through patterns (its
    /// low bits pick the set): the benchmarks pick colliding names with it.
    pub fn name_cache_hash(name: &str) -> u64 {
        crate::registry::cache_hash(name)
    }
}

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
