//! The `#[instrument_event]` attribute of notify. Use it through `notify_core::instrument_event`
//! (notify-core's default feature "macros"); the code it generates refers to `::notify_core`
//! only, so depending on notify-core alone is enough.
//!
//! `attr` parses the attribute, `expand` writes the instrumented function.

mod attr;
mod expand;

use proc_macro::TokenStream;

/// Instruments a function: every call publishes one event, on the global notifier, through a
/// `static` callsite of its own. The full documentation, with examples that run, is on
/// `notify_core::instrument_event`.
///
/// ```ignore
/// #[notify_core::instrument_event("sql.query", fields(sql), err)]
/// fn query(sql: &str) -> Result<u64, std::io::Error> {
///     Ok(3)
/// }
/// ```
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
