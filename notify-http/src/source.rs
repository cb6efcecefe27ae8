//! Where a layer's events go: the global notifier through a static callsite (one atomic load
//! when nobody listens), or a notifier and name of the user's choosing.

use std::borrow::Cow;

use notify_core::{Callsite, Handle, Notifier, Payload};

#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// The global notifier and the layer's default name.
    Site(&'static Callsite),
    /// Any notifier, any name.
    Named {
        notifier: Notifier,
        name: Cow<'static, str>,
    },
}

impl Source {
    /// True when someone may listen (exact when false).
    #[inline(always)]
    pub(crate) fn enabled(&self) -> bool {
        match self {
            Source::Site(site) => site.is_enabled(),
            Source::Named { notifier, name } => notifier.listening(name),
        }
    }

    /// A handle, not started, when someone listens; `payload` runs only then.
    #[inline]
    pub(crate) fn handle(&self, payload: impl FnOnce() -> Payload) -> Option<Handle> {
        match self {
            Source::Site(site) => site.handle(payload),
            Source::Named { notifier, name } => Some(notifier.build_handle(name.clone(), payload())),
        }
    }

    pub(crate) fn with_name(&self, name: Cow<'static, str>) -> Source {
        let notifier = match self {
            Source::Site(_) => Notifier::global().clone(),
            Source::Named { notifier, .. } => notifier.clone(),
        };
        Source::Named { notifier, name }
    }

    pub(crate) fn with_notifier(&self, notifier: Notifier) -> Source {
        let name = match self {
            Source::Site(site) => Cow::Borrowed(site.name()),
            Source::Named { name, .. } => name.clone(),
        };
        Source::Named { notifier, name }
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            Source::Site(site) => site.name(),
            Source::Named { name, .. } => name,
        }
    }
}
