//! One call that sets up notify for a service, configured from the standard environment, as
//! init-tracing-opentelemetry's `TracingConfig::production().init_subscriber()?` does for tracing:
//!
//! ```no_run
//! let _guard = instrumentation_setup::Setup::production().init()?;
//! // ... serve; on return the guard exports what is queued and stops every sink, in order.
//! # Ok::<(), instrumentation_setup::SetupError>(())
//! ```
//!
//! # Why this name
//!
//! `notify` on crates.io is a file-watching crate (with `notify-types` and `notify-debouncer-*`
//! beside it) and `notify-rust` sends desktop notifications: a `notify-setup` would read as part
//! of either. This crate sets up *instrumentation*, which is what notify is for.
//!
//! # Presets
//!
//! | | [`Setup::development`] | [`Setup::production`] |
//! |---|---|---|
//! | lines | Rails-style, on standard error, coloured on a terminal unless `NO_COLOR` | JSON, one object per line, on standard output |
//! | default `RUST_LOG` | `info,sql=debug` (SQL lines shown, as Rails' development log) | `info` |
//!
//! # One stream of lines
//!
//! The setup installs the `log` logger and (feature `tracing`) the global tracing subscriber.
//! Events' lines (notify-log's `StructuredLog`, or the development format), the application's own
//! `log::info!` records and tracing events (`tracing::info!`) are written in one format, one line
//! each, with the trace id and span id of the current context (the request a handler serves),
//! filtered by one `RUST_LOG`. Spans of tracing-instrumented libraries (hyper, reqwest, sqlx,
//! async-nats) become notify events (notify-tracing's `NotifyLayer`) nested under the request's
//! event, in its trace: they reach the exporters and the live page with the rest.
//!
//! Lines reach standard output (or error) in batches: a thread of the setup's (`notify-lines`)
//! writes what waits every 50 ms, or sooner once 64 KiB wait, in one `write(2)`, as
//! tracing-appender's non-blocking writer does; dropping the [`Guard`] or `log::logger().flush()`
//! writes everything at once. Lines still waiting when the process aborts are lost; lines beyond
//! 8 MiB waiting are dropped and counted ([`Guard::lines_dropped`]).
//!
//! # The environment
//!
//! | variable | what | feature |
//! |---|---|---|
//! | `OTEL_SERVICE_NAME` | `service.name` of exported spans (default: [`Setup::service_name`], else the executable's name); `service.name` in `OTEL_RESOURCE_ATTRIBUTES` is overridden by these (its other attributes apply) | |
//! | `OTEL_TRACES_EXPORTER` | `otlp` exports (to the protocol's default endpoint unless one is set), `none` does not, whatever else is set | `opentelemetry` |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the collector: base URL (`/v1/traces` appended over HTTP) or the traces URL as given; defaults `http://localhost:4318/v1/traces` (HTTP), `http://localhost:4317` (gRPC); `http://` only: an `https://` URL is a `ConfigError` (no TLS in this build's OTLP clients) | `opentelemetry` |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL`, `_TRACES_PROTOCOL` | `http/protobuf` (default), `http/json`, or `grpc` | `opentelemetry`; `otlp-grpc` for `grpc` |
//! | `OTEL_EXPORTER_OTLP_TIMEOUT`, `_TRACES_TIMEOUT` | one export request's limit in milliseconds (default 10000) | `opentelemetry` |
//! | `OTEL_EXPORTER_OTLP_HEADERS`, `_TRACES_HEADERS` | `key=value,...` (values percent-encoded) sent with every export (gRPC metadata over gRPC) | `opentelemetry` |
//! | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | head sampling (parent-based ratio) | |
//! | `RUST_LOG` | `target=level` directives for every line; `off` subscribes no line writer at all, so with no sink either, every event takes the engine's unlistened path | |
//! | `NO_COLOR` | no colour when set and not empty | |
//! | `NOTIFY_LOG_FORMAT` | `dev`, `json` or `logfmt`, over the preset's | |
//! | `NOTIFY_NATS_URL`, `NOTIFY_NATS_PREFIX` | export events to NATS (prefix default `notify`) | `nats` |
//! | `NOTIFY_PROMETHEUS_ADDRESS` | serve `/metrics` on `ip:port`: RED metrics (`http.server.request.duration`, `http.client.request.duration`) and every event's duration, with trace exemplars (notify-metrics' `PrometheusExporter`) | `prometheus` |
//! | `NOTIFY_WEB_ADDRESS`, `NOTIFY_WEB_TOKEN` | serve the live page on `ip:port` | `web` |
//!
//! Setting any `OTEL_EXPORTER_OTLP_*` variable above turns OTLP export on, as does
//! `OTEL_TRACES_EXPORTER=otlp`; with none set nothing is exported (the specification's SDKs
//! export to `localhost` by default: a service without a collector would report a failed export
//! every few seconds). The `_TRACES_` forms win over the general ones.
//!
//! A value the setup cannot use is a [`SetupError::Config`] naming the variable
//! ([`ConfigError`]), never a panic; so is a variable that turns on a sink (`NOTIFY_NATS_URL`,
//! `NOTIFY_PROMETHEUS_ADDRESS`, `NOTIFY_WEB_ADDRESS`, an OTLP variable) whose feature this build
//! left out (the sink would otherwise be silently missing), and `grpc` without `otlp-grpc`.
//! Values that can hold credentials (`NOTIFY_NATS_URL`, `NOTIFY_WEB_TOKEN`, the OTLP headers)
//! are never repeated in an error.
//!
//! # The guard
//!
//! [`Guard`] keeps every sink alive. Dropping it stops them in order: the live page, NATS and
//! OpenTelemetry first (each stops taking events, then sends what it queued, within 5 seconds
//! each), then the metrics subscription, then the lines (rate-limit summaries written, output
//! flushed). The `log` logger and the tracing subscriber stay installed (neither facade can
//! uninstall one): lines written after the drop still come out.

