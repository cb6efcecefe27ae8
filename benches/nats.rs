//! Events across processes through NATS (issue 13), with its baselines in the same run, printed as
//! a table. Starts its own `nats-server` (Debian's 2.9) on a free loopback port.
//!
//! * `end_to_end/importers=K`: one producer instruments N events (payload `sql`, `rows`) on a
//!   notifier the exporter is subscribed to (`Overflow::Block`, so nothing is dropped and the
//!   producer is paced by the exporter), through nats-server, to K importers in one queue group,
//!   each republishing into a local notifier with one counting subscriber. Events/s from the first
//!   instrument call until the K importers republished all N.
//! * `baseline/async_nats_message_per_event`: the same encoded events, one NATS message each,
//!   published by async-nats and received by one async-nats subscriber that decodes them: events/s
//!   from the first publish to the last decoded.
//! * `baseline/raw_tcp_length_prefixed`: the same encoded events, one each, with a 4-byte length
//!   prefix, through a loopback TCP socket (buffered writer, buffered reader that decodes): the
//!   method behind "1 M messages through a socket in 0.66 s".
//! * `instrumenting_thread`: ns per `instrument` call on the producer with nobody listening, with
//!   one no-op owned subscriber (the `Arc<Event>` notify-core builds for owned subscribers), and
//!   with the exporter subscribed (server up, queue large enough that nothing is dropped). The
//!   exporter's own cost on the instrumenting thread is the last minus the second.
//!
//! `cargo bench --bench nats` (N = 1,000,000, about a minute); `NOTIFY_BENCH_QUICK=1` for N = 200,000;
//! `NOTIFY_NATS_ONLY=end_to_end_1` runs only `end_to_end/importers=1`, `NOTIFY_NATS_ONLY=raw_tcp`
//! only `baseline/raw_tcp_length_prefixed` (for a per-thread profile: `NOTIFY_BENCH_QUICK=1
//! NOTIFY_NATS_ONLY=end_to_end_1 valgrind --tool=callgrind --separate-threads=yes
//! target/release/deps/nats-* --bench`, instructions per event = a thread's total / 200,000).

#[path = "../notify-nats/tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber, Value};
use notify_nats::{decode_batch, encode_batch, Encoding, Exporter, Importer, NatsOptions, Overflow};
use support::NatsServer;

const SQL: &str = "SELECT id, title FROM books WHERE author = ?1 ORDER BY year";

fn payload(seq: u64) -> Payload {
    // `Value::from_static`: the statement is borrowed, not copied into each payload.
    Payload::new()
        .with("sql", Value::from_static(SQL))
        .with("rows", seq % 50)
}

struct Row {
    case: String,
    events: u64,
    seconds: f64,
    note: String,
}

fn main() {
    let quick = std::env::var_os("NOTIFY_BENCH_QUICK").is_some();
    let n: u64 = if quick { 200_000 } else { 1_000_000 };
    // `cargo bench` passes `--bench`; a filter argument is not supported (the file is one table).
    let server = NatsServer::start();
    // `NOTIFY_NATS_ONLY=end_to_end_1`: only the 1-importer end-to-end case, for a per-thread
    // profile (`perf record -s`, or `valgrind --tool=callgrind --separate-threads=yes`).
    let only = match std::env::var("NOTIFY_NATS_ONLY").as_deref() {
        Ok("end_to_end_1") => Some(end_to_end(&server, n, 1)),
        Ok("raw_tcp") => Some(raw_tcp(n)),
        _ => None,
    };
    if let Some(row) = only {
        println!("{}: {} events in {:.3} s", row.case, row.events, row.seconds);
        return;
    }
    let mut rows = Vec::new();
    for importers in [1, 4, 16] {
        rows.push(end_to_end(&server, n, importers));
    }
    rows.push(async_nats_message_per_event(&server, n));
    rows.push(raw_tcp(n));
    println!();
    println!(
        "{:<44} {:>10} {:>9} {:>12}  note",
        "case", "events", "seconds", "events/s"
    );
    for r in &rows {
        println!(
            "{:<44} {:>10} {:>9.3} {:>12}  {}",
            r.case,
            r.events,
            r.seconds,
            format_rate(r.events as f64 / r.seconds),
            r.note
        );
    }
    println!();
    instrumenting_thread(&server, n);
}

