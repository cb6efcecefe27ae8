//! When a log subscriber writes colours ([`ColorChoice`]) and which ones ([`Color`]).

use std::io::IsTerminal;

/// Whether a log subscriber writes ANSI colours (AS::N's `colorize_logging`).
///
/// # The rule: colour only where the lines go to a terminal, and off unless asked
///
/// A log subscriber writes through the [`log`] facade, so it cannot see where the installed logger
/// sends its lines: standard error, a file, a JSON sink, syslog, the network. Whether standard
/// error happens to be a terminal says nothing about that, so notify-log never looks at it
/// by itself. Colour is therefore:
///
/// * **off by default** ([`ColorChoice::Never`], the [`Default`]): a logger writing to a file, a
///   buffer or a structured sink never receives escape codes it did not ask for;
/// * **decided by the sink** with [`ColorChoice::for_sink`]: pass the very handle your logger
///   writes to (`&std::io::stderr()` for `env_logger`'s default target, `&std::io::stdout()`,
///   a `File`); colour is on only when that handle is a terminal
///   ([`IsTerminal`]) and `NO_COLOR` is unset or empty. A file, pipe or socket gets no colour;
/// * **on when asked** ([`ColorChoice::Always`]), whatever the sink is — as tracing-subscriber's
///   `with_ansi(true)`.
///
/// The choice is read once, when the subscriber is attached ([`LogConfig::color`],
/// [`LogSubscriber::color`]); it only affects [`LogEvent::color`] and [`LogEvent::elapsed`], and
/// with colour off no escape sequence of any kind is left in a line.
///
/// ```
/// use notify_log::ColorChoice;
/// assert_eq!(ColorChoice::default(), ColorChoice::Never);
/// assert!(ColorChoice::Always.is_enabled());
/// assert!(!ColorChoice::Never.is_enabled());
///
/// // A logger writing to a file: a file is not a terminal, so no colour.
/// let file = tempfile::tempfile()?;
/// assert_eq!(ColorChoice::for_sink(&file), ColorChoice::Never);
/// // env_logger writes to standard error: colour exactly when that is a terminal.
/// let _for_stderr = ColorChoice::for_sink(&std::io::stderr());
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// [`LogConfig::color`]: crate::LogConfig::color
/// [`LogSubscriber::color`]: crate::LogSubscriber::color
/// [`LogEvent::color`]: crate::LogEvent::color
/// [`LogEvent::elapsed`]: crate::LogEvent::elapsed
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColorChoice {
    /// Never colour (the default).
    #[default]
    Never,
    /// Always colour, whatever the logger writes to.
    Always,
}

impl ColorChoice {
    /// [`ColorChoice::Always`] when `sink` — the handle the logger writes its lines to — is a
    /// terminal and the `NO_COLOR` environment variable is unset or empty
    /// (<https://no-color.org>); [`ColorChoice::Never`] otherwise. Decided now, from the handle
    /// given: a file, a pipe, a socket or a redirected standard stream is not a terminal.
    ///
    /// ```
    /// use notify_log::ColorChoice;
    /// let file = tempfile::tempfile()?;
    /// assert_eq!(ColorChoice::for_sink(&file), ColorChoice::Never);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn for_sink<S: IsTerminal + ?Sized>(sink: &S) -> ColorChoice {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if !no_color && sink.is_terminal() {
            ColorChoice::Always
        } else {
            ColorChoice::Never
        }
    }

    /// True for [`ColorChoice::Always`]: lines are written with colours.
    ///
    /// ```
    /// assert!(!notify_log::ColorChoice::default().is_enabled());
    /// ```
    pub fn is_enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
        }
    }
}

/// The eight basic ANSI colours, for [`LogEvent::color`] (AS::N's `color(text, :red)` symbols).
///
/// ```
/// use notify_log::Color;
/// assert_ne!(Color::Red, Color::Green);
/// ```
///
/// [`LogEvent::color`]: super::LogEvent::color
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Color {
    /// Black.
    Black,
    /// Red.
    Red,
    /// Green.
    Green,
    /// Yellow.
    Yellow,
    /// Blue.
    Blue,
    /// Magenta.
    Magenta,
    /// Cyan.
    Cyan,
    /// White.
    White,
}

impl Color {
    pub(super) fn ansi(self) -> anstyle::AnsiColor {
        match self {
            Color::Black => anstyle::AnsiColor::Black,
            Color::Red => anstyle::AnsiColor::Red,
            Color::Green => anstyle::AnsiColor::Green,
            Color::Yellow => anstyle::AnsiColor::Yellow,
            Color::Blue => anstyle::AnsiColor::Blue,
            Color::Magenta => anstyle::AnsiColor::Magenta,
            Color::Cyan => anstyle::AnsiColor::Cyan,
            Color::White => anstyle::AnsiColor::White,
        }
    }
}
