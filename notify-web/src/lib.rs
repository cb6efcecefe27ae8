//! A live web page for notify, as rack-mini-profiler is for Rails: the last requests, each drawn
//! as a waterfall of its events (a bar per event at its offset and duration, nested by parent,
//! coloured by namespace, the payload one click away), a per-name latency table and chart, and the
//! same data as JSON.
//!
//! * [`TraceRecorder`] keeps the traces and the per-name statistics; [`TraceRecorder::subscribe`]
//!   attaches it to a notifier through notify-export's collector ([`WebSubscription`]): on the
//!   instrumenting thread an event costs one hand-off into the collector's queue; the collector's
//!   thread hands batches to the recorder's [`TraceSink`], which groups events into traces by
//!   trace id and updates the per-name histograms; tail sampling, when set
//!   ([`WebOptions::tail_sampling`]), is a collector's too. Memory is bounded by counts (see
//!   [`WebOptions`]).
//! * [`WebServer`] serves it over HTTP/1 (hyper on a tokio runtime thread of its own, or on the
//!   host's runtime), on `127.0.0.1` unless told otherwise, optionally behind a token, with
//!   bounds on what one client can hold: request body, header and idle and response timeouts,
//!   connections (see [`WebServer`] for the table of limits and their defaults). Every name and payload value is HTML-escaped; the
//!   page needs no network and no JavaScript (charts are SVG drawn by the server, payloads are
//!   `<details>` elements).
//!
//! | path | what |
//! |---|---|
//! | `/` | recent traces, per-name table, latency-over-time chart |
//! | `/trace/<trace id>` | the waterfall of one trace |
//! | `/api/traces` | recent traces (JSON) |
//! | `/api/trace/<trace id>` | one trace with its events (JSON) |
//! | `/api/stats` | per-name statistics and the recorder's counts (JSON) |
//!
//! The JSON ([`traces_json`], [`trace_json`], [`stats_json`]) has each key once per object (a
//! trace's event count is `event_count`, its list of events `events`), and writes wall-clock
//! times as RFC 3339 UTC strings with nanoseconds (`"start": "2025-12-06T05:46:40.123456789Z"`),
//! as notify's event JSON does: nanoseconds since 1970 are above 2^53, where JavaScript (browsers,
//! `jq`) stops reading JSON numbers exactly. Durations and offsets are nanoseconds as numbers
//! (exact there up to 2^53 ns, 104 days); event ids are strings of 16 hex digits (the W3C
//! span-id form: 64-bit ids would not survive as JSON numbers), trace ids 32 hex digits.
//!
//! ```no_run
//! use notify_core::{Notifier, Pattern};
//! use notify_web::{TraceRecorder, WebOptions, WebServer};
//!
//! let recorder = TraceRecorder::new(WebOptions::new());
//! let _live = recorder.subscribe(Notifier::global(), Pattern::all());
//! let server = WebServer::start("127.0.0.1:7878", recorder)?;
//! println!("see http://{}/", server.local_addr());
//! # Ok::<(), std::io::Error>(())
//! ```

mod html;
mod json;
mod options;
mod record;
mod recorder;
mod server;
mod sink;
mod stats;
mod subscription;
mod traces;

pub use self::html::{render_index, render_trace};
pub use self::json::{stats_json, trace_json, traces_json};
pub use self::options::WebOptions;
pub use self::record::{namespace, Trace, TraceEvent};
pub use self::recorder::{RecorderCounts, TraceRecorder};
pub use self::server::{ServerCounts, WebServer};
pub use self::sink::TraceSink;
pub use self::stats::{LatencyBucket, NameStats, SlotPoint, LATENCY_BUCKETS_NS};
pub use self::subscription::WebSubscription;

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
