//! Expansion: the instrumented function.
//!
//! The user's body appears once, spliced as written (its spans kept, so type errors point at the
//! user's code); the return type is never written into a `let` or a closure signature. Names the
//! expansion introduces as locals use `Span::mixed_site()`, so the body cannot see them.

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Pat, Signature, Token, Visibility};

use crate::attr::{Args, Errors, Format};
use crate::awaits::never_awaits;
use crate::future::{returns_future, FutureBody};
use crate::krate::Private;

/// A function with a body: a free fn, an inherent or trait-impl method, or a trait's default method.
pub(crate) struct Function {
    attrs: Vec<Attribute>,
    vis: Visibility,
    sig: Signature,
    inner_attrs: Vec<Attribute>,
    body: TokenStream,
    brace: Span,
}

impl Parse for Function {
    fn parse(input: ParseStream) -> syn::Result<Function> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let function_ahead = input.fork();
        function_ahead.parse::<Option<Token![const]>>()?;
        function_ahead.parse::<Option<Token![async]>>()?;
        function_ahead.parse::<Option<Token![unsafe]>>()?;
        function_ahead.parse::<Option<syn::Abi>>()?;
        if !function_ahead.peek(Token![fn]) {
            return Err(input.error("#[instrument_event] instruments functions: free fns, methods and async fns"));
        }
        let sig: Signature = input.parse()?;
        if input.peek(Token![;]) {
            return Err(syn::Error::new(
                sig.ident.span(),
                "#[instrument_event] needs a function body: put it on the impl's method, not the trait's declaration",
            ));
        }
        let group: Group = input.parse()?;
        if group.delimiter() != Delimiter::Brace {
            return Err(syn::Error::new(group.span(), "expected the function body `{ ... }`"));
        }
        let brace = group.span();
        let (inner_attrs, body) = syn::parse::Parser::parse2(
            |content: ParseStream| Ok((content.call(Attribute::parse_inner)?, content.parse::<TokenStream>()?)),
            group.stream(),
        )?;
        Ok(Function {
            attrs,
            vis,
            sig,
            inner_attrs,
            body,
            brace,
        })
    }
}

/// The names the arguments bind (identifier patterns, nested ones included).
fn bound_idents(pat: &Pat, out: &mut Vec<Ident>) {
    match pat {
        Pat::Ident(p) => {
            out.push(p.ident.clone());
            if let Some((_, sub)) = &p.subpat {
                bound_idents(sub, out);
            }
        }
        Pat::Tuple(p) => p.elems.iter().for_each(|p| bound_idents(p, out)),
        Pat::TupleStruct(p) => p.elems.iter().for_each(|p| bound_idents(p, out)),
        Pat::Struct(p) => p.fields.iter().for_each(|f| bound_idents(&f.pat, out)),
        Pat::Slice(p) => p.elems.iter().for_each(|p| bound_idents(p, out)),
        Pat::Reference(p) => bound_idents(&p.pat, out),
        Pat::Paren(p) => bound_idents(&p.pat, out),
        Pat::Type(p) => bound_idents(&p.pat, out),
        Pat::Or(p) => {
            if let Some(first) = p.cases.first() {
                bound_idents(first, out);
            }
        }
        _ => {}
    }
}

/// For async fns: the arguments the body's future rebinds as its own locals (as rustc's own
/// `async fn` lowering does): the `mut` bindings, which take their `mut` along (so `x = &local`
/// compiles, shared/cases M4, and `unused_mut` still points at the user's `mut`), and the
/// `&mut` references (so the body can return a reborrow of one). Other arguments are captured as
/// they are, so the future does not hold them twice.
fn take_rebindings(pat: &mut Pat, mut_ref: bool, out: &mut Vec<(Option<Token![mut]>, Ident)>) {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() && (p.mutability.is_some() || mut_ref) => {
            out.push((p.mutability.take(), p.ident.clone()));
        }
        Pat::Tuple(p) => p.elems.iter_mut().for_each(|p| take_rebindings(p, false, out)),
        Pat::TupleStruct(p) => p.elems.iter_mut().for_each(|p| take_rebindings(p, false, out)),
        Pat::Struct(p) => p
            .fields
            .iter_mut()
            .for_each(|f| take_rebindings(&mut f.pat, false, out)),
        Pat::Slice(p) => p.elems.iter_mut().for_each(|p| take_rebindings(p, false, out)),
        Pat::Reference(p) => take_rebindings(&mut p.pat, false, out),
        Pat::Paren(p) => take_rebindings(&mut p.pat, mut_ref, out),
        _ => {}
    }
}

