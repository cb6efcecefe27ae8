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
//!   ordered map of facts about the event ([`Value`]s under keys).
//! * A **subscriber** ([`Subscriber`]) is a subscriber of one of the kinds below; subscribing it
//!   with a **pattern** ([`Pattern`]) makes a **subscription** ([`Subscription`]).
//! * The **notifier** ([`Notifier`], AS::N's fanout) holds the subscriptions, grouped per event
//!   name into **listener groups**, one per kind, so dispatch never branches per subscriber.
//! * A **handle** ([`Handle`]) is an event started and finished in different places; a **callsite**
//!   ([`event::Callsite`]) is a `static` that caches whether anybody listens to its name.
//! * A **context** ([`Context`]) is where work is in a trace: its [`TraceId`] and current event.
//!
//! ## What is where
//!
//! The root holds the everyday API; the rest is in one module per concept, each of which opens
//! with a page that teaches it.
//!
//! | you want to | root | module |
//! |---|---|---|
//! | make events | [`instrument`], [`macro@instrument_event`], [`Handle`], [`Instrument`] (futures), [`record`], [`publish`], [`instrumenter`] | [`event`]: callsites, instrumenters, event ids, outcomes, allocation counts |
//! | build payloads | [`Payload`], [`Value`] | [`payload`]: keys, text, [`payload::ToValue`] |
//! | subscribe | [`subscribe`], [`subscribed`], [`unsubscribe_name`], [`listening`], [`Subscriber`], [`Subscription`], the kind traits | [`subscriber`]: options, kinds, subscriber types with a method per event |
//! | follow a request | [`Context`], [`TraceId`] | [`context`]: guards, tags, transaction ids, future adaptors, what is propagated; [`trace_context`]: W3C `traceparent`, `tracestate`; [`baggage`](mod@baggage): W3C Baggage |
//! | handle panicking subscribers | | [`failure`] |
//! | hand events off (queues, exporters) | | [`export`]: overflow policy, head sampling, recycling (the collector: notify-export); [`suppression`]: telemetry suppression |
//! | match errors | [`NotifyError`], [`PatternError`] | |
//! | hide secrets, test | | `redaction`, `testing` (features of the same name) |
//! | write safe log lines | | [`escape`] |
//!
//! ## Free functions, instrumenters, transaction ids and trace ids
//!
//! The free functions ([`instrument`], [`subscribe`], [`subscribed`], [`unsubscribe_name`],
//! [`listening`], [`publish`]) are the [`Notifier`] methods on [`Notifier::global`], as AS::N's
//! module functions are. [`instrumenter`] (or [`Notifier::instrumenter`] for another notifier)
//! returns the calling thread's [`event::Instrumenter`], AS::N's per-thread instrumenter:
//! `instrument`, `start`/`finish` by name, `build_handle`, and its `id`, which is the thread's
//! [`context::transaction_id`] (what timed subscribers receive). A transaction id names a thread,
//! not a request; the events of one request, across threads and tasks, share a [`TraceId`]
//! carried by the [`Context`].
//!
//! ```
//! use notify_core::{Event, Notifier, Payload, Subscriber};
//! let notifier = Notifier::new();
//! notifier.subscribe(notify_core::Pattern::all(), Subscriber::event(|_: &Event| {}));
//! let instrumenter = notifier.instrumenter();
//! let request = instrumenter.start("request.app", Payload::new()).expect("listened");
//! instrumenter.instrument("sql.app", Payload::new, |_| {
//!     assert_eq!(notify_core::context::current_event_id().map(|id| id != request.id()), Some(true));
//! });
//! instrumenter.finish("request.app", Payload::new().with("status", 200_u64))?;
//! assert_eq!(instrumenter.id(), notify_core::context::transaction_id());
//! # Ok::<(), notify_core::NotifyError>(())
//! ```
//!
//! ## Subscriber kinds
//!
//! One name per concept: [`Subscriber`] is a subscriber of any kind, the value
//! [`subscribe`] takes; each `<Kind>Subscriber` trait is the contract of one kind, and a type or
//! closure that implements it becomes a `Subscriber` through the constructor of its kind.
//!
//! | kind | receives | trait | constructor |
//! |---|---|---|---|
//! | timed | name, wall-clock start/finish, transaction id, payload | [`TimedSubscriber`] | [`Subscriber::timed`] |
//! | monotonic | the same with [`std::time::Instant`] | [`MonotonicSubscriber`] | [`Subscriber::monotonic`] |
//! | event object | `&Event` | [`EventSubscriber`] | [`Subscriber::event`], [`Subscriber::event_with`] |
//! | evented | `start` before the block, `finish` after | [`EventedSubscriber`] | [`Subscriber::evented`] |
//! | silenceable | evented, asked `silenced(name)` on every event | [`SilenceableSubscriber`] | [`Subscriber::silenceable`] |
//! | owned | `&Arc<Event>`, for queues and exporters | [`OwnedEventSubscriber`] | [`Subscriber::owned`] |
//! | async | `&Event` later, on a shared worker pool | `notify_pool::AsyncSubscriber` | `notify_pool::WorkerPool::subscribe` (crate `notify-pool`) |
//!
//! Removing is one verb family, the mirror of subscribing: [`Subscription::unsubscribe`] (one),
//! [`Notifier::unsubscribe_all`] (those of [`Notifier::subscribe_all`], in one registry change),
//! [`Notifier::unsubscribe_name`] (by event name, AS::N's `unsubscribe("name")`). Subscriber types
//! with a method per event ([`subscriber::NamespaceSubscriber`], AS::N's
//! `ActiveSupport::Subscriber`) attach and detach, as AS::N's `attach_to` and `detach_from`.
//!
//! ## Lines notify writes
//!
//! Every line the library writes itself (the default failure report,
//! [`failure::SubscriberFailure`]'s `Display`, [`PatternError`]'s `Display`) escapes control
//! characters of the names and messages it quotes, and quotes long inputs truncated; see
//! [`escape`], which log subscribers and the worker pool use too ([`Value::escaped`] for payload
//! values).
//!
//! ## This crate and notify-base
//!
//! notify-core is a facade: every item above is defined in [notify-base](https://docs.rs/notify-base)
//! and re-exported here, the root and the modules above sorting notify-base's flat root, with
//! `#[instrument_event]` from notify-macros (feature `macros`). The split lets notify-base compile
//! beside syn, which the macro needs, instead of after it (as serde re-exports serde_core and
//! serde_derive);
//! [docs/build-time.md](https://github.com/notify-instrumentation/notify/blob/main/docs/build-time.md)
//! has the measurements. Depend on notify-core; its features are forwarded to notify-base.

