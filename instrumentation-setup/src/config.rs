//! The configuration read from the environment: each variable, what it accepts, and the error
//! that names it.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use tracing_subscriber::filter::Targets;

mod otlp;

pub use self::otlp::{
    Otlp, OtlpProtocol, DEFAULT_TIMEOUT, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
    OTEL_TRACES_EXPORTER,
};

/// `OTEL_SERVICE_NAME`: the `service.name` of exported spans (OpenTelemetry's variable).
pub const OTEL_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
/// `OTEL_TRACES_SAMPLER`: `always_on`, `always_off`, `traceidratio`, `parentbased_always_on` (the
/// default), `parentbased_always_off`, `parentbased_traceidratio`.
pub const OTEL_TRACES_SAMPLER: &str = "OTEL_TRACES_SAMPLER";
/// `OTEL_TRACES_SAMPLER_ARG`: the ratio of the `*traceidratio` samplers, 0.0 to 1.0 (default 1.0).
pub const OTEL_TRACES_SAMPLER_ARG: &str = "OTEL_TRACES_SAMPLER_ARG";
/// `RUST_LOG`: which lines are written, as `target=level` directives separated by commas
/// (`info,sql=debug,hyper=warn`); a bare level is the default.
pub const RUST_LOG: &str = "RUST_LOG";
/// `NO_COLOR`: when set to anything but the empty string, no colour (<https://no-color.org>).
pub const NO_COLOR: &str = "NO_COLOR";
/// `NOTIFY_LOG_FORMAT`: `dev`, `json` or `logfmt`, overriding the preset's format.
pub const NOTIFY_LOG_FORMAT: &str = "NOTIFY_LOG_FORMAT";
/// `NOTIFY_NATS_URL`: NATS servers (`nats://host:4222`, several separated by commas); setting it
/// turns NATS export on.
pub const NOTIFY_NATS_URL: &str = "NOTIFY_NATS_URL";
/// `NOTIFY_NATS_PREFIX`: the subject prefix of exported events (default `notify`).
pub const NOTIFY_NATS_PREFIX: &str = "NOTIFY_NATS_PREFIX";
/// `NOTIFY_PROMETHEUS_ADDRESS`: the `ip:port` Prometheus scrapes (`/metrics`); setting it turns
/// the endpoint on.
pub const NOTIFY_PROMETHEUS_ADDRESS: &str = "NOTIFY_PROMETHEUS_ADDRESS";
/// `NOTIFY_WEB_ADDRESS`: the `ip:port` of the live page; setting it turns the page on.
pub const NOTIFY_WEB_ADDRESS: &str = "NOTIFY_WEB_ADDRESS";
/// `NOTIFY_WEB_TOKEN`: a token the live page asks for (`?token=`), when set.
pub const NOTIFY_WEB_TOKEN: &str = "NOTIFY_WEB_TOKEN";

/// Every variable the setup reads, in the order it reads them.
pub const VARIABLES: [&str; 20] = [
    OTEL_SERVICE_NAME,
    otlp::OTLP_VARIABLES[0],
    otlp::OTLP_VARIABLES[1],
    otlp::OTLP_VARIABLES[2],
    otlp::OTLP_VARIABLES[3],
    otlp::OTLP_VARIABLES[4],
    otlp::OTLP_VARIABLES[5],
    otlp::OTLP_VARIABLES[6],
    otlp::OTLP_VARIABLES[7],
    otlp::OTLP_VARIABLES[8],
    OTEL_TRACES_SAMPLER,
    OTEL_TRACES_SAMPLER_ARG,
    RUST_LOG,
    NO_COLOR,
    NOTIFY_LOG_FORMAT,
    NOTIFY_NATS_URL,
    NOTIFY_NATS_PREFIX,
    NOTIFY_PROMETHEUS_ADDRESS,
    NOTIFY_WEB_ADDRESS,
    NOTIFY_WEB_TOKEN,
];

/// Variables whose values are never repeated in an error (they can hold credentials).
const SECRET: [&str; 4] = [
    NOTIFY_NATS_URL,
    NOTIFY_WEB_TOKEN,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS,
];

/// An environment variable with a value the setup cannot use: which variable, its value (unless
/// it can hold a secret) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    variable: &'static str,
    value: Option<String>,
    reason: String,
}

impl ConfigError {
    pub(crate) fn new(variable: &'static str, value: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            variable,
            value: (!SECRET.contains(&variable)).then(|| value.to_owned()),
            reason: reason.into(),
        }
    }

    /// The variable's name (`"OTEL_TRACES_SAMPLER"`).
    pub fn variable(&self) -> &'static str {
        self.variable
    }

    /// What was expected instead.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(f, "environment variable {}={value:?}: {}", self.variable, self.reason),
            None => write!(
                f,
                "environment variable {} (value not shown): {}",
                self.variable, self.reason
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// How lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Rails-style lines for people (`Completed 200 OK in 3.1ms (GET /books/{id})`), colour on a
    /// terminal; the development preset's.
    Dev,
    /// One JSON object per line (notify-log's `StructuredLog::json()`); the production preset's.
    Json,
    /// logfmt lines (notify-log's `StructuredLog::logfmt()`).
    Logfmt,
}

