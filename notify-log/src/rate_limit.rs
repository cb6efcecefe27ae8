//! The rate limit of a [`StructuredLogger`](crate::StructuredLogger): a window of `n` lines per
//! event name per interval, bounded in names so that names from outside (an importer, a NATS
//! subject) cannot grow it without end.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use log::Level;

/// Names longer than this (in bytes) share the window of the names beyond the limit, so that a
/// window's name costs at most this much.
pub(crate) const MAX_NAME_BYTES: usize = 256;

/// The default of [`StructuredLog::rate_limit_names`](crate::StructuredLog::rate_limit_names).
pub(crate) const DEFAULT_MAX_NAMES: usize = 10_000;

/// The event name a summary of the shared window is written with.
pub(crate) const SHARED_NAME: &str = "*";

/// Counters of a [`StructuredLogger`](crate::StructuredLogger)'s rate limit
/// ([`StructuredLogger::rate_limit_stats`](crate::StructuredLogger::rate_limit_stats)): every
/// dropped line is in exactly one `suppressed_*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimitStats {
    /// Lines dropped because their name's own window had its `n` lines.
    pub suppressed_per_name: u64,
    /// Lines dropped because the window shared by the names without one of their own (beyond
    /// the name limit, or longer than 256 bytes) had its `n` lines.
    pub suppressed_shared: u64,
    /// Lines (written or dropped) that went to the shared window.
    pub lines_shared: u64,
    /// Names with a window of their own now (at most the name limit).
    pub names: usize,
    /// Windows freed because their interval had ended (their pending summary written first).
    pub names_expired: u64,
}

/// A summary line to write: `suppressed` lines of `name` (`None`: the shared window) were dropped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    pub(crate) name: Option<Box<str>>,
    pub(crate) suppressed: u64,
    pub(crate) level: Level,
}

/// The per-name windows of a rate limit.
#[derive(Debug)]
pub(crate) struct Limiter {
    pub(crate) lines: u64,
    pub(crate) interval: Duration,
    max_names: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    windows: HashMap<Box<str>, Window>,
    /// The window of the names that have none of their own.
    shared: Window,
    /// When windows that ended were last freed.
    last_sweep: Instant,
    stats: RateLimitStats,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    lines: u64,
    suppressed: u64,
    level: Level,
}

impl Window {
    fn new(now: Instant, level: Level) -> Window {
        Window {
            start: now,
            lines: 0,
            suppressed: 0,
            level,
        }
    }
}

/// What a window says about one line.
enum Verdict {
    Write,
    /// Write the summary of the window that ended (`suppressed` lines at `level`), then the line.
    WriteAfter(u64, Level),
    Drop,
}

impl Limiter {
    /// At most `lines` lines per name per `interval`, `max_names` names with a window of their
    /// own (at least 1).
    pub(crate) fn new(lines: u64, interval: Duration, max_names: usize) -> Limiter {
        let now = Instant::now();
        Limiter {
            lines,
            interval,
            max_names: max_names.max(1),
            state: Mutex::new(State {
                windows: HashMap::new(),
                shared: Window::new(now, Level::Error),
                last_sweep: now,
                stats: RateLimitStats::default(),
            }),
        }
    }