#![warn(missing_docs)]

/// This crate's README.md: its code blocks are compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod batched;
mod config;
mod dev;
mod features;
mod levels;
mod output;
mod rails;
mod sinks;

#[cfg(feature = "tracing")]
mod bridge;

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify_core::export::Sampler;
use notify_core::{Notifier, Pattern, Subscription};
use notify_log::{Level, StructuredLog, StructuredLogger};

pub use crate::config::{Config, ConfigError, LogFormat, Otlp, OtlpProtocol, SamplerConfig, VARIABLES};
pub use crate::config::{
    DEFAULT_TIMEOUT, NOTIFY_LOG_FORMAT, NOTIFY_NATS_PREFIX, NOTIFY_NATS_URL, NOTIFY_PROMETHEUS_ADDRESS,
    NOTIFY_WEB_ADDRESS, NOTIFY_WEB_TOKEN, NO_COLOR, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
    OTEL_SERVICE_NAME, OTEL_TRACES_EXPORTER, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, RUST_LOG,
};
use crate::output::{Lines, Output, Sink};

/// How long each exporter gets at shutdown to send what it queued.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(5);

/// Why the setup failed.
#[derive(Debug)]
pub enum SetupError {
    /// An environment variable has a value the setup cannot use.
    Config(ConfigError),
    /// A global was set before the setup ran (`"log logger"` or `"tracing subscriber"`): call
    /// [`Setup::init`] once, before anything else installs one.
    AlreadySet(&'static str),
    /// A sink could not start: which one and the library's error (a port in use, no NATS server).
    Sink {
        /// `"NATS exporter"`, `"OTLP exporter"`, `"Prometheus endpoint"` or `"live page"`.
        sink: &'static str,
        /// The library's error.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl SetupError {
    #[allow(dead_code)] // used by the features' sinks only
    pub(crate) fn sink(sink: &'static str, error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> SetupError {
        SetupError::Sink {
            sink,
            error: error.into(),
        }
    }
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::Config(e) => e.fmt(f),
            SetupError::AlreadySet(what) => write!(f, "a {what} was installed before the setup ran"),
            SetupError::Sink { sink, error } => write!(f, "the {sink} did not start: {error}"),
        }
    }
}

impl std::error::Error for SetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SetupError::Config(e) => Some(e),
            SetupError::AlreadySet(_) => None,
            SetupError::Sink { error, .. } => Some(&**error),
        }
    }
}

