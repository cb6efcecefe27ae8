//! Where and how to connect: server addresses, credentials and TLS, passed through to async-nats.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use notify_core::escape::Escaped;

/// Connection settings shared by the exporter and the importer.
///
/// Credentials and TLS settings go to `async_nats::ConnectOptions` unchanged. A wrong credential
/// is a [`ConnectError`] from `start`, never silent loss.
///
/// Credentials may also be written in a server URL, as NATS clients take them:
/// `nats://user:password@host:4222` (user and password) or `nats://token@host:4222` (a token),
/// percent-encoded where they hold `:`, `@` or `/` (`p%40ss` is `p@ss`). They are taken out of the
/// URL when the options are made (async-nats 0.51 would not send them: nats-io/nats.rs#1623) and
/// sent as [`NatsOptions::user_and_password`] or [`NatsOptions::token`] would; with several
/// URLs, the first that has credentials gives them for all. A later `token` or
/// `user_and_password` call replaces them. [`NatsOptions::servers`], `Debug` and every
/// [`ConnectError`] show the URLs without them: no secret is ever printed.
///
/// ```
/// use notify_nats::NatsOptions;
/// let options = NatsOptions::new("nats://app:s3cr%40t@127.0.0.1:4222");
/// assert_eq!(options.servers(), "nats://127.0.0.1:4222");
/// assert!(!format!("{options:?}").contains("s3cr"));
/// ```
///
/// ```
/// use notify_nats::NatsOptions;
/// let options = NatsOptions::new("nats://127.0.0.1:4222")
///     .token("s3cret")
///     .name("bookstore-exporter");
/// assert_eq!(options.servers(), "nats://127.0.0.1:4222");
/// ```
#[derive(Clone)]
pub struct NatsOptions {
    servers: String,
    auth: Auth,
    root_certificates: Vec<PathBuf>,
    client_certificate: Option<(PathBuf, PathBuf)>,
    require_tls: bool,
    name: Option<String>,
    connection_timeout: Duration,
}

#[derive(Clone)]
enum Auth {
    None,
    Token(String),
    UserPassword(String, String),
}

impl NatsOptions {
    /// Settings for `servers`: one URL (`nats://host:port`, `tls://host:port`) or several,
    /// comma-separated. The credentials a URL holds (`user:password@`, `token@`), else none; TLS
    /// as the URL and the server ask; a 5 s connection timeout.
    pub fn new(servers: impl Into<String>) -> NatsOptions {
        let (servers, auth) = take_url_credentials(&servers.into());
        NatsOptions {
            servers,
            auth,
            root_certificates: Vec::new(),
            client_certificate: None,
            require_tls: false,
            name: None,
            connection_timeout: Duration::from_secs(5),
        }
    }

    /// The server addresses as given, without the credentials a URL held.
    pub fn servers(&self) -> &str {
        &self.servers
    }

    /// Authenticates with a token (`nats-server --auth TOKEN`); replaces credentials given before
    /// (in a URL too).
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> NatsOptions {
        self.auth = Auth::Token(token.into());
        self
    }

    /// Authenticates with a user name and password (`nats-server --user U --pass P`); replaces
    /// credentials given before (in a URL too).
    #[must_use]
    pub fn user_and_password(mut self, user: impl Into<String>, password: impl Into<String>) -> NatsOptions {
        self.auth = Auth::UserPassword(user.into(), password.into());
        self
    }

    /// Trusts the CA certificates of a PEM file (may be given several times).
    #[must_use]
    pub fn root_certificates(mut self, pem: impl Into<PathBuf>) -> NatsOptions {
        self.root_certificates.push(pem.into());
        self
    }

    /// Presents a client certificate and its private key (PEM files) for mutual TLS.
    #[must_use]
    pub fn client_certificate(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> NatsOptions {
        self.client_certificate = Some((cert.into(), key.into()));
        self
    }

    /// Refuses to connect without TLS.
    #[must_use]
    pub fn require_tls(mut self, required: bool) -> NatsOptions {
        self.require_tls = required;
        self
    }

    /// The client name shown by the server's monitoring (`connz`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> NatsOptions {
        self.name = Some(name.into());
        self
    }

    /// How long one connection attempt may take (default 5 s).
    #[must_use]
    pub fn connection_timeout(mut self, timeout: Duration) -> NatsOptions {
        self.connection_timeout = timeout;
        self
    }

    /// The connection timeout ([`NatsOptions::connection_timeout`]).
    pub(crate) fn timeout(&self) -> Duration {
        self.connection_timeout
    }

