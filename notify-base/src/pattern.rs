//! [`Pattern`]: which event names a subscription matches.

use std::fmt;
use std::sync::Arc;

use crate::error::PatternError;

/// Which event names a subscription receives: one exact name, a glob, a regular expression, or all.
///
/// * A `&str` or `String` converts to [`Pattern::exact`], as a string does in AS::N's `subscribe`.
/// * [`Pattern::glob`]: `*` stands for any run of characters, dots included (`"*.sql"`, `"query.*"`).
#[cfg_attr(feature = "regex", doc = "* [`Pattern::regex`] (feature `regex`): a")]
#[cfg_attr(not(feature = "regex"), doc = "* `Pattern::regex` (feature `regex`): a")]
///  [`regex`](https://docs.rs/regex) regular expression,
///   unanchored like Ruby's `=~` (`"^sql\\."` to anchor). Without the feature the function does not
///   exist: a program that needs a regex fails to compile rather than at run time.
/// * [`Pattern::all`]: every event, like AS::N's `subscribe(nil)`.
///
/// ```
/// use notify_core::Pattern;
/// assert!(Pattern::from("query.sql").matches("query.sql"));
/// assert!(Pattern::glob("*.sql")?.matches("query.sql"));
/// assert!(!Pattern::glob("*.sql")?.matches("query.mysql"));
/// # #[cfg(feature = "regex")]
/// assert!(Pattern::regex(r"\.world$")?.matches("hello.world"));
/// assert!(Pattern::all().matches("anything"));
/// # Ok::<(), notify_core::PatternError>(())
/// ```
#[derive(Clone)]
pub struct Pattern {
    pub(crate) repr: Repr,
}

/// What a [`Pattern`] holds: 24 bytes whatever the kind (a registry entry holds one per
/// subscription), the rarer glob and regex out of line.
#[derive(Clone)]
pub(crate) enum Repr {
    Exact(Arc<str>),
    Glob(Arc<Glob>),
    #[cfg(feature = "regex")]
    Regex(Box<regex::Regex>),
    All,
}

impl Pattern {
    /// Exactly `name`.
    ///
    /// ```
    /// assert!(notify_core::Pattern::exact("a.b").matches("a.b"));
    /// ```
    pub fn exact(name: impl Into<Arc<str>>) -> Pattern {
        Pattern {
            repr: Repr::Exact(name.into()),
        }
    }

    /// A glob: `*` matches any run of characters (including none and including dots); everything
    /// else matches itself.
    ///
    /// # Errors
    /// [`PatternError`] when `glob` is empty, or has no `*` (use [`Pattern::exact`] for that).
    ///
    /// ```
    /// use notify_core::Pattern;
    /// assert!(Pattern::glob("*.active_record")?.matches("sql.active_record"));
    /// let err = Pattern::glob("").unwrap_err();
    /// assert_eq!(err.to_string(), "invalid glob pattern ``: the pattern is empty");
    /// # Ok::<(), notify_core::PatternError>(())
    /// ```
    pub fn glob(glob: &str) -> Result<Pattern, PatternError> {
        if glob.is_empty() {
            return Err(PatternError::new("glob", glob, None, "the pattern is empty"));
        }
        if !glob.contains('*') {
            return Err(PatternError::new(
                "glob",
                glob,
                None,
                "it has no `*`; use Pattern::exact for one name",
            ));
        }
        Ok(Pattern {
            repr: Repr::Glob(Arc::new(Glob::new(glob))),
        })
    }

