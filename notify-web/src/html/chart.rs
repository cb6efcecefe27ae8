//! The latency-over-time chart: an inline SVG drawn on the server, p99 per slot per name on a
//! logarithmic axis, one line per name (the 8 busiest names in the window).

use std::fmt::Write;

use super::{colour, human_ns, push_escaped};
use crate::stats::NameStats;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 30.0;
const LINES: usize = 8;

pub(super) fn latency_chart(out: &mut String, stats: &[NameStats], window_secs: f64) {
    let mut busiest: Vec<&NameStats> = stats.iter().filter(|s| !s.series.is_empty()).collect();
    busiest.sort_by(|a, b| b.window_count.cmp(&a.window_count).then(a.name.cmp(&b.name)));
    busiest.truncate(LINES);
    let values = busiest.iter().flat_map(|s| s.series.iter().map(|p| p.p99_ns.max(1)));
    let (low, high) = values.fold((u64::MAX, 1), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let low_decade = (low.max(1) as f64).log10().floor();
    let high_decade = ((high as f64).log10().ceil()).max(low_decade + 1.0);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |seconds_ago: f64| LEFT + plot_w * (1.0 - (seconds_ago / window_secs).clamp(0.0, 1.0));
    let y = |ns: u64| {
        let v = (ns.max(1) as f64).log10();
        TOP + plot_h * (1.0 - (v - low_decade) / (high_decade - low_decade))
    };
    let _ = write!(
        out,
        "<svg id=\"latency-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"p99 latency per event name over the window\" \
         style=\"background:#fff;border:1px solid #e3e6ea\" font-size=\"11\" font-family=\"system-ui,sans-serif\">"
    );
    let mut decade = low_decade;
    while decade <= high_decade {
        let ns = 10_f64.powf(decade) as u64;
        let gy = y(ns);
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{gy:.1}\" y2=\"{gy:.1}\" stroke=\"#e3e6ea\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#66707a\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            gy + 4.0,
            human_ns(ns.into())
        );
        decade += 1.0;
    }
    for (label, at) in [(format!("-{window_secs:.0} s"), window_secs), ("now".to_owned(), 0.0)] {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#66707a\">{label}</text>",
            x(at),
            HEIGHT - 10.0
        );
    }
    for (row, s) in busiest.iter().enumerate() {
        let stroke = colour(&s.name);
        let points: Vec<String> = s
            .series
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.seconds_ago), y(p.p99_ns)))
            .collect();
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{stroke}\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        );
        for p in &s.series {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{stroke}\"><title>",
                x(p.seconds_ago),
                y(p.p99_ns)
            );
            push_escaped(out, &s.name);
            let _ = write!(
                out,
                ": p99 {} p50 {} ({} events)</title></circle>",
                human_ns(p.p99_ns.into()),
                human_ns(p.p50_ns.into()),
                p.count
            );
        }
        let ly = TOP + 14.0 + row as f64 * 16.0;
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{stroke}\"/><text x=\"{}\" y=\"{:.1}\">",
            WIDTH - RIGHT + 12.0,
            ly - 9.0,
            WIDTH - RIGHT + 26.0,
            ly
        );
        push_escaped(out, &s.name);
        out.push_str("</text>");
    }
    out.push_str("</svg>");
}
