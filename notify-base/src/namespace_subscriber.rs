//! Subscriber types with a method per event of one namespace — AS::N's `ActiveSupport::Subscriber`:
//! [`NamespaceSubscriber`] (the class), [`Methods`] (its method list), [`Method`] (one method and
//! the subscriber kind it is), [`Attachment`] (what `attach_to` returns; `detach` is AS::N's
//! `detach_from`), [`MethodsError`] (an invalid declaration).

use std::any::type_name;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Instant, SystemTime};

use crate::context::EventContext;
use crate::escape::{needs_escape, Escaped};
use crate::event::Event;
use crate::fanout::Fanout;
use crate::kinds::{EventOptions, EventedSubscriber, OwnedEventSubscriber};
use crate::notifier::{Notifier, Subscription};
use crate::pattern::Pattern;
use crate::payload::Payload;
use crate::subscriber::Subscriber;
use crate::transaction_id::TransactionId;

/// Builds one method's subscriber from the shared subscriber value.
type Build<T> = Arc<dyn Fn(&Arc<T>) -> Subscriber + Send + Sync>;

/// A type whose methods handle the events of one namespace — AS::N's `ActiveSupport::Subscriber`
/// subclass, for metrics, auditing, caches (log subscribers, in crate `notify-log`, are this plus a
/// level and a line per method).
///
/// [`NamespaceSubscriber::methods`] plays the part of the class body: the namespace and, per method,
/// the event it handles and its subscriber kind. As in AS::N, a method's event name is derived from
/// the method's name: method `sql` of namespace `active_record` handles `"sql.active_record"`.
/// [`NamespaceSubscriber::attach_to`] subscribes every method at once and returns one
/// [`Attachment`] whose [`detach`](Attachment::detach) removes them all.
///
/// # Methods added later
///
/// AS::N subscribes a public method defined after `attach_to` through Ruby's `method_added` hook.
/// A Rust type cannot gain methods at run time, and the methods a type handles are the ones its
/// [`methods`](NamespaceSubscriber::methods) lists, all subscribed by every `attach_to`; so a method
/// added to the source is picked up by the next attach. To add a method to a subscriber that is
/// already attached (a handler built at run time, a feature switched on), use
/// [`Attachment::add_method`]: it subscribes on the same notifier, for the same subscriber value,
/// and [`detach`](Attachment::detach) removes it with the rest.
///
/// ```
/// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier, Payload};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[derive(Default)]
/// struct Metrics { queries: AtomicU64, rows: AtomicU64 }
/// impl Metrics {
///     fn sql(&self, event: &Event) {
///         self.queries.fetch_add(1, Ordering::Relaxed);
///         let rows = event.payload().get("rows").and_then(|v| v.as_i64()).unwrap_or(0);
///         self.rows.fetch_add(rows as u64, Ordering::Relaxed);
///     }
/// }
/// impl NamespaceSubscriber for Metrics {
///     fn methods() -> Methods<Metrics> {
///         Methods::new("active_record").event("sql", Metrics::sql)
///     }
/// }
///
/// let notifier = Notifier::new();
/// let attached = Metrics::default().attach_to(&notifier)?;
/// notifier.instrument("sql.active_record", || Payload::new().with("rows", 3_u64), |_| ());
/// assert_eq!(attached.subscriber().queries.load(Ordering::Relaxed), 1);
/// assert_eq!(attached.subscriber().rows.load(Ordering::Relaxed), 3);
/// assert_eq!(attached.detach(), 1);
/// # Ok::<(), notify_core::subscriber::MethodsError>(())
/// ```
pub trait NamespaceSubscriber: Send + Sync + Sized + 'static {
    /// The namespace and the methods of this type. Called once per attach.
    fn methods() -> Methods<Self>;

    /// Subscribes every method of `self` to `notifier` (AS::N's `attach_to`), each on its exact
    /// event name, in one registry change. The subscriptions stay when the [`Attachment`] is
    /// dropped, as in AS::N; [`Attachment::detach`] removes them.
    ///
    /// # Errors
    /// [`MethodsError`] when the namespace or a method name is invalid; nothing is subscribed then.
    ///
    /// ```
    /// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier};
    /// struct Audit;
    /// impl NamespaceSubscriber for Audit {
    ///     fn methods() -> Methods<Audit> {
    ///         Methods::new("auth").event("login", |_: &Audit, _: &Event| {}).event("logout", |_: &Audit, _: &Event| {})
    ///     }
    /// }
    /// let notifier = Notifier::new();
    /// let attached = Audit.attach_to(&notifier)?;
    /// assert_eq!(attached.event_names().collect::<Vec<_>>(), ["login.auth", "logout.auth"]);
    /// assert_eq!(notifier.subscriber_count(), 2);
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    fn attach_to(self, notifier: &Notifier) -> Result<Attachment<Self>, MethodsError> {
        Self::methods().attach(Arc::new(self), notifier)
    }
}

