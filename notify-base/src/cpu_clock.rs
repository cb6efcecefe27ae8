//! The calling thread's CPU time (`EventOptions::cpu_time`), which std does not offer.
//!
//! On 64-bit Linux and macOS it is one `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` call declared
//! here, where the C types are fixed: `time_t` and `long` are 64 bits, and the clock's id is 3
//! (Linux, every architecture) or 16 (macOS). That spares the default build the `libc` crate
//! (docs/build-time.md, "cpu-time and libc"). Every other target asks the `cpu-time` crate,
//! a dependency of notify-core only there.

use std::time::Duration;

/// CPU time the calling thread has used so far; `None` if the clock cannot be read.
#[cfg(all(any(target_os = "linux", target_os = "macos"), target_pointer_width = "64"))]
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    use std::ffi::c_long;

    /// `struct timespec` of 64-bit Linux and macOS: `time_t` is `i64` (`long` on both) and
    /// `tv_nsec` a `long`, with no padding.
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: c_long,
    }

    /// `clockid_t`: an `int` on Linux; on macOS an enum that the C library's headers (and the
    /// `libc` crate) treat as `unsigned int`. Both are 32 bits, passed in the same register.
    #[cfg(target_os = "linux")]
    type ClockId = std::ffi::c_int;
    #[cfg(target_os = "macos")]
    type ClockId = std::ffi::c_uint;

    #[cfg(target_os = "linux")]
    const CLOCK_THREAD_CPUTIME_ID: ClockId = 3;
    #[cfg(target_os = "macos")]
    const CLOCK_THREAD_CPUTIME_ID: ClockId = 16;

    extern "C" {
        /// POSIX `int clock_gettime(clockid_t, struct timespec *)`, in the C library that std
        /// links on both systems (glibc 2.17+, as Rust requires, and musl: libc itself; macOS
        /// 10.12+, Rust's oldest supported).
        fn clock_gettime(clock: ClockId, time: *mut Timespec) -> std::ffi::c_int;
    }

    let mut time = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `clock_gettime` is declared above with the C library's own signature on these
    // targets (the cfg on this function), and `time` is a valid, writable, properly aligned
    // `struct timespec` that lives across the call; the function writes only to it and keeps no
    // pointer to it. An unknown clock id would make it return -1 (EINVAL), not misbehave.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(time.tv_sec).ok()?;
    let nanos = u32::try_from(time.tv_nsec).ok().filter(|n| *n < 1_000_000_000)?;
    Some(Duration::new(secs, nanos))
}

/// CPU time the calling thread has used so far; `None` if the clock cannot be read.
#[cfg(not(all(any(target_os = "linux", target_os = "macos"), target_pointer_width = "64")))]
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    cpu_time::ThreadTime::try_now().ok().map(|t| t.as_duration())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::thread_cpu_time;
    use std::time::{Duration, Instant};

    #[test]
    fn advances_while_the_thread_computes_not_while_it_sleeps() {
        let start = thread_cpu_time().expect("the thread CPU clock is readable");
        // Busy until the clock shows 30 ms of CPU used (a wall deadline keeps a broken clock
        // from hanging the test: then the assertion below fails).
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut spin = 0u64;
        let busy = loop {
            for i in 0..10_000u64 {
                spin = std::hint::black_box(spin.wrapping_mul(31).wrapping_add(i));
            }
            let now = thread_cpu_time().expect("readable");
            if now.saturating_sub(start) >= Duration::from_millis(30) || Instant::now() > deadline {
                break now;
            }
        };
        assert!(
            busy - start >= Duration::from_millis(30),
            "CPU time {start:?} -> {busy:?}"
        );

        // Asleep the thread uses (almost) no CPU, however loaded the machine: the clock counts
        // this thread only, not the wall time nor the process's other threads.
        let other = std::thread::spawn(|| {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(200) {
                std::hint::black_box(0u64);
            }
        });
        std::thread::sleep(Duration::from_millis(200));
        other.join().unwrap();
        let after = thread_cpu_time().expect("readable");
        assert!(after >= busy, "the clock went back: {busy:?} -> {after:?}");
        assert!(
            after - busy < Duration::from_millis(50),
            "slept, yet {:?} of CPU",
            after - busy
        );
    }

    #[test]
    fn each_thread_has_its_own_clock() {
        // A new thread starts near zero, whatever this one has used.
        let mine = thread_cpu_time().unwrap();
        let theirs = std::thread::spawn(|| thread_cpu_time().unwrap()).join().unwrap();
        assert!(
            theirs < Duration::from_millis(50),
            "a fresh thread at {theirs:?} (this one {mine:?})"
        );
    }
}
