//! The bookstore across two processes: one runs the workload and exports its events to NATS, the
//! other imports them and prints the bookstore's summary table live.
//!
//! ```text
//! nats-server -a 127.0.0.1 -p 4222 &                                   # Debian: apt-get install nats-server
//! cargo run --release --example distributed -- import                  # terminal 1: prints the table as events arrive
//! cargo run --release --example distributed -- export --rounds 3       # terminal 2: the bookstore, 3 times over
//! ```
//!
//! Options: `--server URL` (default `nats://127.0.0.1:4222`), `--prefix P` (subjects `P.<event>`,
//! default `bookstore`), `--token T`; `import --until N` exits after N events (default: run until
//! interrupted); `export --rounds N` runs the workload N times, `--data FILE` names the data file.
//! Several importers started with `--group NAME` share the events (a NATS queue group).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use notify_app::bookstore::{self, render_summary, Summary};
use notify_core::{Notifier, Pattern};
use notify_nats::{Exporter, Importer, NatsOptions, Overflow};

struct Args {
    mode: String,
    server: String,
    prefix: String,
    token: Option<String>,
    group: Option<String>,
    until: Option<u64>,
    rounds: usize,
    data: std::path::PathBuf,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mode = args.next().ok_or("usage: distributed import|export [options]")?;
    if mode != "import" && mode != "export" {
        return Err(format!("unknown mode {mode:?}: expected import or export"));
    }
    let mut parsed = Args {
        mode,
        server: "nats://127.0.0.1:4222".into(),
        prefix: "bookstore".into(),
        token: None,
        group: None,
        until: None,
        rounds: 1,
        data: bookstore::default_data_file(),
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--server" => parsed.server = value()?,
            "--prefix" => parsed.prefix = value()?,
            "--token" => parsed.token = Some(value()?),
            "--group" => parsed.group = Some(value()?),
            "--until" => parsed.until = Some(value()?.parse().map_err(|e| format!("--until: {e}"))?),
            "--rounds" => parsed.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--data" => parsed.data = value()?.into(),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(parsed)
}

fn options(args: &Args) -> NatsOptions {
    let options = NatsOptions::new(&args.server).name(format!("bookstore-{}", args.mode));
    match &args.token {
        Some(token) => options.token(token),
        None => options,
    }
}

fn import(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let notifier = Notifier::new();
    let summary = Summary::subscribe(&notifier);
    let mut builder = Importer::builder(options(args)).prefix(&args.prefix);
    if let Some(group) = &args.group {
        builder = builder.queue_group(group);
    }
    let importer = builder.start(&notifier)?;
    eprintln!("importing {}.> from {}", args.prefix, args.server);
    let mut shown = 0;
    loop {
        let stats = importer.wait_until(Duration::from_secs(1), |s| s.events > shown);
        if stats.events > shown {
            // Let a burst settle so the table is not redrawn for every message.
            std::thread::sleep(Duration::from_millis(200));
            let stats = importer.stats();
            shown = stats.events;
            println!("{}", render_summary(&summary.rows()));
            println!(
                "({} events in {} messages; {} malformed, {} of a newer version)\n",
                stats.events, stats.messages, stats.malformed, stats.unsupported_version
            );
        }
        if args.until.is_some_and(|until| shown >= until) {
            break;
        }
    }
    importer.shutdown();
    Ok(())
}

fn export(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let notifier = Notifier::new();
    let exporter = Exporter::builder(options(args))
        .prefix(&args.prefix)
        .overflow(Overflow::Block)
        .start()?;
    let subscription = notifier.subscribe(Pattern::all(), exporter.subscriber());
    let database = std::env::temp_dir().join(format!("notify-distributed-{}.sqlite", std::process::id()));
    let start = Instant::now();
    for round in 1..=args.rounds {
        let report = bookstore::run(&bookstore::Options::new(&args.data, &database), &notifier)?;
        eprintln!(
            "round {round}: {} books imported, {} requests",
            report.books, report.requests
        );
    }
    let _ = std::fs::remove_file(&database);
    subscription.unsubscribe()?;
    let report = exporter.shutdown(Duration::from_secs(10));
    let s = report.stats;
    eprintln!(
        "exported {} of {} events in {} messages ({:.1} s); dropped {} (overflow {}, disconnected {}, too large {}, encode {}, shutdown {}, tail sampling {})",
        s.exported,
        s.published,
        s.messages,
        start.elapsed().as_secs_f64(),
        s.dropped.total(),
        s.dropped.overflow,
        s.dropped.disconnected,
        s.dropped.too_large,
        s.dropped.encode,
        s.dropped.shutdown,
        s.dropped.tail_sampling
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let result = if args.mode == "import" {
        import(&args)
    } else {
        export(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