/// One method of a [`NamespaceSubscriber`]: its name (the first part of its event name) and the
/// subscriber kind it is, built for the shared subscriber value when attached.
///
/// ```
/// use notify_core::{subscriber::Method, Event};
/// struct Cache;
/// let method = Method::event("read", |_: &Cache, _: &Event| {});
/// assert_eq!(method.name(), "read");
/// ```
pub struct Method<T> {
    name: String,
    build: Build<T>,
}

impl<T> Clone for Method<T> {
    fn clone(&self) -> Self {
        Method {
            name: self.name.clone(),
            build: self.build.clone(),
        }
    }
}

impl<T: Send + Sync + 'static> Method<T> {
    /// An event-object method (AS::N's `def sql(event)`): `f(subscriber, event)` after each event.
    ///
    /// ```
    /// struct S;
    /// let m = notify_core::subscriber::Method::event("sql", |_: &S, e: &notify_core::Event| assert!(e.name().ends_with(".db")));
    /// assert_eq!(m.name(), "sql");
    /// ```
    pub fn event(name: impl Into<String>, f: impl Fn(&T, &Event) + Send + Sync + 'static) -> Method<T> {
        Method::event_with(name, EventOptions::default(), f)
    }

    /// An event-object method that asks for the measurements in `options` (CPU time, allocations).
    ///
    /// ```
    /// use notify_core::{subscriber::{EventOptions, Method}, Event};
    /// struct S;
    /// let m = Method::event_with("sql", EventOptions { cpu_time: true, ..Default::default() }, |_: &S, _: &Event| {});
    /// assert_eq!(m.name(), "sql");
    /// ```
    pub fn event_with(
        name: impl Into<String>,
        options: EventOptions,
        f: impl Fn(&T, &Event) + Send + Sync + 'static,
    ) -> Method<T> {
        let f = Arc::new(f);
        Method::subscriber(name, move |this: &Arc<T>| {
            let (this, f) = (this.clone(), f.clone());
            Subscriber::event_with(options, move |event: &Event| f(&this, event))
        })
    }

    /// A timed method: `f(subscriber, name, start, finish, transaction id, payload)` with wall-clock
    /// times (AS::N's `subscribe { |name, start, finish, id, payload| }`).
    ///
    /// ```
    /// use notify_core::{subscriber::Method, Payload};
    /// struct S;
    /// let m = Method::timed("sql", |_: &S, _: &str, _start, _finish, _txn: notify_core::context::TransactionId, _: &Payload| {});
    /// assert_eq!(m.name(), "sql");
    /// ```
    pub fn timed(
        name: impl Into<String>,
        f: impl Fn(&T, &str, SystemTime, SystemTime, TransactionId, &Payload) + Send + Sync + 'static,
    ) -> Method<T> {
        let f = Arc::new(f);
        Method::subscriber(name, move |this: &Arc<T>| {
            let (this, f) = (this.clone(), f.clone());
            Subscriber::timed(
                move |name: &str, start, finish, txn: TransactionId, payload: &Payload| {
                    f(&this, name, start, finish, txn, payload)
                },
            )
        })
    }

    /// A monotonic method: like [`Method::timed`] with [`Instant`]s.
    ///
    /// ```
    /// use notify_core::{subscriber::Method, Payload};
    /// struct S;
    /// let m = Method::monotonic("sql", |_: &S, _: &str, start: std::time::Instant, finish, _: notify_core::context::TransactionId, _: &Payload| {
    ///     assert!(finish >= start);
    /// });
    /// assert_eq!(m.name(), "sql");
    /// ```
    pub fn monotonic(
        name: impl Into<String>,
        f: impl Fn(&T, &str, Instant, Instant, TransactionId, &Payload) + Send + Sync + 'static,
    ) -> Method<T> {
        let f = Arc::new(f);
        Method::subscriber(name, move |this: &Arc<T>| {
            let (this, f) = (this.clone(), f.clone());
            Subscriber::monotonic(
                move |name: &str, start, finish, txn: TransactionId, payload: &Payload| {
                    f(&this, name, start, finish, txn, payload)
                },
            )
        })
    }

    /// An evented method: `start(subscriber, name, event context, payload)` before the block runs
    /// and `finish(…)` after (AS::N's evented subscriber, `start`/`finish`); the [`EventContext`]
    /// carries the event id that pairs them, the parent id and the trace id.
    ///
    /// ```
    /// use notify_core::{context::EventContext, subscriber::Method, Payload};
    /// struct S;
    /// let m = Method::evented("transaction", |_: &S, _: &str, _: &EventContext, _: &Payload| {}, |_: &S, _: &str, _: &EventContext, _: &Payload| {});
    /// assert_eq!(m.name(), "transaction");
    /// ```
    pub fn evented(
        name: impl Into<String>,
        start: impl Fn(&T, &str, &EventContext, &Payload) + Send + Sync + 'static,
        finish: impl Fn(&T, &str, &EventContext, &Payload) + Send + Sync + 'static,
    ) -> Method<T> {
        struct Edges<T, S, F> {
            this: Arc<T>,
            start: Arc<S>,
            finish: Arc<F>,
        }
        impl<T, S, F> EventedSubscriber for Edges<T, S, F>
        where
            T: Send + Sync + 'static,
            S: Fn(&T, &str, &EventContext, &Payload) + Send + Sync + 'static,
            F: Fn(&T, &str, &EventContext, &Payload) + Send + Sync + 'static,
        {
            fn start(&self, name: &str, event: &EventContext, payload: &Payload) {
                (self.start)(&self.this, name, event, payload);
            }
            fn finish(&self, name: &str, event: &EventContext, payload: &Payload) {
                (self.finish)(&self.this, name, event, payload);
            }
        }
        let (start, finish) = (Arc::new(start), Arc::new(finish));
        Method::subscriber(name, move |this: &Arc<T>| {
            Subscriber::evented(Edges {
                this: this.clone(),
                start: start.clone(),
                finish: finish.clone(),
            })
        })
    }

    /// An owned-event method: `f(subscriber, &Arc<Event>)`, for methods that queue or forward the
    /// event.
    ///
    /// ```
    /// use notify_core::{subscriber::Method, Event};
    /// use std::sync::Arc;
    /// struct S;
    /// let m = Method::owned("sql", |_: &S, _: &Arc<Event>| {});
    /// assert_eq!(m.name(), "sql");
    /// ```
    pub fn owned(name: impl Into<String>, f: impl Fn(&T, &Arc<Event>) + Send + Sync + 'static) -> Method<T> {
        struct Owned<T, F> {
            this: Arc<T>,
            f: Arc<F>,
        }
        impl<T: Send + Sync + 'static, F: Fn(&T, &Arc<Event>) + Send + Sync + 'static> OwnedEventSubscriber for Owned<T, F> {
            fn deliver(&self, event: &Arc<Event>) {
                (self.f)(&self.this, event);
            }
        }
        let f = Arc::new(f);
        Method::subscriber(name, move |this: &Arc<T>| {
            Subscriber::owned(Owned {
                this: this.clone(),
                f: f.clone(),
            })
        })
    }

    /// A method of any kind (silenceable, an async subscriber of the worker pool, a wrapper):
    /// `build` makes its [`Subscriber`] from the shared subscriber value, once per attach. A
    /// subscriber without a label is labelled `"<type>#<method>"` (failure reports show it).
    ///
    /// ```
    /// use notify_core::{subscriber::Method, Event, Subscriber};
    /// use std::sync::Arc;
    /// struct S;
    /// let m = Method::subscriber("sql", |this: &Arc<S>| {
    ///     let this = this.clone();
    ///     Subscriber::event(move |_: &Event| { let _ = &this; })
    /// });
    /// assert_eq!(m.name(), "sql");
    /// ```
    pub fn subscriber(
        name: impl Into<String>,
        build: impl Fn(&Arc<T>) -> Subscriber + Send + Sync + 'static,
    ) -> Method<T> {
        Method {
            name: name.into(),
            build: Arc::new(build),
        }
    }
}

