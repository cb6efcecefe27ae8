//! `/`: the recent traces, the per-name table and the latency chart.

use std::fmt::Write;

use super::{begin_page, chart, clock, end_page, human, human_ns, push_escaped};
use crate::recorder::TraceRecorder;
use crate::stats::LatencyBucket;

/// The index page: recent finished traces (newest first, each linking to `/trace/<trace id>`),
/// the per-name table (count, rate, p50/p90/p99/max over the window, and the latency buckets
/// that hold events, each linking to a recent trace with an event of that name in it, opened
/// there: `/trace/<trace id>?open=<event id>`) and the latency-over-time chart (an inline SVG).
/// Every name is HTML-escaped.
///
/// ```
/// use notify_web::{render_index, TraceRecorder, WebOptions};
/// let html = render_index(&TraceRecorder::new(WebOptions::new()));
/// assert!(html.contains("No finished traces yet"));
/// ```
pub fn render_index(recorder: &TraceRecorder) -> String {
    let traces = recorder.traces();
    let mut stats = recorder.stats();
    crate::stats::link_recent_traces(&mut stats, &traces);
    let counts = recorder.counts();
    let window = recorder.window();
    let mut out = String::with_capacity(16 * 1024);
    begin_page(&mut out, "recent traces", recorder.options().refresh);
    let _ = write!(
        out,
        "<p class=\"muted\" id=\"counts\">{} events seen · {} held in {} finished and {} unfinished traces ({} KiB with the statistics) · {} left out · {} names ({} evicted past the limit)</p>",
        counts.events,
        counts.events_held,
        traces.len(),
        counts.pending_traces,
        counts.memory_bytes / 1024,
        counts.dropped_events,
        counts.names,
        counts.evicted_names
    );

    let _ = write!(out, "<h2>Latency by event name (last {} s)</h2>", window.as_secs_f64());
    if stats.is_empty() {
        out.push_str("<p class=\"muted\">No events yet.</p>");
    } else {
        out.push_str(
            "<table id=\"names\"><thead><tr><th>name</th><th class=\"num\">count</th><th class=\"num\">in window</th>\
             <th class=\"num\">rate /s</th><th class=\"num\">p50</th><th class=\"num\">p90</th><th class=\"num\">p99</th>\
             <th class=\"num\">max</th><th>latency buckets (count · a recent trace)</th></tr></thead><tbody>",
        );
        for s in &stats {
            out.push_str("<tr class=\"name\"><td>");
            push_escaped(&mut out, &s.name);
            let _ = write!(
                out,
                "</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"buckets\">",
                s.count,
                s.window_count,
                s.rate,
                human_ns(s.p50_ns.into()),
                human_ns(s.p90_ns.into()),
                human_ns(s.p99_ns.into()),
                human_ns(s.max_ns.into())
            );
            buckets(&mut out, &s.buckets);
            out.push_str("</td></tr>");
        }
        out.push_str("</tbody></table>");
        out.push_str("<h2>p99 latency over time</h2>");
        chart::latency_chart(&mut out, &stats, window.as_secs_f64());
    }
    out.push_str("<h2>Recent traces</h2>");
    if traces.is_empty() {
        out.push_str("<p class=\"muted\">No finished traces yet.</p>");
    } else {
        out.push_str(
            "<table id=\"traces\"><thead><tr><th>started (UTC)</th><th>root</th><th class=\"num\">duration</th>\
             <th class=\"num\">events</th><th>trace id</th></tr></thead><tbody>",
        );
        for trace in &traces {
            let id = trace.trace_id().to_string();
            let _ = write!(
                out,
                "<tr class=\"trace\"><td>{}</td><td><a href=\"/trace/{id}\">",
                clock(trace.start_time())
            );
            push_escaped(&mut out, trace.root().map_or("?", |e| e.name()));
            let _ = write!(
                out,
                "</a></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"muted\">{id}</td></tr>",
                human(trace.duration()),
                trace.events().len()
            );
        }
        out.push_str("</tbody></table>");
    }

    end_page(&mut out);
    out
}

/// The latency buckets of one name: `≤ 2.50 ms · 12`, a link to the bucket's recent trace (the
/// event open in the trace view) when one is held, plain text otherwise.
fn buckets(out: &mut String, buckets: &[LatencyBucket]) {
    for bucket in buckets {
        let bound = match bucket.le_ns {
            Some(le) => format!("≤ {}", human_ns(le.into())),
            None => format!(
                "> {}",
                human_ns(crate::stats::LATENCY_BUCKETS_NS.last().copied().unwrap_or(0).into())
            ),
        };
        // Only hex digits and fixed text in the link: nothing to escape.
        match bucket.href() {
            Some(href) => {
                let _ = write!(
                    out,
                    "<a class=\"bucket\" href=\"{href}\" title=\"a recent trace in this bucket\">{bound} · {}</a> ",
                    bucket.count
                );
            }
            None => {
                let _ = write!(out, "<span class=\"bucket muted\">{bound} · {}</span> ", bucket.count);
            }
        }
    }
}