    /// Connects; reconnects forever afterwards (the exporter and importer count what a
    /// disconnection costs).
    pub(crate) async fn connect(
        &self,
        events: impl Fn(async_nats::Event) + Send + Sync + 'static,
    ) -> Result<async_nats::Client, ConnectError> {
        let mut options = match &self.auth {
            Auth::None => async_nats::ConnectOptions::new(),
            Auth::Token(token) => async_nats::ConnectOptions::with_token(token.clone()),
            Auth::UserPassword(user, password) => {
                async_nats::ConnectOptions::with_user_and_password(user.clone(), password.clone())
            }
        };
        for pem in &self.root_certificates {
            options = options.add_root_certificates(pem.clone());
        }
        if let Some((cert, key)) = &self.client_certificate {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
        if let Some(name) = &self.name {
            options = options.name(name);
        }
        let events = std::sync::Arc::new(events);
        options
            .require_tls(self.require_tls)
            .connection_timeout(self.connection_timeout)
            .max_reconnects(None)
            .reconnect_delay_callback(|attempts| Duration::from_millis((attempts as u64 * 50).min(1_000)))
            .event_callback(move |event| {
                let events = events.clone();
                async move { events(event) }
            })
            .connect(self.servers.as_str())
            .await
            .map_err(|e| {
                use async_nats::ConnectErrorKind as K;
                let kind = match e.kind() {
                    K::AuthorizationViolation | K::Authentication => ConnectErrorKind::Authorization,
                    K::Tls => ConnectErrorKind::Tls,
                    K::ServerParse | K::Dns => ConnectErrorKind::Address,
                    _ => ConnectErrorKind::Unreachable,
                };
                ConnectError {
                    servers: self.servers.clone(),
                    kind,
                    message: e.to_string(),
                }
            })
    }
}

/// `servers` without the credentials of its URLs, and the credentials of the first URL that has
/// some: `user:password@` (each percent-decoded) is a user and password, `token@` a token (an
/// empty one, `@host`, is none). The
/// credentials end at the last `@` of a URL (a password may hold an unencoded `@` or `/`), and
/// start after its `scheme://` (or at its start when it has none).
fn take_url_credentials(servers: &str) -> (String, Auth) {
    let mut auth = Auth::None;
    let mut out = Vec::new();
    for url in servers.split(',') {
        let url = url.trim();
        let authority = url.find("://").map_or(0, |at| at + 3);
        let Some(at) = url[authority..].rfind('@').map(|at| authority + at) else {
            out.push(url.to_owned());
            continue;
        };
        if matches!(auth, Auth::None) && at > authority {
            let decode = |text: &str| {
                percent_encoding::percent_decode_str(text)
                    .decode_utf8_lossy()
                    .into_owned()
            };
            auth = match url[authority..at].split_once(':') {
                Some((user, password)) => Auth::UserPassword(decode(user), decode(password)),
                None => Auth::Token(decode(&url[authority..at])),
            };
        }
        out.push(format!("{}{}", &url[..authority], &url[at + 1..]));
    }
    (out.join(","), auth)
}

impl fmt::Debug for NatsOptions {
    /// Shows the servers and the kind of credentials, never the secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match self.auth {
            Auth::None => "none",
            Auth::Token(_) => "token",
            Auth::UserPassword(..) => "user and password",
        };
        f.debug_struct("NatsOptions")
            .field("servers", &self.servers)
            .field("auth", &auth)
            .field("require_tls", &self.require_tls)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What kind of failure a [`ConnectError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnectErrorKind {
    /// The server refused the credentials (wrong or missing token, user or password).
    Authorization,
    /// The TLS handshake or settings failed.
    Tls,
    /// The address could not be parsed or resolved.
    Address,
    /// No server answered (refused, timed out).
    Unreachable,
    /// Connected, but setting up JetStream (the stream or the consumer) failed.
    JetStream,
    /// The exporter's or importer's thread could not be started.
    Thread,
    /// A subject setting is not a valid NATS subject: the exporter's prefix, the importer's
    /// prefix and subject, or its queue group (empty, whitespace, a misplaced wildcard). The
    /// message names the setting and the bad token; nothing was connected.
    Subject,
    /// [`ExporterBuilder::wire_version`](crate::ExporterBuilder::wire_version) names a version
    /// the exporter does not write (2 and [`WIRE_VERSION`](crate::WIRE_VERSION) are written);
    /// nothing was connected.
    WireVersion,
}

/// Why an exporter or importer could not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectError {
    servers: String,
    kind: ConnectErrorKind,
    message: String,
}

impl ConnectError {
    pub(crate) fn new(servers: &str, kind: ConnectErrorKind, message: impl Into<String>) -> ConnectError {
        ConnectError {
            servers: servers.to_owned(),
            kind,
            message: message.into(),
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ConnectErrorKind {
        self.kind
    }
}

/// The failure and the servers (without credentials); what it quotes (a subject, the client's
/// message) escaped as notify-core's own lines escape text ([`notify_core::escape`]).
impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ConnectErrorKind::Authorization => "authorization refused by",
            ConnectErrorKind::Tls => "TLS failed with",
            ConnectErrorKind::Address => "bad NATS server address",
            ConnectErrorKind::Unreachable => "could not connect to",
            ConnectErrorKind::JetStream => "JetStream setup failed on",
            ConnectErrorKind::Thread => "could not start a thread for",
            ConnectErrorKind::Subject => return write!(f, "invalid NATS subject: {}", Escaped::new(&self.message)),
            ConnectErrorKind::WireVersion => return write!(f, "{}", Escaped::new(&self.message)),
        };
        write!(
            f,
            "{what} {}: {}",
            Escaped::new(&self.servers),
            Escaped::new(&self.message)
        )
    }
}

impl std::error::Error for ConnectError {}

/// Starts the thread `name` running `run`, which answers on the given sender once it is connected
/// (`Ok`) or could not connect (`Err`, after which it ends), and waits for that answer. The
/// exporter and the importer start their threads this way; `what` names the step a thread that
/// ended without answering did not finish ("connecting", "subscribing").
///
/// The thread is marked telemetry-suppressed
/// ([`notify_core::suppression::suppress_telemetry_on_this_thread`]): the tracing and log output of async-nats
/// and of this crate on it must not come back as notify events (the tracing -> notify bridges
/// ignore it), or an exporter of every event would export its own client's logs, forever.
pub(crate) fn spawn_connected<T: Send + 'static>(
    name: &str,
    servers: &str,
    what: &str,
    run: impl FnOnce(std::sync::mpsc::Sender<Result<T, ConnectError>>) + Send + 'static,
) -> Result<(T, std::thread::JoinHandle<()>), ConnectError> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            notify_core::suppression::suppress_telemetry_on_this_thread();
            run(ready_tx)
        })
        .map_err(|e| ConnectError::new(servers, ConnectErrorKind::Thread, e.to_string()))?;
    match ready_rx.recv() {
        Ok(Ok(value)) => Ok((value, thread)),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(ConnectError::new(
                servers,
                ConnectErrorKind::Thread,
                format!("the {name} thread ended before {what}"),
            ))
        }
    }
}

/// The exporter's or importer's single-threaded tokio runtime (it runs on the calling thread);
/// the threads it starts itself (its blocking pool: name resolution) are telemetry-suppressed as
/// the calling one is (see [`spawn_connected`]).
pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_start(notify_core::suppression::suppress_telemetry_on_this_thread)
        .build()
}

/// A real round trip with the server: a message to a private inbox this client subscribes to,
/// awaited until it comes back. The server handles each connection's messages in order, so the
/// echo proves that it processed everything this client sent before it (`Client::flush` of
/// async-nats only writes the client's buffer to the socket: nothing comes back from the server).
pub(crate) struct RoundTrip {
    subject: String,
    echoes: async_nats::Subscriber,
    sequence: u64,
}

impl RoundTrip {
    /// Subscribes to a fresh inbox of `client`.
    pub(crate) async fn new(client: &async_nats::Client) -> Result<RoundTrip, async_nats::SubscribeError> {
        let subject = client.new_inbox();
        let echoes = client.subscribe(subject.clone()).await?;
        Ok(RoundTrip {
            subject,
            echoes,
            sequence: 0,
        })
    }

    /// Sends the next echo and waits (without a time limit: wrap it in one) until it comes back;
    /// false when the publish failed or the subscription ended. Echoes of earlier calls that came
    /// back late are skipped by their sequence number.
    pub(crate) async fn confirm(&mut self, client: &async_nats::Client) -> bool {
        let Some(sent) = self.send_echo(client).await else {
            return false;
        };
        while let Some(echo) = self.next_echo().await {
            if echo >= sent {
                return true;
            }
        }
        false
    }

    /// Publishes the next echo (the server sends it back after everything this client published
    /// before it); its sequence number, `None` when the publish failed. Numbers grow by one per
    /// echo sent.
    pub(crate) async fn send_echo(&mut self, client: &async_nats::Client) -> Option<u64> {
        self.sequence += 1;
        let sequence = self.sequence.to_be_bytes();
        client
            .publish(self.subject.clone(), bytes::Bytes::copy_from_slice(&sequence))
            .await
            .ok()
            .map(|()| self.sequence)
    }

    /// The sequence number of the next echo to come back, waiting for it (without a time limit:
    /// wrap it in one); `None` when the subscription ended.
    pub(crate) async fn next_echo(&mut self) -> Option<u64> {
        use futures_util::StreamExt;
        while let Some(echo) = self.echoes.next().await {
            if let Some(sequence) = echo_sequence(&echo.payload) {
                return Some(sequence);
            }
        }
        None
    }

    /// The sequence number of an echo already back, without waiting; `None` when none is.
    pub(crate) fn ready_echo(&mut self) -> Option<u64> {
        use futures_util::{FutureExt, StreamExt};
        while let Some(Some(echo)) = self.echoes.next().now_or_never() {
            if let Some(sequence) = echo_sequence(&echo.payload) {
                return Some(sequence);
            }
        }
        None
    }
}

/// The sequence number an echo carries (8 bytes, big-endian); `None` for anything else (a stray
/// message on the inbox).
fn echo_sequence(payload: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(payload.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth_of(options: &NatsOptions) -> (String, String) {
        match &options.auth {
            Auth::None => ("none".into(), String::new()),
            Auth::Token(token) => ("token".into(), token.clone()),
            Auth::UserPassword(user, password) => (user.clone(), password.clone()),
        }
    }

    #[test]
    fn url_credentials_are_taken_out_of_the_urls() {
        for (given, servers, auth) in [
            ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222", ("none", "")),
            ("nats://app:pw@127.0.0.1:4222", "nats://127.0.0.1:4222", ("app", "pw")),
            (
                "tls://s3cret@nats.example:4443",
                "tls://nats.example:4443",
                ("token", "s3cret"),
            ),
            ("app:pw@localhost:4222", "localhost:4222", ("app", "pw")),
            // Percent-encoded, and unencoded `@`, `:` and `/` in the password.
            ("nats://a%20pp:p%40ss%3Aw@h:1", "nats://h:1", ("a pp", "p@ss:w")),
            ("nats://app:p@ss/w:rd@h:1", "nats://h:1", ("app", "p@ss/w:rd")),
            ("nats://@h:1", "nats://h:1", ("none", "")),
            // Several URLs: every one cleaned, the first credentials kept.
            (
                "nats://a:1@h1:1, nats://h2:2,nats://b:2@h3:3",
                "nats://h1:1,nats://h2:2,nats://h3:3",
                ("a", "1"),
            ),
        ] {
            let options = NatsOptions::new(given);
            assert_eq!(options.servers(), servers, "{given}");
            assert_eq!(auth_of(&options), (auth.0.to_owned(), auth.1.to_owned()), "{given}");
        }
    }

    /// Issue 33 item 11, for errors: a prefix or subject is quoted escaped (Debug already escaped
    /// newlines and ESC, not the bidirectional controls).
    #[test]
    fn connect_errors_escape_what_they_quote() {
        let prefix = "shop\u{202e}lmth.exe x";
        let why = crate::subject::check_prefix(prefix).unwrap_err();
        let err = ConnectError::new("nats://h:1", ConnectErrorKind::Subject, why);
        assert_eq!(
            err.to_string(),
            r#"invalid NATS subject: prefix "shop\u{202e}lmth.exe x": token "exe x" contains whitespace"#
        );
        let err = ConnectError::new("nats://h\n:1", ConnectErrorKind::Unreachable, "refused\u{1b}[2J");
        assert_eq!(err.to_string(), r"could not connect to nats://h\n:1: refused\u{1b}[2J");
    }

    #[test]
    fn a_later_credential_call_replaces_the_urls() {
        let options = NatsOptions::new("nats://app:pw@h:1").token("t");
        assert_eq!(auth_of(&options), ("token".into(), "t".into()));
        let options = NatsOptions::new("nats://tok@h:1").user_and_password("u", "p");
        assert_eq!(auth_of(&options), ("u".into(), "p".into()));
    }

    #[test]
    fn debug_and_connect_errors_never_show_url_credentials() {
        let options = NatsOptions::new("nats://app:Hunter2Secret@127.0.0.1:4222");
        assert_eq!(
            format!("{options:?}"),
            r#"NatsOptions { servers: "nats://127.0.0.1:4222", auth: "user and password", require_tls: false, name: None, .. }"#
        );
        let err = ConnectError::new(
            options.servers(),
            ConnectErrorKind::Authorization,
            "authorization violation",
        );
        assert_eq!(
            err.to_string(),
            "authorization refused by nats://127.0.0.1:4222: authorization violation"
        );
        assert!(!format!("{err:?}").contains("Hunter2"), "{err:?}");
        let exporter = format!("{:?}", crate::Exporter::builder(options.clone()));
        let importer = format!("{:?}", crate::Importer::builder(options));
        for builder in [exporter, importer] {
            assert!(
                builder.contains(r#"servers: "nats://127.0.0.1:4222", auth: "user and password""#)
                    && !builder.contains("Hunter2"),
                "{builder}"
            );
        }
        let options = NatsOptions::new("nats://Hunter2Token@127.0.0.1:4222");
        assert!(!format!("{options:?}").contains("Hunter2"), "{options:?}");
    }
}
