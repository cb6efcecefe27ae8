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
    let args = attr::Args::parse(attr.into());
    let function = syn::parse::<expand::Function>(item);
    let result = match (args, function) {
        (Ok(args), Ok(function)) => expand::expand(&args, function),
        (Err(mut e), Err(e2)) => {
            e.combine(e2);
            Err(e)
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    result.unwrap_or_else(syn::Error::into_compile_error).into()
}
