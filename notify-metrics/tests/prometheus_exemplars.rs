//! Issue 48 item 2: a real Prometheus server (Debian's `prometheus`, exemplar storage on)
//! scrapes `PrometheusExporter`'s endpoint, and its `/api/v1/query_exemplars` gives back the
//! trace ids of the requests this test made through a real axum server (notify-http's
//! `ServerLayer`) and a real hyper client (notify-http's `ClientLayer`) on loopback.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use notify_metrics::PrometheusExporter;
use serde_json::Value as Json;
use support::prometheus::{encode, labels_of, Prometheus};
use support::{client, fetch, serve, Captured};

/// Per exemplar Prometheus stored for the series `metric` selects: (series labels, trace_id,
/// span_id).
fn stored_exemplars(prometheus: &Prometheus, metric: &str) -> Vec<(BTreeMap<String, String>, String, String)> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let path = format!(
        "/api/v1/query_exemplars?query={}&start={}&end={}",
        encode(metric),
        now - 600,
        now + 600
    );
    let Some(Json::Array(series)) = prometheus.api(&path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in &series {
        let labels = labels_of(&s["seriesLabels"]);
        for exemplar in s["exemplars"].as_array().unwrap() {
            let l = labels_of(&exemplar["labels"]);
            out.push((labels.clone(), l["trace_id"].clone(), l["span_id"].clone()));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i48_2_prometheus_stores_the_exemplars_of_the_requests_made() {
    let captured = Captured::new();
    let metrics = PrometheusExporter::new()
        .notifier(&captured.notifier)
        .serve("127.0.0.1:0")
        .unwrap();
    let app = serve(&captured.notifier).await;
    let client = client(&captured.notifier);
    // Each request alone in its bucket of its series (bounds 0.005, 0.01, ..., 0.05, 0.075, 0.1,
    // 0.25, ...), so each is the exemplar of its bucket.
    for ms in [0, 30, 150] {
        assert_eq!(fetch(&client, format!("http://{app}/books/{ms}?ms={ms}")).await, 200);
    }
    assert_eq!(fetch(&client, format!("http://{app}/fail")).await, 500);
    let server_events = loop {
        let events = captured.named("request.http");
        if events.len() == 4 {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let made: BTreeMap<String, String> = server_events
        .iter()
        .map(|e| (e.trace_id().to_string(), e.id().to_string()))
        .collect();
    assert_eq!(made.len(), 4, "four requests, four traces");

    let target = metrics.local_addr().unwrap();
    let stored = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let prometheus = Prometheus::start(dir.path(), target, &["--enable-feature=exemplar-storage"]);
        let server = prometheus.wait_for(Duration::from_secs(60), "the 4 requests' exemplars", || {
            let stored = stored_exemplars(&prometheus, "http_server_request_duration_seconds_bucket");
            let traces: BTreeSet<&String> = stored.iter().map(|(_, trace, _)| trace).collect();
            (traces.len() >= 4).then_some(stored)
        });
        let client = stored_exemplars(&prometheus, "http_client_request_duration_seconds_bucket");
        let count = prometheus.query(r#"sum(http_server_request_duration_seconds_count{job="notify"})"#);
        (server, client, count)
    })
    .await
    .unwrap();
    let (server, client_exemplars, count) = stored;

    // Exactly the four requests' traces, each pointing to its server event (the span id).
    let traces: BTreeMap<String, String> = server
        .iter()
        .map(|(_, trace, span)| (trace.clone(), span.clone()))
        .collect();
    assert_eq!(traces, made);
    // Each in the series and bucket of its request.
    for (labels, trace, _) in &server {
        let event = server_events
            .iter()
            .find(|e| e.trace_id().to_string() == *trace)
            .unwrap();
        let path = event.payload().get("url.path").and_then(|v| v.as_str()).unwrap();
        let route = if path == "/fail" { "/fail" } else { "/books/{id}" };
        assert_eq!(labels["http_route"], route, "{labels:?}");
        assert_eq!(labels["job"], "notify");
        let le: f64 = labels["le"].parse().unwrap();
        assert!(
            event.duration().as_secs_f64() <= le,
            "{labels:?} {:?}",
            event.duration()
        );
    }
    // The client's exemplars are the same traces (the client event is each trace's root).
    let client_traces: BTreeSet<&String> = client_exemplars.iter().map(|(_, trace, _)| trace).collect();
    assert_eq!(client_traces, made.keys().collect::<BTreeSet<_>>());
    assert_eq!(count.len(), 1);
    assert_eq!(count[0].1, 4.0);
}