#![warn(missing_docs)]
// docs.rs (nightly) marks each item that needs a feature with that feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The root: the everyday API (README's tour uses nothing else). Everything else is in the
// modules below, one per concept; notify-base's root is flat, this list is what users see.
#[doc(inline)]
pub use notify_base::{baggage, escape, trace_context};
#[doc(inline)]
pub use notify_base::{
    instrument, instrumenter, listening, publish, record, subscribe, subscribed, unsubscribe_name, Context, Event,
    EventSubscriber, EventedSubscriber, Handle, Instrument, MonotonicSubscriber, Notifier, NotifyError,
    OwnedEventSubscriber, Pattern, PatternError, Payload, SilenceableSubscriber, Subscriber, Subscription,
    TimedSubscriber, TraceId, Value,
};

/// For code generated by `#[instrument_event]` and for notify's own crates (notify-pool's batching
/// at the end of a fan-out); not a stable API.
#[doc(hidden)]
pub use notify_base::__private;

pub mod subscriber {
    //! Subscribing: the options of each subscriber kind, subscription ids, and subscriber types
    //! with a method per event ([`NamespaceSubscriber`], AS::N's `ActiveSupport::Subscriber`).
    //!
    //! The everyday part is at the crate root: [`Subscriber`](crate::Subscriber) (a subscriber of
    //! one kind, the value [`subscribe`](crate::subscribe) takes) and the kind traits a type
    //! implements ([`TimedSubscriber`](crate::TimedSubscriber),
    //! [`EventSubscriber`](crate::EventSubscriber), ...; a closure of the right shape is one too).
    //! This module holds what tunes them: [`EventOptions`] (CPU time, idle time and allocations
    //! for event-object subscribers), [`EventedOptions`] (context and tags for evented ones),
    //! [`SilenceKey`], [`SubscriberKind`] and [`SubscriptionId`].
    //!
    //! ```
    //! use notify_core::subscriber::{EventOptions, SubscriberKind};
    //! use notify_core::{Event, Notifier, Payload, Subscriber};
    //!
    //! let notifier = Notifier::new();
    //! // An event-object subscriber that asks for the block's CPU time (one clock read more per event).
    //! let subscriber = Subscriber::event_with(EventOptions { cpu_time: true, ..EventOptions::default() }, |event: &Event| {
    //!     assert!(event.cpu_time().is_some());
    //! });
    //! assert_eq!(subscriber.kind(), SubscriberKind::Event);
    //! let subscription = notifier.subscribe("render.view", subscriber);
    //! notifier.instrument("render.view", Payload::new, |_| ());
    //! subscription.unsubscribe()?;
    //! # Ok::<(), notify_core::NotifyError>(())
    //! ```
    //!
    //! A [`NamespaceSubscriber`] lists its namespace and its methods ([`Methods`]): method `sql`
    //! of namespace `active_record` handles `"sql.active_record"`, each [`Method`] as the kind it
    //! declares. `attach_to(&notifier)` subscribes them all and returns one [`Attachment`] that
    //! detaches them all; [`subscriber_methods!`] derives the event names from the method names.
    //! Log subscribers (crate `notify-log`) are built on it.
    #[doc(inline)]
    pub use notify_base::{
        subscriber_methods, Attachment, EventOptions, EventedOptions, Method, Methods, MethodsError,
        NamespaceSubscriber, SilenceKey, SubscriberKind, SubscriptionId,
    };
}
pub mod event {
    //! Making events beyond the free functions: instrumenters, callsites, event ids, outcomes,
    //! locations and allocation counts.
    //!
    //! [`instrument`](crate::instrument) and the attribute make most events, a
    //! [`Handle`](crate::Handle) one that starts and finishes in different places
    //! ([docs/making-events.md](https://github.com/notify-instrumentation/notify/blob/main/docs/making-events.md)
    //! says which way to use when). This module holds the rest:
    //!
    //! * [`Instrumenter`]: the calling thread's instrumenter (AS::N's), with `start` and `finish`
    //!   by name; [`instrumenter`](crate::instrumenter) returns the global notifier's.
    //! * [`Callsite`]: a `static` that caches whether anybody listens to its name, so an
    //!   unlistened call site costs one atomic load and a branch; [`Interest`] is what it caches.
    //! * [`EventId`] (the event's span id), [`Outcome`] (how the block ended), [`Location`] (the
    //!   source line), [`Entered`] (the guard of [`Handle::enter`](crate::Handle::enter)),
    //!   [`RemoteIds`] (the ids of an event recorded by another process, for
    //!   [`Event::recorded_elsewhere`](crate::Event::recorded_elsewhere)).
    //! * [`CountingAllocator`] and [`thread_allocations`]: install the allocator in a binary and
    //!   event-object subscribers that ask for it get [`Event::allocations`](crate::Event::allocations).
    //! * [`records_dropped`]: how many facts [`record`](crate::record) had to drop.
    //!
    //! ```
    //! use notify_core::event::{Callsite, Outcome};
    //! use notify_core::{Event, Notifier, Payload, Subscriber};
    //!
    //! static QUERY: Callsite = Callsite::new("query.sql");
    //! // Nobody listens: one atomic load, no payload built.
    //! assert!(!QUERY.listening());
    //! let (tx, rx) = std::sync::mpsc::channel();
    //! let _s = Notifier::global().subscribe("query.sql", Subscriber::event(move |e: &Event| {
    //!     tx.send(e.outcome()).unwrap();
    //! }));
    //! let rows = QUERY.instrument(|| Payload::new().with("sql", "SELECT 1"), |_| 1);
    //! assert_eq!((rows, rx.recv().unwrap()), (1, Outcome::Completed));
    //! ```
    #[doc(inline)]
    pub use notify_base::{
        records_dropped, thread_allocations, Callsite, CountingAllocator, Entered, EventId, EventIdError, Instrumenter,
        Interest, Location, Outcome, RemoteIds,
    };
}

