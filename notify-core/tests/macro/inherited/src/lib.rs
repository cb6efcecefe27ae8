//! A crate whose notify-core dependency is `ncw = { workspace = true }`, the rename living in the
//! workspace root's `[workspace.dependencies]` (`ncw = { package = "notify-core", ... }`). Its test
//! checks that `#[ncw::instrument_event]` finds notify-core as `::ncw` with no option.

/// Instrumented in the library itself, under the inherited renamed dependency.
#[ncw::instrument_event("inherited.lib", fields(x), ret)]
pub fn double(x: u32) -> u32 {
    x * 2
}
