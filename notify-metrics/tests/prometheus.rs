//! End to end: the example's exporter, scraped by a real Prometheus server (Debian's
//! `prometheus`), read back through Prometheus' HTTP query API.
//!
//! The test starts `prometheus` on a free loopback port with a temporary configuration (scrape
//! interval 1 s, only the example's endpoint, no remote storage) and a temporary TSDB directory,
//! and kills it when it ends, also on failure.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use support::prometheus::{free_port, get, Prometheus};

mod support;

#[path = "../examples/prometheus.rs"]
#[allow(dead_code)]
mod example;

#[test]
fn prometheus_scrapes_the_examples_metrics() {
    let exporter: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let _subscription = example::install(exporter).unwrap();
    example::workload();

    // The exporter serves the series before Prometheus is involved.
    let (status, text) = get(exporter.port(), "/metrics").unwrap();
    assert_eq!(status, 200);
    assert!(
        text.contains(r#"notify_events_total{event="query.sql",table="books",outcome="error"} 2"#),
        "{text}"
    );

    let dir = tempfile::tempdir().unwrap();
    let server = Prometheus::start(dir.path(), exporter, &[]);
    let query = |q: &str| server.query(q);

    // One scrape of the target, then the series as recorded by the one workload round.
    let counts = server.wait_for(Duration::from_secs(30), "the first scrape", || {
        let series = query(r#"notify_events_total{job="notify",event="query.sql"}"#);
        (series.len() == 4).then_some(series)
    });
    let counts: BTreeMap<(String, String), f64> = counts
        .into_iter()
        .map(|(labels, value)| ((labels["table"].clone(), labels["outcome"].clone()), value))
        .collect();
    let expected: BTreeMap<(String, String), f64> = [
        (("books", "completed"), 18.0),
        (("books", "error"), 2.0),
        (("orders", "completed"), 9.0),
        (("orders", "error"), 1.0),
    ]
    .into_iter()
    .map(|((table, outcome), n)| ((table.to_owned(), outcome.to_owned()), n))
    .collect();
    assert_eq!(counts, expected);

    let requests = query(r#"notify_events_total{event="request.http",status="200",outcome="completed"}"#);
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].1, 1.0);

    // The histogram: every query observed once, each slower than 200 µs, none slower than 10 s.
    let observed = query(r#"sum(notify_event_duration_seconds_count{event="query.sql"})"#);
    assert_eq!(observed[0].1, example::QUERIES_PER_ROUND as f64);
    let fast = query(r#"sum(notify_event_duration_seconds_bucket{event="query.sql",le="0.0001"})"#);
    assert_eq!(fast[0].1, 0.0);
    let all = query(r#"sum(notify_event_duration_seconds_bucket{event="query.sql",le="10"})"#);
    assert_eq!(all[0].1, example::QUERIES_PER_ROUND as f64);
    let mean = query(
        r#"sum(notify_event_duration_seconds_sum{event="query.sql"}) / sum(notify_event_duration_seconds_count{event="query.sql"})"#,
    );
    assert!(
        mean[0].1 > 0.0002 && mean[0].1 < 1.0,
        "mean query duration {} s",
        mean[0].1
    );
}
