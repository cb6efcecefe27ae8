//! Dispatch: the only code that calls subscriber callbacks (and the failure hook).
//!
//! One event in flight is an [`Active`]: what it captured at start (its listener set, clocks, ids)
//! and how it is delivered at finish. `instrument`, handles, callsites and the macro all go through
//! it; `publish` delivers through [`publish`]. Every callback runs under an unwinding guard (one
//! per delivery loop, [`each`]): a panic is caught, its payload dropped under a guard too, and the
//! failure handed to [`handle_failures`],
//! which applies the fanout's failure policy. Deliveries nested on one thread (a subscriber that
//! instruments) are counted by [`Nesting`]; past the fanout's limit an event is not delivered.

use std::any::Any;
use std::borrow::Cow;
use std::cell::Cell;
use std::mem;
use std::ops::Deref;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use smallvec::SmallVec;

use crate::alloc::thread_allocations;
use crate::calls::{CallEvented, CallSilenceable, Clocked, Phase};
use crate::cold_box::ColdBox;
use crate::context::EventContext;
use crate::event::{Event, Name, Outcome};
use crate::event_id::EventId;
use crate::failure::{
    drop_panic_payload, panic_message, report, FailurePolicy, Failures, SubscriberErrors, SubscriberFailure,
    SUBSCRIBER_FAILED,
};
use crate::fanout::Fanout;
use crate::fanout_end::FanoutScope;
use crate::ids;
use crate::location::Location;
use crate::payload::Payload;
use crate::record;
use crate::redaction::Pending;
use crate::registry::{Entry, Listener, Listeners, Lookup, Resolved};
use crate::subscriber::Kind;
use crate::trace_id::TraceId;
use crate::transaction_id::TransactionId;

/// The trace id of an event not started yet (never seen by a subscriber).
const UNSTARTED_TRACE: TraceId = match TraceId::new(1) {
    Some(id) => id,
    None => unreachable!(),
};

/// Calls `call` with the subscriber of each listener of `list` and `args`, in order, under one
/// unwinding guard for the whole loop: a subscriber that panics becomes a failure pushed onto
/// `failures`, and the loop resumes with the listener after it (see [`guarded_loop`]).
#[inline(always)]
pub(crate) fn each<T: ?Sized, A: Copy>(
    failures: &mut Failures,
    list: &[Listener<T>],
    event: &str,
    args: A,
    call: impl Fn(&T, A),
) {
    guarded_loop(
        failures,
        list.len(),
        event,
        |i| list.get(i).map(|l| call(&l.subscriber, args)),
        |i| &list[i].entry,
    );
}

/// As [`each`], for the listeners of `list` at `indices` (the unsilenced silenceable ones).
#[inline(always)]
fn each_at<T: ?Sized, A: Copy>(
    failures: &mut Failures,
    list: &[Listener<T>],
    indices: &[u32],
    event: &str,
    args: A,
    call: impl Fn(&T, A),
) {
    guarded_loop(
        failures,
        indices.len(),
        event,
        |i| indices.get(i).map(|&at| call(&list[at as usize].subscriber, args)),
        |i| &list[indices[i] as usize].entry,
    );
}

/// Calls per round of [`guarded_loop`]. Four was measured too (issue 15's seventh pass): no
/// clear gain over two on this machine's noise.
const ROUND: usize = 2;

/// The delivery loop of [`each`] and [`each_at`]: `call_at(i)` for `i` from 0 until it returns
/// `None` (`len` calls), under one `catch_unwind` for the whole loop, not one per callback. A
/// panic in call `i` becomes the failure of the listener `entry_of(i)`, and the loop resumes at
/// `i + 1`. The position is kept in a local inside the guarded frame (stored to `next` before each
/// call, for the resume), so the loop stays a few loads and the call per subscriber, [`ROUND`]
/// subscribers per round (issue 15; the measurement: docs/benchmarks.md).
#[inline(always)]
fn guarded_loop<'l>(
    failures: &mut Failures,
    len: usize,
    event: &str,
    call_at: impl Fn(usize) -> Option<()>,
    entry_of: impl Fn(usize) -> &'l Arc<Entry>,
) {
    let mut next = 0;
    while next < len {
        let rest = catch_unwind(AssertUnwindSafe(|| {
            let call_at = &call_at;
            let mut i = next;
            // `ROUND` calls per round (unrolled): one taken branch per round, not per call (each
            // call is already two, the call and its return).
            loop {
                for k in 0..ROUND {
                    next = i + k + 1;
                    if call_at(i + k).is_none() {
                        return;
                    }
                }
                i += ROUND;
            }
        }));
        match rest {
            Ok(()) => return,
            Err(payload) => failures.push(failure_of(entry_of(next - 1), event, payload)),
        }
    }
}

#[cold]
fn failure_of(entry: &Entry, event: &str, payload: Box<dyn Any + Send>) -> SubscriberFailure {
    let kind = entry.subscriber.kind();
    let failure = SubscriberFailure {
        subscription: entry.id,
        subscriber: entry
            .subscriber
            .label_cow()
            .cloned()
            .unwrap_or(Cow::Borrowed(kind.as_str())),
        kind,
        event: event.to_owned(),
        message: panic_message(&*payload),
        in_drop: false,
        drops: None,
    };
    drop_panic_payload(payload);
    failure
}

/// `silenced(name)` of one listener; a panic counts as "silenced" and is pushed onto `failures`.
fn silenced_reporting(failures: &mut Failures, listener: &Listener<dyn CallSilenceable>, name: &str) -> bool {
    match catch_unwind(AssertUnwindSafe(|| listener.subscriber.is_silenced(name))) {
        Ok(silenced) => silenced,
        Err(payload) => {
            failures.push(failure_of(&listener.entry, name, payload));
            true
        }
    }
}

/// The silence groups of `listeners` from the one at `at`, whose first member was heard (`panic`
/// `None`) or panicked in `silenced` (`panic`), the groups before it all silenced: what
/// [`Active::ask`] answers. The indices of the silenceable listeners that hear the event are kept
/// in subscription order with the failures (a `silenced` that panics is reported once and counts
/// as silenced; the other members of its group are then asked one by one); when nobody hears the
/// event, its failures are handled now.
#[inline(never)]
fn ask_from(
    fanout: &Fanout,
    listeners: &Listeners,
    name: &str,
    at: usize,
    panic: Option<Box<dyn Any + Send>>,
) -> Option<Answers> {
    let mut heard = SmallVec::new();
    let mut failures = Failures::new();
    let mut groups_heard = 0;
    // The first group heard, while its members are not copied into `heard` (until a second group
    // is heard or a `silenced` panics): alone, it is the answer, with nothing built.
    let mut only = None;
    let mut panic = panic;
    for (i, group) in listeners.silence_groups.iter().enumerate().skip(at) {
        let answer = if i == at {
            panic.take().map_or(Ok(false), Err)
        } else {
            catch_unwind(AssertUnwindSafe(|| group.ask.is_silenced(name)))
        };
        match answer {
            Ok(true) => {}
            Ok(false) => {
                if groups_heard == 0 && failures.is_empty() {
                    only = Some(i);
                } else {
                    copy_group(&mut heard, listeners, only.take());
                    heard.extend_from_slice(&group.members);
                }
                groups_heard += 1;
            }
            Err(payload) => {
                copy_group(&mut heard, listeners, only.take());
                let before = heard.len();
                ask_one_by_one(&mut failures, &mut heard, listeners, &group.members, name, payload);
                groups_heard += usize::from(heard.len() > before);
            }
        }
    }
    if let Some(group) = only {
        // One group heard, nothing panicked.
        return Some(Answers::Group(group as u32));
    }
    if groups_heard > 1 {
        // Deliver in subscription order, whatever the groups.
        heard.sort_unstable();
    }
    if heard.is_empty() && !listeners.has_unconditional() {
        if !failures.is_empty() {
            handle_failures(fanout, failures.take());
        }
        return None;
    }
    if heard.is_empty() && failures.is_empty() {
        return Some(Answers::none());
    }
    Some(Answers::Boxed(ColdBox::new(Heard {
        indices: heard,
        failures: failures.take(),
    })))
}

