//! `/trace/<trace id>`: the waterfall of one trace.

use std::collections::BTreeSet;
use std::fmt::Write;

use notify_core::event::{EventId, Outcome};

use super::{begin_page, clock, colour, end_page, human, push_escaped};
use crate::json::SpanId;
use crate::record::Trace;

/// The waterfall of `trace`: one row per event, depth-first by parent (children indented under
/// their parent, by start time), a bar at the event's offset from the trace's start and as wide
/// as its duration, coloured by namespace; a click on a row opens its payload (a `<details>`
/// element: no JavaScript); the event whose id is `open_event` starts open (`/trace/<id>?open=<event
/// id>` links to it). Event ids are written as 16 hex digits (the W3C span-id form, as in the
/// JSON): the row of event `e` has the HTML id `event-<16 hex digits>`. Every name and payload key and value is HTML-escaped.
///
/// ```
/// use notify_core::{Notifier, Payload};
/// use notify_web::{render_trace, TraceRecorder, WebOptions};
/// let notifier = Notifier::new();
/// let recorder = TraceRecorder::new(WebOptions::new());
/// let r = recorder.clone();
/// let _s = notifier.subscribe(notify_core::Pattern::all(), notify_core::Subscriber::event(move |e: &notify_core::Event| r.record(e)));
/// notifier.instrument("request.app", || Payload::new().with("path", "/a?b=<c>"), |_| ());
/// let html = render_trace(&recorder.traces()[0], None);
/// assert!(html.contains("/a?b=&lt;c&gt;"));
/// ```
pub fn render_trace(trace: &Trace, open_event: Option<EventId>) -> String {
    let tree = trace.tree();
    let start = trace.start();
    let total = trace.duration().as_nanos().max(1) as f64;
    let mut out = String::with_capacity(512 + tree.len() * 600);
    let title = match trace.root() {
        Some(root) => format!("trace {} · {}", trace.trace_id(), root.name()),
        None => format!("trace {}", trace.trace_id()),
    };
    begin_page(&mut out, &title, None);
    out.push_str("<h1 id=\"trace-title\">");
    push_escaped(&mut out, trace.root().map_or("(root not finished)", |e| e.name()));
    let _ = write!(
        out,
        "</h1><p class=\"muted\">trace {} · started {} UTC · {} · {} events{}{}</p>",
        trace.trace_id(),
        clock(trace.start_time()),
        human(trace.duration()),
        tree.len(),
        if trace.dropped_events() > 0 {
            format!(" · {} left out", trace.dropped_events())
        } else {
            String::new()
        },
        if trace.is_complete() { "" } else { " · unfinished" }
    );

    let namespaces: BTreeSet<&str> = tree.iter().map(|(_, e)| e.namespace()).collect();
    out.push_str("<p class=\"legend\">");
    for ns in namespaces {
        let _ = write!(
            out,
            "<span><i class=\"swatch\" style=\"background:{}\"></i>",
            colour(ns)
        );
        push_escaped(&mut out, ns);
        out.push_str("</span>");
    }
    out.push_str("</p><div class=\"waterfall\" id=\"waterfall\">");
    for (depth, event) in &tree {
        let offset = start.map_or(0, |s| event.start().saturating_duration_since(s).as_nanos()) as f64;
        let left = 100.0 * offset / total;
        let width = (100.0 * event.duration().as_nanos() as f64 / total).min(100.0 - left);
        let _ = write!(
            out,
            "<details class=\"event\" id=\"event-{}\" data-depth=\"{depth}\"{}><summary><span class=\"ev-name\" style=\"padding-left:{}px\">",
            SpanId(event.id()),
            if open_event == Some(event.id()) { " open" } else { "" },
            6 + depth * 14
        );
        push_escaped(&mut out, event.name());
        let _ = write!(
            out,
            "</span><span class=\"ev-track\"><span class=\"ev-bar\" style=\"left:{left:.3}%;width:{width:.3}%;background:{}\"></span></span>\
             <span class=\"ev-dur\">{}</span></summary><table class=\"payload\"><tbody>",
            colour(event.namespace()),
            human(event.duration())
        );
        let _ = write!(
            out,
            "<tr><td class=\"muted\">offset</td><td>{}</td></tr><tr><td class=\"muted\">event id</td><td>{}</td></tr>",
            super::human_ns(offset as u128),
            SpanId(event.id())
        );
        match event.outcome() {
            Outcome::Completed => {}
            other => {
                let _ = write!(
                    out,
                    "<tr><td class=\"muted\">outcome</td><td class=\"bad\">{other:?}</td></tr>"
                );
            }
        }
        for (key, value) in event.payload() {
            out.push_str("<tr><td class=\"muted\">");
            push_escaped(&mut out, key);
            out.push_str("</td><td>");
            push_escaped(&mut out, value);
            out.push_str("</td></tr>");
        }
        if event.is_truncated() {
            out.push_str(
                "<tr><td class=\"muted\">…</td><td class=\"muted\">payload cut to fit the recorder's limit</td></tr>",
            );
        }
        out.push_str("</tbody></table></details>");
    }
    out.push_str("</div><p><a href=\"/\">← recent traces</a></p>");
    end_page(&mut out);
    out
}