pub mod payload {
    //! Payload keys, text and conversions: what [`Payload::with`](crate::Payload::with),
    //! [`Payload::insert`](crate::Payload::insert), [`record`](crate::record) and the attribute's
    //! `fields(...)` accept.
    //!
    //! A [`Key`] is static or owned text; a [`Text`] is a string value that does not allocate
    //! when it is static; [`ToValue`] turns your types into a [`Value`](crate::Value) (implement
    //! it for a type you put in payloads often). [`EXCEPTION_KEY`] is where an error goes.
    //!
    //! ```
    //! use notify_core::payload::{ToValue, EXCEPTION_KEY};
    //! use notify_core::{Payload, Value};
    //!
    //! struct UserId(u64);
    //! impl ToValue for UserId {
    //!     fn to_value(&self) -> Value {
    //!         Value::U64(self.0)
    //!     }
    //! }
    //! let mut payload = Payload::new().with("user", UserId(7));
    //! payload.record_error(&std::fmt::Error);
    //! assert_eq!(payload.get("user"), Some(&Value::U64(7)));
    //! assert!(payload.get(EXCEPTION_KEY).is_some());
    //! ```
    #[doc(inline)]
    pub use notify_base::{Key, Text, ToValue, EXCEPTION_KEY};
}

pub mod context {
    //! Context and async: the trace an event belongs to, across threads and tasks; tags;
    //! transaction ids.
    //!
    //! [`Context`](crate::Context) (trace id and current event) is at the root. Capture it where
    //! work is handed off and attach it where the work runs ([`ContextGuard`]); for futures,
    //! [`Instrument`](crate::Instrument) makes a future one event ([`Instrumented`]) or carries the
    //! current context into it ([`WithContext`]). [`Tags`] set for a scope ([`tagged`],
    //! [`TagsGuard`], [`Tagged`] for futures) travel with the context and are added to every event
    //! finished inside (Rails' `Rails.event.tagged`). [`EventContext`] is one event's ids, as
    //! evented subscribers and handles give them. A [`TransactionId`]
    //! ([`transaction_id`]) names a thread, as AS::N's instrumenter id does; the events of one
    //! request share a [`TraceId`](crate::TraceId) instead.
    //!
    //! ```
    //! use notify_core::context::{current_event_id, tagged, Tags};
    //! use notify_core::{Context, Notifier, Payload};
    //!
    //! let notifier = Notifier::new();
    //! notifier.subscribe("job.app", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
    //! let (context, tags) = notifier.instrument("request.app", Payload::new, |_| {
    //!     tagged([("user", 7_u64)], || (Context::current(), Tags::current()))
    //! });
    //! // On another thread, the job joins the request's trace and keeps its tags.
    //! std::thread::spawn(move || {
    //!     let _context = context.attach();
    //!     let _tags = tags.attach();
    //!     notifier.instrument("job.app", Payload::new, |_| assert!(current_event_id().is_some()));
    //! })
    //! .join()
    //! .unwrap();
    //! ```
    #[doc(inline)]
    pub use notify_base::{
        baggage, current_event_id, tagged, trace_state, transaction_id, with_baggage, ContextGuard, EventContext,
        Instrumented, Propagated, PropagatedEntered, PropagatedGuard, Scope, ScopeEntered, Tagged, Tags, TagsGuard,
        TraceIdError, TransactionId, WithContext, WithPropagated,
    };
}

