//! [`Sampler`]: head sampling, the decision made once per trace by its local root.

use crate::trace_id::TraceId;

/// Which traces a notifier keeps for export: OpenTelemetry's parent-based `TraceIdRatioBased`.
///
/// A trace's sampling decision is made once, by its local root (an event with no parent in this
/// process, or whose context carries no decision): the trace id's low 64 bits, shifted right by
/// one, are compared with `ratio × 2⁶³`, as OpenTelemetry's SDKs do, so every process with the same
/// ratio decides the same for a trace and a trace is kept or dropped whole. Every descendant
/// inherits the decision (across threads and tasks with the [`Context`](crate::Context)); a
/// context read from a W3C `traceparent` carries the caller's decision (its *sampled* flag), which
/// wins over the ratio; [`Context::traceparent`](crate::Context::traceparent) sends it on.
///
/// Unsampled events are still delivered to every in-process subscriber (logs, metrics,
/// `capture_notifications`): [`Event::is_sampled`](crate::Event::is_sampled) and
/// [`EventContext::is_sampled`](crate::EventContext::is_sampled) say which they are, and
/// exporters (notify-opentelemetry, notify-nats, notify-web) skip them.
///
/// ```
/// use notify_core::{export::Sampler, Context, Notifier, Payload};
/// let notifier = Notifier::new();
/// notifier.set_sampler(Sampler::ratio(0.25));
/// notifier.subscribe("request.app", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
/// let kept = (0..10_000)
///     .filter(|_| notifier.instrument("request.app", Payload::new, |_| Context::current().is_sampled() == Some(true)))
///     .count();
/// assert!((2_200..=2_800).contains(&kept), "{kept}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampler {
    ratio: f64,
    /// Sampled when `low 64 bits >> 1 < threshold`; `1 << 63` keeps everything.
    threshold: u64,
}

/// The threshold that keeps every trace (`low >> 1` is below 2⁶³).
pub(crate) const ALWAYS: u64 = 1 << 63;

impl Sampler {
    /// Keeps every trace (the default).
    pub const fn always() -> Sampler {
        Sampler {
            ratio: 1.0,
            threshold: ALWAYS,
        }
    }

    /// Keeps the traces whose trace id falls in `ratio` (0.0 to 1.0) of the id space: 1.0 or more
    /// keeps every trace, 0.0 or less (and NaN, as OpenTelemetry's `prob.max(0.0)` makes it)
    /// none.
    ///
    /// ```
    /// use notify_core::{export::Sampler, TraceId};
    /// let trace = TraceId::new(0x4bf92f3577b34da6_a3ce929d0e0e4736).unwrap();
    /// assert!(Sampler::ratio(1.0).is_sampled(trace));
    /// assert!(!Sampler::ratio(0.0).is_sampled(trace));
    /// // Low 64 bits 0xa3ce929d0e0e4736 >> 1 = 0x51e7_494e_8707_239b, 64.0% of 2^63.
    /// assert!(Sampler::ratio(0.65).is_sampled(trace));
    /// assert!(!Sampler::ratio(0.63).is_sampled(trace));
    /// ```
    pub fn ratio(ratio: f64) -> Sampler {
        if ratio >= 1.0 {
            return Sampler::always();
        }
        // As opentelemetry-sdk's `sample_based_on_probability`: a float-to-int cast (saturating,
        // NaN to 0).
        let threshold = (ratio.max(0.0) * ALWAYS as f64) as u64;
        Sampler {
            ratio: ratio.max(0.0),
            threshold,
        }
    }

    /// The ratio of traces kept (1.0 for [`Sampler::always`]).
    pub fn sampling_ratio(&self) -> f64 {
        self.ratio
    }

    /// The decision for a local root of `trace_id`.
    pub fn is_sampled(&self, trace_id: TraceId) -> bool {
        decide(trace_id, self.threshold)
    }

    pub(crate) fn threshold(&self) -> u64 {
        self.threshold
    }

    pub(crate) fn from_threshold(threshold: u64) -> Sampler {
        if threshold >= ALWAYS {
            Sampler::always()
        } else {
            Sampler {
                ratio: threshold as f64 / ALWAYS as f64,
                threshold,
            }
        }
    }
}

impl Default for Sampler {
    fn default() -> Sampler {
        Sampler::always()
    }
}

