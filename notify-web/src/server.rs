//! [`WebServer`]: the pages and the JSON over HTTP (`tiny_http`, one thread).

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};
use subtle::ConstantTimeEq;
use tiny_http::{Header, Method, Request, Response, Server};

use notify_core::TraceId;

use crate::html::{render_index, render_trace};
use crate::json::{stats_json, trace_json, traces_json};
use crate::recorder::TraceRecorder;

/// The cookie that carries the token once a request gave it as `?token=`.
const TOKEN_COOKIE: &str = "notify_web_token";

/// What the token cookie's value percent-encodes: the bytes RFC 6265 keeps out of a cookie value
/// (controls, space, `"`, `,`, `;`, `\\`), `%` itself, and every non-ASCII byte.
const COOKIE_ESCAPED: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b',').add(b';').add(b'\\').add(b'%');

/// Scripts are refused outright: the pages use none, so an injected one could not run even if
/// escaping failed.
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'";

/// Serves a [`TraceRecorder`] over HTTP on one thread until dropped or [`stop`](WebServer::stop)ped.
///
/// Paths: `/` (recent traces, per-name table, latency chart), `/trace/<trace id>` (waterfall;
/// `?open=<event id>` opens that event's payload),
/// `/api/traces`, `/api/trace/<trace id>`, `/api/stats` (JSON). Only `GET` and `HEAD`; other
/// methods get 405, an unknown path 404, a malformed trace id 400. Responses carry a
/// Content-Security-Policy that allows no script.
///
/// With [`WebOptions::token`](crate::WebOptions::token) every request must carry the token: as
/// `?token=...` (URL-encoded as a form field is: `%2B` for `+`, `+` or `%20` for a space; the
/// response then sets an HttpOnly, SameSite=Strict cookie, percent-encoded, so the page's links
/// work), as that cookie, or as `Authorization: Bearer ...` (the token as it is); otherwise it
/// gets 401. The comparison takes the same time whatever the bytes (only the length can show).
///
/// ```
/// use notify_web::{TraceRecorder, WebOptions, WebServer};
/// let server = WebServer::start("127.0.0.1:0", TraceRecorder::new(WebOptions::new()))?;
/// assert!(server.local_addr().ip().is_loopback());
/// server.stop();
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct WebServer {
    server: Arc<Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl WebServer {
    /// Binds `addr` (use `127.0.0.1:PORT` to stay local, port 0 for any free port) and serves
    /// `recorder` on a thread named `notify-web`.
    ///
    /// # Errors
    /// The operating system's error when the address cannot be bound or the thread not spawned.
    pub fn start(addr: impl ToSocketAddrs, recorder: TraceRecorder) -> io::Result<WebServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let server = Arc::new(Server::from_listener(listener, None).map_err(io::Error::other)?);
        let serving = server.clone();
        let thread = std::thread::Builder::new()
            .name("notify-web".to_owned())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    handle(&recorder, request);
                }
            })?;
        Ok(WebServer {
            server,
            addr,
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting requests and joins the thread (what dropping it does too).
    pub fn stop(self) {}
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What one request gets: status, content type, body, whether to set the token cookie.
struct Reply {
    status: u16,
    content_type: &'static str,
    body: String,
}

impl Reply {
    fn html(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body,
        }
    }

    fn json(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body,
        }
    }

    fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }
}

