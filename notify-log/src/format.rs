//! The two structured line formats (a module of its own: the event lines of
//! [`structured`](crate::structured) and the record lines of `record` both name it).

/// The line format of a [`StructuredLog`](crate::StructuredLog).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One JSON object per line (written with `serde_json`).
    Json,
    /// `key=value` pairs separated by spaces (logfmt, as Heroku and Grafana Loki read it).
    Logfmt,
}