    /// A regular expression (syntax of the [`regex`](https://docs.rs/regex) crate), matched anywhere
    /// in the name. Available with the feature `regex` (off by default; exact names, globs and
    /// [`Pattern::all`] need no feature).
    ///
    /// # Errors
    /// [`PatternError`] naming the pattern and the byte offset of the problem; nothing is subscribed.
    ///
    /// ```
    /// let err = notify_core::Pattern::regex("query.(sql").unwrap_err();
    /// assert_eq!(err.position(), Some(6));
    /// assert_eq!(err.to_string(), "invalid regex pattern `query.(sql` at byte 6: unclosed group");
    /// ```
    #[cfg(feature = "regex")]
    pub fn regex(regex: &str) -> Result<Pattern, PatternError> {
        if let Some(error) = syntax_error("regex", regex) {
            return Err(error);
        }
        match regex::Regex::new(regex) {
            Ok(re) => Ok(Pattern {
                repr: Repr::Regex(Box::new(re)),
            }),
            Err(e) => Err(compile_error(regex, &e)),
        }
    }

    /// Every event.
    ///
    /// ```
    /// assert!(notify_core::Pattern::all().matches(""));
    /// ```
    pub fn all() -> Pattern {
        Pattern { repr: Repr::All }
    }

    /// True when `name` matches.
    ///
    /// ```
    /// assert!(!notify_core::Pattern::exact("a").matches("b"));
    /// ```
    pub fn matches(&self, name: &str) -> bool {
        match &self.repr {
            Repr::Exact(exact) => **exact == *name,
            Repr::Glob(glob) => glob.matches(name),
            #[cfg(feature = "regex")]
            Repr::Regex(re) => re.is_match(name),
            Repr::All => true,
        }
    }

    /// The pattern's text (`"*"` for [`Pattern::all`]).
    ///
    /// ```
    /// assert_eq!(notify_core::Pattern::glob("*.sql").unwrap().as_str(), "*.sql");
    /// ```
    pub fn as_str(&self) -> &str {
        match &self.repr {
            Repr::Exact(exact) => exact,
            Repr::Glob(glob) => &glob.text,
            #[cfg(feature = "regex")]
            Repr::Regex(re) => re.as_str(),
            Repr::All => "*",
        }
    }

    /// True for [`Pattern::all`].
    pub(crate) fn is_all(&self) -> bool {
        matches!(self.repr, Repr::All)
    }

    pub(crate) fn exact_name(&self) -> Option<&Arc<str>> {
        match &self.repr {
            Repr::Exact(name) => Some(name),
            _ => None,
        }
    }
}

/// The error of a regex whose syntax is wrong, by kind and offset (`None` when it parses).
#[cfg(feature = "regex")]
fn syntax_error(kind: &'static str, regex: &str) -> Option<PatternError> {
    let e = regex_syntax::ast::parse::Parser::new().parse(regex).err()?;
    Some(PatternError::new(
        kind,
        regex,
        Some(e.span().start.offset),
        &e.kind().to_string(),
    ))
}

/// The error of `regex` that the `regex` crate refused with `error`, short whatever the pattern's
/// length (for the redaction policy's patterns, which are compiled with their own flags).
#[cfg(feature = "redaction")]
#[cold]
pub(crate) fn regex_error(regex: &str, error: &regex::Error) -> PatternError {
    syntax_error("regex", regex).unwrap_or_else(|| compile_error(regex, error))
}

/// The error of a regex that parsed but did not compile. A translation error (a Unicode class this
/// build lacks, say) is told by its kind and offset: the `regex` crate's own message quotes the whole
/// pattern with a caret diagram, which for a long pattern is as long as the pattern.
#[cfg(feature = "regex")]
#[cold]
fn compile_error(regex: &str, error: &regex::Error) -> PatternError {
    if let Err(regex_syntax::Error::Translate(e)) = regex_syntax::Parser::new().parse(regex) {
        return PatternError::new("regex", regex, Some(e.span().start.offset), &e.kind().to_string());
    }
    match error {
        regex::Error::CompiledTooBig(limit) => PatternError::new(
            "regex",
            regex,
            None,
            &format!("the compiled regex exceeds the size limit of {limit} bytes"),
        ),
        other => PatternError::new("regex", regex, None, &other.to_string()),
    }
}

impl From<&str> for Pattern {
    fn from(name: &str) -> Pattern {
        Pattern::exact(name)
    }
}

