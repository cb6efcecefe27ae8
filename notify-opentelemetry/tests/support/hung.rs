//! A `SpanExporter` whose export never returns (a collector that accepts the connection and
//! never answers, behind a client without a timeout), shared by the tests that need one.

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// Its `export` never returns.
#[derive(Debug)]
pub struct Hung;

impl SpanExporter for Hung {
    fn export(&self, _batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        std::future::pending()
    }
}
