//! [`Tags`]: key-values set for a scope that every event in it carries to its log lines — Rails'
//! `Rails.event.tagged` / `ActiveSupport::TaggedLogging`, OpenTelemetry's baggage seen from the
//! logging side.
//!
//! [`tagged`] runs a closure with tags added to the current ones (inner scopes add to outer ones
//! and win on a shared key); [`Tags::current`] is what a subscriber reads while it handles an
//! event (notify-log's structured lines put them in every line). Tags follow work that leaves the
//! thread the same way the [`Context`](crate::Context) does:
//!
//! * futures: [`Instrument::in_current_context`](crate::Instrument::in_current_context) and
//!   [`Instrument::with_context`](crate::Instrument::with_context) carry the tags current where the
//!   future is wrapped, and attach them while it is polled; [`Tags::scope`] carries given tags alone;
//! * threads: capture [`Tags::current`] beside [`Context::current`](crate::Context::current) and
//!   attach both on the other side ([`Tags::attach`] / [`Tags::in_scope`]).
//!
//! Tags are *not* part of the `Copy` [`Context`](crate::Context) (a set of owned values cannot be
//! `Copy`): they are an immutable, shared (`Arc`) list, so capturing them is one reference-count
//! increment and no tags costs nothing. Synchronous subscribers see, as [`Tags::current`], the tags
//! that were current when the event *started*, however it ends: a [`Handle`](crate::Handle) (and
//! so an instrumented future, or notify-http's request event finished in a streamed body's poll)
//! captures them at start and attaches them while it is entered and while its end is delivered.
//! Async subscribers (a worker pool) and exporters do not see tags, unless they copy
//! [`Tags::current`] into the payload themselves.
//!
//! W3C baggage (a list of key-values propagated with the trace context) can feed the same
//! mechanism: an incoming `baggage` header parsed into [`Tags`] and attached for the request.
//!
//! ```
//! use notify_core::context::{tagged, Tags};
//! tagged(Tags::new().with("request_id", "r-7"), || {
//!     tagged([("tenant", "acme")], || {
//!         let tags = Tags::current();
//!         assert_eq!(tags.keys().collect::<Vec<_>>(), ["request_id", "tenant"]);
//!         assert_eq!(tags.get("tenant").and_then(|v| v.as_str()), Some("acme"));
//!     });
//! });
//! assert!(Tags::current().is_empty());
//! ```

use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use crate::payload::{Key, ToValue, Value};

thread_local! {
    /// The tags of this thread's current scope.
    static CURRENT: RefCell<Tags> = const { RefCell::new(Tags::new()) };
}

/// An immutable, ordered list of key-values (keys unique) shared by reference count: the tags of a
/// scope. Empty tags hold no allocation. Build with [`Tags::new`] and [`Tags::with`], or from an
/// array of pairs.
///
/// ```
/// use notify_core::context::Tags;
/// let tags = Tags::new().with("request_id", "r-1").with("attempt", 2_u64).with("request_id", "r-2");
/// assert_eq!(tags.len(), 2);
/// assert_eq!(tags.get("request_id").and_then(|v| v.as_str()), Some("r-2"));
/// assert_eq!(Tags::from([("a", 1_u64), ("b", 2)]).keys().collect::<Vec<_>>(), ["a", "b"]);
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct Tags {
    entries: Option<Arc<[(Key, Value)]>>,
}

impl Tags {
    /// No tags.
    ///
    /// ```
    /// assert!(notify_core::context::Tags::new().is_empty());
    /// ```
    pub const fn new() -> Tags {
        Tags { entries: None }
    }

    /// These tags with `key` set to `value` (replacing the value of an existing key in place,
    /// appended otherwise). Copies the list: tags are built once per scope, read per event.
    ///
    /// ```
    /// let tags = notify_core::context::Tags::new().with("a", 1_u64).with("b", true).with("a", 3_u64);
    /// assert_eq!(tags.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(), ["a=3", "b=true"]);
    /// ```
    #[must_use]
    pub fn with(self, key: impl Into<Key>, value: impl ToValue) -> Tags {
        self.merged(std::iter::once((key.into(), value.to_value())))
    }