/// Head sampling from `OTEL_TRACES_SAMPLER` and `_ARG`: the ratio of traces kept. notify's
/// sampler is always parent-based: a caller's `traceparent` decision wins over the ratio, so
/// `traceidratio` behaves as `parentbased_traceidratio` for a request that arrives sampled or not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerConfig {
    /// The sampler's name as given.
    pub name: &'static str,
    /// The ratio, 0.0 to 1.0.
    pub ratio: f64,
}

/// What the environment says, every variable checked ([`Config::from_env`]).
#[derive(Clone, Debug)]
pub struct Config {
    /// `OTEL_SERVICE_NAME`.
    pub service_name: Option<String>,
    /// `RUST_LOG`, parsed; `None` when unset (the preset's default then).
    pub filter: Option<Targets>,
    /// `NO_COLOR` set to a non-empty value.
    pub no_color: bool,
    /// `NOTIFY_LOG_FORMAT`.
    pub log_format: Option<LogFormat>,
    /// OTLP export, when `OTEL_TRACES_EXPORTER=otlp` or an `OTEL_EXPORTER_OTLP_*` variable is set
    /// (and `OTEL_TRACES_EXPORTER` is not `none`).
    pub otlp: Option<Otlp>,
    /// `OTEL_TRACES_SAMPLER` (and `_ARG`), when set.
    pub sampler: Option<SamplerConfig>,
    /// `NOTIFY_NATS_URL`.
    pub nats_url: Option<String>,
    /// `NOTIFY_NATS_PREFIX`.
    pub nats_prefix: Option<String>,
    /// `NOTIFY_PROMETHEUS_ADDRESS`.
    pub prometheus: Option<SocketAddr>,
    /// `NOTIFY_WEB_ADDRESS`.
    pub web: Option<SocketAddr>,
    /// `NOTIFY_WEB_TOKEN`.
    pub web_token: Option<String>,
}

impl Config {
    /// Reads the process environment.
    ///
    /// # Errors
    /// The first variable (in [`VARIABLES`]' order) whose value is not valid UTF-8 or not
    /// accepted, as a [`ConfigError`] naming it.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_source(|name| std::env::var_os(name).map(|v| v.into_string().map_err(|_| ())))
    }

    /// Reads the variables from `vars` (name -> value) instead of the process environment; tests
    /// and programs that keep their configuration elsewhere use it.
    ///
    /// ```
    /// use instrumentation_setup::Config;
    /// let config = Config::from_vars([("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "0.25")])?;
    /// assert_eq!(config.sampler.unwrap().ratio, 0.25);
    /// let error = Config::from_vars([("OTEL_TRACES_SAMPLER_ARG", "a quarter")]).unwrap_err();
    /// assert_eq!(error.variable(), "OTEL_TRACES_SAMPLER_ARG");
    /// # Ok::<(), instrumentation_setup::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// As [`Config::from_env`].
    pub fn from_vars<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Config, ConfigError> {
        let vars: Vec<(&str, &str)> = vars.into_iter().collect();
        Config::from_source(|name| {
            vars.iter()
                .rev()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| Ok((*v).to_owned()))
        })
    }

    fn from_source(get: impl Fn(&str) -> Option<Result<String, ()>>) -> Result<Config, ConfigError> {
        let var = |name: &'static str| -> Result<Option<String>, ConfigError> {
            match get(name) {
                None => Ok(None),
                Some(Ok(value)) => Ok(Some(value)),
                Some(Err(())) => Err(ConfigError::new(name, "<not UTF-8>", "the value is not valid UTF-8")),
            }
        };
        let service_name = match var(OTEL_SERVICE_NAME)? {
            Some(name) if name.trim().is_empty() => {
                return Err(ConfigError::new(
                    OTEL_SERVICE_NAME,
                    &name,
                    "expected a service name, not an empty one",
                ))
            }
            other => other,
        };
        let otlp = otlp::from_vars(&var)?;
        let sampler = sampler(var(OTEL_TRACES_SAMPLER)?, var(OTEL_TRACES_SAMPLER_ARG)?)?;
        let filter = match var(RUST_LOG)? {
            Some(directives) if !directives.trim().is_empty() => Some(parse_filter(&directives)?),
            _ => None,
        };
        let no_color = var(NO_COLOR)?.is_some_and(|v| !v.is_empty());
        let log_format = match var(NOTIFY_LOG_FORMAT)?.as_deref() {
            None => None,
            Some("dev") => Some(LogFormat::Dev),
            Some("json") => Some(LogFormat::Json),
            Some("logfmt") => Some(LogFormat::Logfmt),
            Some(other) => {
                return Err(ConfigError::new(
                    NOTIFY_LOG_FORMAT,
                    other,
                    "expected dev, json or logfmt",
                ));
            }
        };
        let nats_url = var(NOTIFY_NATS_URL)?.map(check_nats_url).transpose()?;
        let nats_prefix = var(NOTIFY_NATS_PREFIX)?.map(check_nats_prefix).transpose()?;
        let prometheus = var(NOTIFY_PROMETHEUS_ADDRESS)?
            .map(|a| socket_address(NOTIFY_PROMETHEUS_ADDRESS, &a))
            .transpose()?;
        let web = var(NOTIFY_WEB_ADDRESS)?
            .map(|a| socket_address(NOTIFY_WEB_ADDRESS, &a))
            .transpose()?;
        let web_token = match var(NOTIFY_WEB_TOKEN)? {
            Some(token) if token.is_empty() => {
                return Err(ConfigError::new(
                    NOTIFY_WEB_TOKEN,
                    "",
                    "expected a token, not an empty one",
                ))
            }
            other => other,
        };
        Ok(Config {
            service_name,
            filter,
            no_color,
            log_format,
            otlp,
            sampler,
            nats_url,
            nats_prefix,
            prometheus,
            web,
            web_token,
        })
    }
}

