//! Does an async fn's body suspend? A body with no `.await` of its own runs to completion within
//! its first poll, so it needs no per-poll wrapper: the attribute then instruments it like a sync
//! body, and the function keeps rustc's and clippy's view of it (`clippy::unused_async` still
//! fires on an `async fn` that awaits nothing).
//!
//! The scan is of tokens, so it answers "may await" whenever it cannot see: a macro other than
//! the standard ones listed below may expand to an `.await` (`join!`, `select!`).

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// Standard macros whose expansion awaits nothing but what their arguments (scanned too) await.
const PLAIN_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "cfg",
    "column",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "include_bytes",
    "include_str",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

/// True when the body certainly does not await at its own level: no `.await` outside nested
/// `async` blocks and closures, and no macro that might expand to one. A body that is only
/// `todo!()` or `unimplemented!()` counts as awaiting, so it keeps the wrapper, as clippy leaves
/// such stubs alone.
pub(crate) fn never_awaits(body: &TokenStream) -> bool {
    !is_stub(body) && !may_await(body.clone())
}

fn may_await(tokens: TokenStream) -> bool {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(ident) if ident == "async" => {
                // `async { .. }`, `async move { .. }`, `async |..| ..`, `async move |..| ..`: the
                // awaits inside belong to the nested future. Skip to its body.
                let mut j = i + 1;
                if matches!(tokens.get(j), Some(TokenTree::Ident(m)) if m == "move") {
                    j += 1;
                }
                match tokens.get(j) {
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                        i = j + 1;
                        continue;
                    }
                    // An async closure or an `async fn` item: give up on seeing where it ends.
                    _ => return true,
                }
            }
            TokenTree::Punct(dot) if dot.as_char() == '.' => {
                if matches!(tokens.get(i + 1), Some(TokenTree::Ident(kw)) if kw == "await") {
                    return true;
                }
            }
            TokenTree::Punct(bang) if bang.as_char() == '!' => {
                // `name!(..)`: a macro call (not `!=`, not `!expr`: those are not between an
                // identifier and a group).
                if let (Some(TokenTree::Ident(name)), Some(TokenTree::Group(_))) =
                    (i.checked_sub(1).and_then(|p| tokens.get(p)), tokens.get(i + 1))
                {
                    if !PLAIN_MACROS.contains(&name.to_string().as_str()) {
                        return true;
                    }
                }
            }
            TokenTree::Group(group) if may_await(group.stream()) => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// `todo!(..)` or `unimplemented!(..)` alone (with or without a `;`).
fn is_stub(body: &TokenStream) -> bool {
    let tokens: Vec<TokenTree> = body.clone().into_iter().collect();
    let tokens = match tokens.as_slice() {
        [rest @ .., TokenTree::Punct(semi)] if semi.as_char() == ';' => rest,
        all => all,
    };
    matches!(
        tokens,
        [TokenTree::Ident(name), TokenTree::Punct(bang), TokenTree::Group(_)]
            if bang.as_char() == '!' && (name == "todo" || name == "unimplemented")
    )
}

#[cfg(test)]
mod tests {
    use super::never_awaits;
    use quote::quote;

    #[test]
    fn bodies_that_never_await() {
        assert!(never_awaits(&quote!()));
        assert!(never_awaits(&quote!(let x = 1; x + 1)));
        assert!(never_awaits(&quote!(println!("{}", x); assert!(x != 2, "no"); x)));
        assert!(never_awaits(&quote!(let f = async { g().await }; drop(f);)));
        assert!(never_awaits(&quote!(let f = async move { g().await }; drop(f);)));
        assert!(never_awaits(&quote!(if !done { todo!("later") } 1)));
    }

    #[test]
    fn bodies_that_may_await() {
        assert!(!never_awaits(&quote!(g().await)));
        assert!(!never_awaits(&quote!(let x = { h(g().await) }; x)));
        assert!(!never_awaits(&quote!(println!("{}", g().await))));
        assert!(!never_awaits(&quote!(tokio::join!(a, b))));
        assert!(!never_awaits(&quote!(select! { x = a => x })));
        assert!(!never_awaits(&quote!(let f = async |x| x; f(1).await)));
        assert!(!never_awaits(&quote!(todo!())));
        assert!(!never_awaits(&quote!(unimplemented!("soon");)));
    }
}
