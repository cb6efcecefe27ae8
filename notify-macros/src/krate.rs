//! Where notify-core is, as the instrumented crate names it: the `crate = path` option, else the
//! name the crate's Cargo.toml gives the `notify-core` dependency (`nc = { package = "notify-core" }`
//! is `::nc`), read from the crate's Cargo.toml once per compilation (`lookup`).

use std::path::Path;

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};

use crate::lookup::{Cache, Lookup};

/// The package whose `__private` module the expansion calls, and the answers for the manifests
/// this compilation has seen.
static NOTIFY_CORE: Cache = Cache::new("notify-core");

/// The path of notify-core's `__private` module in the instrumented crate.
pub(crate) struct Private(TokenStream);

impl Private {
    /// The path, every token spanned at `span` (so that an error about a call points at the part of
    /// the attribute or the body it comes from, not at the whole attribute). Every span used here
    /// resolves at the call site, like the path as written.
    pub(crate) fn at(&self, span: Span) -> TokenStream {
        respan(self.0.clone(), span)
    }
}

fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut respanned = proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                respanned.set_span(span);
                return TokenTree::Group(respanned);
            }
            token.set_span(span);
            token
        })
        .collect()
}

/// The path of notify-core's `__private` in the instrumented crate, like
/// `::notify_core::__private`, `::nc::__private` or `my_facade::notify_core::__private`.
pub(crate) fn private_path(explicit: Option<&syn::Path>, attribute: Span) -> syn::Result<Private> {
    let krate = notify_core_path(explicit, attribute)?;
    Ok(Private(quote!(#krate::__private)))
}

fn notify_core_path(explicit: Option<&syn::Path>, attribute: Span) -> syn::Result<TokenStream> {
    if let Some(path) = explicit {
        return Ok(path.to_token_stream());
    }
    // Cargo sets CARGO_MANIFEST_DIR for every crate it compiles; without it (a build without
    // Cargo) there is no manifest to read, and the crate's own name for notify-core is the guess.
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return Ok(quote!(::notify_core));
    };
    match NOTIFY_CORE.lookup(&Path::new(&dir).join("Cargo.toml")) {
        Lookup::Name(name) => {
            let name = Ident::new(&name, Span::call_site());
            Ok(quote!(::#name))
        }
        // notify-core's own doctests, examples and tests: they see it as the extern crate
        // `notify_core` (its library does not instrument itself).
        Lookup::Itself | Lookup::NoManifest => Ok(quote!(::notify_core)),
        Lookup::NotFound(path) => Err(syn::Error::new(
            attribute,
            format_args!(
                "#[instrument_event]: this crate does not depend on `notify-core` (not in `{}`); if it \
                 uses the attribute through a crate that re-exports notify-core, add notify-core's path \
                 to the attribute: `crate = my_facade::notify_core`",
                path.display()
            ),
        )),
        Lookup::Unreadable { path, reason } => Err(syn::Error::new(
            attribute,
            format_args!(
                "#[instrument_event]: cannot read `{}` to find the name this crate gives notify-core: \
                 {reason}; or name it in the attribute: `crate = notify_core`",
                path.display()
            ),
        )),
    }
}