/// Copies the members of silence group `group` (when some) into `heard`.
fn copy_group(heard: &mut SmallVec<[u32; 4]>, listeners: &Listeners, group: Option<usize>) {
    if let Some(group) = group {
        heard.extend_from_slice(&listeners.silence_groups[group].members);
    }
}

/// The first of a silence group panicked in `silenced` (`payload`): that is its failure, and the
/// other `members` are asked one by one (the unsilenced ones pushed onto `heard`).
#[cold]
#[inline(never)]
fn ask_one_by_one(
    failures: &mut Failures,
    heard: &mut SmallVec<[u32; 4]>,
    listeners: &Listeners,
    members: &[u32],
    name: &str,
    payload: Box<dyn Any + Send>,
) {
    failures.push(failure_of(
        &listeners.silenceable[members[0] as usize].entry,
        name,
        payload,
    ));
    for &i in &members[1..] {
        if !silenced_reporting(failures, &listeners.silenceable[i as usize], name) {
            heard.push(i);
        }
    }
}

/// True when an event named `name` would reach a subscriber now (what `listening` answers):
/// somebody is found and not every one of them is a silenceable subscriber silenced now. A
/// `silenced` that panics counts as silenced, without a report: the report comes when an event is
/// instrumented. Never allocates.
pub(crate) fn listening(name: &str, found: Lookup<'_>) -> bool {
    match found {
        Lookup::Nobody => false,
        Lookup::Found(resolved) => {
            let listeners = &resolved.listeners;
            listeners.has_unconditional()
                || listeners.silence_groups.iter().any(|group| {
                    let mut members = group
                        .members
                        .iter()
                        .map(|&i| &*listeners.silenceable[i as usize].subscriber);
                    // The first answer decides for the group (a member that panics has none).
                    members.find_map(|s| silenced(s, name)) == Some(false)
                })
        }
        Lookup::Uncached(wide) => wide.matching(name).any(|e| match &e.subscriber.kind {
            Kind::Silenceable(s, ..) => silenced(&**s, name) == Some(false),
            _ => true,
        }),
    }
}

/// `silenced(name)` for `listening`: `None` when it panics (counted as silenced, not reported).
fn silenced(subscriber: &dyn CallSilenceable, name: &str) -> Option<bool> {
    match catch_unwind(AssertUnwindSafe(|| subscriber.is_silenced(name))) {
        Ok(silenced) => Some(silenced),
        Err(payload) => {
            drop_panic_payload(payload);
            None
        }
    }
}

