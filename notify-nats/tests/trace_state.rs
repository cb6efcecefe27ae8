//! Issue 45 items 2 and 3 across NATS: the W3C `tracestate` of an event's trace crosses a real
//! nats-server (wire version 3 carries it per event) and is the imported event's
//! (`Event::trace_state`), as the exporting process had it; an event without one arrives without
//! one, and wire version 2 (which has no room for it) drops it. The same for the W3C baggage
//! current where an event finished (`Event::baggage`, whatever the event's trace), in version 3
//! and JSON, unless the exporter is told not to propagate it.

mod support;

use std::time::Duration;

use notify_core::baggage::Baggage;
use notify_core::context::Propagated;
use notify_core::trace_context::{TraceFlags, TraceState};
use notify_core::{Context, Event, Notifier, Pattern, Payload, TraceId};
use notify_nats::{Encoding, Exporter, ExporterBuilder, Importer, NatsOptions};
use support::{recorder, NatsServer};

const WAIT: Duration = Duration::from_secs(20);

/// Exports the two events `publish` makes on a local notifier through an exporter `configure`
/// sets up, imports them on another notifier; `read` of each imported event, by name.
fn exported_and_imported<T>(
    server: &NatsServer,
    configure: impl FnOnce(ExporterBuilder) -> ExporterBuilder,
    publish: impl FnOnce(&Notifier),
    read: impl Fn(&Event) -> T,
) -> Vec<(String, T)> {
    let remote = Notifier::new();
    let seen = recorder(&remote, Pattern::all());
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .start(&remote)
        .unwrap();
    let local = Notifier::new();
    let exporter = configure(Exporter::builder(NatsOptions::new(server.url())))
        .start()
        .unwrap();
    let _export = local.subscribe(Pattern::all(), exporter.subscriber());
    publish(&local);
    assert_eq!(exporter.flush(WAIT).unwrap().exported, 2);
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 2).events, 2);
    let mut got: Vec<(String, T)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|e| (e.name().to_owned(), read(e)))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    got
}

/// Exports one traced event with `state` and one without, with `wire_version`; the
/// `tracestate` of each as imported.
fn round_trip(server: &NatsServer, wire_version: u16, state: &TraceState) -> Vec<(String, String)> {
    let trace = TraceId::new(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736).unwrap();
    exported_and_imported(
        server,
        |b| b.wire_version(wire_version),
        |local| {
            Propagated::for_trace(trace, TraceFlags::NONE, state.clone()).in_scope(|| {
                Context::new(trace, None).in_scope(|| local.instrument("with.state", Payload::new, |_| ()))
            });
            local.instrument("without.state", Payload::new, |_| ());
        },
        |e| e.trace_state().to_string(),
    )
}

#[test]
fn i45_2_the_tracestate_of_an_exported_event_is_the_imported_events() {
    let server = NatsServer::start();
    let state: TraceState = "rojo=00f067aa0ba902b7,congo@vendor=t61rcWkgMzE".parse().unwrap();
    assert_eq!(
        round_trip(&server, 3, &state),
        [
            (
                "with.state".to_owned(),
                "rojo=00f067aa0ba902b7,congo@vendor=t61rcWkgMzE".to_owned()
            ),
            ("without.state".to_owned(), String::new()),
        ]
    );
    // Version 2 has no field for it: the events arrive, their tracestate does not.
    assert_eq!(
        round_trip(&server, 2, &state),
        [
            ("with.state".to_owned(), String::new()),
            ("without.state".to_owned(), String::new()),
        ]
    );
}

/// Exports one event finishing with `baggage` current (no trace context: baggage belongs to the
/// request, not to a trace) and one without, through an exporter `configure` sets up; the
/// baggage of each as imported.
fn baggage_round_trip(
    server: &NatsServer,
    baggage: &Baggage,
    configure: impl FnOnce(ExporterBuilder) -> ExporterBuilder,
) -> Vec<(String, Baggage)> {
    exported_and_imported(
        server,
        configure,
        |local| {
            Propagated::new()
                .with_baggage(baggage.clone())
                .in_scope(|| local.instrument("with.baggage", Payload::new, |_| ()));
            local.instrument("without.baggage", Payload::new, |_| ());
        },
        |e| e.baggage().clone(),
    )
}

#[test]
fn i45_3_the_baggage_of_an_exported_event_is_the_imported_events_unless_turned_off() {
    let server = NatsServer::start();
    let baggage: Baggage = "tenant=acme,userId=Am%C3%A9lie;ttl=60,list=a%2Cb".parse().unwrap();
    assert_eq!(baggage.len(), 3);
    let carried = [
        ("with.baggage".to_owned(), baggage.clone()),
        ("without.baggage".to_owned(), Baggage::new()),
    ];
    let none = [
        ("with.baggage".to_owned(), Baggage::new()),
        ("without.baggage".to_owned(), Baggage::new()),
    ];
    assert_eq!(baggage_round_trip(&server, &baggage, |b| b), carried, "wire version 3");
    assert_eq!(
        baggage_round_trip(&server, &baggage, |b| b.encoding(Encoding::Json)),
        carried,
        "JSON"
    );
    assert_eq!(
        baggage_round_trip(&server, &baggage, |b| b.propagate_baggage(false)),
        none,
        "not propagated"
    );
    // Version 2 has no field for it.
    assert_eq!(
        baggage_round_trip(&server, &baggage, |b| b.wire_version(2)),
        none,
        "wire version 2"
    );
}
