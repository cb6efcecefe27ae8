//! Parsing the attribute: `#[instrument_event("name", fields(...), err, ret, parent = expr, crate = path)]`.
//!
//! Every problem found is kept and reported together (`syn::Error::combine`), each pointing at
//! the key or value at fault; parsing stops only where the input cannot be read any further.

use proc_macro2::{Ident, Span};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, LitStr, Token};

/// The keys the attribute accepts, for error messages.
const KEYS: &str = "`name`, `fields`, `err`, `ret`, `parent` or `crate`";

/// The parsed attribute.
#[derive(Default)]
pub(crate) struct Args {
    /// `name = "..."` or a bare string literal.
    pub name: Option<LitStr>,
    /// `fields(...)`, in order.
    pub fields: Vec<Field>,
    /// `err`: the span of the key.
    pub err: Option<Span>,
    /// `ret`: the span of the key.
    pub ret: Option<Span>,
    /// `crate = path`: where notify-core is, for crates that reach it through a re-export.
    pub krate: Option<syn::Path>,
    /// `parent = expr`: the event's explicit parent (anything `Into<notify_core::Context>`).
    pub parent: Option<Expr>,
}

/// How a field value is turned into a payload value.
#[derive(Clone, Copy)]
pub(crate) enum Format {
    /// `key = expr`: numbers, bools, strings, durations, as they are.
    Value,
    /// `key = %expr`: the `Display` text.
    Display,
    /// `key = ?expr`: the `Debug` text.
    Debug,
}

/// One entry of `fields(...)`.
pub(crate) struct Field {
    /// The payload key, with the span of the key as written.
    pub key: LitStr,
    /// How the value is recorded.
    pub format: Format,
    /// The value expression.
    pub value: Expr,
    /// For the shorthand `fields(arg)`, the argument it names (checked against the signature).
    pub shorthand: Option<Ident>,
}

/// Collects errors so that all of them are reported at once.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }

    /// All the errors, with `error` last.
    pub(crate) fn with(mut self, error: syn::Error) -> syn::Error {
        self.push(error);
        self.0.expect("an error was pushed")
    }
}

impl Args {
    /// Parses the attribute's tokens, adding every problem to `errors`; where the tokens cannot be
    /// read any further, what was read so far is returned.
    pub(crate) fn parse(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
        let mut args = Args::default();
        if let Err(fatal) = (|input: ParseStream| parse_args(input, &mut args, errors)).parse2(tokens) {
            errors.push(fatal);
        }
        args
    }
}

fn parse_args(input: ParseStream, args: &mut Args, errors: &mut Errors) -> syn::Result<()> {
    let mut fields_seen: Option<Span> = None;
    while !input.is_empty() {
        if input.peek(LitStr) {
            let name: LitStr = input.parse()?;
            set_name(args, name, errors);
        } else {
            let key = Ident::parse_any(input)?;
            let span = key.span();
            match key.to_string().as_str() {
                "name" => {
                    if expect_eq(input, &key, errors)? {
                        if input.peek(LitStr) {
                            let name: LitStr = input.parse()?;
                            set_name(args, name, errors);
                        } else {
                            let value: Expr = input.parse()?;
                            errors.push(syn::Error::new_spanned(
                                value,
                                "`name` expects a string literal, like `name = \"query.sql\"`",
                            ));
                        }
                    }
                }
                "fields" => {
                    if fields_seen.is_some() {
                        errors.at(span, "duplicate key `fields`: list every field in one `fields(...)`");
                    }
                    fields_seen = Some(span);
                    if input.peek(syn::token::Paren) {
                        let content;
                        syn::parenthesized!(content in input);
                        parse_fields(&content, &mut args.fields, errors)?;
                    } else {
                        errors.at(span, "`fields` expects a list: `fields(key = expr, ...)`");
                        skip_value(input)?;
                    }
                }
                "err" | "ret" => {
                    let slot = if key == "err" { &mut args.err } else { &mut args.ret };
                    if slot.is_some() {
                        errors.at(span, format_args!("duplicate key `{key}`"));
                    }
                    *slot = Some(span);
                    if input.peek(Token![=]) || input.peek(syn::token::Paren) {
                        errors.at(span, format_args!("`{key}` takes no value: write just `{key}`"));
                        skip_value(input)?;
                    }
                }
                "parent" => {
                    if args.parent.is_some() {
                        errors.at(span, "duplicate key `parent`");
                    }
                    if expect_eq(input, &key, errors)? {
                        let parent: Expr = input.parse()?;
                        args.parent.get_or_insert(parent);
                    }
                }
                "crate" => {
                    if args.krate.is_some() {
                        errors.at(span, "duplicate key `crate`");
                    }
                    if expect_eq_path(input, &key, errors)? {
                        let path = parse_crate_path(input)?;
                        args.krate.get_or_insert(path);
                    }
                }
                other => {
                    errors.at(span, format_args!("unknown key `{other}`: expected {KEYS}"));
                    skip_value(input)?;
                }
            }
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(())
}

/// Sets the event name; a second one (by `name =` or a bare literal) is reported at the literal.
fn set_name(args: &mut Args, name: LitStr, errors: &mut Errors) {
    if name.value().is_empty() {
        errors.at(name.span(), "`name`: the event name must not be empty");
    }
    if args.name.is_some() {
        errors.at(
            name.span(),
            "duplicate key `name`: the event name is given twice (a bare string literal is the name too)",
        );
        return;
    }
    args.name = Some(name);
}

/// Parses `= ` after `key`; reports a missing `=` and returns whether there was one.
fn expect_eq(input: ParseStream, key: &Ident, errors: &mut Errors) -> syn::Result<bool> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        return Ok(true);
    }
    errors.at(key.span(), format_args!("`{key}` expects a value: `{key} = \"...\"`"));
    skip_value(input)?;
    Ok(false)
}