impl From<ConfigError> for SetupError {
    fn from(e: ConfigError) -> SetupError {
        SetupError::Config(e)
    }
}

/// The setup: a preset, then [`Setup::init`]. See the crate docs.
#[must_use]
pub struct Setup {
    format: LogFormat,
    default_filter: &'static str,
    service_name: Option<String>,
    config: Option<Config>,
    buffer: Option<Arc<Mutex<Vec<u8>>>>,
}

impl Setup {
    /// Rails-style lines on standard error, coloured when it is a terminal and `NO_COLOR` is not
    /// set; `RUST_LOG` defaults to `info,sql=debug`.
    pub fn development() -> Setup {
        Setup {
            format: LogFormat::Dev,
            default_filter: "info,sql=debug",
            service_name: None,
            config: None,
            buffer: None,
        }
    }

    /// JSON lines on standard output; `RUST_LOG` defaults to `info`.
    pub fn production() -> Setup {
        Setup {
            format: LogFormat::Json,
            default_filter: "info",
            service_name: None,
            config: None,
            buffer: None,
        }
    }

    /// The service's name when `OTEL_SERVICE_NAME` is not set (default: the executable's file
    /// name).
    pub fn service_name(mut self, name: impl Into<String>) -> Setup {
        self.service_name = Some(name.into());
        self
    }

    /// Uses `config` instead of reading the process environment ([`Config::from_vars`]).
    pub fn config(mut self, config: Config) -> Setup {
        self.config = Some(config);
        self
    }

    /// Writes the lines into `buffer` instead of standard error or output (tests).
    pub fn write_to(mut self, buffer: Arc<Mutex<Vec<u8>>>) -> Setup {
        self.buffer = Some(buffer);
        self
    }

    /// Installs the `log` logger and the tracing subscriber, subscribes the sinks the
    /// configuration turns on, sets the head sampler, and returns the guard that stops them.
    ///
    /// # Errors
    /// [`SetupError::Config`] for a variable with a value it cannot use (or a sink's variable
    /// without its feature), [`SetupError::AlreadySet`] when a `log` logger or a tracing
    /// subscriber was installed before, [`SetupError::Sink`] when a sink cannot start. What was
    /// started before the error is stopped again.
    pub fn init(self) -> Result<Guard, SetupError> {
        let config = match self.config {
            Some(config) => config,
            None => Config::from_env()?,
        };
        features::check(&config, features::BUILT)?;
        let notifier = Notifier::global();
        let service_name = config
            .service_name
            .clone()
            .or(self.service_name)
            .unwrap_or_else(executable_name);
        let format = config.log_format.unwrap_or(self.format);
        let filter = match &config.filter {
            Some(filter) => filter.clone(),
            None => config::parse_filter(self.default_filter)?,
        };
        let (sink, terminal) = match (self.buffer, format) {
            (Some(buffer), _) => (Sink::Buffer(buffer), false),
            (None, LogFormat::Dev) => (Sink::Stderr, std::io::IsTerminal::is_terminal(&std::io::stderr())),
            (None, _) => (Sink::Stdout, false),
        };
        let output = Arc::new(Output::new(format, terminal && !config.no_color, filter, sink));

        log::set_boxed_logger(Box::new(Lines(output.clone()))).map_err(|_| SetupError::AlreadySet("log logger"))?;
        log::set_max_level(output.max_level());
        #[cfg(feature = "tracing")]
        bridge::install(&output)?;

        if let Some(sampler) = config.sampler {
            notifier.set_sampler(Sampler::ratio(sampler.ratio));
        }
        let mut guard = Guard {
            output: output.clone(),
            lines: None,
            structured: None,
            #[cfg(feature = "prometheus")]
            prometheus: None,
            #[cfg(feature = "opentelemetry")]
            otlp: None,
            #[cfg(feature = "nats")]
            nats: None,
            #[cfg(feature = "web")]
            web: None,
        };
        // Lines first, so a sink that fails to start is reported on them. When `RUST_LOG` keeps
        // no line at all, no line subscriber is subscribed: a silenced subscriber still makes
        // every event it matches listened to, and so made, which nobody would read.
        let lines_wanted = output.max_level() != log::LevelFilter::Off;
        match format {
            _ if !lines_wanted => {}
            LogFormat::Dev => guard.lines = Some(dev::DevLog(output.clone()).subscribe(notifier)),
            LogFormat::Json | LogFormat::Logfmt => {
                let builder = if format == LogFormat::Json {
                    StructuredLog::json()
                } else {
                    StructuredLog::logfmt()
                };
                let levels = output.span_levels.clone();
                let logger = builder
                    .namespace_level("sql", Level::Debug)
                    .levels(move |name| levels.get(name))
                    .build();
                guard.lines = Some(logger.subscribe(notifier, Pattern::all()));
                guard.structured = Some(logger);
            }
        }
        // A failure below drops `guard`, which stops what was started.
        #[cfg(feature = "prometheus")]
        if let Some(address) = config.prometheus {
            guard.prometheus = Some(sinks::prometheus::start(notifier, address)?);
        }
        #[cfg(feature = "opentelemetry")]
        if let Some(otlp) = &config.otlp {
            guard.otlp = Some(sinks::otlp::start(notifier, otlp, &service_name)?);
        }
        #[cfg(feature = "nats")]
        if let Some(url) = &config.nats_url {
            let prefix = config.nats_prefix.as_deref().unwrap_or("notify");
            guard.nats = Some(sinks::nats::start(notifier, url, prefix, &service_name)?);
        }
        #[cfg(feature = "web")]
        if let Some(address) = config.web {
            guard.web = Some(sinks::web::start(notifier, address, config.web_token.as_deref())?);
        }
        let _ = &service_name;
        Ok(guard)
    }
}

