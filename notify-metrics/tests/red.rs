//! RED metrics without code (issue 47 item 3) and their exemplars (issue 48 item 1): a real
//! axum server with notify-http's `ServerLayer`, a real hyper client behind its `ClientLayer`,
//! and `PrometheusExporter`'s OpenMetrics text read back over HTTP.

mod support;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use notify_core::export::{Sampler, TailSampling};
use notify_core::{Event, Notifier, Payload};
use notify_metrics::{ExemplarFilter, PrometheusExporter, PrometheusStats, OPENMETRICS_CONTENT_TYPE};
use support::{client, exemplars, fetch, serve, Captured};

/// `METHOD path` over HTTP/1.0: (status line, headers, body).
fn request(addr: SocketAddr, method: &str, path: &str) -> (String, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_owned(), headers.to_ascii_lowercase(), body.to_owned())
}

fn trace_ids(events: &[Event]) -> BTreeSet<String> {
    events.iter().map(|e| e.trace_id().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i47_3_server_and_client_requests_are_red_histograms_with_semconv_names() {
    let captured = Captured::new();
    let metrics = PrometheusExporter::new()
        .notifier(&captured.notifier)
        .serve("127.0.0.1:0")
        .unwrap();
    let app = serve(&captured.notifier).await;
    let client = client(&captured.notifier);
    for id in 0..3 {
        assert_eq!(fetch(&client, format!("http://{app}/books/{id}")).await, 200);
    }
    assert_eq!(fetch(&client, format!("http://{app}/fail")).await, 500);
    assert_eq!(fetch(&client, format!("http://{app}/nowhere")).await, 404);

    // The server event finishes when its body is sent: wait until all five are recorded.
    let deadline = Instant::now() + Duration::from_secs(10);
    while captured.named("request.http").len() < 5 {
        assert!(Instant::now() < deadline, "5 server events in 10 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let endpoint = metrics.local_addr().unwrap();
    let (status, headers, text) = tokio::task::spawn_blocking(move || request(endpoint, "GET", "/metrics"))
        .await
        .unwrap();
    assert!(status.ends_with(" 200 OK"), "{status}");
    assert!(
        headers.contains(&format!("content-type: {OPENMETRICS_CONTENT_TYPE}")),
        "{headers}"
    );
    assert_eq!(
        OPENMETRICS_CONTENT_TYPE,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(text.ends_with("# EOF\n"), "{text}");
    for line in [
        "# TYPE http_server_request_duration_seconds histogram",
        "# UNIT http_server_request_duration_seconds seconds",
        "# TYPE http_client_request_duration_seconds histogram",
        r#"http_server_request_duration_seconds_count{http_request_method="GET",http_route="/books/{id}",http_response_status_code="200"} 3"#,
        r#"http_server_request_duration_seconds_count{http_request_method="GET",http_route="/fail",http_response_status_code="500",error_type="500"} 1"#,
        // No route template for a request no route matched: no http_route (never the raw path).
        r#"http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="404"} 1"#,
        // The client's labels: method, server address and port, status; 404 fails a client call.
        &format!(
            r#"http_client_request_duration_seconds_count{{http_request_method="GET",server_address="127.0.0.1",server_port="{}",http_response_status_code="200"}} 3"#,
            app.port()
        ),
        &format!(
            r#"http_client_request_duration_seconds_count{{http_request_method="GET",server_address="127.0.0.1",server_port="{}",http_response_status_code="404",error_type="404"}} 1"#,
            app.port()
        ),
    ] {
        assert!(text.contains(line), "no line {line}\n{text}");
    }
    assert!(!text.contains("url_path") && !text.contains("/books/1\""), "{text}");
    // The OpenTelemetry semantic conventions' buckets, +Inf added.
    assert!(
        text.contains(r#"http_server_request_duration_seconds_bucket{le="0.005",http_request_method="GET",http_route="/fail",http_response_status_code="500",error_type="500"}"#),
        "{text}"
    );
    assert!(
        text.contains(r#"{le="7.5","#) && text.contains(r#"{le="+Inf","#),
        "{text}"
    );

    // Every exemplar names a request the test made: the server's and the client's events of one
    // call share its trace (the client sends traceparent).
    let server = captured.named("request.http");
    let client_events = captured.named("request.http_client");
    assert_eq!(trace_ids(&server), trace_ids(&client_events));
    let found = exemplars(&text);
    assert!(!found.is_empty(), "{text}");
    let span_ids: BTreeSet<String> = server
        .iter()
        .chain(&client_events)
        .map(|e| e.id().to_string())
        .collect();
    for exemplar in &found {
        assert!(
            trace_ids(&server).contains(&exemplar.exemplar["trace_id"]),
            "{exemplar:?}"
        );
        assert!(span_ids.contains(&exemplar.exemplar["span_id"]), "{exemplar:?}");
        assert_eq!(exemplar.exemplar.len(), 2, "trace_id and span_id only: {exemplar:?}");
    }
    // The failed request's exemplar is its own trace and span.
    let failed = server
        .iter()
        .find(|e| e.payload().get("url.path").and_then(|v| v.as_str()) == Some("/fail"))
        .unwrap();
    let failed_exemplar = found
        .iter()
        .find(|x| {
            x.metric == "http_server_request_duration_seconds_bucket"
                && x.labels.get("http_route").map(String::as_str) == Some("/fail")
        })
        .unwrap();
    assert_eq!(failed_exemplar.exemplar["trace_id"], failed.trace_id().to_string());
    assert_eq!(failed_exemplar.exemplar["span_id"], failed.id().to_string());
    assert!((failed_exemplar.value - failed.duration().as_secs_f64()).abs() < 1e-9);

    let stats = metrics.stats();
    assert_eq!(
        (stats.server_series, stats.client_series, stats.event_series),
        (3, 3, 0)
    );
    assert_eq!(
        stats.exemplars.attached, 10,
        "5 server and 5 client events, all sampled"
    );
    assert_eq!(stats.scrapes, 1);
}

/// The endpoint's other answers: 404 elsewhere, 405 for other methods, HEAD without a body.
#[test]
fn i48_1_the_endpoint_answers_only_get_and_head_at_metrics() {
    let metrics = PrometheusExporter::new()
        .notifier(&Notifier::new())
        .serve("127.0.0.1:0")
        .unwrap();
    let addr = metrics.local_addr().unwrap();
    let (status, _, body) = request(addr, "GET", "/");
    assert!(status.ends_with(" 404 Not Found"), "{status}");
    assert_eq!(body, "not found: the metrics are at /metrics\n");
    let (status, headers, _) = request(addr, "POST", "/metrics");
    assert!(status.ends_with(" 405 Method Not Allowed"), "{status}");
    assert!(headers.contains("allow: get, head"), "{headers}");
    let (status, headers, body) = request(addr, "HEAD", "/metrics");
    assert!(status.ends_with(" 200 OK"), "{status}");
    assert!(headers.contains("application/openmetrics-text"), "{headers}");
    assert_eq!(body, "");
    let (_, _, body) = request(addr, "GET", "/metrics");
    // Nothing recorded yet: prometheus-client writes no family without series.
    assert_eq!(body, "# EOF\n");
    let stats = metrics.stats();
    assert_eq!((stats.scrapes, stats.not_found), (2, 1));
    // Dropping the guard stops the endpoint.
    drop(metrics);
    assert!(
        TcpStream::connect(addr).is_err(),
        "still listening after the guard was dropped"
    );
}

#[test]
fn i48_1_an_address_in_use_is_an_error_and_nothing_is_subscribed() {
    let notifier = Notifier::new();
    let first = PrometheusExporter::new()
        .notifier(&notifier)
        .serve("127.0.0.1:0")
        .unwrap();
    let err = PrometheusExporter::new()
        .notifier(&notifier)
        .serve(first.local_addr().unwrap())
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert!(notifier.listening("request.http"));
    drop(first);
    assert!(
        !notifier.listening("request.http"),
        "the failed one left no subscription"
    );
}

/// What notify-http publishes for a request served, without a server (for the sampling tests).
fn served(notifier: &Notifier, route: &str, status: u64, pause: Duration) -> (String, String) {
    notifier.instrument(
        "request.http",
        || {
            Payload::new()
                .with("otel.kind", "server")
                .with("http.request.method", "GET")
                .with("http.route", route.to_owned())
                .with("http.response.status_code", status)
        },
        |_| {
            std::thread::sleep(pause);
            let context = notify_core::Context::current();
            (
                context.trace_id().unwrap().to_string(),
                context.event_id().unwrap().to_string(),
            )
        },
    )
}

fn exemplar_traces(text: &str) -> BTreeSet<String> {
    exemplars(text)
        .into_iter()
        .map(|x| x.exemplar["trace_id"].clone())
        .collect()
}

/// Head sampling: an exemplar never names a trace the sampler dropped; counted.
#[test]
fn i48_1_exemplars_name_only_sampled_traces() {
    let notifier = Notifier::new();
    let metrics = PrometheusExporter::new().notifier(&notifier).install();
    notifier.set_sampler(Sampler::ratio(0.0));
    let dropped: BTreeSet<String> = (0..20)
        .map(|_| served(&notifier, "/a", 200, Duration::ZERO).0)
        .collect();
    notifier.set_sampler(Sampler::always());
    let kept = served(&notifier, "/a", 200, Duration::ZERO).0;
    let text = metrics.render();
    assert!(text.contains(r#"http_server_request_duration_seconds_count{http_request_method="GET",http_route="/a",http_response_status_code="200"} 21"#), "{text}");
    assert_eq!(exemplar_traces(&text), BTreeSet::from([kept]));
    assert!(exemplar_traces(&text).is_disjoint(&dropped));
    let stats = metrics.stats().exemplars;
    assert_eq!(
        (stats.attached, stats.not_sampled, stats.not_surely_kept, stats.off),
        (1, 20, 0, 0)
    );
}

/// Tail sampling: with the exporters' policy given, only traces it keeps for sure (an error, a
/// slow root, the ratio) become exemplars; the others are counted.
#[test]
fn i48_1_exemplars_follow_the_tail_sampling_policy() {
    let notifier = Notifier::new();
    let metrics = PrometheusExporter::new()
        .notifier(&notifier)
        .tail_sampling(TailSampling::new().slower_than(Duration::from_millis(30)).ratio(0.0))
        .install();
    let fast: BTreeSet<String> = (0..5).map(|_| served(&notifier, "/a", 200, Duration::ZERO).0).collect();
    let slow = served(&notifier, "/a", 200, Duration::from_millis(40)).0;
    // A 500 is recorded by notify-http as an exception: an error keeps its trace.
    let failed = notifier.instrument(
        "request.http",
        || {
            let mut payload = Payload::new()
                .with("http.request.method", "GET")
                .with("http.route", "/a")
                .with("http.response.status_code", 500_u64);
            payload.record_error(&std::fmt::Error);
            payload
        },
        |_| notify_core::Context::current().trace_id().unwrap().to_string(),
    );
    let text = metrics.render();
    assert_eq!(exemplar_traces(&text), BTreeSet::from([slow, failed]), "{text}");
    assert!(exemplar_traces(&text).is_disjoint(&fast));
    let stats = metrics.stats().exemplars;
    assert_eq!((stats.attached, stats.not_surely_kept), (2, 5));
}

#[test]
fn i48_1_exemplar_filters_always_off_and_always_on() {
    let notifier = Notifier::new();
    let off = PrometheusExporter::new()
        .notifier(&notifier)
        .exemplars(ExemplarFilter::AlwaysOff)
        .install();
    let on = PrometheusExporter::new()
        .notifier(&notifier)
        .exemplars(ExemplarFilter::AlwaysOn)
        .install();
    notifier.set_sampler(Sampler::ratio(0.0));
    let unsampled = served(&notifier, "/a", 200, Duration::ZERO).0;
    assert!(exemplar_traces(&off.render()).is_empty());
    assert_eq!(off.stats().exemplars.off, 1);
    assert_eq!(exemplar_traces(&on.render()), BTreeSet::from([unsampled]));
}

/// One exemplar per bucket and series, the latest: memory does not grow with requests.
#[test]
fn i48_1_each_bucket_keeps_its_latest_exemplar_only() {
    let notifier = Notifier::new();
    let metrics = PrometheusExporter::new().notifier(&notifier).install();
    let mut last = String::new();
    for _ in 0..200 {
        last = served(&notifier, "/a", 200, Duration::ZERO).0;
    }
    let found = exemplars(&metrics.render());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].exemplar["trace_id"], last);
    assert_eq!(found[0].labels["le"], "0.005");
}

/// The series limit: routes beyond it go to one overflow series, counted, with exemplars too.
#[test]
fn i48_1_the_series_limit_sends_new_label_sets_to_the_overflow_series() {
    let notifier = Notifier::new();
    let metrics = PrometheusExporter::new()
        .notifier(&notifier)
        .cardinality_limit(3)
        .install();
    for route in 0..10 {
        served(&notifier, &format!("/r{route}"), 200, Duration::ZERO);
    }
    served(&notifier, "/r0", 200, Duration::ZERO);
    let text = metrics.render();
    assert!(text.contains(r#"http_server_request_duration_seconds_count{http_request_method="GET",http_route="/r0",http_response_status_code="200"} 2"#), "{text}");
    assert!(
        text.contains(r#"http_server_request_duration_seconds_count{otel_metric_overflow="true"} 7"#),
        "{text}"
    );
    assert!(!text.contains("/r3"), "{text}");
    let stats: PrometheusStats = metrics.stats();
    assert_eq!((stats.server_series, stats.server_overflowed), (3, 7));
    assert_eq!((stats.client_series, stats.client_overflowed), (0, 0));
    assert_eq!(stats.exemplars.attached, 11, "the overflow series has exemplars too");
}

/// `events(pattern)`: other events' durations in `notify_event_duration_seconds{event}`.
#[test]
fn i48_1_other_events_get_a_duration_histogram_with_exemplars() {
    let notifier = Notifier::new();
    let metrics = PrometheusExporter::new()
        .notifier(&notifier)
        .events(notify_core::Pattern::glob("*.sql").unwrap())
        .install();
    let trace = notifier.instrument("query.sql", Payload::new, |_| {
        notify_core::Context::current().trace_id().unwrap().to_string()
    });
    notifier.instrument("render.template", Payload::new, |_| ());
    let text = metrics.render();
    assert!(
        text.contains("# TYPE notify_event_duration_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains(r#"notify_event_duration_seconds_count{event="query.sql"} 1"#),
        "{text}"
    );
    assert!(!text.contains("render.template"), "{text}");
    assert_eq!(exemplar_traces(&text), BTreeSet::from([trace]));
    assert!(
        text.contains(r#"notify_event_duration_seconds_bucket{le="0.0001",event="query.sql"}"#),
        "{text}"
    );
}

/// A route with quotes, backslashes and a newline is escaped, never a broken exposition.
#[test]
fn i48_1_label_values_are_escaped() {
    let notifier = Notifier::new();
    let metrics = PrometheusExporter::new().notifier(&notifier).install();
    served(&notifier, "/a\"b\\c\nd", 200, Duration::ZERO);
    let text = metrics.render();
    assert!(text.contains(r#"http_route="/a\"b\\c\nd""#), "{text}");
    // And a made-up method is `_OTHER`, not a series per method.
    notifier.instrument(
        "request.http",
        || Payload::new().with("http.request.method", "BREW"),
        |_| (),
    );
    assert!(metrics
        .render()
        .contains(r#"http_server_request_duration_seconds_count{http_request_method="_OTHER"} 1"#));
}

/// Renamed layers: the exporter follows the names it is given, and a disabled side subscribes
/// to nothing.
#[test]
fn i47_3_renamed_events_and_a_disabled_side() {
    let notifier = Notifier::new();
    let metrics = PrometheusExporter::new()
        .notifier(&notifier)
        .server_event("request.api")
        .disable_client()
        .install();
    assert!(notifier.listening("request.api"));
    assert!(!notifier.listening("request.http") && !notifier.listening("request.http_client"));
    notifier.instrument(
        "request.api",
        || Payload::new().with("http.request.method", "GET"),
        |_| (),
    );
    let text = metrics.render();
    assert!(
        text.contains(r#"http_server_request_duration_seconds_count{http_request_method="GET"} 1"#),
        "{text}"
    );
    assert!(!text.contains("http_client_request_duration_seconds"), "{text}");
}
