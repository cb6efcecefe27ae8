//! `#[instrument_event]`: see notify-core's documentation. (In progress.)

use proc_macro::TokenStream;

/// Placeholder until the macro lands: returns the item unchanged.
#[proc_macro_attribute]
pub fn instrument_event(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
