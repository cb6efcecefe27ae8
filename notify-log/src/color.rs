//! When a log subscriber writes colours ([`ColorChoice`]) and which ones ([`Color`]).

use std::io::IsTerminal;

/// When a log subscriber writes ANSI colours (AS::N's `colorize_logging`).
///
/// ```
/// use notify_log::ColorChoice;
/// assert_eq!(ColorChoice::default(), ColorChoice::Auto);
/// assert!(ColorChoice::Always.resolve());
/// assert!(!ColorChoice::Never.resolve());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour when standard error (where `env_logger` and most loggers write) is a terminal and the
    /// `NO_COLOR` environment variable is unset or empty (<https://no-color.org>).
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// True when this choice means "write colours", checking the terminal and `NO_COLOR` for
    /// [`ColorChoice::Auto`]. A log subscriber resolves its choice once, when it is attached.
    ///
    /// ```
    /// use notify_log::ColorChoice;
    /// // Under a test harness standard error is usually captured, so `Auto` means no colour there.
    /// let _ = ColorChoice::Auto.resolve();
    /// ```
    pub fn resolve(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                !no_color && std::io::stderr().is_terminal()
            }
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
