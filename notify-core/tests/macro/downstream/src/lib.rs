//! Uses `#[instrument_event]` through notify-macro-facade only: this crate has no dependency on
//! notify-core, so the attribute is told where notify-core is with `crate = path`.

use notify_macro_facade::instrument_event;

/// Named, with fields and `err`, through the facade's re-export of the attribute.
#[instrument_event("checkout.downstream", fields(cart), err, crate = notify_macro_facade::notify_core)]
pub fn checkout(cart: u32) -> Result<u32, std::fmt::Error> {
    if cart == 0 {
        return Err(std::fmt::Error);
    }
    Ok(cart * 2)
}

/// The attribute by its full path, the default event name (`"{fn}.{module}"`), `crate` as
/// serde writes it (a string).
pub mod orders {
    #[notify_macro_facade::instrument_event(crate = "notify_macro_facade::notify_core")]
    #[must_use]
    pub fn place() -> u8 {
        7
    }
}

/// An async fn through the facade.
#[instrument_event("ship.downstream", fields(parcel), ret, crate = notify_macro_facade::notify_core)]
pub async fn ship(parcel: &str) -> usize {
    parcel.len()
}
