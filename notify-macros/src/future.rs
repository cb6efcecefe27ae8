//! Functions that return a future without being an `async fn`: `#[async_trait]` methods (their
//! body becomes `Box::pin(async move { .. })`) and hand-written ones whose body ends in an async
//! block. The attribute instruments the async block, so the event covers the future's run; a
//! function that returns a future in any other way is refused, because its event would time only
//! the creation of the future.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Block, Expr, ExprAsync, ReturnType, Stmt, Type, TypeParamBound};

/// A body that ends in an async block, possibly boxed: `...; async move { .. }` or
/// `...; Box::pin(async move { .. })`.
pub(crate) struct FutureBody {
    /// The statements before the tail, as written (they run when the function is called).
    before: Vec<Stmt>,
    /// The tail: the async block itself, or a `Box::pin(..)` call around it.
    tail: Expr,
}

impl FutureBody {
    /// Finds the async block at the tail of `body` (the statements of a function's block).
    pub(crate) fn find(body: &TokenStream) -> Option<FutureBody> {
        let mut stmts = syn::parse::Parser::parse2(Block::parse_within, body.clone()).ok()?;
        let Some(Stmt::Expr(tail, None)) = stmts.last() else {
            return None;
        };
        let found = match tail {
            Expr::Async(_) => true,
            Expr::Call(call) => {
                call.args.len() == 1 && matches!(call.args[0], Expr::Async(_)) && is_box_pin(&call.func)
            }
            _ => false,
        };
        if !found {
            return None;
        }
        let Some(Stmt::Expr(tail, None)) = stmts.pop() else {
            return None;
        };
        Some(FutureBody { before: stmts, tail })
    }

    /// The body with its async block replaced by `instrument(block)`.
    pub(crate) fn rewrite(self, instrument: impl FnOnce(ExprAsync) -> TokenStream) -> TokenStream {
        let FutureBody { before, tail } = self;
        let tail = match tail {
            Expr::Async(block) => instrument(block),
            Expr::Call(mut call) => {
                if let Some(Expr::Async(block)) = call.args.pop().map(syn::punctuated::Pair::into_value) {
                    call.args.push(Expr::Verbatim(instrument(block)));
                }
                call.into_token_stream()
            }
            other => other.into_token_stream(),
        };
        let mut out = TokenStream::new();
        for stmt in before {
            stmt.to_tokens(&mut out);
        }
        out.extend(tail);
        out
    }
}

/// `Box::pin`, by any path that ends so (`std::boxed::Box::pin`, `::alloc::boxed::Box::pin`).
fn is_box_pin(func: &Expr) -> bool {
    let Expr::Path(path) = func else { return false };
    let segments: Vec<_> = path.path.segments.iter().map(|s| s.ident.to_string()).collect();
    segments.ends_with(&["Box".to_owned(), "pin".to_owned()])
}

/// Whether the declared return type is a future: `impl Future<..>`, `Pin<Box<dyn Future<..>>>`,
/// futures' `BoxFuture<..>` and `LocalBoxFuture<..>`.
pub(crate) fn returns_future(output: &ReturnType) -> bool {
    match output {
        ReturnType::Default => false,
        ReturnType::Type(_, ty) => is_future(ty),
    }
}

fn is_future(ty: &Type) -> bool {
    match ty {
        Type::ImplTrait(t) => has_future_bound(t.bounds.iter()),
        Type::TraitObject(t) => has_future_bound(t.bounds.iter()),
        Type::Paren(t) => is_future(&t.elem),
        Type::Group(t) => is_future(&t.elem),
        Type::Path(t) => {
            let Some(last) = t.path.segments.last() else {
                return false;
            };
            match last.ident.to_string().as_str() {
                "BoxFuture" | "LocalBoxFuture" => true,
                "Pin" | "Box" => match &last.arguments {
                    syn::PathArguments::AngleBracketed(args) => args.args.iter().any(|arg| match arg {
                        syn::GenericArgument::Type(inner) => is_future(inner),
                        _ => false,
                    }),
                    _ => false,
                },
                _ => false,
            }
        }
        _ => false,
    }
}

fn has_future_bound<'a>(mut bounds: impl Iterator<Item = &'a TypeParamBound>) -> bool {
    bounds.any(|bound| match bound {
        TypeParamBound::Trait(t) => t
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Future" || s.ident == "IntoFuture"),
        _ => false,
    })
}
