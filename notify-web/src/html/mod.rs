//! The HTML pages: a layout with inline CSS (no network, no JavaScript), and helpers that every
//! page uses to write text escaped.

mod chart;
mod index;
mod trace_view;

use std::fmt::Write;
use std::time::{Duration, SystemTime};

pub use self::index::render_index;
pub use self::trace_view::render_trace;

const STYLE: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1d232a;color:#fff;padding:10px 20px}header a{color:#fff;text-decoration:none;font-weight:600}
main{padding:12px 20px}h1{font-size:18px;margin:0}h2{font-size:16px;margin:18px 0 8px}
table{border-collapse:collapse;background:#fff}th,td{padding:4px 10px;border-bottom:1px solid #e3e6ea;text-align:left}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#66707a}.legend span{display:inline-block;margin-right:14px}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.waterfall{background:#fff;border:1px solid #e3e6ea}
.waterfall details{border-bottom:1px solid #eef0f2}
.waterfall summary{display:flex;align-items:center;cursor:pointer;list-style:none;padding:2px 6px}
.waterfall summary::-webkit-details-marker{display:none}
.ev-name{box-sizing:border-box;width:30%;flex:none;padding-right:8px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;font-family:ui-monospace,monospace;font-size:12px}
.ev-track{position:relative;flex:1;height:16px;background:#f3f4f6}
.ev-bar{position:absolute;top:2px;height:12px;min-width:1px;border-radius:2px}
.ev-dur{width:90px;flex:none;text-align:right;font-variant-numeric:tabular-nums;font-size:12px}
.payload{margin:4px 6px 8px 30%;background:#fafbfc;font-family:ui-monospace,monospace;font-size:12px}
.payload td{vertical-align:top;white-space:pre-wrap;word-break:break-all}
.bad{color:#b3261e;font-weight:600}
.buckets{font-size:12px;max-width:520px}.bucket{display:inline-block;white-space:nowrap;margin:1px 6px 1px 0;padding:0 4px;border-radius:3px;background:#eef2f7;font-variant-numeric:tabular-nums}
a.bucket{color:#1a4f8b;text-decoration:none}a.bucket:hover{background:#dbe6f3}
";

/// Appends `text` escaped for HTML text and double- or single-quoted attribute values.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    html_escape::encode_quoted_attribute_to_string(text, out);
}

/// Starts a page titled `title` (escaped); close it with [`end_page`].
/// The page's head and header; `refresh`: reload the page after that long (rounded up to whole
/// seconds, at least 1).
pub(crate) fn begin_page(out: &mut String, title: &str, refresh: Option<Duration>) {
    out.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    if let Some(every) = refresh {
        let seconds = every.as_secs() + u64::from(every.subsec_nanos() > 0);
        let _ = write!(out, "<meta http-equiv=\"refresh\" content=\"{}\">", seconds.max(1));
    }
    out.push_str("<meta name=\"viewport\" content=\"width=device-width\"><title>");
    push_escaped(out, title);
    out.push_str(" · notify</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body><header><a href=\"/\">notify</a> <span class=\"muted\">· ");
    push_escaped(out, title);
    out.push_str("</span></header><main>");
}

pub(crate) fn end_page(out: &mut String) {
    out.push_str("</main></body></html>");
}

/// A duration for people: `812 ns`, `45.3 µs`, `1.27 ms`, `2.50 s`.
pub(crate) fn human_ns(ns: u128) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

pub(crate) fn human(duration: Duration) -> String {
    human_ns(duration.as_nanos())
}

/// `HH:MM:SS.mmm` UTC.
pub(crate) fn clock(time: Option<SystemTime>) -> String {
    let Some(since) = time.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()) else {
        return "-".to_owned();
    };
    let secs = since.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        since.subsec_millis()
    )
}

/// A stable hue (0-359) for `key`: FNV-1a, so a namespace keeps its colour across pages and runs.
pub(crate) fn hue(key: &str) -> u32 {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (hash % 360) as u32
}

/// The CSS colour of `key` (only digits come from the key: safe inside a style attribute).
pub(crate) fn colour(key: &str) -> String {
    let mut s = String::new();
    let _ = write!(s, "hsl({},60%,48%)", hue(key));
    s
}
