//! Ctrl-C (SIGINT) and SIGTERM end the example cleanly, so that its temporary database is removed.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// A flag that SIGINT (Ctrl-C) and SIGTERM set, installed on the first call (later calls return
/// the same flag). While it is installed the first signal no longer kills the process: the code
/// that looks at the flag stops and cleans up; a second signal ends the process at once, with
/// exit code 130 (SIGINT) or 143 (SIGTERM), as the shell reports a process killed by them.
///
/// # Errors
/// The message of the system call that failed when a handler cannot be installed (the signals
/// then keep their default action). Off Unix there is no handler: the flag is never set and
/// Ctrl-C ends the process as usual.
pub(super) fn stop_on_signals() -> Result<Arc<AtomicBool>, String> {
    static FLAG: OnceLock<Result<Arc<AtomicBool>, String>> = OnceLock::new();
    FLAG.get_or_init(install).clone()
}

#[cfg(unix)]
fn install() -> Result<Arc<AtomicBool>, String> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::flag;

    let stop = Arc::new(AtomicBool::new(false));
    for (signal, status) in [(SIGINT, 130), (SIGTERM, 143)] {
        // The shutdown is registered first: it sees the flag as the previous signal left it.
        flag::register_conditional_shutdown(signal, status, stop.clone())
            .and_then(|_| flag::register(signal, stop.clone()))
            .map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
    }
    Ok(stop)
}

#[cfg(not(unix))]
fn install() -> Result<Arc<AtomicBool>, String> {
    Ok(Arc::new(AtomicBool::new(false)))
}