/// Parses `=` after `crate`; reports a missing `=` and returns whether there was one.
fn expect_eq_path(input: ParseStream, key: &Ident, errors: &mut Errors) -> syn::Result<bool> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        return Ok(true);
    }
    errors.at(
        key.span(),
        format_args!("`{key}` expects a path: `{key} = my_facade::notify_core`"),
    );
    skip_value(input)?;
    Ok(false)
}

/// The value of `crate = ...`: a path (`facade::notify_core`), or the same path in a string
/// literal (`"facade::notify_core"`, as serde's `crate` option is written).
fn parse_crate_path(input: ParseStream) -> syn::Result<syn::Path> {
    if input.peek(LitStr) {
        let text: LitStr = input.parse()?;
        return text.parse_with(syn::Path::parse_mod_style).map_err(|_| {
            syn::Error::new(
                text.span(),
                "`crate` expects a path to notify-core, like `crate = my_facade::notify_core`",
            )
        });
    }
    input.call(syn::Path::parse_mod_style).map_err(|error| {
        syn::Error::new(
            error.span(),
            "`crate` expects a path to notify-core, like `crate = my_facade::notify_core`",
        )
    })
}

/// Skips what follows a key (`= expr` or `(...)`), so parsing can go on after an error.
fn skip_value(input: ParseStream) -> syn::Result<()> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        input.parse::<Expr>()?;
    } else if input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in input);
        content.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}

fn parse_format(input: ParseStream) -> syn::Result<Format> {
    if input.peek(Token![%]) {
        input.parse::<Token![%]>()?;
        Ok(Format::Display)
    } else if input.peek(Token![?]) {
        input.parse::<Token![?]>()?;
        Ok(Format::Debug)
    } else {
        Ok(Format::Value)
    }
}

fn parse_fields(input: ParseStream, fields: &mut Vec<Field>, errors: &mut Errors) -> syn::Result<()> {
    let entries = Punctuated::<FieldSyntax, Token![,]>::parse_terminated_with(input, parse_field)?;
    for entry in entries {
        let key = entry.0.key.value();
        if fields.iter().any(|f| f.key.value() == key) {
            errors.at(entry.0.key.span(), format_args!("duplicate key `{key}` in `fields`"));
            continue;
        }
        fields.push(entry.0);
    }
    Ok(())
}

struct FieldSyntax(Field);

fn parse_field(input: ParseStream) -> syn::Result<FieldSyntax> {
    let leading = parse_format(input)?;
    let (key, ident) = if input.peek(LitStr) {
        let key: LitStr = input.parse()?;
        if key.value().is_empty() {
            return Err(syn::Error::new(key.span(), "`fields`: a key must not be empty"));
        }
        (key, None)
    } else {
        let ident = Ident::parse_any(input)?;
        let text = ident.to_string();
        (
            LitStr::new(text.strip_prefix("r#").unwrap_or(&text), ident.span()),
            Some(ident),
        )
    };
    if !input.peek(Token![=]) {
        // The shorthand `fields(arg)`, `fields(%arg)`, `fields(?arg)`.
        let Some(ident) = ident else {
            return Err(syn::Error::new(
                key.span(),
                "`fields`: a quoted key needs a value: `\"key\" = expr`",
            ));
        };
        let value = Expr::Path(syn::ExprPath {
            attrs: Vec::new(),
            qself: None,
            path: ident.clone().into(),
        });
        return Ok(FieldSyntax(Field {
            key,
            format: leading,
            value,
            shorthand: Some(ident),
        }));
    }
    if !matches!(leading, Format::Value) {
        return Err(syn::Error::new(
            key.span(),
            "`fields`: put `%` or `?` before the value: `key = %expr`",
        ));
    }
    input.parse::<Token![=]>()?;
    let format = parse_format(input)?;
    let value: Expr = input.parse()?;
    Ok(FieldSyntax(Field {
        key,
        format,
        value,
        shorthand: None,
    }))
}