/// True when `ident` appears in the tokens of some field's value (the payload uses it).
fn used_by_fields(args: &Args, ident: &Ident) -> bool {
    fn scan(tokens: TokenStream, ident: &Ident) -> bool {
        tokens.into_iter().any(|token| match token {
            proc_macro2::TokenTree::Ident(i) => i == *ident,
            proc_macro2::TokenTree::Group(g) => scan(g.stream(), ident),
            _ => false,
        })
    }
    args.fields
        .iter()
        .any(|field| scan(field.value.to_token_stream(), ident))
}

/// The `static` callsite, named by the attribute or by the convention `"{fn}.{module}"`.
fn callsite(args: &Args, private: &Private, function: &Ident, callsite: &Ident) -> TokenStream {
    let private = private.at(Span::call_site());
    let name = if let Some(name) = &args.name {
        name.to_token_stream()
    } else {
        let text = function.to_string();
        let text = text.strip_prefix("r#").unwrap_or(&text);
        quote! {{
            const LEN: usize = #private::default_name_len(#text, ::core::module_path!());
            const NAME: [u8; LEN] = #private::default_name::<LEN>(#text, ::core::module_path!());
            #private::name_str(&NAME)
        }}
    };
    quote! {
        static #callsite: #private::Callsite = #private::Callsite::at(
            #name,
            #private::Location::new(::core::file!(), ::core::line!(), ::core::module_path!()),
        );
    }
}

