//! A `SeqCst` fence split in two: a [`light`] half for the path taken on every event (a
//! snapshot pin, `hazard.rs`) and a [`heavy`] half for the rare one (a write retiring a
//! snapshot). A `light` on one thread and a `heavy` on another order each other as two
//! `fence(SeqCst)` would: whichever comes first, the memory accesses before it are seen by the
//! accesses after the other.
//!
//! On Linux (x86-64 and AArch64) `light` is a compiler fence only, and `heavy` is the
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` system call, which makes every running thread
//! of the process execute a full memory barrier before it returns (a thread not running passes
//! one when it is switched out): a reader's plain stores before its `light` are visible to the
//! writer after `heavy`, or the reader's loads after its `light` see what the writer stored
//! before `heavy`. The process registers for that command once, in [`prepare`]; until it has (or
//! where the kernel lacks the command, or a seccomp policy refuses it), both halves are real
//! `fence(SeqCst)`s. The same technique as folly's `asymmetricLightBarrier` /
//! `asymmetricHeavyBarrier` and the `membarrier` crate; that crate would bring `libc` and
//! `lazy_static` back into the default build (docs/build-time.md), so the one call is declared
//! here, as `cpu_clock.rs` declares its.
//!
//! Costs on this kind of machine (2 vCPUs): the reader's `fence(SeqCst)` that `light` replaces,
//! 6–8 ns per event; a `heavy`, 0.2 µs when the process' other threads sleep, about 27 µs when
//! one runs on the other vCPU (an interrupt to it, through the hypervisor). `hazard.rs` calls
//! `heavy` only when another thread holds a hazard slot.
//!
//! Under loom and Miri (which model neither the system call nor its effect) both halves are
//! `fence(SeqCst)`: the loom models check the protocol with two real fences, which is what a
//! light/heavy pair guarantees.

#[cfg(loom)]
use loom::sync::atomic::{fence, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{fence, Ordering};

/// The `membarrier` system call, on the targets whose syscall number is known here.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(loom),
    not(miri)
))]
mod membarrier {
    use std::ffi::c_long;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;

    /// `SYS_membarrier`: 324 on x86-64, 283 on AArch64 (the generic syscall table).
    #[cfg(target_arch = "x86_64")]
    const SYS_MEMBARRIER: c_long = 324;
    #[cfg(target_arch = "aarch64")]
    const SYS_MEMBARRIER: c_long = 283;

    /// `enum membarrier_cmd` (linux/membarrier.h).
    const CMD_QUERY: c_long = 0;
    const CMD_PRIVATE_EXPEDITED: c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: c_long = 1 << 4;

    extern "C" {
        /// glibc's and musl's `long syscall(long number, ...)`: the arguments are read as
        /// `long`s, which is what is passed below.
        fn syscall(number: c_long, ...) -> c_long;
    }

    /// `membarrier(cmd, 0, 0)`: its result, or -1 with `errno` set.
    fn membarrier(cmd: c_long) -> c_long {
        // SAFETY: `syscall` is the C library's, declared with its signature; `membarrier` takes
        // three integers (cmd, flags, cpu_id) and no pointer, so no memory is read or written
        // on our behalf; an unknown command or a refused call returns -1, nothing else.
        unsafe { syscall(SYS_MEMBARRIER, cmd, 0 as c_long, 0 as c_long) }
    }

    /// Set once the process is registered: from then on `light` may be a compiler fence.
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    static REGISTRATION: OnceLock<bool> = OnceLock::new();

    /// True once [`register`] succeeded (maybe seen late: then `light` is a real fence a little
    /// longer).
    #[inline(always)]
    pub(super) fn is_registered() -> bool {
        REGISTERED.load(Ordering::Relaxed)
    }

    /// Registers the process for private expedited barriers (once); true when it is.
    pub(super) fn register() -> bool {
        *REGISTRATION.get_or_init(|| {
            let supported = membarrier(CMD_QUERY);
            let needed = CMD_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED;
            let ok = supported >= 0 && supported & needed == needed && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
            // Relaxed: a reader that sees `true` late only issues real fences meanwhile; one
            // that sees it early cannot (it is stored after the registration succeeded, and
            // every `heavy` that follows sees `REGISTRATION` set, through the OnceLock).
            REGISTERED.store(ok, Ordering::Relaxed);
            ok
        })
    }

    /// The barrier on every running thread of the process. Called only once registered.
    pub(super) fn barrier() {
        let rc = membarrier(CMD_PRIVATE_EXPEDITED);
        // Registered, so the kernel accepts it; if it ever did not, no barrier would have
        // happened and a snapshot could be freed under a reader: better to stop.
        assert!(
            rc == 0,
            "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after registration"
        );
    }
}

/// Where `membarrier` is not used (other targets, loom, Miri): never registered, so both
/// halves are `fence(SeqCst)`.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(loom),
    not(miri)
)))]
mod membarrier {
    #[inline(always)]
    pub(super) fn is_registered() -> bool {
        false
    }

    pub(super) fn register() -> bool {
        false
    }

    pub(super) fn barrier() {
        unreachable!("never registered")
    }
}

/// Readies [`light`]'s cheap form: registers the process for `membarrier` on first call (a
/// system call or two); later calls are a load. Called by each thread before its first pin
/// (`hazard::Registry::add`).
pub(crate) fn prepare() {
    membarrier::register();
}

/// The fast half: a compiler fence once the process is registered, else `fence(SeqCst)`.
#[inline(always)]
pub(crate) fn light() {
    if membarrier::is_registered() {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The slow half: `membarrier` once the process is registered, else `fence(SeqCst)`. Also a
/// `fence(SeqCst)` of this thread in both cases.
pub(crate) fn heavy() {
    fence(Ordering::SeqCst);
    if membarrier::register() {
        membarrier::barrier();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// On the machines this project is built and tested on (64-bit Linux, kernel 4.14+), the
    /// registration succeeds and both halves run: if it fails, events pay a full fence each
    /// (correct, 6-8 ns slower), which this test reports rather than hides.
    #[test]
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
    fn on_linux_the_process_registers_and_both_halves_run() {
        prepare();
        assert!(
            membarrier::is_registered(),
            "membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) failed: a kernel older than \
             4.14 or a seccomp policy that refuses the call; events then issue a full fence each"
        );
        light();
        heavy();
        // Twice: the registration is done once, the barrier every time.
        prepare();
        heavy();
    }
}