impl<T> Method<T> {
    /// The method's name: its event name is `"<name>.<namespace>"`.
    ///
    /// ```
    /// struct S;
    /// assert_eq!(notify_core::subscriber::Method::event("sql", |_: &S, _: &notify_core::Event| {}).name(), "sql");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    fn subscriber_for(&self, this: &Arc<T>) -> Subscriber {
        let subscriber = (self.build)(this);
        if subscriber.label().is_some() {
            subscriber
        } else {
            subscriber.named(format!("{}#{}", type_name::<T>(), self.name))
        }
    }
}

impl<T> fmt::Debug for Method<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Method")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The namespace and methods of a [`NamespaceSubscriber`], in declaration order. Declaring a method
/// name twice keeps the last declaration (as redefining a Ruby method does).
///
/// ```
/// use notify_core::{subscriber::Methods, Event, Payload};
/// struct Metrics;
/// let methods = Methods::<Metrics>::new("active_record")
///     .event("sql", |_: &Metrics, _: &Event| {})
///     .timed("instantiation", |_: &Metrics, _: &str, _, _, _: notify_core::context::TransactionId, _: &Payload| {})
///     .event("sql", |_: &Metrics, _: &Event| {});
/// assert_eq!(methods.event_names().collect::<Vec<_>>(), ["instantiation.active_record", "sql.active_record"]);
/// ```
pub struct Methods<T> {
    namespace: String,
    methods: Vec<(String, Method<T>)>,
}