    /// Whether a line of `name` at `level` may be written at `now`; pushes onto `summaries` the
    /// summary lines to write before it (windows that ended with lines dropped).
    ///
    /// At most once per interval, windows whose interval has ended are freed first. A name
    /// without a window gets one while fewer than `max_names` exist and it is at most
    /// [`MAX_NAME_BYTES`] long; otherwise its line goes to the shared window.
    pub(crate) fn admit(&self, name: &str, level: Level, now: Instant, summaries: &mut Vec<Pending>) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *state;
        if now.saturating_duration_since(state.last_sweep) >= self.interval {
            self.sweep(state, now, summaries);
        }
        let (window, shared) = match state.windows.get_mut(name) {
            Some(window) => (window, false),
            None => {
                if state.windows.len() < self.max_names && name.len() <= MAX_NAME_BYTES {
                    let window = state.windows.entry(name.into()).or_insert(Window::new(now, level));
                    (window, false)
                } else {
                    state.stats.lines_shared += 1;
                    (&mut state.shared, true)
                }
            }
        };
        match self.verdict(window, level, now) {
            Verdict::Write => true,
            Verdict::WriteAfter(suppressed, level) => {
                let name = (!shared).then(|| name.into());
                summaries.push(Pending {
                    name,
                    suppressed,
                    level,
                });
                true
            }
            Verdict::Drop => {
                if shared {
                    state.stats.suppressed_shared += 1;
                } else {
                    state.stats.suppressed_per_name += 1;
                }
                false
            }
        }
    }

    fn verdict(&self, window: &mut Window, level: Level, now: Instant) -> Verdict {
        if now.saturating_duration_since(window.start) >= self.interval {
            let ended = std::mem::replace(window, Window::new(now, level));
            window.lines = 1;
            return if ended.suppressed > 0 {
                Verdict::WriteAfter(ended.suppressed, ended.level)
            } else {
                Verdict::Write
            };
        }
        if window.lines < self.lines {
            window.lines += 1;
            Verdict::Write
        } else {
            window.suppressed += 1;
            window.level = level;
            Verdict::Drop
        }
    }

    /// Frees the windows whose interval has ended, pushing their pending summaries.
    fn sweep(&self, state: &mut State, now: Instant, summaries: &mut Vec<Pending>) {
        state.last_sweep = now;
        let interval = self.interval;
        let before = state.windows.len();
        state.windows.retain(|name, window| {
            if now.saturating_duration_since(window.start) < interval {
                return true;
            }
            if window.suppressed > 0 {
                summaries.push(Pending {
                    name: Some(name.clone()),
                    suppressed: window.suppressed,
                    level: window.level,
                });
            }
            false
        });
        state.stats.names_expired += (before - state.windows.len()) as u64;
        // Give back what a burst of names took (the map keeps its capacity otherwise).
        if state.windows.capacity() > 2 * state.windows.len() + 64 {
            state.windows.shrink_to(2 * state.windows.len());
        }
        let shared = &mut state.shared;
        if now.saturating_duration_since(shared.start) >= interval && shared.suppressed > 0 {
            summaries.push(Pending {
                name: None,
                suppressed: shared.suppressed,
                level: shared.level,
            });
            *shared = Window::new(now, shared.level);
        }
    }

    /// Takes the pending summaries of every window with lines dropped (their windows go on).
    pub(crate) fn take_pending(&self) -> Vec<Pending> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *state;
        let mut pending: Vec<Pending> = state
            .windows
            .iter_mut()
            .filter(|(_, w)| w.suppressed > 0)
            .map(|(name, w)| Pending {
                name: Some(name.clone()),
                suppressed: std::mem::take(&mut w.suppressed),
                level: w.level,
            })
            .collect();
        if state.shared.suppressed > 0 {
            pending.push(Pending {
                name: None,
                suppressed: std::mem::take(&mut state.shared.suppressed),
                level: state.shared.level,
            });
        }
        pending
    }

    /// The counters, with the number of names held now.
    pub(crate) fn stats(&self) -> RateLimitStats {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        RateLimitStats {
            names: state.windows.len(),
            ..state.stats
        }
    }

    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.state.lock().unwrap().windows.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admit(limiter: &Limiter, name: &str, now: Instant) -> (bool, Vec<Pending>) {
        let mut summaries = Vec::new();
        let written = limiter.admit(name, Level::Info, now, &mut summaries);
        (written, summaries)
    }

    /// Issue 44 item 4: 400,000 distinct names used to keep 400,000 windows (~65 MB) for ever.
    #[test]
    fn i44_4_distinct_names_hold_at_most_the_name_limit_and_ended_windows_are_freed() {
        let interval = Duration::from_secs(1);
        let limiter = Limiter::new(1, interval, 1_000);
        let start = Instant::now();
        let mut written = 0;
        for i in 0..400_000 {
            let (w, summaries) = admit(&limiter, &format!("n{i}.imported"), start);
            written += u64::from(w);
            assert!(summaries.is_empty());
        }
        // 1,000 names have a window of one line each; the other 399,000 share one window.
        let stats = limiter.stats();
        assert_eq!(written, 1_001);
        assert_eq!(
            (
                stats.names,
                stats.lines_shared,
                stats.suppressed_shared,
                stats.suppressed_per_name
            ),
            (1_000, 399_000, 398_999, 0)
        );
        assert!(limiter.capacity() < 2_000, "{}", limiter.capacity());
        // One interval later, the next line frees every ended window and summarises the shared one.
        let (w, summaries) = admit(&limiter, "fresh.imported", start + interval);
        assert!(w);
        assert_eq!(
            summaries,
            [Pending {
                name: None,
                suppressed: 398_999,
                level: Level::Info
            }]
        );
        let stats = limiter.stats();
        assert_eq!((stats.names, stats.names_expired), (1, 1_000));
        assert!(limiter.capacity() < 100, "{}", limiter.capacity());
    }

    #[test]
    fn i44_4_a_name_longer_than_256_bytes_shares_the_window_and_ended_windows_keep_their_summary() {
        let interval = Duration::from_secs(10);
        let limiter = Limiter::new(2, interval, 100);
        let start = Instant::now();
        let long = "x".repeat(MAX_NAME_BYTES + 1);
        let written: Vec<bool> = (0..3).map(|_| admit(&limiter, &long, start).0).collect();
        assert_eq!(written, [true, true, false]);
        let written: Vec<bool> = (0..5).map(|_| admit(&limiter, "query.sql", start).0).collect();
        assert_eq!(written, [true, true, false, false, false]);
        let stats = limiter.stats();
        assert_eq!(
            (
                stats.names,
                stats.lines_shared,
                stats.suppressed_shared,
                stats.suppressed_per_name
            ),
            (1, 3, 1, 3)
        );
        // The window of query.sql ended: freed by the sweep, its 3 drops summarised, not lost.
        let (w, mut summaries) = admit(&limiter, "other.sql", start + interval);
        assert!(w);
        summaries.sort_by_key(|p| p.suppressed);
        assert_eq!(
            summaries,
            [
                Pending {
                    name: None,
                    suppressed: 1,
                    level: Level::Info
                },
                Pending {
                    name: Some("query.sql".into()),
                    suppressed: 3,
                    level: Level::Info
                }
            ]
        );
        assert_eq!(limiter.stats().names, 1);
        assert!(limiter.take_pending().is_empty());
    }
}