    /// These tags with each of `more` set, in order (a later key wins, as in [`Tags::with`]).
    fn merged(self, more: impl IntoIterator<Item = (Key, Value)>) -> Tags {
        let mut entries: Vec<(Key, Value)> = self.entries.as_deref().map(<[_]>::to_vec).unwrap_or_default();
        for (key, value) in more {
            match entries.iter_mut().find(|(k, _)| k.as_str() == key.as_str()) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
        }
        Tags {
            entries: (!entries.is_empty()).then(|| entries.into()),
        }
    }

    /// These tags with every tag of `other` set (other's value wins on a shared key): what
    /// [`tagged`] attaches.
    ///
    /// ```
    /// use notify_core::context::Tags;
    /// let outer = Tags::new().with("a", 1_u64).with("b", 1_u64);
    /// let both = outer.extended(&Tags::new().with("b", 2_u64).with("c", 2_u64));
    /// assert_eq!(both.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(), ["a=1", "b=2", "c=2"]);
    /// ```
    #[must_use]
    pub fn extended(&self, other: &Tags) -> Tags {
        if self.is_empty() {
            return other.clone();
        }
        if other.is_empty() {
            return self.clone();
        }
        let more: Vec<(Key, Value)> = other.entries.as_deref().unwrap_or_default().to_vec();
        self.clone().merged(more)
    }

    /// The tags of this thread's current scope (empty outside any): one reference-count increment.
    ///
    /// ```
    /// use notify_core::context::Tags;
    /// let _guard = Tags::new().with("job", "nightly").attach();
    /// assert_eq!(Tags::current().get("job").and_then(|v| v.as_str()), Some("nightly"));
    /// ```
    pub fn current() -> Tags {
        CURRENT.with(|current| current.borrow().clone())
    }

    /// The current tags, or none while the thread's locals are torn down: what an event captures
    /// when it starts ([`Handle`](crate::Handle)), so that it ends with them wherever it ends.
    pub(crate) fn captured() -> Tags {
        CURRENT.try_with(|current| current.borrow().clone()).unwrap_or_default()
    }

    /// Attaches these tags until the guard drops, unless they are the current ones already (the
    /// same shared list: then nothing is swapped and `None` comes back). `None` too while the
    /// thread's locals are torn down.
    pub(crate) fn attach_unless_current(&self) -> Option<TagsGuard> {
        let same = CURRENT
            .try_with(|current| match (&current.borrow().entries, &self.entries) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            })
            .unwrap_or(true);
        (!same).then(|| self.clone().attach())
    }

    /// Runs `f` with the current tags, borrowed (no reference count): for subscribers that only
    /// read them while they handle an event.
    ///
    /// ```
    /// use notify_core::context::{tagged, Tags};
    /// assert_eq!(tagged([("a", 1_u64)], || Tags::with_current(Tags::len)), 1);
    /// ```
    pub fn with_current<T>(f: impl FnOnce(&Tags) -> T) -> T {
        CURRENT.with(|current| f(&current.borrow()))
    }

    /// Makes these the current tags of this thread (replacing, not adding to, the current ones)
    /// until the guard drops; the previous tags are current again then. Guards must drop in the
    /// reverse order of their `attach` (scopes nest), as they do when each lives in a block.
    ///
    /// ```
    /// use notify_core::context::Tags;
    /// {
    ///     let _guard = Tags::new().with("a", 1_u64).attach();
    ///     assert_eq!(Tags::current().len(), 1);
    /// }
    /// assert!(Tags::current().is_empty());
    /// ```
    pub fn attach(self) -> TagsGuard {
        let previous = CURRENT.with(|current| std::mem::replace(&mut *current.borrow_mut(), self));
        TagsGuard {
            previous: Some(previous),
            _not_send: PhantomData,
        }
    }

    /// Runs `f` with these tags attached (replacing the current ones).
    ///
    /// ```
    /// use notify_core::context::Tags;
    /// let captured = Tags::new().with("request_id", "r-9");
    /// let seen = std::thread::spawn(move || captured.in_scope(|| Tags::current().len())).join().unwrap();
    /// assert_eq!(seen, 1);
    /// ```
    pub fn in_scope<T>(self, f: impl FnOnce() -> T) -> T {
        let _guard = self.attach();
        f()
    }

    /// `future` with these tags attached while it is polled (replacing those of the poller).
    ///
    /// ```
    /// use notify_core::context::Tags;
    /// use std::future::Future;
    /// let fut = Tags::new().with("job", "sync").scope(async { Tags::current().len() });
    /// let waker = std::task::Waker::noop();
    /// let mut fut = std::pin::pin!(fut);
    /// assert_eq!(fut.as_mut().poll(&mut std::task::Context::from_waker(waker)), std::task::Poll::Ready(1));
    /// ```
    pub fn scope<F: Future>(self, future: F) -> Tagged<F> {
        Tagged {
            inner: future,
            tags: self,
        }
    }

    /// The value of tag `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
    }

    /// The tags in the order they were first set.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + '_ {
        self.entries
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|(k, v)| (k.as_str(), v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// How many tags.
    pub fn len(&self) -> usize {
        self.entries.as_deref().map_or(0, <[_]>::len)
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_none()
    }
}