impl<T: Send + Sync + 'static> Methods<T> {
    /// No methods yet, for the events `"*.<namespace>"`. The namespace is checked when attached.
    ///
    /// ```
    /// assert_eq!(notify_core::subscriber::Methods::<()>::new("db").namespace(), "db");
    /// ```
    pub fn new(namespace: impl Into<String>) -> Methods<T> {
        Methods {
            namespace: namespace.into(),
            methods: Vec::new(),
        }
    }

    /// Adds `method` (replacing a method of the same name).
    ///
    /// ```
    /// use notify_core::{subscriber::{Method, Methods}, Event};
    /// struct S;
    /// let methods = Methods::<S>::new("db").method(Method::event("query", |_: &S, _: &Event| {}));
    /// assert_eq!(methods.len(), 1);
    /// ```
    #[must_use]
    pub fn method(mut self, method: Method<T>) -> Methods<T> {
        self.methods.retain(|(_, m)| m.name != method.name);
        let event_name = event_name(&method.name, &self.namespace);
        self.methods.push((event_name, method));
        self
    }

    /// Adds [`Method::event`].
    ///
    /// ```
    /// struct S;
    /// let m = notify_core::subscriber::Methods::<S>::new("db").event("query", |_: &S, _: &notify_core::Event| {});
    /// assert_eq!(m.len(), 1);
    /// ```
    #[must_use]
    pub fn event(self, name: impl Into<String>, f: impl Fn(&T, &Event) + Send + Sync + 'static) -> Methods<T> {
        self.method(Method::event(name, f))
    }

    /// Adds [`Method::event_with`].
    ///
    /// ```
    /// use notify_core::{subscriber::{EventOptions, Methods}, Event};
    /// struct S;
    /// let m = Methods::<S>::new("db").event_with("query", EventOptions::default(), |_: &S, _: &Event| {});
    /// assert_eq!(m.len(), 1);
    /// ```
    #[must_use]
    pub fn event_with(
        self,
        name: impl Into<String>,
        options: EventOptions,
        f: impl Fn(&T, &Event) + Send + Sync + 'static,
    ) -> Methods<T> {
        self.method(Method::event_with(name, options, f))
    }

    /// Adds [`Method::timed`].
    ///
    /// ```
    /// use notify_core::{subscriber::Methods, Payload};
    /// struct S;
    /// let m = Methods::<S>::new("db").timed("query", |_: &S, _: &str, _, _, _: notify_core::context::TransactionId, _: &Payload| {});
    /// assert_eq!(m.len(), 1);
    /// ```
    #[must_use]
    pub fn timed(
        self,
        name: impl Into<String>,
        f: impl Fn(&T, &str, SystemTime, SystemTime, TransactionId, &Payload) + Send + Sync + 'static,
    ) -> Methods<T> {
        self.method(Method::timed(name, f))
    }

    /// Adds [`Method::monotonic`].
    ///
    /// ```
    /// use notify_core::{subscriber::Methods, Payload};
    /// struct S;
    /// let m = Methods::<S>::new("db").monotonic("query", |_: &S, _: &str, _: std::time::Instant, _, _: notify_core::context::TransactionId, _: &Payload| {});
    /// assert_eq!(m.len(), 1);
    /// ```
    #[must_use]
    pub fn monotonic(
        self,
        name: impl Into<String>,
        f: impl Fn(&T, &str, Instant, Instant, TransactionId, &Payload) + Send + Sync + 'static,
    ) -> Methods<T> {
        self.method(Method::monotonic(name, f))
    }

    /// Adds [`Method::evented`].
    ///
    /// ```
    /// use notify_core::{context::EventContext, subscriber::Methods, Payload};
    /// struct S;
    /// let m = Methods::<S>::new("db").evented("transaction", |_: &S, _: &str, _: &EventContext, _: &Payload| {}, |_: &S, _: &str, _: &EventContext, _: &Payload| {});
    /// assert_eq!(m.len(), 1);
    /// ```
    #[must_use]
    pub fn evented(
        self,
        name: impl Into<String>,
        start: impl Fn(&T, &str, &EventContext, &Payload) + Send + Sync + 'static,
        finish: impl Fn(&T, &str, &EventContext, &Payload) + Send + Sync + 'static,
    ) -> Methods<T> {
        self.method(Method::evented(name, start, finish))
    }

    /// Adds [`Method::owned`].
    ///
    /// ```
    /// use notify_core::{subscriber::Methods, Event};
    /// struct S;
    /// let m = Methods::<S>::new("db").owned("query", |_: &S, _: &std::sync::Arc<Event>| {});
    /// assert_eq!(m.len(), 1);
    /// ```
    #[must_use]
    pub fn owned(self, name: impl Into<String>, f: impl Fn(&T, &Arc<Event>) + Send + Sync + 'static) -> Methods<T> {
        self.method(Method::owned(name, f))
    }

    /// Adds [`Method::subscriber`].
    ///
    /// ```
    /// use notify_core::{subscriber::Methods, Event, Subscriber};
    /// struct S;
    /// let m = Methods::<S>::new("db").subscriber("query", |_| Subscriber::event(|_: &Event| {}));
    /// assert_eq!(m.len(), 1);
    /// ```
    #[must_use]
    pub fn subscriber(
        self,
        name: impl Into<String>,
        build: impl Fn(&Arc<T>) -> Subscriber + Send + Sync + 'static,
    ) -> Methods<T> {
        self.method(Method::subscriber(name, build))
    }

    /// Checks the declaration: the namespace is non-empty dot-separated words (`"db"`,
    /// `"db.replica"`), each method name non-empty without a dot; neither has a control character
    /// (anything [`escape`](crate::escape) would escape).
    ///
    /// # Errors
    /// The first problem found, as a [`MethodsError`].
    ///
    /// ```
    /// use notify_core::{subscriber::{Methods, MethodsError}, Event};
    /// let bad = Methods::<()>::new("db").event("query.slow", |_: &(), _: &Event| {});
    /// assert_eq!(bad.validate(), Err(MethodsError::InvalidMethod { namespace: "db".into(), method: "query.slow".into() }));
    /// ```
    pub fn validate(&self) -> Result<(), MethodsError> {
        validate_namespace(&self.namespace)?;
        match self.methods.iter().find(|(_, m)| !valid_method(&m.name)) {
            Some((_, m)) => Err(MethodsError::InvalidMethod {
                namespace: self.namespace.clone(),
                method: m.name.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Subscribes every method for `subscriber` to `notifier`, in one registry change; what
    /// [`NamespaceSubscriber::attach_to`] does. Attaching one value to several notifiers is
    /// calling this once per notifier with clones of one `Arc`.
    ///
    /// # Errors
    /// [`MethodsError`] when [`Methods::validate`] fails; nothing is subscribed then.
    ///
    /// ```
    /// use notify_core::{subscriber::Methods, Event, Notifier};
    /// use std::sync::Arc;
    /// struct Audit;
    /// let methods = Methods::<Audit>::new("auth").event("login", |_: &Audit, _: &Event| {});
    /// let (a, b) = (Notifier::new(), Notifier::new());
    /// let audit = Arc::new(Audit);
    /// let on_a = methods.attach(audit.clone(), &a)?;
    /// let on_b = methods.attach(audit, &b)?;
    /// assert!(a.listening("login.auth") && b.listening("login.auth"));
    /// assert_eq!(on_a.detach() + on_b.detach(), 2);
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    pub fn attach(&self, subscriber: Arc<T>, notifier: &Notifier) -> Result<Attachment<T>, MethodsError> {
        self.validate()?;
        let subscriptions = notifier.subscribe_all(
            self.methods
                .iter()
                .map(|(event, method)| (Pattern::exact(event.as_str()), method.subscriber_for(&subscriber))),
        );
        let attached = self
            .methods
            .iter()
            .zip(subscriptions)
            .map(|((event, method), subscription)| Attached {
                method: method.name.clone(),
                event: event.clone(),
                subscription,
            })
            .collect();
        Ok(Attachment {
            namespace: self.namespace.clone(),
            subscriber,
            notifier: notifier.downgrade(),
            attached,
        })
    }
}

impl<T> Methods<T> {
    /// The namespace.
    ///
    /// ```
    /// assert_eq!(notify_core::subscriber::Methods::<()>::new("db.replica").namespace(), "db.replica");
    /// ```
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The event names handled, `"<method>.<namespace>"`, in declaration order.
    ///
    /// ```
    /// struct S;
    /// let m = notify_core::subscriber::Methods::<S>::new("db").event("query", |_: &S, _: &notify_core::Event| {});
    /// assert_eq!(m.event_names().collect::<Vec<_>>(), ["query.db"]);
    /// ```
    pub fn event_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.methods.iter().map(|(event, _)| event.as_str())
    }

    /// The methods, in declaration order.
    ///
    /// ```
    /// struct S;
    /// let m = notify_core::subscriber::Methods::<S>::new("db").event("query", |_: &S, _: &notify_core::Event| {});
    /// assert_eq!(m.methods().next().map(|m| m.name()), Some("query"));
    /// ```
    pub fn methods(&self) -> impl Iterator<Item = &Method<T>> + '_ {
        self.methods.iter().map(|(_, m)| m)
    }

    /// The number of methods.
    ///
    /// ```
    /// assert_eq!(notify_core::subscriber::Methods::<()>::new("db").len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.methods.len()
    }

    /// True when no method is declared.
    ///
    /// ```
    /// assert!(notify_core::subscriber::Methods::<()>::new("db").is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.methods.is_empty()
    }
}

