//! The errors of the public API. Nothing in notify panics on bad input; it returns one of these.

use std::fmt;

use crate::escape::Escaped;

/// A pattern that could not be compiled. Names the pattern and, when known, the byte offset of the
/// problem. Subscribing never happened.
///
/// ```
/// let err = notify_core::Pattern::glob("query.sql").unwrap_err();
/// assert_eq!(err.to_string(), "invalid glob pattern `query.sql`: it has no `*`; use Pattern::exact for one name");
/// # #[cfg(feature = "regex")] {
/// // With the feature `regex`:
/// let err = notify_core::Pattern::regex("a[").unwrap_err();
/// assert_eq!(err.pattern(), "a[");
/// assert_eq!(err.position(), Some(1));
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    kind: &'static str,
    pattern: String,
    position: Option<usize>,
    message: String,
}

impl PatternError {
    pub(crate) fn new(kind: &'static str, pattern: &str, position: Option<usize>, message: &str) -> PatternError {
        PatternError {
            kind,
            pattern: pattern.to_owned(),
            position,
            message: message.to_owned(),
        }
    }

    /// The pattern as given.
    ///
    /// ```
    /// assert_eq!(notify_core::Pattern::glob("query.sql").unwrap_err().pattern(), "query.sql");
    /// ```
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Byte offset in the pattern where the problem starts, when known (regular expressions; a
    /// glob's error has none).
    ///
    /// ```
    /// assert_eq!(notify_core::Pattern::glob("query.sql").unwrap_err().position(), None);
    /// # #[cfg(feature = "regex")]
    /// assert_eq!(notify_core::Pattern::regex("ab)").unwrap_err().position(), Some(2));
    /// ```
    pub fn position(&self) -> Option<usize> {
        self.position
    }

    /// What is wrong, without the pattern.
    ///
    /// ```
    /// assert_eq!(notify_core::Pattern::glob("").unwrap_err().message(), "the pattern is empty");
    /// # #[cfg(feature = "regex")]
    /// assert_eq!(notify_core::Pattern::regex("(").unwrap_err().message(), "unclosed group");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Characters of the pattern an error message quotes; longer patterns are cut (with their length).
pub(crate) const QUOTED_PATTERN_CHARS: usize = 80;
/// Characters of the underlying message an error message quotes.
pub(crate) const QUOTED_MESSAGE_CHARS: usize = 200;

/// One line: the pattern is quoted escaped and, beyond 80 characters, truncated
/// (`…[N bytes]`); the message is escaped and cut at 200 characters. [`PatternError::pattern`]
/// keeps the whole pattern.
///
/// ```
/// let err = notify_core::Pattern::glob(&"a".repeat(1 << 20)).unwrap_err();
/// assert_eq!(err.to_string(), format!("invalid glob pattern `{}…[1048576 bytes]`: it has no `*`; use Pattern::exact for one name", "a".repeat(80)));
/// assert_eq!(err.pattern().len(), 1048576);
/// # #[cfg(feature = "regex")] {
/// // With the feature `regex`:
/// let err = notify_core::Pattern::regex(&format!("{}(", "a".repeat(1 << 20))).unwrap_err();
/// assert_eq!(err.to_string(), format!("invalid regex pattern `{}…[1048577 bytes]` at byte 1048576: unclosed group", "a".repeat(80)));
/// # }
/// ```
impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} pattern `{}`",
            self.kind,
            Escaped::truncated(&self.pattern, QUOTED_PATTERN_CHARS)
        )?;
        if let Some(at) = self.position {
            write!(f, " at byte {at}")?;
        }
        write!(f, ": {}", Escaped::truncated(&self.message, QUOTED_MESSAGE_CHARS))
    }
}

impl std::error::Error for PatternError {}

/// Misuse of a [`Handle`](crate::Handle) or a [`Subscription`](crate::Subscription).
///
/// ```
/// use notify_core::{Notifier, NotifyError, Payload};
/// let notifier = Notifier::new();
/// let mut handle = notifier.build_handle("x", Payload::new());
/// assert_eq!(handle.finish(), Err(NotifyError::NotStarted));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotifyError {
    /// `start` was called on a handle that was already started.
    AlreadyStarted,
    /// `finish` was called on a handle that was already finished.
    AlreadyFinished,
    /// `finish` was called on a handle that was never started, or
    /// [`Instrumenter::finish`](crate::Instrumenter::finish) found no event of that name open on
    /// this thread.
    NotStarted,
    /// The subscription was already removed (by an earlier `unsubscribe`, by name, or by the
    /// detach failure policy), or its notifier is gone.
    NotFound,
}

impl fmt::Display for NotifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotifyError::AlreadyStarted => "the handle was already started",
            NotifyError::AlreadyFinished => "the handle was already finished",
            NotifyError::NotStarted => {
                "the event was never started (a handle finished before `start`, or \
                 `Instrumenter::finish` with no event of that name open on this thread)"
            }
            NotifyError::NotFound => "subscription not found: it was already removed",
        })
    }
}

impl std::error::Error for NotifyError {}
