//! [`Config`]: what the mailboxes of one subscription share.

use std::borrow::Cow;

use crate::options::{AsyncFailurePolicy, AsyncOptions, Overflow};

/// What mailboxes of one subscription share (fan-out members share one).
pub(crate) struct Config {
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) on_failure: AsyncFailurePolicy,
    pub(crate) label: Option<Cow<'static, str>>,
}

impl Config {
    pub(crate) fn of(options: &AsyncOptions) -> Config {
        Config {
            capacity: options.capacity.max(1),
            overflow: options.overflow,
            on_failure: options.on_failure,
            label: options.label.clone(),
        }
    }
}

impl Config {
    /// The label reports show (`"async"` when there is none).
    pub(crate) fn label(&self) -> Cow<'static, str> {
        self.label.clone().unwrap_or(Cow::Borrowed("async"))
    }
}