impl<T> fmt::Debug for Methods<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Methods")
            .field("namespace", &self.namespace)
            .field("events", &self.event_names().collect::<Vec<_>>())
            .finish()
    }
}

/// One subscribed method of an [`Attachment`].
#[derive(Debug)]
struct Attached {
    method: String,
    event: String,
    subscription: Subscription,
}

/// A [`NamespaceSubscriber`] attached to a notifier: the subscriber value and one subscription per
/// method. Dropping it keeps the subscriptions (as AS::N's `attach_to` does); [`Attachment::detach`]
/// removes them all (AS::N's `detach_from`).
///
/// ```
/// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier};
/// struct Cache;
/// impl NamespaceSubscriber for Cache {
///     fn methods() -> Methods<Cache> { Methods::new("cache").event("read", |_: &Cache, _: &Event| {}) }
/// }
/// let notifier = Notifier::new();
/// let attached = Cache.attach_to(&notifier)?;
/// assert_eq!(attached.namespace(), "cache");
/// assert_eq!(attached.subscriptions().len(), 1);
/// assert_eq!(attached.detach(), 1);
/// assert_eq!(attached.detach(), 0, "already detached");
/// # Ok::<(), notify_core::subscriber::MethodsError>(())
/// ```
pub struct Attachment<T> {
    namespace: String,
    subscriber: Arc<T>,
    notifier: Weak<Fanout>,
    attached: Vec<Attached>,
}