fn handle(recorder: &TraceRecorder, request: Request) {
    let (path, query) = request.url().split_once('?').unwrap_or((request.url(), ""));
    let (path, query) = (path.to_owned(), query.to_owned());
    let mut set_cookie = None;
    let reply = match authorize(recorder, &request, &query) {
        Auth::Denied => Reply::text(
            401,
            "401 Unauthorized: this page needs its token (?token=... or Authorization: Bearer ...)\n",
        ),
        auth => {
            if let Auth::ByQuery(token) = auth {
                let value = utf8_percent_encode(&token, COOKIE_ESCAPED);
                set_cookie = Some(format!("{TOKEN_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/"));
            }
            match request.method() {
                Method::Get | Method::Head => route(recorder, &path, &query),
                _ => Reply::text(405, "405 Method Not Allowed: only GET and HEAD\n"),
            }
        }
    };
    let head = *request.method() == Method::Head;
    let mut response = Response::from_string(if head { String::new() } else { reply.body })
        .with_status_code(reply.status)
        .with_header(header("Content-Type", reply.content_type))
        .with_header(header("Content-Security-Policy", CSP))
        .with_header(header("X-Content-Type-Options", "nosniff"))
        .with_header(header("Cache-Control", "no-store"));
    if reply.status == 405 {
        response.add_header(header("Allow", "GET, HEAD"));
    }
    if let Some(cookie) = set_cookie.and_then(|c| Header::from_bytes(b"Set-Cookie".as_slice(), c.as_bytes()).ok()) {
        response.add_header(cookie);
    }
    // The client may have gone; nothing to do about it.
    let _ = request.respond(response);
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

fn route(recorder: &TraceRecorder, path: &str, query: &str) -> Reply {
    match path {
        "/" | "/index.html" => Reply::html(render_index(recorder)),
        "/api/traces" => Reply::json(traces_json(recorder)),
        "/api/stats" => Reply::json(stats_json(recorder)),
        _ => {
            let (id, json) = if let Some(id) = path.strip_prefix("/trace/") {
                (id, false)
            } else if let Some(id) = path.strip_prefix("/api/trace/") {
                (id, true)
            } else {
                return Reply::text(404, "404 Not Found\n");
            };
            let trace_id: TraceId = match id.parse() {
                Ok(id) => id,
                Err(e) => return Reply::text(400, format!("400 Bad Request: {e}\n")),
            };
            match recorder.trace(trace_id) {
                Some(trace) if json => Reply::json(trace_json(&trace)),
                Some(trace) => {
                    let open = query_values(query, "open").find_map(|id| id.parse().ok());
                    Reply::html(render_trace(&trace, open))
                }
                None => Reply::text(404, format!("404 Not Found: no trace {trace_id} is kept\n")),
            }
        }
    }
}

enum Auth {
    Open,
    Denied,
    Granted,
    ByQuery(String),
}

fn authorize(recorder: &TraceRecorder, request: &Request, query: &str) -> Auth {
    let Some(expected) = recorder.options().token.as_deref() else {
        return Auth::Open;
    };
    let matches = |given: &str| bool::from(given.as_bytes().ct_eq(expected.as_bytes()));
    for given in query_values(query, "token") {
        if matches(&given) {
            return Auth::ByQuery(given.into_owned());
        }
    }
    for h in request.headers() {
        let value = h.value.as_str();
        if h.field.equiv("Authorization") {
            if let Some(given) = value.strip_prefix("Bearer ") {
                if matches(given.trim()) {
                    return Auth::Granted;
                }
            }
        } else if h.field.equiv("Cookie") {
            for cookie in value.split(';') {
                if let Some(given) = cookie
                    .trim()
                    .strip_prefix(TOKEN_COOKIE)
                    .and_then(|c| c.strip_prefix('='))
                {
                    // Written percent-encoded (see `handle`); a cookie set by hand may be plain.
                    let decoded = percent_decode_str(given).decode_utf8_lossy();
                    if matches(&decoded) {
                        return Auth::Granted;
                    }
                }
            }
        }
    }
    Auth::Denied
}

/// The values of the query parameter `key`, decoded as an HTML form's fields are
/// (`application/x-www-form-urlencoded`: `%XX` escapes, `+` for a space).
fn query_values<'q>(query: &'q str, key: &'q str) -> impl Iterator<Item = std::borrow::Cow<'q, str>> + 'q {
    form_urlencoded::parse(query.as_bytes()).filter_map(move |(k, v)| (k == key).then_some(v))
}