pub mod failure {
    //! When a subscriber panics: it never unwinds into the instrumented code and never keeps the
    //! other subscribers from running; the notifier's [`FailurePolicy`] says what happens next
    //! (report, detach and publish [`SUBSCRIBER_FAILED`], or re-raise for tests as
    //! [`SubscriberErrors`]). Each failure is a [`SubscriberFailure`], which a failure hook
    //! ([`Notifier::set_failure_hook`](crate::Notifier::set_failure_hook)) receives.
    //! [`panic_message`] renders a caught panic as `std`'s hook would, for crates that catch
    //! their subscribers' panics themselves (the worker pool, the log subscribers), and
    //! [`drop_panic_payload`] drops one where a panic of the payload's own `Drop` is caught too.
    //!
    //! ```
    //! use notify_core::failure::FailurePolicy;
    //! use notify_core::{Event, Notifier, Payload, Subscriber};
    //!
    //! let notifier = Notifier::new();
    //! notifier.set_failure_policy(FailurePolicy::Detach);
    //! notifier.set_failure_hook(|_failure| {}); // keep the test's output quiet
    //! notifier.subscribe("x", Subscriber::event(|_: &Event| panic!("boom")));
    //! assert_eq!(notifier.instrument("x", Payload::new, |_| 1), 1, "the block's result is untouched");
    //! assert!(!notifier.listening("x"), "the failing subscription was removed");
    //! ```
    #[doc(inline)]
    pub use notify_base::{
        drop_panic_payload, panic_message, ExportDrops, FailurePolicy, SubscriberErrors, SubscriberFailure,
        SUBSCRIBER_FAILED,
    };
}