fn format_rate(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2} M", rate / 1e6)
    } else {
        format!("{:.0} k", rate / 1e3)
    }
}

fn end_to_end(server: &NatsServer, n: u64, importers: usize) -> Row {
    let remote = Notifier::new();
    let received = Arc::new(AtomicU64::new(0));
    let counter = received.clone();
    let _ = remote.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| {
            black_box(e.id());
            counter.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let prefix = format!("bench{importers}");
    let importers: Vec<Importer> = (0..importers)
        .map(|_| {
            Importer::builder(NatsOptions::new(server.url()))
                .prefix(&prefix)
                .queue_group("bench")
                .start(&remote)
                .expect("importer")
        })
        .collect();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .prefix(&prefix)
        .overflow(Overflow::Block)
        .start()
        .expect("exporter");
    let local = Notifier::new();
    let _ = local.subscribe(Pattern::all(), exporter.subscriber());

    let start = Instant::now();
    for seq in 0..n {
        local.instrument("query.sql", || payload(seq), |_| ());
    }
    let produced = start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(60);
    while received.load(Ordering::Relaxed) < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
    let seconds = start.elapsed().as_secs_f64();
    let got = received.load(Ordering::Relaxed);
    let stats = exporter.shutdown(Duration::from_secs(10)).stats;
    let shares: Vec<u64> = importers.iter().map(|i| i.shutdown().events).collect();
    Row {
        case: format!("end_to_end/importers={}", importers.len()),
        events: got,
        seconds,
        note: format!(
            "{} messages ({:.0} events each), producer done in {:.3} s, per importer {:?}{}",
            stats.messages,
            stats.exported as f64 / stats.messages.max(1) as f64,
            produced.as_secs_f64(),
            shares,
            if got < n {
                format!(", {} NOT RECEIVED", n - got)
            } else {
                String::new()
            }
        ),
    }
}

fn encoded_events(n: u64) -> Vec<Vec<u8>> {
    let now = Instant::now();
    (0..n)
        .map(|seq| {
            let event = Arc::new(Event::new("query.sql", now, now, payload(seq)));
            encode_batch(Encoding::Binary, 1, std::slice::from_ref(&event))
        })
        .collect()
}

fn async_nats_message_per_event(server: &NatsServer, n: u64) -> Row {
    let bodies: Vec<bytes::Bytes> = encoded_events(n).into_iter().map(Into::into).collect();
    let bytes: usize = bodies.iter().map(|b| b.len()).sum();
    let url = server.url();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receiver = std::thread::spawn({
        let url = url.clone();
        move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let client = async_nats::ConnectOptions::new()
                    .subscription_capacity(1 << 20)
                    .connect(url)
                    .await
                    .unwrap();
                let mut sub = client.subscribe("raw.query.sql").await.unwrap();
                client.flush().await.unwrap();
                ready_tx.send(()).unwrap();
                let mut got = 0u64;
                let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
                while got < n {
                    match tokio::time::timeout_at(deadline, sub.next()).await {
                        Ok(Some(m)) => {
                            let (_, events) = decode_batch(Encoding::Binary, &m.payload).unwrap();
                            got += events.len() as u64;
                            black_box(events);
                        }
                        _ => break,
                    }
                }
                (got, Instant::now())
            })
        }
    });
    ready_rx.recv().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = Instant::now();
    let published = runtime.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        for body in bodies {
            client.publish("raw.query.sql", body).await.unwrap();
        }
        client.flush().await.unwrap();
        start.elapsed()
    });
    let (got, end) = receiver.join().unwrap();
    Row {
        case: "baseline/async_nats_message_per_event".into(),
        events: got,
        seconds: (end - start).as_secs_f64(),
        note: format!(
            "{:.0} bytes per event; publishing alone {}/s{}",
            bytes as f64 / n as f64,
            format_rate(n as f64 / published.as_secs_f64()),
            if got < n {
                format!(", {} NOT RECEIVED (slow consumer)", n - got)
            } else {
                String::new()
            }
        ),
    }
}

