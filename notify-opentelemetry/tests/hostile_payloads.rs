//! Payloads a user (or an attacker feeding one) can make: huge text, NaN and infinite floats,
//! control and odd Unicode characters, 10,000 fields, values nested thousands of levels deep.
//! Each becomes a span; none takes the exporter thread (or the process) down.

use std::sync::Arc;

use notify_core::{Notifier, Pattern, Payload, Value};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry::Value as OtelValue;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};

fn attribute<'a>(span: &'a SpanData, key: &str) -> &'a OtelValue {
    &span
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .unwrap_or_else(|| panic!("no {key}: {:?}", span.attributes))
        .value
}

fn nested(depth: usize) -> Value {
    let mut value = Value::from(1_u64);
    for _ in 0..depth {
        value = Value::List(vec![value]);
    }
    value
}

#[test]
fn a_value_nested_thousands_deep_is_exported_cut_at_the_nesting_limit() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let notifier = Arc::new(Notifier::new());
    let _s = exporter.subscribe(&notifier, Pattern::all());
    // Built and published where the stack is ample; the exporter thread has the default 2 MiB,
    // which `Value`'s recursive `Display` overflowed (a stack overflow aborts the process).
    let publisher = notifier.clone();
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            publisher.instrument(
                "deep.hostile",
                || {
                    Payload::new()
                        .with("deep", nested(10_000))
                        .with("shallow", nested(Value::MAX_NESTING - 1))
                },
                |_| (),
            );
        })
        .unwrap()
        .join()
        .unwrap();
    let stats = exporter.force_flush().unwrap();
    assert_eq!((stats.exported, stats.dropped()), (1, 0), "{stats}");
    let spans = memory.get_finished_spans().unwrap();
    let limit = Value::MAX_NESTING;
    let cut = format!("{}…{}", "[".repeat(limit), "]".repeat(limit));
    assert_eq!(attribute(&spans[0], "deep"), &OtelValue::from(cut));
    // 32 lists one inside the other (the depth a decoder accepts) are written whole, as `Display`.
    let whole = nested(limit).to_string();
    assert_eq!(whole, format!("{}1{}", "[".repeat(limit), "]".repeat(limit)));
    assert_eq!(attribute(&spans[0], "shallow").as_str(), nested(limit - 1).to_string());
}

#[test]
fn huge_text_odd_characters_non_finite_floats_and_10000_fields_are_exported_as_given() {
    let memory = InMemorySpanExporter::default();
    let exporter = OpenTelemetryExporter::new(memory.clone());
    let notifier = Notifier::new();
    let _s = exporter.subscribe(&notifier, Pattern::all());
    let huge = "x".repeat(8 << 20);
    let odd = "\u{0}\u{feff}\u{202e}\r\n\x1b[31m\u{fffd}\u{10ffff}é";
    notifier.instrument(
        "hostile.payload",
        || {
            let mut payload = Payload::new()
                .with("huge", huge.clone())
                .with(odd.to_owned(), odd.to_owned())
                .with("nan", f64::NAN)
                .with("inf", f64::NEG_INFINITY)
                .with("u64", u64::MAX)
                .with("u128", u128::MAX)
                .with(
                    "map",
                    Payload::new().with("list", vec![Value::from(f64::NAN), Value::from(odd)]),
                );
            for k in 0..10_000 {
                payload.insert(format!("k{k}"), k as u64);
            }
            payload
        },
        |_| (),
    );
    let stats = exporter.force_flush().unwrap();
    assert_eq!((stats.exported, stats.dropped()), (1, 0), "{stats}");
    let spans = memory.get_finished_spans().unwrap();
    let span = &spans[0];
    assert_eq!(span.attributes.len(), 7 + 10_000);
    assert_eq!(attribute(span, "huge").as_str().len(), 8 << 20);
    assert_eq!(attribute(span, odd).as_str(), odd);
    assert!(matches!(attribute(span, "nan"), OtelValue::F64(v) if v.is_nan()));
    assert_eq!(attribute(span, "inf"), &OtelValue::F64(f64::NEG_INFINITY));
    assert_eq!(attribute(span, "u64").as_str(), u64::MAX.to_string());
    assert_eq!(attribute(span, "u128").as_str(), u128::MAX.to_string());
    assert_eq!(attribute(span, "map").as_str(), format!("{{list: [NaN, {odd}]}}"));
    assert_eq!(attribute(span, "k9999"), &OtelValue::I64(9_999));
}