impl<T: Send + Sync + 'static> Attachment<T> {
    /// Subscribes one more method for the attached value on the same notifier — the Rust
    /// counterpart of AS::N's `method_added` (see [`NamespaceSubscriber`]). A method of the same
    /// name that is attached already is replaced in the same registry change (as
    /// [`Notifier::subscribe_all`] makes one change): each event is delivered to the old method or
    /// to the new one, exactly once, also while other threads publish. [`Attachment::detach`]
    /// removes it with the others.
    ///
    /// # Errors
    /// [`MethodsError::InvalidMethod`] for an empty name or one with a dot, and
    /// [`MethodsError::NotifierGone`] when the notifier was dropped; nothing changes then.
    ///
    /// ```
    /// use notify_core::{subscriber::{Method, Methods, NamespaceSubscriber}, Event, Notifier};
    /// struct Cache;
    /// impl NamespaceSubscriber for Cache {
    ///     fn methods() -> Methods<Cache> { Methods::new("cache").event("read", |_: &Cache, _: &Event| {}) }
    /// }
    /// let notifier = Notifier::new();
    /// let mut attached = Cache.attach_to(&notifier)?;
    /// attached.add_method(Method::event("write", |_: &Cache, _: &Event| {}))?;
    /// assert!(notifier.listening("write.cache"));
    /// assert_eq!(attached.detach(), 2);
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    pub fn add_method(&mut self, method: Method<T>) -> Result<&Subscription, MethodsError> {
        if !valid_method(&method.name) {
            return Err(MethodsError::InvalidMethod {
                namespace: self.namespace.clone(),
                method: method.name,
            });
        }
        let notifier = self.notifier().ok_or(MethodsError::NotifierGone)?;
        let event = event_name(&method.name, &self.namespace);
        let pattern = Pattern::exact(event.as_str());
        let subscriber = method.subscriber_for(&self.subscriber);
        // A replaced method is swapped in one registry change: an event starting meanwhile
        // reaches the old method or the new one, exactly once.
        let subscription = match self.attached.iter().position(|a| a.method == method.name) {
            Some(at) => notifier.replace(&self.attached.remove(at).subscription, pattern, subscriber),
            None => notifier.subscribe(pattern, subscriber),
        };
        self.attached.push(Attached {
            method: method.name,
            event,
            subscription,
        });
        Ok(&self.attached.last().expect("just pushed").subscription)
    }
}

