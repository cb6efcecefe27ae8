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

//!
//! ## This crate and notify-base
//!
//! notify-core is a facade: every item above is defined in [notify-base](https://docs.rs/notify-base)
//! and re-exported here at the same path, with `#[instrument_event]` from notify-macros (feature
//! `macros`). The split lets notify-base compile beside syn, which the macro needs, instead of
//! after it (as serde re-exports serde_core and serde_derive);
//! [docs/build-time.md](https://github.com/notify-instrumentation/notify/blob/main/docs/build-time.md)
//! has the measurements. Depend on notify-core; its features are forwarded to notify-base.

#![warn(missing_docs)]
// docs.rs (nightly) marks each item that needs a feature with that feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use notify_base::*;

// Named once more, under this crate's features: code that uses one without the feature then gets
// rustc's note "gated behind the `testing` feature" for notify-core, which a glob re-export of a
// configured-out item does not give.
#[cfg(feature = "testing")]
#[doc(inline)]
pub use notify_base::testing;
#[cfg(feature = "redaction")]
#[doc(inline)]
pub use notify_base::{Redaction, RedactionBuilder, RedactionError};

#[cfg(feature = "macros")]
// Its examples capture events with `testing`: without that feature they are not collected as
// doctests (`doctest` is set only while rustdoc collects them; the rendered docs always have them).
#[cfg_attr(any(not(doctest), feature = "testing"), doc = include_str!("instrument_event.md"))]
pub use notify_macros::instrument_event;

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