impl std::fmt::Debug for Tags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Into<Key>, V: ToValue, const N: usize> From<[(K, V); N]> for Tags {
    fn from(pairs: [(K, V); N]) -> Tags {
        Tags::new().merged(pairs.into_iter().map(|(k, v)| (k.into(), v.to_value())))
    }
}

impl<K: Into<Key>, V: ToValue> FromIterator<(K, V)> for Tags {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Tags {
        Tags::new().merged(pairs.into_iter().map(|(k, v)| (k.into(), v.to_value())))
    }
}

/// Runs `f` with `tags` added to the current tags (a tag of `tags` wins over an outer one of the
/// same key) — Rails' `Rails.event.tagged(...) { }`. Every event finished inside, and every future
/// wrapped inside with [`in_current_context`](crate::Instrument::in_current_context), carries them.
///
/// ```
/// use notify_core::context::{tagged, Tags};
/// let inner = tagged([("user", 1_u64)], || tagged([("user", 2_u64)], Tags::current));
/// assert_eq!(inner.get("user").and_then(|v| v.as_u64()), Some(2));
/// ```
pub fn tagged<T>(tags: impl Into<Tags>, f: impl FnOnce() -> T) -> T {
    let tags = Tags::with_current(|current| current.extended(&tags.into()));
    tags.in_scope(f)
}

/// The guard of [`Tags::attach`]; restores the previous tags when dropped. Not `Send`.
#[must_use = "the tags are attached only while the guard lives"]
pub struct TagsGuard {
    previous: Option<Tags>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for TagsGuard {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            // `try_with`: a guard dropped while the thread's locals are torn down has nothing to restore.
            let _ = CURRENT.try_with(|current| *current.borrow_mut() = previous);
        }
    }
}

impl std::fmt::Debug for TagsGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TagsGuard").finish_non_exhaustive()
    }
}

/// A future polled with tags attached: [`Tags::scope`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Tagged<F> {
    inner: F,
    tags: Tags,
}

impl<F> Tagged<F> {
    /// The tags attached while the future is polled.
    pub fn tags(&self) -> &Tags {
        &self.tags
    }
}

impl<F: Future> Future for Tagged<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of `self` (no method
        // returns it by value, `Tagged` has no `Drop` that could move it); `tags` is not pinned and
        // only cloned.
        let this = unsafe { self.get_unchecked_mut() };
        let _guard = this.tags.clone().attach();
        // SAFETY: see above.
        unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert!(Tags::current().is_empty());
        tagged([("a", 1_u64)], || {
            tagged([("b", 2_u64)], || assert_eq!(Tags::current().len(), 2));
            assert_eq!(Tags::current().keys().collect::<Vec<_>>(), ["a"]);
        });
        assert!(Tags::current().is_empty());
    }

    #[test]
    fn a_panicking_scope_restores_the_outer_tags() {
        let _outer = Tags::from([("a", 1_u64)]).attach();
        let result = std::panic::catch_unwind(|| tagged([("b", 2_u64)], || panic!("boom")));
        assert!(result.is_err());
        assert_eq!(Tags::current().keys().collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn empty_tags_do_not_allocate_and_an_empty_scope_adds_nothing() {
        assert!(Tags::from_iter(std::iter::empty::<(&str, u64)>()).entries.is_none());
        tagged(Tags::new(), || assert!(Tags::current().is_empty()));
    }

    #[test]
    fn tagged_future_sees_its_tags_only_while_polled() {
        let fut = Tags::from([("job", "x")]).scope(async { Tags::current().get("job").cloned() });
        let mut fut = std::pin::pin!(fut);
        let waker = std::task::Waker::noop();
        let polled = fut.as_mut().poll(&mut TaskContext::from_waker(waker));
        assert_eq!(polled, Poll::Ready(Some(Value::from("x"))));
        assert!(Tags::current().is_empty());
    }
}