/// The decision for a root of `trace_id` under `threshold`.
#[inline(always)]
pub(crate) fn decide(trace_id: TraceId, threshold: u64) -> bool {
    ((trace_id.get() as u64) >> 1) < threshold
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_id::Rng;

    #[test]
    fn a_ratio_keeps_its_share_of_random_trace_ids_within_a_computed_bound() {
        let mut state = Rng::seeded().state();
        let n = 100_000_u32;
        let sampler = Sampler::ratio(0.25);
        let kept = (0..n).filter(|_| sampler.is_sampled(Rng::trace_id(&mut state))).count();
        // Binomial(100,000, 0.25): sd = sqrt(n p (1 - p)) = 136.9; 6 sd = 822 (a false failure
        // about once in 10^9 runs).
        let (expected, bound) = (25_000_f64, 6.0 * (f64::from(n) * 0.25 * 0.75).sqrt());
        assert!(
            (kept as f64 - expected).abs() <= bound,
            "kept {kept}, expected {expected} ± {bound:.0}"
        );
    }

    #[test]
    fn the_same_trace_id_gets_the_same_decision_from_two_samplers() {
        let (a, b) = (Sampler::ratio(0.5), Sampler::ratio(0.5));
        let mut state = Rng::seeded().state();
        let mut kept = 0;
        for _ in 0..10_000 {
            let trace = Rng::trace_id(&mut state);
            assert_eq!(a.is_sampled(trace), b.is_sampled(trace));
            kept += usize::from(a.is_sampled(trace));
        }
        assert!(kept > 0 && kept < 10_000);
    }

    /// Two notifiers (as two processes) with one ratio decide the same for each trace id that
    /// reaches them undecided, and the decision is the trace's: children inherit it.
    #[test]
    fn two_notifiers_decide_the_same_for_the_same_trace_id() {
        use crate::{Context, Notifier, Payload, Subscriber};
        let (a, b) = (Notifier::new(), Notifier::new());
        for n in [&a, &b] {
            n.set_sampler(Sampler::ratio(0.3));
            let _ = n.subscribe(crate::Pattern::all(), Subscriber::event(|_: &crate::Event| {}));
        }
        let decide = |n: &Notifier, trace: TraceId| {
            Context::new(trace, None).in_scope(|| {
                n.instrument("root", Payload::new, |_| {
                    let child = n.instrument("child", Payload::new, |_| Context::current().is_sampled());
                    assert_eq!(child, Context::current().is_sampled(), "the child inherits");
                    child.unwrap()
                })
            })
        };
        let mut state = Rng::seeded().state();
        let mut kept = 0;
        for _ in 0..2_000 {
            let trace = Rng::trace_id(&mut state);
            let (x, y) = (decide(&a, trace), decide(&b, trace));
            assert_eq!((x, y), (Sampler::ratio(0.3).is_sampled(trace), x), "{trace}");
            kept += usize::from(x);
        }
        assert!((400..=800).contains(&kept), "{kept} of 2,000 at 0.3");
    }

    /// An incoming W3C sampled flag wins over the local ratio, both ways.
    #[test]
    fn an_incoming_sampled_flag_wins_over_the_ratio() {
        use crate::{Context, EventId, Notifier, Payload, Subscriber};
        let notifier = Notifier::new();
        let _ = notifier.subscribe("req", Subscriber::event(|_: &crate::Event| {}));
        let trace = TraceId::new(u128::MAX).unwrap(); // dropped by any ratio below 1
        notifier.set_sampler(Sampler::ratio(0.0));
        let under =
            |context: Context| context.in_scope(|| notifier.instrument("req", Payload::new, |_| Context::current()));
        let kept = under(Context::remote(trace, EventId::new(5), true));
        assert_eq!(kept.is_sampled(), Some(true));
        assert_eq!(kept.traceparent().unwrap().flags().bits(), 1);
        notifier.set_sampler(Sampler::always());
        let dropped = under(Context::remote(trace, EventId::new(5), false));
        assert_eq!(dropped.is_sampled(), Some(false));
        assert_eq!(dropped.traceparent().unwrap().flags().bits(), 0);
        assert_eq!(notifier.sampler(), Sampler::always());
    }

    #[test]
    fn the_arithmetic_is_opentelemetrys() {
        // opentelemetry-sdk: upper bound = (p * 2^63) as u64; sampled when (low64 >> 1) < bound.
        let edge = |low: u64| TraceId::new(u128::from(low) | (1 << 100)).unwrap();
        let half = Sampler::ratio(0.5);
        assert_eq!(half.threshold(), 1 << 62);
        assert!(
            half.is_sampled(edge((1 << 63) - 2)),
            "(2^63 - 2) >> 1 = 2^62 - 1 < 2^62"
        );
        assert!(!half.is_sampled(edge(1 << 63)), "2^63 >> 1 = 2^62, not below");
        assert!(Sampler::always().is_sampled(edge(u64::MAX)));
        assert!(!Sampler::ratio(0.0).is_sampled(edge(0)));
        assert!(!Sampler::ratio(f64::NAN).is_sampled(edge(0)));
        assert_eq!(Sampler::ratio(7.0), Sampler::always());
        assert_eq!(Sampler::ratio(-1.0).sampling_ratio(), 0.0);
        assert_eq!(Sampler::from_threshold(half.threshold()).sampling_ratio(), 0.5);
    }
}