thread_local! {
    /// Deliveries in progress on this thread: phases of events whose subscribers are being called.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// One delivery phase in progress on this thread (the `start` or the finish of one event, or a
/// publish): a subscriber that instruments from inside its callback nests one level deeper.
struct Nesting;

impl Nesting {
    #[inline]
    fn enter() -> Nesting {
        DEPTH.with(|depth| depth.set(depth.get() + 1));
        Nesting
    }

    /// False (and the event counted, the first one reported) when this thread is already
    /// `fanout.max_depth()` deliveries deep: the event of `name` is then not delivered.
    #[inline]
    fn allows(fanout: &Fanout, name: &str) -> bool {
        let depth = DEPTH.with(Cell::get);
        depth < fanout.max_depth() || Nesting::refuse(fanout, name, depth)
    }

    #[cold]
    #[inline(never)]
    fn refuse(fanout: &Fanout, name: &str, depth: u32) -> bool {
        if fanout.count_too_deep() {
            report(&format!(
                "event {name:?} not delivered: {depth} {} already nested on this thread (limit {}; \
                 a subscriber instruments from its callback?). Such events are counted \
                 (Notifier::undelivered_too_deep) and not reported again.",
                if depth == 1 { "delivery" } else { "deliveries" },
                fanout.max_depth()
            ));
        }
        false
    }
}

impl Drop for Nesting {
    #[inline]
    fn drop(&mut self) {
        DEPTH.with(|depth| depth.set(depth.get() - 1));
    }
}

/// An event between start and finish. Dropping it without `finish` delivers nothing.
///
/// `R` holds its listener set: an `Arc` for events that outlive the caller's frame (handles, the
/// macro's guard), a reference borrowed from the registry snapshot for `instrument`'s [`run`] (no
/// reference count touched: two atomic read-modify-writes fewer per event).
pub(crate) struct Active<R: Deref<Target = Resolved> = Arc<Resolved>> {
    resolved: R,
    /// Its ids (id 0 until `start`; ids are never 0) and monotonic times.
    context: EventContext,
    /// The thread that started the event (its transaction id).
    transaction_id: TransactionId,
    /// True when the event became its thread's current event at start.
    entered: bool,
    start_wall: Option<SystemTime>,
    cpu_start: Option<Duration>,
    allocations_start: Option<u64>,
    /// What the silenceable listeners answered at start.
    heard: Answers,
    /// The failures of this event's deliveries so far (those of `silenced` are in `heard`).
    failures: Failures,
    /// The notifier's redaction policy, captured here, and what it replaced so far.
    redaction: Pending,
    /// Whether the thread was already unwinding at `start`: then a drop guard finishing the event
    /// during that unwinding is not this event's panic (see [`Active::finish_on_drop`]).
    panicking_at_start: bool,
    /// The notifier's head-sampler threshold, for a local root (see `sampling.rs`).
    sample_below: u64,
}

/// The silenceable listeners that hear an event, and the failures of asking them.
struct Heard {
    /// Indices of the silenceable listeners that were not silenced at start, in order.
    indices: SmallVec<[u32; 4]>,
    /// The failures of `silenced` (a panic counts as silenced), reported with the event's others.
    failures: Vec<SubscriberFailure>,
}

/// What the silenceable listeners of an event answered.
///
/// * `None`: none was heard and none panicked, the common case (nothing built: carried as an
///   empty `SmallVec` and `Vec`, the answers were built in one place and copied twice on their way
///   into the event's frame, and each copy's 16-byte loads of 8-byte stores stalled on store
///   forwarding on every event);
/// * `Group(g)`: exactly the members of silence group `g` were heard and none panicked (one log
///   subscriber, or several of one level and target; the tracing bridge): the indices are that
///   group's, read from the listener set, so nothing is allocated (boxed, this answer cost a
///   `malloc` and a `free` per event, about 340 instructions);
/// * `Boxed`: anything else (several groups heard, a `silenced` that panicked), in a `ColdBox`
///   for its drop out of line; never empty.
enum Answers {
    None,
    Group(u32),
    Boxed(ColdBox<Heard>),
}

impl Answers {
    #[inline(always)]
    fn none() -> Answers {
        Answers::None
    }

    /// The indices of the silenceable listeners of `listeners` (the event's) that hear the event,
    /// in order.
    #[inline(always)]
    fn indices<'a>(&'a self, listeners: &'a Listeners) -> &'a [u32] {
        match self {
            Answers::None => &[],
            Answers::Group(g) => &listeners.silence_groups[*g as usize].members,
            Answers::Boxed(heard) => heard.get().map_or(&[], |heard| &heard.indices),
        }
    }

    /// True when some `silenced` panicked.
    #[inline(always)]
    fn has_failures(&self) -> bool {
        matches!(self, Answers::Boxed(heard) if heard.get().is_some_and(|heard| !heard.failures.is_empty()))
    }

    /// The failures of `silenced`, taken out.
    fn take_failures(&mut self) -> Vec<SubscriberFailure> {
        match self {
            Answers::Boxed(heard) => heard
                .get_mut()
                .map(|heard| mem::take(&mut heard.failures))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// Which half of one poll of an async event [`Active::each_evented`] delivers.
#[derive(Clone, Copy)]
enum Poll {
    Enter,
    Exit,
}

impl Poll {
    /// `enter` or `exit` of `subscriber` (evented or silenceable: generic, so no trait-object
    /// upcast).
    #[inline(always)]
    fn call<S: CallEvented + ?Sized>(self, subscriber: &S, name: &str, context: &EventContext) {
        match self {
            Poll::Enter => subscriber.enter_with(name, context),
            Poll::Exit => subscriber.exit_with(name, context),
        }
    }
}

/// What [`Active::measure`] read at finish.
#[derive(Default)]
struct Measured {
    cpu_time: Option<Duration>,
    allocations: Option<u64>,
}

fn thread_cpu_time() -> Option<Duration> {
    crate::cpu_clock::thread_cpu_time()
}

impl<R: Deref<Target = Resolved>> Active<R> {
    /// Asks the silenceable listeners; `None` when nobody would receive the event. A `silenced`
    /// that panics counts as silenced and is a failure of that subscriber (reported now when the
    /// event is dropped, else with the event's other failures at finish). `None` too when this
    /// thread is already the fanout's limit of deliveries deep (the event is counted).
    #[inline]
    pub(crate) fn prepare(fanout: &Fanout, resolved: R) -> Option<Active<R>> {
        let heard = Active::<R>::ask(fanout, &resolved)?;
        Some(Active::new(fanout, resolved, heard))
    }

    /// The first half of [`Active::prepare`]: whether the event is delivered (`None`: not), and
    /// what the silenceable listeners answered. Kept apart so that [`run`] builds the event where
    /// it stays, with [`Active::new`].
    #[inline(always)]
    fn ask(fanout: &Fanout, resolved: &Resolved) -> Option<Answers> {
        if !Nesting::allows(fanout, resolved.name_str()) {
            return None;
        }
        let listeners = &resolved.listeners;
        let groups = &listeners.silence_groups;
        if groups.is_empty() {
            return Some(Answers::none());
        }
        let name = resolved.name_str();
        let _nesting = Nesting::enter();
        // The groups in order under one unwinding guard, until one is heard or panics: when
        // every group is silenced (the common case) that is all, with nothing built.
        let mut at = 0;
        let asked = catch_unwind(AssertUnwindSafe(|| {
            while at < groups.len() && groups[at].ask.is_silenced(name) {
                at += 1;
            }
        }));
        if at < groups.len() {
            ask_from(fanout, listeners, name, at, asked.err())
        } else if listeners.has_unconditional() {
            Some(Answers::none())
        } else {
            None
        }
    }

    /// An unstarted event of `resolved` whose silenceable listeners answered `heard`.
    #[inline(always)]
    fn new(fanout: &Fanout, resolved: R, heard: Answers) -> Active<R> {
        Active {
            resolved,
            context: EventContext::new(EventId(0), None, UNSTARTED_TRACE),
            transaction_id: TransactionId(0),
            entered: false,
            start_wall: None,
            cpu_start: None,
            allocations_start: None,
            heard,
            failures: Failures::new(),
            redaction: Pending::new(fanout.redaction()),
            panicking_at_start: false,
            sample_below: fanout.sample_below(),
        }
    }

    /// Indices of the silenceable listeners that hear the event.
    #[inline(always)]
    fn heard(&self) -> &[u32] {
        self.heard.indices(&self.resolved.listeners)
    }

    /// True when some listener receives the event's phases (`start`, `finish`, `enter`, `exit`):
    /// an evented one, or a silenceable one that was not silenced.
    #[inline(always)]
    fn hears_phases(&self) -> bool {
        !self.resolved.listeners.evented.is_empty() || !self.heard().is_empty()
    }

    /// The event id; 0 until `start` (ids are never 0).
    pub(crate) fn id(&self) -> EventId {
        self.context.id
    }

    /// Sets where the event is instrumented (a callsite's location).
    #[inline]
    pub(crate) fn set_location(&mut self, location: Option<&'static Location>) {
        self.context.location = location;
    }

    /// The event's ids (meaningful once started).
    pub(crate) fn context(&self) -> &EventContext {
        &self.context
    }

    /// True once `start` ran.
    pub(crate) fn is_started(&self) -> bool {
        self.context.id.0 != 0
    }

    /// Starts the event: ids (under `parent` when given, else the thread's current context),
    /// evented `start` calls, then the clocks (so the event measures the block, not its `start`
    /// subscribers). With `enter`, the event becomes this thread's current event until `finish`.
    #[inline]
    pub(crate) fn start(&mut self, payload: &mut Payload, enter: bool, parent: Option<ids::Frame>) {
        let begun = match parent {
            None => ids::begin(enter, self.sample_below),
            Some(parent) => ids::begin_in(parent, enter, self.sample_below),
        };
        self.context.id = begun.id;
        self.context.parent_id = begun.parent;
        self.context.trace_id = begun.trace;
        self.context.sampled = begun.sampled;
        self.context.parent_remote = begun.parent_remote;
        self.transaction_id = begun.transaction;
        self.entered = enter;
        let resolved = &*self.resolved;
        let name = resolved.name_str();
        let listeners = &resolved.listeners;
        if self.hears_phases() {
            self.redaction.apply(payload);
            let _nesting = Nesting::enter();
            let args = &Phase {
                name,
                context: &self.context,
                payload,
            };
            each(&mut self.failures, &listeners.evented, name, args, |s, args| {
                s.start_with(args)
            });
            each_at(
                &mut self.failures,
                &listeners.silenceable,
                self.heard.indices(&self.resolved.listeners),
                name,
                args,
                |s, args| s.start_with(args),
            );
        }
        if listeners.phases_only {
            // No clock, no event object (see `Listeners::phases_only`).
            return;
        }
        let needs_event = !listeners.event.is_empty() || !listeners.owned.is_empty();
        if needs_event && listeners.options.cpu_time {
            self.cpu_start = thread_cpu_time();
        }
        if needs_event && listeners.options.allocations {
            self.allocations_start = thread_allocations();
        }
        if !listeners.timed.is_empty() {
            self.start_wall = Some(SystemTime::now());
        }
        if needs_event || !listeners.monotonic.is_empty() || listeners.evented_duration {
            self.context.start = Some(Instant::now());
        }
    }

    /// Makes the started event this thread's current event (one poll of an async event) and calls
    /// the evented `enter`s; [`Active::exit`] undoes it.
    pub(crate) fn enter(&self, fanout: &Fanout) {
        ids::enter(self.context.id, self.context.trace_id, self.context.sampled);
        self.each_evented(fanout, Poll::Enter);
    }

    /// The evented `exit`s, then the event stops being current on this thread.
    pub(crate) fn exit(&self, fanout: &Fanout) {
        self.each_evented(fanout, Poll::Exit);
        ids::leave(self.context.id.0);
    }

    /// Calls `enter` or `exit` (`poll`) of the evented and unsilenced silenceable listeners;
    /// failures are handled at once.
    fn each_evented(&self, fanout: &Fanout, poll: Poll) {
        if !self.hears_phases() {
            return;
        }
        let resolved = &*self.resolved;
        let listeners = &resolved.listeners;
        let name = resolved.name_str();
        let mut failures = Failures::new();
        let _nesting = Nesting::enter();
        let args = (name, &self.context);
        each(&mut failures, &listeners.evented, name, args, |s, (n, c)| {
            poll.call(s, n, c)
        });
        each_at(
            &mut failures,
            &listeners.silenceable,
            self.heard(),
            name,
            args,
            |s, (n, c)| poll.call(s, n, c),
        );
        if !failures.is_empty() {
            handle_failures(fanout, failures.take());
        }
    }

    /// Finishes the event and delivers it to the listener set captured at start, borrowing the
    /// payload: it is moved out (left empty) only when an
    /// event object is built, so the synchronous kinds cost no ~260-byte payload moves. Called at
    /// most once per event.
    #[inline(always)]
    pub(crate) fn finish_in_place(&mut self, fanout: &Fanout, payload: &mut Payload, outcome: Outcome) {
        if self.resolved.listeners.phases_only {
            self.finish_phases(fanout, payload, outcome);
        } else {
            self.finish_clocked(fanout, payload, outcome);
        }
    }

    /// [`Active::finish_in_place`] in general: clocks, measures, every group. Its own function,
    /// so that the check of [`Listeners::phases_only`] in front costs the other kinds one test
    /// (inside it, it cost `timed` 13 instructions of register shuffling).
    #[inline(never)]
    fn finish_clocked(&mut self, fanout: &Fanout, payload: &mut Payload, outcome: Outcome) {
        let end = self.context.start.map(|_| Instant::now());
        self.context.end = end;
        self.context.outcome = outcome;
        let end_wall = self.start_wall.map(|_| SystemTime::now());
        let measured = if self.cpu_start.is_some() || self.allocations_start.is_some() {
            self.measure()
        } else {
            Measured::default()
        };
        if self.entered {
            self.context.finished_on_another_thread = !ids::leave(self.context.id.0);
        }
        record::take_into(self.context.id.0, payload);
        self.redaction.apply(payload);
        let hears_phases = self.hears_phases();
        let resolved = &*self.resolved;
        let name = resolved.name_str();
        let listeners = &resolved.listeners;
        let _nesting = Nesting::enter();
        let failures = &mut self.failures;
        deliver_clocked(
            failures,
            name,
            listeners,
            self.start_wall.zip(end_wall),
            self.context.start.zip(end),
            self.transaction_id,
            payload,
        );
        let context = &self.context;
        if hears_phases {
            let args = &Phase { name, context, payload };
            each(failures, &listeners.evented, name, args, |s, args| s.finish_with(args));
            each_at(
                failures,
                &listeners.silenceable,
                self.heard.indices(&self.resolved.listeners),
                name,
                args,
                |s, args| s.finish_with(args),
            );
        }
        if context.start.is_some() && (!listeners.event.is_empty() || !listeners.owned.is_empty()) {
            self.deliver_event(payload, measured, outcome);
        }
        if !self.failures.is_empty() || self.heard.has_failures() {
            handle_failures(fanout, self.take_failures());
        }
    }

    /// [`Active::finish_in_place`] of an event whose listeners are evented and silenceable ones
    /// only, without duration ([`Listeners::phases_only`]): no clock was read at start and no
    /// event object is built, so of the finish only the `finish` calls are left (with the same
    /// test in `start`: evented 644 -> 598 instructions per event, a few taken branches fewer).
    #[inline(never)]
    fn finish_phases(&mut self, fanout: &Fanout, payload: &mut Payload, outcome: Outcome) {
        debug_assert!(self.context.start.is_none() && self.start_wall.is_none());
        self.context.end = None;
        self.context.outcome = outcome;
        if self.entered {
            self.context.finished_on_another_thread = !ids::leave(self.context.id.0);
        }
        record::take_into(self.context.id.0, payload);
        self.redaction.apply(payload);
        if self.hears_phases() {
            let resolved = &*self.resolved;
            let name = resolved.name_str();
            let listeners = &resolved.listeners;
            let _nesting = Nesting::enter();
            let failures = &mut self.failures;
            let args = &Phase {
                name,
                context: &self.context,
                payload,
            };
            each(failures, &listeners.evented, name, args, |s, args| s.finish_with(args));
            each_at(
                failures,
                &listeners.silenceable,
                self.heard.indices(&self.resolved.listeners),
                name,
                args,
                |s, args| s.finish_with(args),
            );
        }
        if !self.failures.is_empty() || self.heard.has_failures() {
            handle_failures(fanout, self.take_failures());
        }
    }

    /// Drops an event that was never started (its `payload()` closure panicked): nothing is
    /// delivered, and the failures of its silenceable listeners' `silenced`, asked before, are
    /// reported now.
    #[cold]
    #[inline(never)]
    pub(crate) fn abandon(&mut self, fanout: &Fanout) {
        debug_assert!(!self.is_started());
        if self.heard.has_failures() {
            handle_failures(fanout, self.take_failures());
        }
    }

    /// Drops the event in place, field by field: each field's drop is an inline test (the
    /// compiler's drop glue of the whole `Active` stayed an out-of-line call of 16 instructions,
    /// once per event of `instrument`). The destructuring names every field, so a new one does not
    /// compile until it is dropped here too.
    ///
    /// # Safety
    ///
    /// As [`std::ptr::drop_in_place`]: called once, and `self` is not used afterwards.
    #[inline(always)]
    unsafe fn drop_by_fields(&mut self) {
        let Active {
            resolved,
            context: _,
            transaction_id: _,
            entered: _,
            start_wall: _,
            cpu_start: _,
            allocations_start: _,
            heard,
            failures,
            redaction,
            panicking_at_start: _,
            sample_below: _,
        } = self;
        const _: () = assert!(!mem::needs_drop::<EventContext>() && !mem::needs_drop::<Option<SystemTime>>());
        // SAFETY: the caller's obligation (one drop, no use after); the fields not dropped here
        // need no drop (checked above, or plain integers and booleans).
        unsafe {
            std::ptr::drop_in_place(resolved);
            std::ptr::drop_in_place(heard);
            std::ptr::drop_in_place(failures);
            std::ptr::drop_in_place(redaction);
        }
    }

    /// The event's failures, taken out in run order: those of `silenced` first.
    #[cold]
    #[inline(never)]
    fn take_failures(&mut self) -> Vec<SubscriberFailure> {
        let mut failures = self.heard.take_failures();
        failures.append(&mut self.failures.take());
        failures
    }

    /// The CPU time and allocations of the event, when measured and finished on the thread it
    /// started on: both are per-thread counters, so an event finished elsewhere (a handle sent
    /// away, an async fn resumed on another thread) has neither.
    #[cold]
    #[inline(never)]
    fn measure(&self) -> Measured {
        if ids::transaction_id() != self.transaction_id {
            return Measured::default();
        }
        let cpu_end = self.cpu_start.and_then(|_| thread_cpu_time());
        let allocations_end = self.allocations_start.and_then(|_| thread_allocations());
        Measured {
            cpu_time: self.cpu_start.zip(cpu_end).map(|(a, b)| b.saturating_sub(a)),
            allocations: self
                .allocations_start
                .zip(allocations_end)
                .map(|(a, b)| b.saturating_sub(a)),
        }
    }

    /// Builds the event object and delivers it to the event-object and owned groups (kept out of
    /// `finish_in_place`, so the kinds that need no event object do not pay for its frame).
    #[inline(never)]
    fn deliver_event(&mut self, payload: &mut Payload, measured: Measured, outcome: Outcome) {
        let resolved = &*self.resolved;
        let context = &self.context;
        let (Some(start), Some(end)) = (context.start, context.end) else {
            return;
        };
        if !resolved.listeners.owned.is_empty() {
            // An allocation an exporter gave back (`recycle`): filled in place, field by
            // field (the destructuring names every field, so a new one does not compile until it
            // is set here too), the payload swapped with the emptied one. No allocation, and no
            // copy of a whole event (issue 38).
            if let Some(mut spare) = crate::recycle::spare_event() {
                if let Some(event) = Arc::get_mut(&mut spare) {
                    let Event {
                        name,
                        start: event_start,
                        end: event_end,
                        transaction_id,
                        id,
                        parent_id,
                        trace_id,
                        payload: event_payload,
                        cpu_time,
                        allocations,
                        outcome: event_outcome,
                        location,
                        sampled,
                        parent_remote,
                        trace_state,
                        baggage,
                    } = event;
                    if !name.is(resolved.name()) {
                        *name = resolved.name().clone();
                    }
                    *event_start = start;
                    *event_end = end;
                    *transaction_id = self.transaction_id;
                    *id = context.id;
                    *parent_id = context.parent_id;
                    *trace_id = context.trace_id;
                    event_payload.fill_from(payload);
                    *cpu_time = measured.cpu_time;
                    *allocations = measured.allocations;
                    *event_outcome = outcome;
                    *location = context.location;
                    *sampled = context.sampled;
                    *parent_remote = context.parent_remote;
                    (*trace_state, *baggage) = crate::propagated::captured_by_event(context.trace_id);
                    deliver_shared(&mut self.failures, resolved, &spare);
                    return;
                }
            }
            // Owned listeners: the event is built where it will live, in its `Arc`, with the
            // payload moved in once (no event on this frame moved into a callee, then into the
            // `Arc`, and no three-way payload swap): issue 38, the owned event of exporters.
            let (trace_state, baggage) = crate::propagated::captured_by_event(context.trace_id);
            let shared = Arc::new(Event {
                name: resolved.name().clone(),
                start,
                end,
                transaction_id: self.transaction_id,
                id: context.id,
                parent_id: context.parent_id,
                trace_id: context.trace_id,
                payload: mem::take(payload),
                cpu_time: measured.cpu_time,
                allocations: measured.allocations,
                outcome,
                location: context.location,
                sampled: context.sampled,
                parent_remote: context.parent_remote,
                trace_state,
                baggage,
            });
            deliver_shared(&mut self.failures, resolved, &shared);
            return;
        }
        // SAFETY: without owned listeners the event lives in this frame only (its
        // subscribers borrow it; a clone owns its name), and `resolved` outlives the frame.
        let name = unsafe { Name::lend(resolved.name()) };
        let (trace_state, baggage) = crate::propagated::captured_by_event(context.trace_id);
        let mut event = Event {
            name,
            start,
            end,
            transaction_id: self.transaction_id,
            id: context.id,
            parent_id: context.parent_id,
            trace_id: context.trace_id,
            payload: Payload::default(),
            cpu_time: measured.cpu_time,
            allocations: measured.allocations,
            outcome,
            location: context.location,
            sampled: context.sampled,
            parent_remote: context.parent_remote,
            trace_state,
            baggage,
        };
        // Swapped in where the event is built: one pass over the payload, no temporary; none at
        // all for an empty payload (the event's is already one).
        if !payload.is_trivially_droppable() {
            mem::swap(&mut event.payload, payload);
        }
        deliver_event(&mut self.failures, resolved, event);
    }

    /// Remembers whether the thread is unwinding now, at `start`, for [`Active::finish_on_drop`]:
    /// what a guard that may be dropped while its thread unwinds for another reason (a
    /// [`Handle`](crate::Handle), the macro's guard) calls right after `start`. `instrument`'s
    /// guard needs no such note (see [`FinishOnDrop`]).
    #[inline]
    pub(crate) fn note_unwinding_at_start(&mut self) {
        self.panicking_at_start = std::thread::panicking();
    }

    /// The one finish of a drop guard (a [`Handle`](crate::Handle)'s, the macro's): the event ends
    /// as [`Outcome::Panicked`] when the thread is unwinding and was not already unwinding at
    /// `start` (as [`Active::note_unwinding_at_start`] saw it), else as `otherwise`. Call only on
    /// a started event.
    pub(crate) fn finish_on_drop(&mut self, fanout: &Fanout, payload: &mut Payload, otherwise: Outcome) {
        let outcome = if std::thread::panicking() && !self.panicking_at_start {
            Outcome::Panicked
        } else {
            otherwise
        };
        self.finish_in_place(fanout, payload, outcome);
    }
}

/// Delivers to the timed group (wall-clock edges, when read) and the monotonic group (monotonic
/// edges, when read): the one loop of `finish` and `publish`.
#[inline(always)]
fn deliver_clocked(
    failures: &mut Failures,
    name: &str,
    listeners: &Listeners,
    wall: Option<(SystemTime, SystemTime)>,
    monotonic: Option<(Instant, Instant)>,
    transaction_id: TransactionId,
    payload: &Payload,
) {
    if let Some(edges) = wall {
        let args = &Clocked::new(name, edges, transaction_id, payload);
        each(failures, &listeners.timed, name, args, |s, args| s.call_clocked(args));
    }
    if let Some(edges) = monotonic {
        let args = &Clocked::new(name, edges, transaction_id, payload);
        each(failures, &listeners.monotonic, name, args, |s, args| {
            s.call_clocked(args)
        });
    }
}

/// Delivers an event timed by the caller (`Notifier::publish`, `publish_event`) to the timed,
/// monotonic, event-object and owned groups of `resolved`: `wall` are the wall-clock edges as
/// given (`None`: the event's own, derived only when a timed subscriber listens), the event's own
/// are the monotonic ones. The fanout's redaction policy applies first.
#[inline]
pub(crate) fn publish(fanout: &Fanout, resolved: &Resolved, wall: Option<(SystemTime, SystemTime)>, mut event: Event) {
    publish_in_place(fanout, resolved, wall, &mut event);
}

/// [`publish`] of an event the caller keeps (`Notifier::publish_events`: it stays in the
/// caller's vector): delivered by reference, and moved into an `Arc` only when owned subscribers
/// listen (`event` is then left a shell: no payload, an empty name). An `Event` is about 500
/// bytes: each move of one is a copy.
#[inline]
pub(crate) fn publish_in_place(
    fanout: &Fanout,
    resolved: &Resolved,
    wall: Option<(SystemTime, SystemTime)>,
    event: &mut Event,
) {
    if !Nesting::allows(fanout, resolved.name_str()) {
        return;
    }
    if let Some(policy) = fanout.redaction() {
        policy.redact(&mut event.payload);
    }
    let _nesting = Nesting::enter();
    let mut failures = Failures::new();
    let (listeners, name) = (&resolved.listeners, resolved.name_str());
    deliver_clocked(
        &mut failures,
        name,
        listeners,
        match wall {
            None if !listeners.timed.is_empty() => Some((event.start_time(), event.end_time())),
            wall => wall,
        },
        Some((event.start, event.end)),
        event.transaction_id,
        &event.payload,
    );
    each(&mut failures, &listeners.evented, name, &*event, |s, e| {
        s.publish_with(e)
    });
    // Asked one by one (no silence groups here: a published event is rare); a panic in
    // `silenced` is that listener's failure, as in `instrument`.
    each(&mut failures, &listeners.silenceable, name, &*event, |s, e| {
        if !s.is_silenced(name) {
            s.publish_with(e);
        }
    });
    each(&mut failures, &listeners.event, name, &*event, |s, e| s.call(e));
    if !listeners.owned.is_empty() {
        deliver_owned(&mut failures, resolved, &Arc::new(event.take()));
    }
    if !failures.is_empty() {
        handle_failures(fanout, failures.take());
    }
}

/// Applies the fanout's failure policy to the failures of one event, in run order: the hook is
/// called once per failure and they are counted (`FailureSink::report`: a panic in the hook, and
/// in the drop of its clone, is caught and its payload dropped under a guard), then
/// [`FailurePolicy::Detach`] removes the subscriptions and publishes [`SUBSCRIBER_FAILED`], and
/// [`FailurePolicy::Strict`] panics with a [`SubscriberErrors`] (unless already unwinding).
#[cold]
pub(crate) fn handle_failures(fanout: &Fanout, failures: Vec<SubscriberFailure>) {
    fanout.failure_sink().report(&failures);
    match fanout.policy() {
        FailurePolicy::Report => {}
        FailurePolicy::Detach => {
            for failure in &failures {
                if fanout.unsubscribe_id(failure.subscription).is_ok() {
                    let payload = Payload::new()
                        .with("subscription", failure.subscription.get())
                        .with("subscriber", failure.subscriber.clone())
                        .with("event", failure.event.clone())
                        .with("message", failure.message.clone());
                    if let Some(resolved) = fanout.lookup(SUBSCRIBER_FAILED) {
                        run(fanout, resolved, None, None, || payload, |_| ());
                    }
                }
            }
        }
        FailurePolicy::Strict => {
            if !std::thread::panicking() {
                let errors = SubscriberErrors { failures };
                // The panic hook prints only string payloads: say what failed first, so a
                // failing test shows the list, not `Box<dyn Any>`.
                eprintln!("notify: FailurePolicy::Strict: {errors}");
                std::panic::panic_any(errors);
            }
        }
    }
}

/// Delivers a built event to the event-object and owned groups of `resolved`. Inlined where the
/// event is built: the event-object subscribers borrow it there (no move of the ~500-byte event
/// into a callee), it moves into an `Arc` only for owned listeners, and an event whose payload
/// holds nothing is dropped inline (its name only).
#[inline(always)]
pub(crate) fn deliver_event(failures: &mut Failures, resolved: &Resolved, event: Event) {
    let listeners = &resolved.listeners;
    let name = resolved.name_str();
    each(failures, &listeners.event, name, &event, |s, e| s.call(e));
    if !listeners.owned.is_empty() {
        deliver_owned(failures, resolved, &Arc::new(event));
    } else if event.payload.owns_nothing() {
        let Event { name, payload, .. } = event;
        mem::forget(payload);
        drop(name);
    } else {
        drop(event);
    }
}

/// Delivers an event already shared (built in its `Arc`) to the event-object group, then the owned
/// group, of `resolved`.
#[inline(never)]
fn deliver_shared(failures: &mut Failures, resolved: &Resolved, shared: &Arc<Event>) {
    each(
        failures,
        &resolved.listeners.event,
        resolved.name_str(),
        &**shared,
        |s, e| s.call(e),
    );
    deliver_owned(failures, resolved, shared);
}

/// Delivers a shared event to the owned group of `resolved`.
#[inline(never)]
fn deliver_owned(failures: &mut Failures, resolved: &Resolved, shared: &Arc<Event>) {
    debug_assert!(
        !matches!(shared.name, Name::Lent(_)),
        "an event that outlives its delivery owns its name"
    );
    let name = resolved.name_str();
    // Owned subscribers may defer work to the end of this loop (`defer_to_fanout_end`).
    let _scope = FanoutScope::enter();
    each(failures, &resolved.listeners.owned, name, shared, |s, e| s.deliver(e));
}

/// A payload whose drop is skipped, inline, when it holds nothing (no entries, nothing
/// allocated): the common empty payload then costs no out-of-line drop call.
pub(crate) struct CheapDrop(mem::ManuallyDrop<Payload>);

impl CheapDrop {
    #[inline(always)]
    pub(crate) fn new(payload: Payload) -> CheapDrop {
        CheapDrop(mem::ManuallyDrop::new(payload))
    }
}

impl std::ops::Deref for CheapDrop {
    type Target = Payload;

    #[inline(always)]
    fn deref(&self) -> &Payload {
        &self.0
    }
}

impl std::ops::DerefMut for CheapDrop {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Payload {
        &mut self.0
    }
}

impl Drop for CheapDrop {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.0.is_trivially_droppable() {
            drop_owning(&mut self.0);
        }
    }
}

/// The drop of a `CheapDrop`'s non-empty payload: nothing when it owns nothing (forgetting it is
/// dropping it), else the payload's drop. Out of line: the unlistened paths' scratch payload is
/// empty, and their inline check stays two tests.
#[inline(never)]
fn drop_owning(payload: &mut mem::ManuallyDrop<Payload>) {
    if !payload.owns_nothing() {
        // SAFETY: the only drop of the payload (`CheapDrop::drop`); it is not used afterwards.
        unsafe { mem::ManuallyDrop::drop(payload) }
    }
}

/// Runs `body` with an empty scratch payload, for when nobody listens. The scratch is built with
/// `Default` (the `const` constructor compiles to a memset of the whole ~260-byte payload) and
/// dropped only when `body` put something in it, so the common case costs no call at all.
#[inline(always)]
pub(crate) fn unlistened<T>(body: impl FnOnce(&mut Payload) -> T) -> T {
    let mut scratch = CheapDrop::new(Payload::default());
    body(&mut scratch)
}

/// Runs `body` as one event of `resolved`, under `parent` when given (else the thread's current
/// context): the engine of `instrument`.
#[inline]
pub(crate) fn run<T, R: Deref<Target = Resolved>>(
    fanout: &Fanout,
    resolved: R,
    parent: Option<ids::Frame>,
    location: Option<&'static Location>,
    payload: impl FnOnce() -> Payload,
    body: impl FnOnce(&mut Payload) -> T,
) -> T {
    let listeners = &resolved.listeners;
    if listeners.phases_only && listeners.silence_groups.is_empty() && !fanout.is_redacting() {
        return run_evented(fanout, &resolved, parent, location, payload, body);
    }
    let Some(heard) = Active::<R>::ask(fanout, &resolved) else {
        return unlistened(body);
    };
    // The event is built where it stays, in the guard: built apart and moved in, its fields were
    // copied with 16-byte loads of the 8-byte stores just made, each stalling on store
    // forwarding.
    let mut guard = FinishOnDrop {
        fanout,
        active: mem::ManuallyDrop::new(Active::new(fanout, resolved, heard)),
        payload: CheapDrop::new(Payload::default()),
        finished: false,
    };
    guard.active.set_location(location);
    // Built where it stays: `payload()`'s result is written over the empty payload (which owns
    // nothing, so it is forgotten, not dropped) instead of moved in with the guard.
    mem::forget(mem::replace(&mut *guard.payload, payload()));
    guard.active.start(&mut guard.payload, true, parent);
    let value = body(&mut guard.payload);
    guard.finish(Outcome::Completed);
    // SAFETY: the guard is finished and forgotten right after: no other drop of its fields.
    unsafe { guard.release() };
    mem::forget(guard);
    value
}

/// [`run`] for an event whose listeners are all evented (no silenceable one, none that asked for
/// its duration: [`Listeners::phases_only`] without silence groups) on a notifier without a
/// redaction policy: the same calls, ids, nesting limit, recorded values and failure handling as
/// through [`Active`], without building one (its fields for clocks, silenced answers, redaction
/// and measurements are not needed here). Evented, callgrind, `benches/examples/hotpath.rs`: 589 -> 530
/// instructions per event with 10 subscribers, 433 -> 374 with one. Out of line on purpose:
/// inlined into [`run`], the caller's `payload` closure had two call sites there, was no longer
/// inlined into either, and its payload came back through a copy (`payload_3_keys`, a timed
/// event, 749 -> 828 instructions); out of line, each function calls it once.
#[inline(never)]
fn run_evented<T>(
    fanout: &Fanout,
    resolved: &Resolved,
    parent: Option<ids::Frame>,
    location: Option<&'static Location>,
    payload: impl FnOnce() -> Payload,
    body: impl FnOnce(&mut Payload) -> T,
) -> T {
    let name = resolved.name_str();
    if !Nesting::allows(fanout, name) {
        return unlistened(body);
    }
    // Before the ids: a `payload()` that unwinds leaves nothing started (no frame pushed).
    let payload = CheapDrop::new(payload());
    let sample_below = fanout.sample_below();
    let begun = match parent {
        None => ids::begin(true, sample_below),
        Some(parent) => ids::begin_in(parent, true, sample_below),
    };
    let mut context = EventContext::new(begun.id, begun.parent, begun.trace);
    context.sampled = begun.sampled;
    context.parent_remote = begun.parent_remote;
    context.location = location;
    let mut event = EventedOnly {
        fanout,
        listeners: &resolved.listeners,
        name,
        context,
        payload,
        failures: Failures::new(),
        finished: false,
    };
    event.deliver(|s, args| s.start_with(args));
    let value = body(&mut event.payload);
    event.finish(Outcome::Completed);
    // SAFETY: the event is finished and forgotten right after: no other drop of its fields.
    unsafe { event.release() };
    mem::forget(event);
    value
}

/// The started event of [`run_evented`]; finished as panicked when dropped unfinished (its body
/// unwound).
struct EventedOnly<'a> {
    fanout: &'a Fanout,
    listeners: &'a Listeners,
    name: &'a str,
    context: EventContext,
    payload: CheapDrop,
    failures: Failures,
    finished: bool,
}

impl EventedOnly<'_> {
    /// One edge's calls (`start_with` or `finish_with`) of every evented listener, in order.
    #[inline(always)]
    fn deliver(&mut self, call: impl Fn(&dyn CallEvented, &Phase<'_>)) {
        let _nesting = Nesting::enter();
        let args = &Phase {
            name: self.name,
            context: &self.context,
            payload: &self.payload,
        };
        each(&mut self.failures, &self.listeners.evented, self.name, args, call);
    }

    /// As [`Active::finish_phases`]: the thread's frame removed, recorded values taken into the
    /// payload, the `finish` calls, then the failures of the event's calls handled.
    #[inline(always)]
    fn finish(&mut self, outcome: Outcome) {
        self.finished = true;
        self.context.outcome = outcome;
        self.context.finished_on_another_thread = !ids::leave(self.context.id.0);
        record::take_into(self.context.id.0, &mut self.payload);
        self.deliver(|s, args| s.finish_with(args));
        if !self.failures.is_empty() {
            handle_failures(self.fanout, self.failures.take());
        }
    }
}

impl EventedOnly<'_> {
    /// Drops the finished event's fields inline: its drop glue (the `Drop` below and the fields')
    /// stayed an out-of-line call of 15 instructions per event.
    ///
    /// # Safety
    ///
    /// Called once, on a finished event that is forgotten right after (`mem::forget`), never
    /// dropped or used again.
    #[inline(always)]
    unsafe fn release(&mut self) {
        debug_assert!(self.finished);
        // SAFETY: the caller's obligation: the one drop of each field that needs one (the others
        // are references, plain data and `EventContext`, which needs none), none used after.
        unsafe {
            std::ptr::drop_in_place(&mut self.payload);
            std::ptr::drop_in_place(&mut self.failures);
        }
    }
}

impl Drop for EventedOnly<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.finished {
            self.unwound();
        }
    }
}

