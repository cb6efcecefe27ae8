//! The sinks, each behind its cargo feature, each made by one function so that swapping the API
//! underneath (issue 46's collector, issue 48's RED metrics) is a change of a few lines here.

#[cfg(feature = "nats")]
pub(crate) mod nats;
#[cfg(feature = "opentelemetry")]
pub(crate) mod otlp;
#[cfg(feature = "prometheus")]
pub(crate) mod prometheus;
#[cfg(feature = "web")]
pub(crate) mod web;