pub mod suppression {
    //! Telemetry suppression: marks a thread, or a scope on it, whose own logs and traces must not
    //! become notify events (OpenTelemetry's "telemetry suppressed" scope), so an exporter whose
    //! client library logs does not feed its own logs back to itself. The bridges
    //! (notify-tracing's) read the mark; notify's own `instrument` does not.
    //!
    //! One verb: [`suppress_telemetry`] for a scope (until its [`SuppressionGuard`] drops; scopes
    //! nest), [`suppress_telemetry_on_this_thread`] for the rest of a thread's life (an exporter's
    //! own threads: `tokio::runtime::Builder::on_thread_start(suppress_telemetry_on_this_thread)`),
    //! and [`is_telemetry_suppressed`] to ask.
    //!
    //! ```
    //! use notify_core::suppression::{is_telemetry_suppressed, suppress_telemetry};
    //! {
    //!     let _guard = suppress_telemetry();
    //!     assert!(is_telemetry_suppressed());
    //! }
    //! assert!(!is_telemetry_suppressed());
    //! ```
    #[doc(inline)]
    pub use notify_base::{
        is_telemetry_suppressed, suppress_telemetry, suppress_telemetry_on_this_thread, SuppressionGuard,
    };
}

pub mod export {
    //! For crates that hand events off to queues, workers and other systems: the one [`Overflow`]
    //! policy of a bounded queue (notify-pool's mailboxes, the export collector's queues), head
    //! sampling ([`Sampler`]: which traces exporters get; in-process subscribers get every event),
    //! and the recycling of the owned events an exporter is done with ([`recycle_all`]: they
    //! become the next events' allocations, so the instrumenting thread allocates nothing per
    //! owned event).
    //!
    //! The export collector itself (the hand-off from instrumenting threads, batching, tail
    //! sampling, drop accounting, flush and shutdown, the runtime of asynchronous sinks) is the
    //! crate `notify-export`, beside this one: the engine recycles events without knowing it.
    //!
    //! ```
    //! use notify_core::export::{Overflow, Sampler};
    //! use notify_core::Notifier;
    //!
    //! let notifier = Notifier::new();
    //! notifier.set_sampler(Sampler::ratio(0.1));
    //! assert_eq!(Overflow::default(), Overflow::DropNewest, "a full queue never blocks by default");
    //! ```
    #[doc(inline)]
    pub use notify_base::{recycle, recycle_all, MAX_SPARE_EVENTS, TAKE_AT_ONCE};
    #[doc(inline)]
    pub use notify_base::{Overflow, Sampler};
}

#[cfg(feature = "redaction")]
pub mod redaction {
    //! Redaction (feature `redaction`): a notifier's policy that replaces secrets in payloads once
    //! per event, before the first subscriber of any kind, for every way an event is made,
    //! imported or bridged. Build one with [`Redaction::builder`]
    //! ([`RedactionBuilder`]; an invalid pattern is a [`RedactionError`]) and set it with
    //! [`Notifier::set_redaction`](crate::Notifier::set_redaction); redacted values become
    //! [`FILTERED`] or a keyed hash. No policy, no cost.
    //!
    //! ```
    //! use notify_core::redaction::{Redaction, FILTERED};
    //! use notify_core::{Event, Notifier, Payload, Subscriber};
    //!
    //! let notifier = Notifier::new();
    //! notifier.set_redaction(Redaction::builder().key("password").build()?);
    //! notifier.subscribe("login.app", Subscriber::event(|e: &Event| {
    //!     assert_eq!(e.payload().get("password").and_then(|v| v.as_str()), Some(FILTERED));
    //! }));
    //! notifier.instrument("login.app", || Payload::new().with("password", "hunter2"), |_| ());
    //! # Ok::<(), notify_core::redaction::RedactionError>(())
    //! ```
    #[doc(inline)]
    pub use notify_base::{Redaction, RedactionBuilder, RedactionError, FILTERED, HEADER_KEY_PREFIXES};
}

// Under this crate's feature: code that uses it without the feature gets rustc's note "gated
// behind the `testing` feature" for notify-core.
#[cfg(feature = "testing")]
#[doc(inline)]
pub use notify_base::testing;

#[cfg(feature = "macros")]
// Its examples capture events with `testing`: without that feature they are not collected as
// doctests (`doctest` is set only while rustdoc collects them; the rendered docs always have them).
#[cfg_attr(any(not(doctest), feature = "testing"), doc = include_str!("instrument_event.md"))]
pub use notify_macros::instrument_event;

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