impl EventedOnly<'_> {
    /// The drop of an event whose body unwound: finished as panicked (the panic goes on).
    #[cold]
    #[inline(never)]
    fn unwound(&mut self) {
        self.finish(Outcome::Panicked);
    }
}

/// Finishes the event as panicked if the body unwinds, and drops it undelivered if `payload()`
/// unwinds before it started. Dropped unfinished only by unwinding from one of the two: if the
/// thread was already unwinding when `run` was called, a panic in either aborts the process, so
/// no note of `std::thread::panicking()` at start is needed (one thread-local read fewer per
/// event than a [`Handle`](crate::Handle)'s).
struct FinishOnDrop<'a, R: Deref<Target = Resolved>> {
    fanout: &'a Fanout,
    /// Dropped by [`Active::drop_by_fields`], inline.
    active: mem::ManuallyDrop<Active<R>>,
    payload: CheapDrop,
    finished: bool,
}

impl<R: Deref<Target = Resolved>> FinishOnDrop<'_, R> {
    fn finish(&mut self, outcome: Outcome) {
        if !self.finished {
            self.finished = true;
            self.active.finish_in_place(self.fanout, &mut self.payload, outcome);
        }
    }

    /// Drops the finished guard's fields inline: its drop glue (the `Drop` below and the
    /// payload's) stayed an out-of-line call of 17 instructions per event.
    ///
    /// # Safety
    ///
    /// The guard is forgotten right after (`mem::forget`), never dropped or used again.
    #[inline(always)]
    unsafe fn release(&mut self) {
        debug_assert!(self.finished);
        // SAFETY: the caller forgets the guard, so these are the one drop of each field that
        // needs one (`fanout` and `finished` need none), and neither is used after.
        unsafe {
            self.active.drop_by_fields();
        }
        if !self.payload.is_trivially_droppable() {
            drop_owning(&mut self.payload.0);
        }
    }

    /// The drop of a guard whose `payload()` or body unwound.
    #[cold]
    #[inline(never)]
    fn unwound(&mut self) {
        self.finished = true;
        if self.active.is_started() {
            self.active
                .finish_in_place(self.fanout, &mut self.payload, Outcome::Panicked);
        } else {
            self.active.abandon(self.fanout);
        }
    }
}