impl From<String> for Pattern {
    fn from(name: String) -> Pattern {
        Pattern::exact(name)
    }
}

/// A compiled [`regex::Regex`](https://docs.rs/regex) as a pattern (feature `regex`).
#[cfg(feature = "regex")]
impl From<regex::Regex> for Pattern {
    fn from(re: regex::Regex) -> Pattern {
        Pattern {
            repr: Repr::Regex(Box::new(re)),
        }
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.repr {
            Repr::Exact(_) => "Exact",
            Repr::Glob(_) => "Glob",
            #[cfg(feature = "regex")]
            Repr::Regex(_) => "Regex",
            Repr::All => "All",
        };
        write!(f, "{kind}({:?})", self.as_str())
    }
}

/// A `*` glob, split at its stars.
#[derive(Clone)]
pub(crate) struct Glob {
    text: Arc<str>,
    parts: Arc<[Box<str>]>,
}

impl Glob {
    fn new(text: &str) -> Glob {
        Glob {
            text: text.into(),
            parts: text.split('*').map(Box::from).collect(),
        }
    }

    fn matches(&self, name: &str) -> bool {
        let (first, rest) = self.parts.split_first().expect("split yields one part at least");
        let Some(mut tail) = name.strip_prefix(&**first) else {
            return false;
        };
        let (last, middle) = rest.split_last().expect("a glob has one star at least");
        for part in middle {
            match tail.find(&**part) {
                Some(at) => tail = &tail[at + part.len()..],
                None => return false,
            }
        }
        tail.len() >= last.len() && tail.ends_with(&**last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matching() {
        let g = |p: &str, n: &str| Pattern::glob(p).unwrap().matches(n);
        assert!(g("*.sql", ".sql"));
        assert!(g("*", ""));
        assert!(g("a*b*c", "abc"));
        assert!(g("a*b*c", "a-b-b-c"));
        assert!(!g("a*b*c", "a-c"));
        assert!(g("*.world", "hello.world"));
        assert!(!g("*.world", "hello.worlds"));
        assert!(!g("ab*ba", "aba"));
    }

    #[cfg(feature = "regex")]
    #[test]
    fn regex_error_without_syntax_position() {
        let big = r"(\w{1000}){1000}".to_owned();
        let err = Pattern::regex(&big).unwrap_err();
        assert_eq!(err.pattern(), big);
        assert_eq!(err.position(), None);
        assert!(
            err.message()
                .starts_with("the compiled regex exceeds the size limit of "),
            "{}",
            err.message()
        );
    }

    #[cfg(feature = "regex")]
    #[test]
    fn translation_error_is_short_with_a_position() {
        // Parses, but cannot be translated whatever regex features the build unifies: a byte class
        // that can match invalid UTF-8 (a `\\p{Greek}` would depend on the Unicode tables another
        // crate of the workspace may switch on).
        let pattern = format!("{}(?-u:\\xFF)", "a".repeat(1 << 20));
        let err = Pattern::regex(&pattern).unwrap_err();
        let position = err.position().expect("a translation error has a position");
        assert!((1 << 20..pattern.len()).contains(&position), "position {position}");
        let shown = err.to_string();
        assert!(shown.len() < 400, "{} bytes", shown.len());
        assert_eq!(
            shown,
            format!(
                "invalid regex pattern `{}…[{} bytes]` at byte {position}: {}",
                "a".repeat(80),
                pattern.len(),
                err.message()
            )
        );
    }

    #[test]
    fn pattern_errors_escape_what_they_quote() {
        let err = Pattern::glob("x\n[INFO  auth] admin\r\u{1b}]0;t\u{7}\u{202e}").unwrap_err();
        assert_eq!(
            err.to_string(),
            r"invalid glob pattern `x\n[INFO  auth] admin\r\u{1b}]0;t\u{7}\u{202e}`: it has no `*`; use Pattern::exact for one name"
        );
    }
}