fn raw_tcp(n: u64) -> Row {
    let bodies = encoded_events(n);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::with_capacity(1 << 16, stream);
        let mut body = Vec::new();
        let mut got = 0u64;
        let mut len = [0u8; 4];
        while reader.read_exact(&mut len).is_ok() {
            body.resize(u32::from_le_bytes(len) as usize, 0);
            reader.read_exact(&mut body).unwrap();
            let (_, events) = decode_batch(Encoding::Binary, &body).unwrap();
            got += events.len() as u64;
            black_box(events);
        }
        (got, Instant::now())
    });
    let start = Instant::now();
    {
        let mut writer = BufWriter::with_capacity(1 << 16, TcpStream::connect(addr).unwrap());
        for body in &bodies {
            writer.write_all(&(body.len() as u32).to_le_bytes()).unwrap();
            writer.write_all(body).unwrap();
        }
        writer.flush().unwrap();
    }
    let (got, end) = reader.join().unwrap();
    Row {
        case: "baseline/raw_tcp_length_prefixed".into(),
        events: got,
        seconds: (end - start).as_secs_f64(),
        note: "one event per frame, decoded".into(),
    }
}

struct Noop;

impl OwnedEventSubscriber for Noop {
    fn deliver(&self, event: &Arc<Event>) {
        black_box(event);
    }
}

/// Medians of 5 runs of `n / 5` instrument calls: (wall-clock ns per call, the instrumenting
/// thread's own CPU ns per call). CPU time leaves out what other threads and processes (the
/// exporter's thread, nats-server, a loaded machine) take from this one.
fn ns_per_call(n: u64, notifier: &Notifier) -> (f64, f64) {
    let calls = (n / 5) as f64;
    let (mut wall, mut cpu): (Vec<f64>, Vec<f64>) = (0..5)
        .map(|_| {
            let start = Instant::now();
            let cpu_start = cpu_time::ThreadTime::now();
            for seq in 0..n / 5 {
                notifier.instrument("query.sql", || payload(seq), |_| ());
            }
            let cpu = cpu_start.elapsed().as_nanos() as f64 / calls;
            (start.elapsed().as_nanos() as f64 / calls, cpu)
        })
        .unzip();
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    (wall[2], cpu[2])
}

fn instrumenting_thread(server: &NatsServer, n: u64) {
    let unlistened = ns_per_call(n, &Notifier::new());
    let noop = Notifier::new();
    let _ = noop.subscribe(Pattern::all(), Subscriber::owned(Noop));
    let owned = ns_per_call(n, &noop);
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .prefix("instrumenting")
        .capacity(n as usize)
        .start()
        .expect("exporter");
    let exported = Notifier::new();
    let _ = exported.subscribe(Pattern::all(), exporter.subscriber());
    let with_exporter = ns_per_call(n, &exported);
    let stats = exporter.shutdown(Duration::from_secs(10)).stats;
    println!(
        "instrumenting thread, ns per instrument(\"query.sql\") call with a 2-entry payload (medians of 5 x {}):",
        n / 5
    );
    println!("  {:<34} {:>10} {:>10}", "", "wall ns", "thread CPU ns");
    println!(
        "  {:<34} {:>10.1} {:>10.1}",
        "nobody listening", unlistened.0, unlistened.1
    );
    println!(
        "  {:<34} {:>10.1} {:>10.1}",
        "one no-op owned subscriber", owned.0, owned.1
    );
    println!(
        "  {:<34} {:>10.1} {:>10.1}   ({} exported, {} dropped)",
        "the exporter subscribed",
        with_exporter.0,
        with_exporter.1,
        stats.exported,
        stats.dropped.total()
    );
    println!(
        "  {:<34} {:>10.1} {:>10.1}",
        "added by the exporter",
        with_exporter.0 - owned.0,
        with_exporter.1 - owned.1
    );
}