impl<R: Deref<Target = Resolved>> Drop for FinishOnDrop<'_, R> {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.finished {
            self.unwound();
        }
        // SAFETY: the one drop of `active`, which is not used afterwards.
        unsafe { self.active.drop_by_fields() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Notifier, Subscriber};
    use std::sync::Mutex;

    /// The event object of a synchronous delivery lends its listener set's name; a clone made by
    /// a subscriber owns it and outlives the subscription, the notifier and the name's text.
    #[test]
    fn an_event_object_cloned_by_its_subscriber_owns_its_name() {
        fn send_sync<T: Send + Sync>(_: &T) {}
        let kept = Arc::new(Mutex::new(Vec::<Event>::new()));
        let notifier = Notifier::new();
        let name = String::from("lent.name");
        let sink = kept.clone();
        let subscription = notifier.subscribe(
            name.as_str(),
            Subscriber::event(move |event: &Event| {
                assert_eq!(event.name(), "lent.name");
                sink.lock().unwrap().push(event.clone());
            }),
        );
        notifier.instrument(&name, Payload::new, |_| ());
        notifier.instrument("lent.name", Payload::new, |_| ());
        subscription.unsubscribe().unwrap();
        drop((notifier, name));
        let kept = kept.lock().unwrap();
        send_sync(&kept[0]);
        let names: Vec<&str> = kept.iter().map(Event::name).collect();
        assert_eq!(names, ["lent.name", "lent.name"]);
        assert_eq!(kept[0].clone().name(), "lent.name");
    }

    /// Every kind of pin `instrument` takes is released, and every listener dropped when it is
    /// unsubscribed: an exact name (this thread's hazard, unpinned by `Pinned`'s inline drop), an
    /// event inside an event (an `arc-swap` guard), a name resolved through a glob (a resolved
    /// set beside the pin); and a silenceable listener whose `silenced` panics, reported once per
    /// event with the event's own failures (`Answers` and `Failures` hold them boxed).
    #[test]
    fn every_kind_of_pin_is_released_and_silenced_failures_are_reported() {
        use crate::{EventContext, EventedSubscriber, FailurePolicy, Pattern, SilenceableSubscriber};
        use std::sync::atomic::{AtomicUsize, Ordering};

        struct Panicky;
        impl EventedSubscriber for Panicky {
            fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
            fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
        }
        impl SilenceableSubscriber for Panicky {
            fn silenced(&self, _: &str) -> bool {
                panic!("silenced panics");
            }
        }

        let notifier = Notifier::new();
        let failures = Arc::new(Mutex::new(Vec::new()));
        let sink = failures.clone();
        notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.message().to_owned()));
        notifier.set_failure_policy(FailurePolicy::Report);
        let counts: Arc<[AtomicUsize; 3]> = Arc::new(Default::default());
        let (inner, count) = (notifier.clone(), counts.clone());
        let outer = notifier.subscribe(
            "pin.exact",
            Subscriber::event(move |_: &Event| {
                count[0].fetch_add(1, Ordering::SeqCst);
                inner.instrument("pin.nested", Payload::new, |_| ());
            }),
        );
        let count = counts.clone();
        let nested = notifier.subscribe(
            "pin.nested",
            Subscriber::event(move |_: &Event| {
                count[1].fetch_add(1, Ordering::SeqCst);
            }),
        );
        let count = counts.clone();
        let glob = notifier.subscribe(
            Pattern::glob("pin.glob.*").unwrap(),
            Subscriber::event(move |_: &Event| {
                count[2].fetch_add(1, Ordering::SeqCst);
            }),
        );
        let panicky = notifier.subscribe("pin.exact", Subscriber::silenceable(Panicky));
        for i in 0..3 {
            notifier.instrument("pin.exact", Payload::new, |_| ());
            notifier.instrument(&format!("pin.glob.{i}"), Payload::new, |_| ());
        }
        let seen: Vec<usize> = counts.iter().map(|c| c.load(Ordering::SeqCst)).collect();
        assert_eq!(seen, [3, 3, 3]);
        assert_eq!(failures.lock().unwrap().as_slice(), ["silenced panics"; 3]);
        // Every pin was released: each listener is dropped by its unsubscribe (the nested
        // notifier clone with the outer one), and nothing else holds the counts.
        for subscription in [outer, nested, glob, panicky] {
            subscription.unsubscribe().unwrap();
        }
        assert_eq!(Arc::strong_count(&counts), 1);
    }

    /// `Listeners::phases_only` follows the name's listener set: an evented-only set takes the
    /// short finish (no clock: no duration, the outcome and `record`s still there), a set that
    /// gains a timed subscriber or an evented one with duration takes the general one (both
    /// kinds served, the duration measured), and back again when they go.
    #[test]
    fn the_phases_only_finish_follows_the_listener_set() {
        use crate::{EventContext, EventedOptions, EventedSubscriber, Notifier, Value};

        type Seen = Arc<Mutex<Vec<(bool, Outcome, Option<Value>)>>>;
        struct Finishes(Seen);
        impl EventedSubscriber for Finishes {
            fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
            fn finish(&self, _: &str, context: &EventContext, payload: &Payload) {
                let entry = (
                    context.duration().is_some(),
                    context.outcome(),
                    payload.get("rows").cloned(),
                );
                self.0.lock().unwrap().push(entry);
            }
        }
        let seen: Seen = Arc::default();
        let notifier = Notifier::new();
        let fanout = notifier.downgrade().upgrade().unwrap();
        let phases_only = || fanout.lookup("p.only").unwrap().listeners.phases_only;
        let evented = notifier.subscribe("p.only", Subscriber::evented(Finishes(seen.clone())));
        let run = || {
            notifier.instrument("p.only", Payload::new, |_| crate::record("rows", 3));
            std::mem::take(&mut *seen.lock().unwrap())
        };
        let rows = Some(Value::from(3));
        assert!(phases_only());
        assert_eq!(run(), [(false, Outcome::Completed, rows.clone())]);

        let timed_calls = Arc::new(Mutex::new(0));
        let calls = timed_calls.clone();
        let timed = notifier.subscribe(
            "p.only",
            Subscriber::timed(move |_: &str, _, _, _, _: &Payload| *calls.lock().unwrap() += 1),
        );
        assert!(!phases_only());
        assert_eq!(run(), [(false, Outcome::Completed, rows.clone())]);
        assert_eq!(*timed_calls.lock().unwrap(), 1);
        timed.unsubscribe().unwrap();
        assert!(phases_only());

        let with_duration = notifier.subscribe(
            "p.only",
            Subscriber::evented_with(EventedOptions { duration: true }, Finishes(seen.clone())),
        );
        assert!(!phases_only());
        let measured = (true, Outcome::Completed, rows.clone());
        assert_eq!(run(), [measured.clone(), measured]);
        with_duration.unsubscribe().unwrap();
        evented.unsubscribe().unwrap();
        assert!(fanout.lookup("p.only").is_none());
    }

    /// Issue 45 item 3: an event finishing where a baggage is current carries it (whatever its
    /// trace: baggage belongs to the request), one finishing outside carries none; for borrowed
    /// event objects, owned ones built new, and owned ones refilled from a recycled event (the
    /// recycled one carried baggage: the refilled one must not keep it).
    #[test]
    fn i45_3_an_event_finishing_in_a_baggage_scope_carries_it_and_none_outside() {
        use crate::baggage::Baggage;
        use crate::propagated::{with_baggage, Propagated};
        use crate::trace_flags::TraceFlags;
        use crate::{OwnedEventSubscriber, TraceId};

        struct Keep(Mutex<Vec<Arc<Event>>>);
        impl OwnedEventSubscriber for Keep {
            fn deliver(&self, event: &Arc<Event>) {
                self.0.lock().unwrap().push(event.clone());
            }
        }
        let borrowed = Arc::new(Mutex::new(Vec::<String>::new()));
        let owned = Arc::new(Keep(Mutex::new(Vec::new())));
        let notifier = Notifier::new();
        let sink = borrowed.clone();
        let _b = notifier.subscribe(
            "bag.event",
            Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.baggage().to_string())),
        );
        let _o = notifier.subscribe("bag.owned", Subscriber::owned_arc(owned.clone()));
        let baggage = Baggage::new().with("tenant", "acme").unwrap();
        let run = || {
            notifier.instrument("bag.event", Payload::new, |_| ());
            notifier.instrument("bag.owned", Payload::new, |_| ());
        };
        with_baggage(baggage.clone(), run);
        run();
        // With a tracestate of another trace current: the baggage still, the tracestate not.
        let other = TraceId::new(0x99).unwrap();
        Propagated::for_trace(other, TraceFlags::NONE, "a=1".parse().unwrap())
            .with_baggage(baggage.clone())
            .in_scope(run);
        let kept: Vec<Arc<Event>> = mem::take(&mut *owned.0.lock().unwrap());
        let baggage_of =
            |events: &[Arc<Event>]| -> Vec<String> { events.iter().map(|e| e.baggage().to_string()).collect() };
        assert_eq!(baggage_of(&kept), ["tenant=acme", "", "tenant=acme"]);
        assert!(kept[2].trace_state().is_empty(), "the tracestate is of another trace");
        assert_eq!(*borrowed.lock().unwrap(), ["tenant=acme", "", "tenant=acme"]);
        // Refilled from recycled events (this thread's, when another test did not take them).
        for event in kept {
            crate::recycle::recycle(event);
        }
        run();
        with_baggage(baggage, run);
        let refilled: Vec<Arc<Event>> = mem::take(&mut *owned.0.lock().unwrap());
        assert_eq!(baggage_of(&refilled), ["", "tenant=acme"]);
    }

    #[test]
    fn cheap_drop_drops_inline_and_spilled_payloads_and_skips_empty_ones() {
        drop(CheapDrop::new(Payload::default()));
        drop(CheapDrop::new(Payload::new().with("a", String::from("inline"))));
        let mut spilled = CheapDrop::new(Payload::default());
        for key in ["a", "b", "c", "d", "e", "f"] {
            spilled.insert(key, key.repeat(40));
        }
        assert_eq!(spilled.len(), 6);
        drop(spilled);
        let mut emptied = CheapDrop::new(Payload::new().with("a", String::from("x")));
        let taken = mem::take(&mut *emptied);
        assert!(emptied.is_trivially_droppable());
        drop(emptied);
        assert_eq!(taken.len(), 1);
    }
}
