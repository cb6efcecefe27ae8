//! [`Location`]: where in the source an event is instrumented.

#[cfg(feature = "serde")]
use serde::ser::SerializeStruct;
#[cfg(feature = "serde")]
use serde::{Serialize, Serializer};

/// The source location of an instrumentation site: file, line and module path, as `file!()`,
/// `line!()` and `module_path!()` give them. Events of callsites ([`Callsite::at`](crate::Callsite::at))
/// and of `#[instrument_event]` carry theirs ([`Event::location`](crate::Event::location),
/// [`EventContext::location`](crate::EventContext::location)); the log subscriber of notify-log
/// hands it to the `log` record, so a log line points at the instrumented code.
///
/// ```
/// let here = notify_core::event::Location::new(file!(), line!(), module_path!());
/// assert!(here.file().ends_with(".rs"));
/// assert!(here.line() > 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    file: &'static str,
    line: u32,
    module_path: &'static str,
}

impl Location {
    /// A location; `const`, for the `static` of a callsite.
    pub const fn new(file: &'static str, line: u32, module_path: &'static str) -> Location {
        Location {
            file,
            line,
            module_path,
        }
    }

    /// The source file, as `file!()` gives it.
    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The line, counting from 1.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The module path, as `module_path!()` gives it (`"app::db"`).
    pub fn module_path(&self) -> &'static str {
        self.module_path
    }
}

#[cfg(feature = "serde")]
impl Serialize for Location {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Location", 3)?;
        st.serialize_field("file", self.file)?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("module_path", self.module_path)?;
        st.end()
    }
}
