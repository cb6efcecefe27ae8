//! Tail sampling's ratio decides as OpenTelemetry's TraceIdRatioBased does. The stage itself, on
//! the collector (what it keeps is exported whole, the rest counted, a shutdown decides what is
//! held, its bounds), is tested once, in notify-export/tests/tail_sampling.rs.

use notify_opentelemetry::tail::TailSampling;
use notify_opentelemetry::trace_id;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::{Sampler, SamplingDecision, ShouldSample};

#[test]
fn the_ratio_decides_as_opentelemetrys_trace_id_ratio_sampler() {
    for ratio in [0.0, 0.1, 0.5, 0.9, 1.0] {
        let config = TailSampling::new().ratio(ratio);
        let sdk = Sampler::TraceIdRatioBased(ratio);
        let mut kept = 0;
        for i in 0..2_000_u128 {
            let id = notify_core::TraceId::new(i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1).unwrap();
            let sdk_keeps = sdk
                .should_sample(None, trace_id(id), "x", &SpanKind::Internal, &[], &[])
                .decision
                == SamplingDecision::RecordAndSample;
            assert_eq!(config.ratio_keeps(id), sdk_keeps, "ratio {ratio}, trace {id:?}");
            kept += usize::from(sdk_keeps);
        }
        let expected = ratio * 2_000.0;
        assert!((kept as f64 - expected).abs() <= 100.0, "ratio {ratio}: {kept}");
    }
}
