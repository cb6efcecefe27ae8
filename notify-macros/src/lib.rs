//! The `#[instrument_event]` attribute of notify. Use it through `notify_core::instrument_event`
//! (notify-core's default feature "macros"); the code it generates refers to notify-core by the
//! name the crate's Cargo.toml gives it (or the `crate = path` option), so depending on notify-core
//! alone is enough, renamed or not.
//!
//! `attr` parses the attribute, `krate` finds notify-core (reading the crate's Cargo.toml through `lookup` and `manifest`), `awaits` tells whether an async body
//! suspends, `future` finds the async block of a
//! function that returns a future (`#[async_trait]` methods), `expand` writes the instrumented function.

mod attr;
mod awaits;
mod expand;
mod future;
mod krate;
mod lookup;
mod manifest;

use proc_macro::TokenStream;

/// (Defined in the notify-macros crate and re-exported by notify-core, whose feature `macros`
/// brings it in.)
#[proc_macro_attribute]
pub fn instrument_event(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = attr::Errors::default();
    let args = attr::Args::parse(attr.into(), &mut errors);
    let result = match syn::parse::<expand::Function>(item) {
        Ok(function) => expand::expand(&args, function, errors),
        Err(error) => Err(errors.with(error)),
    };
    result.unwrap_or_else(syn::Error::into_compile_error).into()
}