fn executable_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|path| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "unknown_service".to_owned())
}

/// Keeps the sinks alive; dropping it stops them in order (see the crate docs).
#[must_use = "dropping the guard stops every sink"]
pub struct Guard {
    output: Arc<Output>,
    lines: Option<Subscription>,
    structured: Option<StructuredLogger>,
    #[cfg(feature = "prometheus")]
    prometheus: Option<sinks::prometheus::PrometheusSink>,
    #[cfg(feature = "opentelemetry")]
    otlp: Option<sinks::otlp::OtlpSink>,
    #[cfg(feature = "nats")]
    nats: Option<sinks::nats::NatsSink>,
    #[cfg(feature = "web")]
    web: Option<sinks::web::WebSink>,
}

impl Guard {
    /// The address Prometheus scrapes (`/metrics`), when the endpoint is on (with the port chosen
    /// when `NOTIFY_PROMETHEUS_ADDRESS` asked for port 0).
    pub fn prometheus_address(&self) -> Option<SocketAddr> {
        #[cfg(feature = "prometheus")]
        if let Some(p) = &self.prometheus {
            return Some(p.address);
        }
        None
    }

    /// The live page's address, when it is on.
    pub fn web_address(&self) -> Option<SocketAddr> {
        #[cfg(feature = "web")]
        if let Some(w) = &self.web {
            return w.address();
        }
        None
    }

    /// The format lines are written in.
    pub fn log_format(&self) -> LogFormat {
        self.output.format
    }

    /// Lines dropped because standard output (or error) did not keep up: lines are written in
    /// batches by a thread of their own, at most 8 MiB wait, and a line beyond that is dropped,
    /// counted here, and reported by a line in the stream once there is room again.
    pub fn lines_dropped(&self) -> u64 {
        self.output.lines_dropped()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(feature = "web")]
        if let Some(mut web) = self.web.take() {
            web.shutdown();
        }
        #[cfg(feature = "nats")]
        if let Some(mut nats) = self.nats.take() {
            nats.shutdown(SHUTDOWN_DEADLINE);
        }
        #[cfg(feature = "opentelemetry")]
        if let Some(mut otlp) = self.otlp.take() {
            otlp.shutdown(SHUTDOWN_DEADLINE);
        }
        #[cfg(feature = "prometheus")]
        if let Some(mut prometheus) = self.prometheus.take() {
            drop(prometheus.exporter.take());
        }
        let _ = SHUTDOWN_DEADLINE;
        if let Some(logger) = self.structured.take() {
            logger.flush_suppressed();
        }
        if let Some(lines) = self.lines.take() {
            let _ = lines.unsubscribe();
        }
        self.output.close();
    }
}
