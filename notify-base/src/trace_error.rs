//! [`TraceContextError`]: why a `traceparent` or `tracestate` was not accepted (re-exported by
//! [`trace_context`](crate::trace_context)).

use std::fmt;

/// Why a `traceparent` or `tracestate` was not accepted. `extract` and [`extract_values`](crate::trace_context::extract_values) never
/// return it: they count it ([`stats`](crate::trace_context::stats)) and start a new trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceContextError {
    /// Shorter than the 55 bytes of version 00 (after trimming spaces and tabs).
    TooShort,
    /// The version is not two lowercase hex digits.
    Version,
    /// Version `ff`, which the specification forbids.
    InvalidVersion,
    /// A field is not followed by `-`.
    Separator,
    /// The trace id is not 32 lowercase hex digits.
    TraceId,
    /// The trace id is all zero.
    ZeroTraceId,
    /// The parent id is not 16 lowercase hex digits.
    ParentId,
    /// The parent id is all zero.
    ZeroParentId,
    /// The flags are not two lowercase hex digits.
    Flags,
    /// Data after the flags: for version 00 anything, for a future version anything not starting
    /// with `-`.
    TrailingData,
    /// More than one `traceparent` header.
    Duplicate,
    /// A `traceparent` header that is not text (HTTP header bytes outside visible ASCII).
    NotText,
    /// A `tracestate` list member that is not `key=value` with a valid key and value.
    TraceStateMember,
    /// More than [`TraceState::MAX_MEMBERS`](crate::trace_context::TraceState::MAX_MEMBERS) `tracestate` members.
    TraceStateTooManyMembers,
}

impl fmt::Display for TraceContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TraceContextError::TooShort => "traceparent is shorter than 55 bytes",
            TraceContextError::Version => "traceparent version is not 2 lowercase hex digits",
            TraceContextError::InvalidVersion => "traceparent version ff is invalid",
            TraceContextError::Separator => "traceparent field not followed by '-'",
            TraceContextError::TraceId => "traceparent trace-id is not 32 lowercase hex digits",
            TraceContextError::ZeroTraceId => "traceparent trace-id is all zero",
            TraceContextError::ParentId => "traceparent parent-id is not 16 lowercase hex digits",
            TraceContextError::ZeroParentId => "traceparent parent-id is all zero",
            TraceContextError::Flags => "traceparent trace-flags is not 2 lowercase hex digits",
            TraceContextError::TrailingData => "traceparent has data after its trace-flags",
            TraceContextError::Duplicate => "more than one traceparent header",
            TraceContextError::NotText => "traceparent header is not visible ASCII",
            TraceContextError::TraceStateMember => "tracestate member is not a valid key=value",
            TraceContextError::TraceStateTooManyMembers => "tracestate has more than 32 members",
        })
    }
}

impl std::error::Error for TraceContextError {}
