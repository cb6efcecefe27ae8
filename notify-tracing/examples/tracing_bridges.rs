//! notify and tracing both ways, and log records into notify, in one small program.
//!
//! ```sh
//! cargo run -p notify-tracing --example tracing_bridges
//! ```
//!
//! * notify -> tracing: the app's notify events (`request.shop`, `query.sql`) show in
//!   tracing-subscriber's fmt output as spans, nested, with their payload as fields (closed spans
//!   are printed with their timings).
//! * tracing -> notify: a "library" instrumented with tracing (`#[tracing::instrument]`, `warn!`)
//!   reaches a notify subscriber, which prints AS::N-style lines.
//! * log -> notify: a crate that only logs (`log::info!`) reaches the same notify subscriber.
//!
//! Both tracing directions are installed, and nothing is printed twice.

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber};
use notify_tracing::{NotifyLayer, NotifyLogger, TracingForwarder};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::prelude::*;

/// A library that only knows tracing.
mod inventory {
    #[tracing::instrument(target = "inventory", level = "info")]
    pub fn reserve(isbn: &str, copies: u64) -> u64 {
        if copies > 2 {
            tracing::warn!(target: "inventory", isbn, copies, "large reservation");
        }
        copies
    }
}

/// A library that only knows log.
mod mailer {
    pub fn send(to: &str) {
        log::info!(target: "mailer", "sent receipt to {to}");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // tracing: fmt output on stderr, plus the tracing -> notify layer.
    // `set_global_default`, not `.init()`: with tracing-subscriber's default features `.init()`
    // also installs a `log` logger, and `NotifyLogger::install` would then fail.
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_span_events(FmtSpan::CLOSE)
                    .with_target(true),
            )
            .with(NotifyLayer::new()),
    )?;
    // log -> notify (a real app would forward to its logger: `.forward_to(env_logger::Logger::…)`).
    NotifyLogger::new().install()?;
    // notify -> tracing for the app's own events.
    let notifier = Notifier::global();
    let _bridge = TracingForwarder::new().subscribe(notifier, Pattern::glob("*.shop")?);
    let _sql = TracingForwarder::new().subscribe(notifier, Pattern::glob("*.sql")?);
    // A notify subscriber for what comes from tracing and log.
    let _printer = notifier.subscribe(
        Pattern::regex(r"\.(inventory|mailer)$")?,
        Subscriber::event(|event: &Event| {
            println!(
                "notify: {} ({:.3} ms) {:?}",
                event.name(),
                event.duration().as_secs_f64() * 1e3,
                event.payload()
            );
        }),
    );

    notify_core::instrument(
        "request.shop",
        || Payload::new().with("path", "/checkout"),
        |payload| {
            notify_core::instrument(
                "query.sql",
                || Payload::new().with("sql", "SELECT stock FROM books"),
                |p| {
                    p.insert("rows", 1_u64);
                },
            );
            inventory::reserve("9780001000001", 3);
            mailer::send("reader@example.com");
            payload.insert("status", 201_u64);
        },
    );
    Ok(())
}
