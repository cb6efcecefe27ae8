//! [`TraceFlags`]: the `trace-flags` byte of a W3C `traceparent` (re-exported by
//! [`trace_context`](crate::trace_context)).

use std::fmt;

/// The `trace-flags` byte of a [`TraceParent`](crate::trace_context::TraceParent). Bit 0 is *sampled*: the caller may have recorded
/// the trace, and [`Context::from_traceparent`](crate::Context::from_traceparent) takes it as the trace's sampling decision. Bit 1
/// is Level 2's *random* flag: the trace id's right-most 7 bytes are random (notify sets it for
/// the traces it starts, and passes on what it receives). A parsed header keeps the other bits as
/// received; headers notify sends carry only these two.
///
/// ```
/// use notify_core::trace_context::TraceFlags;
/// assert!(TraceFlags::SAMPLED.is_sampled());
/// assert!(!TraceFlags::NONE.is_sampled());
/// assert_eq!(TraceFlags::new(0x03).with_sampled(false).bits(), 0x02);
/// assert_eq!(TraceFlags::SAMPLED.to_string(), "01");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceFlags(u8);

impl TraceFlags {
    /// No flag set: not sampled.
    pub const NONE: TraceFlags = TraceFlags(0);
    /// The sampled flag (`01`).
    pub const SAMPLED: TraceFlags = TraceFlags(0x01);
    /// Level 2's random trace id flag (`02`).
    pub const RANDOM: TraceFlags = TraceFlags(0x02);

    /// The flags of this byte.
    pub const fn new(bits: u8) -> TraceFlags {
        TraceFlags(bits)
    }

    /// The byte.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// True when the sampled bit is set.
    pub const fn is_sampled(self) -> bool {
        self.0 & TraceFlags::SAMPLED.0 != 0
    }

    /// True when Level 2's random trace id bit is set.
    pub const fn is_random(self) -> bool {
        self.0 & TraceFlags::RANDOM.0 != 0
    }

    /// The same flags with the random bit set or cleared.
    #[must_use]
    pub const fn with_random(self, random: bool) -> TraceFlags {
        if random {
            TraceFlags(self.0 | TraceFlags::RANDOM.0)
        } else {
            TraceFlags(self.0 & !TraceFlags::RANDOM.0)
        }
    }

    /// Only the flags this version of the specification defines (sampled, random): what goes
    /// out ("vendors MUST set those to zero" for the others).
    #[must_use]
    pub const fn known(self) -> TraceFlags {
        TraceFlags(self.0 & (TraceFlags::SAMPLED.0 | TraceFlags::RANDOM.0))
    }

    /// The same flags with the sampled bit set or cleared.
    #[must_use]
    pub const fn with_sampled(self, sampled: bool) -> TraceFlags {
        if sampled {
            TraceFlags(self.0 | TraceFlags::SAMPLED.0)
        } else {
            TraceFlags(self.0 & !TraceFlags::SAMPLED.0)
        }
    }
}

impl fmt::Display for TraceFlags {
    /// Two lowercase hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x}", self.0)
    }
}
