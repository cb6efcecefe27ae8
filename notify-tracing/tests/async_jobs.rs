//! notify -> tracing under async concurrency: six tokio jobs, instrumented with
//! `#[instrument_event]`, run at once on a multi-threaded runtime; tracing-subscriber's JSON layer
//! and a recording layer must show every step inside its own job, never inside another job.
//! (Its own test binary: it sets the global tracing subscriber and uses the global notifier.)

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify_core::{instrument_event, Notifier, Pattern, Payload};
use notify_tracing::TracingForwarder;
use support::Capture;
use tracing_subscriber::prelude::*;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[instrument_event("job.jobs", fields(n))]
async fn job(n: u64) {
    for step in 0..2_u64 {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(2 + n % 3)).await;
        notify_core::instrument(
            "step.jobs",
            || Payload::new().with("n", n).with("step", step),
            |_| tracing::info!(n, step, "working"),
        );
    }
}

#[test]
fn six_concurrent_tokio_jobs_nest_correctly_in_fmt_json_and_layers() {
    let capture = Capture::default();
    let json = Buffer::default();
    let writer = json.clone();
    tracing_subscriber::registry()
        .with(capture.clone())
        .with(
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(move || writer.clone()),
        )
        .init();
    let _bridge = TracingForwarder::new().subscribe(Notifier::global(), Pattern::glob("*.jobs").unwrap());

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let jobs: Vec<_> = (0..6).map(|n| tokio::spawn(job(n))).collect();
        for j in jobs {
            j.await.unwrap();
        }
    });

    let spans = capture.spans();
    let jobs: Vec<_> = spans.iter().filter(|s| s.name == "job").collect();
    let steps: Vec<_> = spans.iter().filter(|s| s.name == "step").collect();
    assert_eq!(jobs.len(), 6, "{spans:#?}");
    assert_eq!(steps.len(), 12, "{spans:#?}");
    for job in &jobs {
        assert_eq!(job.target, "jobs");
        assert_eq!(job.parent, None, "a job is a root: {job:?}");
        assert!(job.closed);
        // Entered once per poll, never left entered between polls.
        assert!(job.entered >= 3, "{job:?}");
        assert_eq!(job.entered, job.exited, "{job:?}");
    }
    for step in &steps {
        let parent = capture.span(step.parent.expect("a step has a parent"));
        assert_eq!(parent.name, "job");
        assert_eq!(
            parent.fields["n"], step.fields["n"],
            "step {step:?} under job {parent:?}"
        );
        assert_eq!((step.entered, step.exited), (1, 1));
    }
    let events = capture.events();
    assert_eq!(events.len(), 12);
    for event in &events {
        let names: Vec<_> = event.scope.iter().map(|&id| capture.span(id)).collect();
        assert_eq!(names.len(), 2, "{event:?}");
        assert_eq!((names[0].name.as_str(), names[1].name.as_str()), ("job", "step"));
        assert_eq!(names[0].fields["n"], event.fields["n"]);
        assert_eq!(names[1].fields["n"], event.fields["n"]);
    }

    // The JSON layer: each "working" line lists its job and step spans, with the same n.
    let text = String::from_utf8(json.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 12, "{text}");
    for line in &lines {
        let n = &line["fields"]["n"];
        let spans = line["spans"]
            .as_array()
            .unwrap_or_else(|| panic!("no span list: {line}"));
        let names: Vec<_> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["job", "step"], "{line}");
        assert_eq!(&spans[0]["n"], n, "{line}");
        assert_eq!(&spans[1]["n"], n, "{line}");
    }
}
