//! Core mode's confirmation of published rounds (a round: one batch of the collector), pipelined.
//!
//! After a round's messages the exporter publishes one echo to its own inbox ([`RoundTrip`]); the
//! server handles a connection's messages in order, so when the echo comes back the round before
//! it was processed. Waiting for each echo before the next round would make the exporter's
//! throughput one round per round trip (2,048 events per 10 ms over a 10 ms link, whatever the
//! bandwidth); instead, when an echo takes longer than [`PATIENCE`], up to [`MAX_UNCONFIRMED`]
//! rounds are on the wire at once, each counted exported when its echo (or a later one) comes
//! back, as a TCP window or JetStream's asynchronous publish acknowledgements do. A nearby server
//! echoes sooner: the exporter then waits, and what queues meanwhile makes the next, larger batch.
//!
//! Counting stays exact: every round leaves the window exactly once, settled where it leaves
//! (exported, or lost: a failed echo, an echo not back in time, a reconnection after the round was
//! published; [`Settle`]), so a caller may cancel [`Window::settle`] at any await (shutdown giving
//! up) and forget what is left with [`Window::abandon`] (the collector counts what is still in
//! flight at its end).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Duration;

use notify_export::{Settle, SinkError};

use crate::connect::RoundTrip;
use crate::counts::SinkCounts;

/// Rounds published and not yet confirmed, at most: the exporter publishes a new round while this
/// many are unconfirmed only after the oldest's echo came back.
pub(crate) const MAX_UNCONFIRMED: usize = 4;

/// How long the exporter waits for the echo of the rounds on the wire before it publishes the
/// next round anyway. A server on the same host or network echoes within this (the exporter then
/// behaves as if it waited for every round: what queued meanwhile makes the next round's batch,
/// large batches, fewer messages); over a slower link the rounds overlap, up to
/// [`MAX_UNCONFIRMED`].
pub(crate) const PATIENCE: Duration = Duration::from_millis(1);

/// The rounds on the wire and the echo channel that confirms them.
pub(crate) struct Window {
    round_trip: RoundTrip,
    /// How long the server may take to send an echo back ([`crate::ExporterBuilder::flush_timeout`]).
    timeout: Duration,
    /// Oldest first; echo numbers increasing.
    in_flight: VecDeque<InFlight>,
}

/// A published round waiting for its echo.
struct InFlight {
    echo: u64,
    events: u64,
    messages: u64,
    /// The client's connection count when its first message was published: a reconnection
    /// before its echo came back may have lost it.
    connection: u64,
}

/// Where a window settles the rounds that leave it: the collector's counters, and the messages
/// confirmed.
pub(crate) struct Tally<'a> {
    pub(crate) settle: &'a Settle,
    pub(crate) counts: &'a SinkCounts,
}

impl Tally<'_> {
    /// A round of `events` in `messages` messages confirmed.
    fn exported(&self, events: u64, messages: u64) {
        self.settle.exported(events);
        self.counts.messages.fetch_add(messages, Ordering::Relaxed);
    }

    /// `events` lost, `why`.
    pub(crate) fn lost(&self, events: u64, why: &str) {
        self.settle.failed(events, &SinkError::new(why));
    }
}

impl Window {
    pub(crate) fn new(round_trip: RoundTrip, timeout: Duration) -> Window {
        Window {
            round_trip,
            timeout,
            in_flight: VecDeque::with_capacity(MAX_UNCONFIRMED + 1),
        }
    }

    /// A round of `events` events in `messages` messages was published, its first message on
    /// connection number `connection`: sends its echo and puts it in the window (a failed echo
    /// counts it lost at once).
    pub(crate) async fn push(
        &mut self,
        client: &async_nats::Client,
        events: u64,
        messages: u64,
        connection: u64,
        tally: &Tally<'_>,
    ) {
        match self.round_trip.send_echo(client).await {
            Some(echo) => self.in_flight.push_back(InFlight {
                echo,
                events,
                messages,
                connection,
            }),
            None => tally.lost(events, "the confirmation echo could not be published"),
        }
    }

    /// Counts the rounds whose echo came back; then waits for echoes: with `all`, until no round
    /// is in flight; else while [`MAX_UNCONFIRMED`] or more are, and for at most [`PATIENCE`]
    /// while fewer are. An echo not back within the timeout (a frozen or dead server), or the
    /// end of the inbox subscription, counts every round in flight as lost. Cancel-safe: a round
    /// is counted when it leaves the window.
    pub(crate) async fn settle(&mut self, client: &async_nats::Client, all: bool, tally: &Tally<'_>) {
        let connects = || client.statistics().connects.load(Ordering::Acquire);
        while let Some(echo) = self.round_trip.ready_echo() {
            self.confirm_up_to(echo, connects(), tally);
        }
        let patience = tokio::time::Instant::now() + PATIENCE;
        while !self.in_flight.is_empty() {
            let full = all || self.in_flight.len() >= MAX_UNCONFIRMED;
            let echo = self.round_trip.next_echo();
            let echo = match full {
                true => tokio::time::timeout(self.timeout, echo).await,
                false => match tokio::time::timeout_at(patience, echo).await {
                    Ok(echo) => Ok(echo),
                    // Not back yet: publish the next round meanwhile.
                    Err(_) => return,
                },
            };
            match echo {
                Ok(Some(echo)) => self.confirm_up_to(echo, connects(), tally),
                Ok(None) | Err(_) => {
                    let lost: u64 = self.in_flight.drain(..).map(|round| round.events).sum();
                    tally.lost(lost, "not confirmed by the server within flush_timeout");
                }
            }
        }
    }

    /// Forgets the rounds in flight (shutdown gave up waiting for them: the collector counts
    /// them `dropped_shutdown`).
    pub(crate) fn abandon(&mut self) {
        self.in_flight.clear();
    }

    /// The rounds up to echo number `echo` are confirmed: exported, unless the connection they
    /// were published on was replaced since (`connection` is the count now).
    fn confirm_up_to(&mut self, echo: u64, connection: u64, tally: &Tally<'_>) {
        while self.in_flight.front().is_some_and(|round| round.echo <= echo) {
            let round = self.in_flight.pop_front().expect("looked at above");
            if round.connection == connection {
                tally.exported(round.events, round.messages);
            } else {
                tally.lost(
                    round.events,
                    "the connection was replaced before the round was confirmed",
                );
            }
        }
    }
}
