//! Where a layer's events go: the global notifier through a static callsite (one atomic load
//! when nobody listens), or a notifier and name of the user's choosing.

use std::borrow::Cow;
use std::sync::Arc;

use notify_core::{event::Callsite, Handle, Notifier, Payload};

#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// The global notifier and the layer's default name.
    Site(&'static Callsite),
    /// Any notifier, any name (behind one pointer: the services the layer makes are cloned
    /// per request by some frameworks, and a small clone is a cheap one).
    Named(Arc<Named>),
}

#[derive(Debug)]
pub(crate) struct Named {
    notifier: Notifier,
    name: Cow<'static, str>,
}

impl Source {
    /// True when someone may listen (exact when false).
    #[inline(always)]
    pub(crate) fn enabled(&self) -> bool {
        match self {
            Source::Site(site) => site.is_enabled(),
            Source::Named(named) => named.notifier.listening(&named.name),
        }
    }

    /// A handle, not started, when someone listens; `payload` runs only then.
    #[inline]
    pub(crate) fn handle(&self, payload: impl FnOnce() -> Payload) -> Option<Handle> {
        match self {
            Source::Site(site) => site.handle(payload),
            Source::Named(named) => Some(named.notifier.build_handle(named.name.clone(), payload())),
        }
    }

    pub(crate) fn with_name(&self, name: Cow<'static, str>) -> Source {
        let notifier = match self {
            Source::Site(_) => Notifier::global().clone(),
            Source::Named(named) => named.notifier.clone(),
        };
        Source::Named(Arc::new(Named { notifier, name }))
    }

    pub(crate) fn with_notifier(&self, notifier: Notifier) -> Source {
        let name = match self {
            Source::Site(site) => Cow::Borrowed(site.name()),
            Source::Named(named) => named.name.clone(),
        };
        Source::Named(Arc::new(Named { notifier, name }))
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            Source::Site(site) => site.name(),
            Source::Named(named) => &named.name,
        }
    }
}