impl<T> Attachment<T> {
    /// Unsubscribes the method `name`; true when it was attached and is now removed.
    ///
    /// ```
    /// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier};
    /// struct Cache;
    /// impl NamespaceSubscriber for Cache {
    ///     fn methods() -> Methods<Cache> { Methods::new("cache").event("read", |_: &Cache, _: &Event| {}) }
    /// }
    /// let notifier = Notifier::new();
    /// let mut attached = Cache.attach_to(&notifier)?;
    /// assert!(attached.remove_method("read"));
    /// assert!(!attached.remove_method("read"));
    /// assert!(!notifier.listening("read.cache"));
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    pub fn remove_method(&mut self, name: &str) -> bool {
        match self.attached.iter().position(|a| a.method == name) {
            Some(at) => self.attached.remove(at).subscription.unsubscribe().is_ok(),
            None => false,
        }
    }

    /// Unsubscribes every method, in one registry change (AS::N's `detach_from`); returns how many
    /// subscriptions were removed (0 when called again, or when the notifier is gone).
    ///
    /// ```
    /// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier};
    /// struct Cache;
    /// impl NamespaceSubscriber for Cache {
    ///     fn methods() -> Methods<Cache> { Methods::new("cache").event("read", |_: &Cache, _: &Event| {}) }
    /// }
    /// let notifier = Notifier::new();
    /// assert_eq!(Cache.attach_to(&notifier)?.detach(), 1);
    /// assert_eq!(notifier.subscriber_count(), 0);
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    pub fn detach(&self) -> usize {
        match self.notifier() {
            Some(notifier) => notifier.unsubscribe_all(&self.subscriptions()),
            None => 0,
        }
    }

    /// The subscriber value the methods are called on.
    ///
    /// ```
    /// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier};
    /// struct Cache { name: &'static str }
    /// impl NamespaceSubscriber for Cache {
    ///     fn methods() -> Methods<Cache> { Methods::new("cache").event("read", |_: &Cache, _: &Event| {}) }
    /// }
    /// assert_eq!(Cache { name: "l1" }.attach_to(&Notifier::new())?.subscriber().name, "l1");
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    pub fn subscriber(&self) -> &Arc<T> {
        &self.subscriber
    }

    /// The namespace.
    ///
    /// ```
    /// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier};
    /// struct Cache;
    /// impl NamespaceSubscriber for Cache {
    ///     fn methods() -> Methods<Cache> { Methods::new("cache").event("read", |_: &Cache, _: &Event| {}) }
    /// }
    /// assert_eq!(Cache.attach_to(&Notifier::new())?.namespace(), "cache");
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The attached event names, in declaration order (methods added later last).
    ///
    /// ```
    /// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier};
    /// struct Cache;
    /// impl NamespaceSubscriber for Cache {
    ///     fn methods() -> Methods<Cache> { Methods::new("cache").event("read", |_: &Cache, _: &Event| {}) }
    /// }
    /// assert_eq!(Cache.attach_to(&Notifier::new())?.event_names().collect::<Vec<_>>(), ["read.cache"]);
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    pub fn event_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.attached.iter().map(|a| a.event.as_str())
    }

    /// The subscriptions, one per attached method, in the order of [`Attachment::event_names`].
    ///
    /// ```
    /// use notify_core::{subscriber::{Methods, NamespaceSubscriber}, Event, Notifier};
    /// struct Cache;
    /// impl NamespaceSubscriber for Cache {
    ///     fn methods() -> Methods<Cache> { Methods::new("cache").event("read", |_: &Cache, _: &Event| {}) }
    /// }
    /// assert_eq!(Cache.attach_to(&Notifier::new())?.subscriptions()[0].id().get(), 1);
    /// # Ok::<(), notify_core::subscriber::MethodsError>(())
    /// ```
    pub fn subscriptions(&self) -> Vec<Subscription> {
        self.attached.iter().map(|a| a.subscription.clone()).collect()
    }

    fn notifier(&self) -> Option<Notifier> {
        self.notifier.upgrade().map(Notifier::from_fanout)
    }
}

