//! notify events as Prometheus metrics: `metrics-exporter-prometheus` serves what
//! `notify_metrics::MetricsSubscriber` records at `http://ADDR/metrics`.
//!
//! ```sh
//! cargo run -p notify-metrics --example prometheus -- 127.0.0.1:9000
//! curl -s http://127.0.0.1:9000/metrics | grep notify_
//! ```
//!
//! Every second it runs one round of a small workload: 30 `"query.sql"` events (20 on table
//! `books`, 10 on `orders`; 3 of them fail and are recorded with outcome `error`) and one
//! `"request.http"` event. Stop it with Ctrl-C. The test `tests/prometheus.rs` runs this code
//! against a real Prometheus server.

use std::error::Error;
use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use notify_core::{Notifier, Pattern, Payload, Subscription};
use notify_metrics::{MetricsSubscriber, DURATION_BUCKETS};

/// `"query.sql"` events per round, and how many of them end in an error.
pub const QUERIES_PER_ROUND: u64 = 30;

/// Installs the Prometheus exporter (HTTP on `addr`) as the global `metrics` recorder and
/// subscribes a [`MetricsSubscriber`] labelled by `table` and `status` to every event.
pub fn install(addr: SocketAddr) -> Result<Subscription, Box<dyn Error>> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Suffix("duration_seconds".into()), DURATION_BUCKETS)?
        .install()?;
    let metrics = MetricsSubscriber::new().label("table").label("status");
    Ok(metrics.subscribe(Notifier::global(), Pattern::all()))
}

/// One round of the workload: query `i` (0..30) reads table `orders` when `i % 3 == 0`, else
/// `books`, and fails when `i % 10 == 9` (queries 9, 19 and 29: one on `orders`, two on `books`).
pub fn workload() {
    notify_core::instrument(
        "request.http",
        || Payload::new().with("path", "/books"),
        |payload| {
            for i in 0..QUERIES_PER_ROUND {
                let table = if i % 3 == 0 { "orders" } else { "books" };
                let _ = Notifier::global().instrument_result(
                    "query.sql",
                    || Payload::new().with("table", table),
                    |payload| {
                        std::thread::sleep(Duration::from_micros(200 + 50 * i));
                        if i % 10 == 9 {
                            return Err("no such column: price");
                        }
                        payload.insert("rows", i);
                        Ok(i)
                    },
                );
            }
            payload.insert("status", 200_u16);
        },
    );
}

fn main() -> Result<(), Box<dyn Error>> {
    let addr: SocketAddr = match std::env::args().nth(1) {
        Some(arg) => arg.parse().map_err(|e| format!("bad address {arg:?}: {e}"))?,
        None => ([127, 0, 0, 1], 9000).into(),
    };
    let _subscription = install(addr)?;
    eprintln!("serving notify metrics at http://{addr}/metrics (one workload round per second; Ctrl-C stops)");
    loop {
        workload();
        std::thread::sleep(Duration::from_secs(1));
    }
}
