//! An edition-2024 crate that names its notify-core dependency `nc` (`nc = { package =
//! "notify-core", ... }`). Its tests check that `#[nc::instrument_event]` needs no option to find
//! notify-core (tests/renamed_dependency.rs) and that instrumented bodies keep edition 2024's
//! semantics (tests/edition_2024.rs).

/// Instrumented in the library itself, under the renamed dependency.
#[nc::instrument_event("renamed.lib", fields(x), err)]
pub fn halve(x: u32) -> Result<u32, std::fmt::Error> {
    if x % 2 == 1 {
        return Err(std::fmt::Error);
    }
    Ok(x / 2)
}
