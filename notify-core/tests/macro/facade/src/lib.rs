//! A facade over notify: it re-exports notify-core and `#[instrument_event]`, so that its users
//! (notify-macro-downstream) need no dependency on notify-core. They give the attribute the path
//! of the re-export: `#[notify_macro_facade::instrument_event(crate = notify_macro_facade::notify_core)]`.

pub use notify_core;
pub use notify_core::instrument_event;

/// The facade instruments its own code too, with notify-core found in its own Cargo.toml.
#[instrument_event("facade_own.fixture", ret)]
#[must_use]
pub fn facade_own(x: u32) -> u32 {
    x + 1
}