/// `RUST_LOG`'s directives as a [`Targets`] filter.
pub(crate) fn parse_filter(directives: &str) -> Result<Targets, ConfigError> {
    Targets::from_str(directives).map_err(|e| {
        ConfigError::new(
            RUST_LOG,
            directives,
            format!("{e}; expected `level` or `target=level` directives separated by commas (`info,sql=debug`)"),
        )
    })
}

fn check_nats_url(url: String) -> Result<String, ConfigError> {
    for server in url.split(',').map(str::trim) {
        let host = server
            .strip_prefix("nats://")
            .or_else(|| server.strip_prefix("tls://"))
            .unwrap_or(server);
        let host = host.rsplit('@').next().unwrap_or(host);
        if host.is_empty() || host.contains(char::is_whitespace) || host.contains('/') {
            return Err(ConfigError::new(
                NOTIFY_NATS_URL,
                &url,
                "expected NATS servers as nats://host:port, separated by commas",
            ));
        }
    }
    Ok(url)
}

fn check_nats_prefix(prefix: String) -> Result<String, ConfigError> {
    let valid = !prefix.is_empty()
        && prefix
            .split('.')
            .all(|t| !t.is_empty() && !t.contains(|c: char| c.is_whitespace() || c == '*' || c == '>'));
    if valid {
        Ok(prefix)
    } else {
        Err(ConfigError::new(
            NOTIFY_NATS_PREFIX,
            &prefix,
            "expected subject tokens separated by dots, without spaces, `*` or `>` (notify.events)",
        ))
    }
}

fn socket_address(variable: &'static str, address: &str) -> Result<SocketAddr, ConfigError> {
    address
        .parse()
        .map_err(|_| ConfigError::new(variable, address, "expected ip:port (127.0.0.1:9464, [::1]:9464)"))
}

const SAMPLERS: &str =
    "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio";

fn sampler(name: Option<String>, arg: Option<String>) -> Result<Option<SamplerConfig>, ConfigError> {
    let ratio = || -> Result<f64, ConfigError> {
        let Some(arg) = &arg else { return Ok(1.0) };
        match arg.trim().parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
            _ => Err(ConfigError::new(
                OTEL_TRACES_SAMPLER_ARG,
                arg,
                "expected a ratio from 0.0 to 1.0 (0.25 keeps a quarter of the traces)",
            )),
        }
    };
    // The argument is checked whenever it is set, also beside a sampler that ignores it: a typo
    // there must not pass silently.
    let ratio = ratio()?;
    let Some(name) = name else {
        return Ok(None);
    };
    let (name, ratio) = match name.as_str() {
        "always_on" => ("always_on", 1.0),
        "parentbased_always_on" => ("parentbased_always_on", 1.0),
        "always_off" => ("always_off", 0.0),
        "parentbased_always_off" => ("parentbased_always_off", 0.0),
        "traceidratio" => ("traceidratio", ratio),
        "parentbased_traceidratio" => ("parentbased_traceidratio", ratio),
        "jaeger_remote" | "parentbased_jaeger_remote" | "xray" => {
            return Err(ConfigError::new(
                OTEL_TRACES_SAMPLER,
                &name,
                format!("this sampler is not supported; expected one of {SAMPLERS}"),
            ))
        }
        _ => {
            return Err(ConfigError::new(
                OTEL_TRACES_SAMPLER,
                &name,
                format!("expected one of {SAMPLERS}"),
            ))
        }
    };
    Ok(Some(SamplerConfig { name, ratio }))
}