impl<T> fmt::Debug for Attachment<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attachment")
            .field("namespace", &self.namespace)
            .field("events", &self.event_names().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// An invalid [`Methods`] declaration, or an [`Attachment`] whose notifier is gone; nothing was
/// subscribed.
///
/// ```
/// use notify_core::{subscriber::{Methods, MethodsError}, Notifier};
/// let err = Methods::<()>::new("a..b").attach(std::sync::Arc::new(()), &Notifier::new()).unwrap_err();
/// assert_eq!(err, MethodsError::InvalidNamespace("a..b".into()));
/// assert_eq!(err.to_string(), "invalid namespace `a..b`: a namespace is non-empty dot-separated words without control characters");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MethodsError {
    /// The namespace is empty, starts or ends with a dot, has an empty part (`"a..b"`) or a control
    /// character.
    InvalidNamespace(String),
    /// A method name is empty, contains a dot or a control character.
    InvalidMethod {
        /// The namespace of the declaration.
        namespace: String,
        /// The method name as given.
        method: String,
    },
    /// [`Attachment::add_method`] after the notifier was dropped.
    NotifierGone,
}

/// Characters of a namespace or method name an error message quotes.
const QUOTED_CHARS: usize = 80;

impl fmt::Display for MethodsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MethodsError::InvalidNamespace(ns) => write!(
                f,
                "invalid namespace `{}`: a namespace is non-empty dot-separated words without control characters",
                Escaped::truncated(ns, QUOTED_CHARS)
            ),
            MethodsError::InvalidMethod { namespace, method } => write!(
                f,
                "invalid method `{}` in namespace `{}`: a method name is non-empty, without dots or control characters",
                Escaped::truncated(method, QUOTED_CHARS),
                Escaped::truncated(namespace, QUOTED_CHARS)
            ),
            MethodsError::NotifierGone => f.write_str("the notifier of the attachment was dropped"),
        }
    }
}

impl std::error::Error for MethodsError {}

/// `"<method>.<namespace>"`, as AS::N derives an event name from a subscriber's method.
fn event_name(method: &str, namespace: &str) -> String {
    format!("{method}.{namespace}")
}

fn validate_namespace(ns: &str) -> Result<(), MethodsError> {
    if ns.is_empty() || ns.starts_with('.') || ns.ends_with('.') || ns.contains("..") || ns.chars().any(needs_escape) {
        return Err(MethodsError::InvalidNamespace(ns.to_owned()));
    }
    Ok(())
}

fn valid_method(name: &str) -> bool {
    !name.is_empty() && !name.contains('.') && !name.chars().any(needs_escape)
}

/// Declares the [`Methods`] of a type with the event names derived from the method names, as AS::N
/// derives them: `subscriber_methods!(Metrics, "active_record", { event sql, timed instantiation })`
/// is `Methods::<Metrics>::new("active_record").event("sql", <Metrics>::sql).timed("instantiation",
/// <Metrics>::instantiation)`.
///
/// Each entry is a kind — a one-function [`Methods`] builder method: `event`, `timed`,
/// `monotonic`, `owned` — then the name of a method of the type with that kind's signature
/// (`fn sql(&self, event: &Event)` for `event`). The result is a [`Methods`], so kinds that take
/// more than one function (`evented`, `event_with`, `subscriber`) are chained after it.
///
/// ```
/// use notify_core::{context::EventContext, subscriber::{subscriber_methods, Methods, NamespaceSubscriber}, Event, Notifier, Payload};
/// use std::time::SystemTime;
///
/// struct Metrics;
/// impl Metrics {
///     fn sql(&self, _: &Event) {}
///     fn instantiation(&self, _: &str, _: SystemTime, _: SystemTime, _: notify_core::context::TransactionId, _: &Payload) {}
///     fn begin(&self, _: &str, _: &EventContext, _: &Payload) {}
///     fn commit(&self, _: &str, _: &EventContext, _: &Payload) {}
/// }
/// impl NamespaceSubscriber for Metrics {
///     fn methods() -> Methods<Metrics> {
///         subscriber_methods!(Metrics, "active_record", { event sql, timed instantiation })
///             .evented("transaction", Metrics::begin, Metrics::commit)
///     }
/// }
/// let attached = Metrics.attach_to(&Notifier::new())?;
/// assert_eq!(
///     attached.event_names().collect::<Vec<_>>(),
///     ["sql.active_record", "instantiation.active_record", "transaction.active_record"]
/// );
/// # Ok::<(), notify_core::subscriber::MethodsError>(())
/// ```
#[macro_export]
macro_rules! subscriber_methods {
    ($ty:ty, $namespace:expr, { $($kind:ident $method:ident),* $(,)? }) => {
        $crate::Methods::<$ty>::new($namespace)
            $(.$kind(::core::stringify!($method), <$ty>::$method))*
    };
}