/// The payload closure: it fills the event's payload in place (no payload built and moved).
fn payload(args: &Args, private: &Private) -> TokenStream {
    let payload = format_ident!("notify_payload", span = Span::mixed_site());
    let entries = args.fields.iter().map(|field| {
        let key = &field.key;
        let value = &field.value;
        let span = value.span();
        let private = private.at(span);
        let value = match field.format {
            // A string literal is a `&'static str`: stored borrowed (`ToValue` would copy it).
            Format::Value if is_str_literal(value) => quote_spanned!(span=> #private::Value::from_static(#value)),
            Format::Value => quote_spanned!(span=> #private::value(&(#value))),
            Format::Display => quote_spanned!(span=> #private::display(&(#value))),
            Format::Debug => quote_spanned!(span=> #private::debug(&(#value))),
        };
        quote_spanned!(span=> #private::Payload::insert(#payload, #key, #value);)
    });
    let private = private.at(Span::call_site());
    quote!(|#payload: &mut #private::Payload| { #(#entries)* })
}

/// True for a string literal (`"..."`, `r"..."`), possibly in parentheses.
fn is_str_literal(value: &syn::Expr) -> bool {
    match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_), ..
        }) => true,
        syn::Expr::Paren(inner) => is_str_literal(&inner.expr),
        _ => false,
    }
}

/// Which `record_*` function records the result, or `None`.
fn record(args: &Args, private: &Private) -> Option<TokenStream> {
    let (span, function) = match (args.err, args.ret) {
        (Some(err), Some(_)) => (err, "record_err_ret"),
        (Some(err), None) => (err, "record_err"),
        (None, Some(ret)) => (ret, "record_ret"),
        (None, None) => return None,
    };
    let private = private.at(span);
    let function = Ident::new(function, span);
    Some(quote_spanned!(span=> #private::#function))
}

/// Checks the shorthand fields against the arguments.
fn check_fields(args: &Args, sig: &Signature, errors: &mut Errors) {
    let mut names = Vec::new();
    let mut receiver = false;
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(_) => receiver = true,
            FnArg::Typed(arg) => bound_idents(&arg.pat, &mut names),
        }
    }
    for field in &args.fields {
        let Some(ident) = &field.shorthand else { continue };
        let known = names.iter().any(|name| name == ident) || (receiver && ident == "self");
        if !known {
            errors.at(
                ident.span(),
                format_args!(
                    "`fields`: `{ident}` is not an argument of `{}`; write `{ident} = expr` to record a value",
                    sig.ident
                ),
            );
        }
    }
}

/// The whole expansion.
pub(crate) fn expand(args: &Args, function: Function, mut errors: Errors) -> syn::Result<TokenStream> {
    if let Some(constness) = &function.sig.constness {
        errors.at(constness.span, "#[instrument_event] cannot instrument a `const fn`");
    }
    check_fields(args, &function.sig, &mut errors);
    let private = match crate::krate::private_path(args.krate.as_ref(), Span::call_site()) {
        Ok(private) => private,
        Err(error) => return Err(errors.with(error)),
    };
    errors.finish()?;

    let site = Ident::new("__NOTIFY_CALLSITE", Span::call_site());
    let static_item = callsite(args, &private, &function.sig.ident, &site);
    let payload = payload(args, &private);
    let record = record(args, &private);
    let record_at = |span: Span| private.at(span);
    let private = private.at(Span::call_site());
    let Function {
        attrs,
        vis,
        mut sig,
        inner_attrs,
        body,
        brace,
    } = function;
    let user_block = {
        let mut group = Group::new(Delimiter::Brace, body.clone());
        group.set_span(brace);
        group
    };

    let hint = format_ident!("notify_hint", span = Span::mixed_site());
    let hint_let = quote! {
        let #hint = #private::Hint::new();
        if false {
            return #hint.unreachable();
        }
    };
    // Type errors about the return type then mention the user's `-> T`.
    let output_span = match &sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => Span::call_site(),
    };
    let inner_return = quote_spanned!(output_span=> return #hint.unreachable(););
    // The event of a future: started on its first poll, entered during each poll (see
    // macro_support::Instrumented). With `err` or `ret`, every use of the record function is
    // spanned at the key, so a type that does not fit is one error there.
    // `parent = expr`: evaluated only when someone listens.
    let (start_detached, guard_start) = match &args.parent {
        None => (
            quote!(#private::start_detached(&#site, #payload)),
            quote!(#private::Guard::start),
        ),
        Some(parent) => (
            quote!(#private::start_detached_with_parent(&#site, || #parent, #payload)),
            quote!(#private::Guard::start_with_parent),
        ),
    };
    let parent_arg = args.parent.as_ref().map(|parent| quote!(|| #parent,));
    let instrument_future = |future: TokenStream| {
        let handle = format_ident!("notify_handle", span = Span::mixed_site());
        let key = record.as_ref().map_or_else(Span::call_site, Spanned::span);
        let record = record.clone().unwrap_or_else(|| quote!(#private::record_nothing));
        let private_at_key = record_at(key);
        let instrumented = quote_spanned!(key=> #private_at_key::instrumented);
        let mut call = Group::new(Delimiter::Parenthesis, quote!(#handle, #hint, #future, #record,));
        call.set_span(key);
        let dot_await = quote_spanned!(key=> .await);
        quote! {
            let #handle = #start_detached;
            #instrumented #call #dot_await
        }
    };
    let brace_group = |tokens: TokenStream| {
        let mut group = Group::new(Delimiter::Brace, tokens);
        group.set_span(brace);
        group
    };
    let future_body = if sig.asyncness.is_none() {
        FutureBody::find(&body)
    } else {
        None
    };
    if future_body.is_none() && sig.asyncness.is_none() && returns_future(&sig.output) {
        let syn::ReturnType::Type(_, ty) = &sig.output else {
            unreachable!("returns_future is false without a return type")
        };
        let error = syn::Error::new_spanned(
            ty,
            "#[instrument_event] would time only the creation of this future, not its run (it cannot \
             find the future's async block): make it an `async fn`, or end its body with \
             `async move { ... }` or `Box::pin(async move { ... })` (as `#[async_trait]` writes it), \
             which it instruments",
        )
        .into_compile_error();
        // The function stays as written, so its uses raise no further errors.
        let block = brace_group(quote!(#(#inner_attrs)* #body));
        return Ok(quote!(#error #(#attrs)* #vis #sig #block));
    }

    let instrumented = if let Some(future_body) = future_body {
        // `#[async_trait]` methods and functions ending in `async move { .. }` (possibly boxed):
        // the async block is instrumented, as if it were an async fn's body. The callsite is
        // declared inside the new async block, so the function's body is still one tail
        // expression where it was (clippy's `manual_async_fn` still sees it).
        future_body.rewrite(|block| {
            let run = instrument_future(block.into_token_stream());
            quote! {
                async move {
                    #static_item
                    let #hint = #private::Hint::new();
                    #run
                }
            }
        })
    } else if sig.asyncness.is_some() && !never_awaits(&body) {
        let mut rebind = Vec::new();
        for input in &mut sig.inputs {
            if let FnArg::Typed(arg) = input {
                let mut_ref = matches!(&*arg.ty, syn::Type::Reference(r) if r.mutability.is_some());
                take_rebindings(&mut arg.pat, mut_ref, &mut rebind);
            }
        }
        let rebind = rebind.iter().map(|(mutability, ident)| {
            // The payload's use of an argument is a use: no `unused_variables` for the rebinding.
            let allow = used_by_fields(args, ident).then(|| quote!(#[allow(unused_variables)]));
            quote!(#allow let #mutability #ident = #ident;)
        });
        // The async block has the span of the user's braces: lints on the body (such as
        // `clippy::needless_return`) see it as the user's code.
        let inner = brace_group(quote! {
            if false {
                #inner_return
            }
            #(#rebind)*
            #user_block
        });
        let run = instrument_future(quote_spanned!(brace=> async move #inner));
        quote! {
            #static_item
            #hint_let
            #run
        }
    } else if let Some(record) = record {
        let future_check = future_check(&sig, &private, &hint);
        // A sync body, or an async body that never awaits (it runs within one poll): the body runs
        // in a closure called at once, so its `return` and `?` leave the closure and the value is
        // recorded. The closure has the span of the user's braces (lints on the body see the user's
        // code), and captures what it uses by reference unless an argument is a `&mut` (whose
        // reborrow the body may return), so `clippy::needless_pass_by_value` still sees the arguments.
        let guard = format_ident!("notify_guard", span = Span::mixed_site());
        let value = format_ident!("notify_value", span = Span::mixed_site());
        let span = record.span();
        let private_at_key = record_at(span);
        // `record` is cast to a fn pointer: clippy reads a function path passed as an argument as
        // a mutated static, and would stop suggesting `#[must_use]` on the user's function.
        let record_call = quote_spanned! {span=>
            #private_at_key::Guard::record(
                &mut #guard,
                &#value,
                #record as fn(&mut #private_at_key::Payload, &_),
            );
        };
        let capture = has_mut_ref_argument(&sig).then(|| quote_spanned!(brace=> move));
        let closure = quote_spanned!(brace=> #capture || #user_block);
        quote! {
            #static_item
            #hint_let
            #future_check
            let mut #guard = #private::Guard::new();
            #guard_start(&mut #guard, &#site, #parent_arg #payload);
            let #value = #private::call_once(#hint, #closure);
            #record_call
            #value
        }
    } else {
        let guard = format_ident!("_notify_guard", span = Span::mixed_site());
        let future_check = future_check(&sig, &private, &hint);
        let hint_let = (!future_check.is_empty()).then_some(&hint_let);
        quote! {
            #static_item
            #hint_let
            #future_check
            let mut #guard = #private::Guard::new();
            #guard_start(&mut #guard, &#site, #parent_arg #payload);
            #body
        }
    };

    let mut out = quote! {
        #(#attrs)*
        #vis #sig
    };
    out.extend(
        brace_group(quote! {
            #(#inner_attrs)*
            #instrumented
        })
        .into_token_stream(),
    );
    Ok(out)
}

/// For a sync function whose return type is written out (no `impl Trait`, which the check could
/// not look into; not `!`, `Result` or `Option`): a compile error when that type is a future after all (a type
/// alias, say), since the event would time only the creation of the future. `hint` is the
/// function's `Hint<R>`; the check sits in an `if false` and costs nothing.
fn future_check(sig: &Signature, private: &TokenStream, hint: &Ident) -> TokenStream {
    let syn::ReturnType::Type(_, ty) = &sig.output else {
        return TokenStream::new();
    };
    fn has_impl(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            proc_macro2::TokenTree::Ident(i) => i == "impl",
            proc_macro2::TokenTree::Group(g) => has_impl(g.stream()),
            _ => false,
        })
    }
    let has_impl = has_impl(ty.to_token_stream());
    // `Result` and `Option` are never futures; skipping them keeps `clippy::unnecessary_wraps`,
    // which gives up on a function with a `return` it cannot read (the hint's).
    let result_or_option = matches!(&**ty, syn::Type::Path(p)
        if p.path.segments.last().is_some_and(|s| s.ident == "Result" || s.ident == "Option"));
    if sig.asyncness.is_some() || has_impl || result_or_option || matches!(&**ty, syn::Type::Never(_)) {
        return TokenStream::new();
    }
    // The argument's first and last tokens are located at the type's, so the error underlines the
    // whole return type.
    let mut tokens = ty.to_token_stream().into_iter();
    let first = tokens.next().map_or_else(Span::call_site, |t| t.span());
    let last = tokens.last().map_or(first, |t| t.span());
    let mut receiver = Group::new(Delimiter::Parenthesis, quote_spanned!(first=> &#hint));
    receiver.set_span(first);
    let mut call = Group::new(Delimiter::Parenthesis, TokenStream::new());
    call.set_span(last);
    let probe = Ident::new("probe", last);
    let check = quote_spanned!(first=> #private::require_not_a_future(#receiver.#probe #call));
    quote! {
        if false {
            #[allow(unused_imports)]
            use #private::{FutureProbe as _, NotAFutureProbe as _};
            #check;
        }
    }
}

/// Whether the function takes a `&mut` (`&mut self` included).
fn has_mut_ref_argument(sig: &Signature) -> bool {
    sig.inputs.iter().any(|input| match input {
        FnArg::Receiver(receiver) => {
            receiver.mutability.is_some() && receiver.reference.is_some()
                || matches!(&*receiver.ty, syn::Type::Reference(r) if r.mutability.is_some())
        }
        FnArg::Typed(arg) => matches!(&*arg.ty, syn::Type::Reference(r) if r.mutability.is_some()),
    })
}
