//! # notify-http
//!
//! [tower](https://docs.rs/tower) layers that make HTTP requests notify-core events, for any
//! framework built on tower and the `http` crate (axum, hyper, tonic) and any tower HTTP client
//! (hyper-util's `Client`):
//!
//! * [`ServerLayer`]: one event per request served, `"request.http"` by default;
//! * [`ClientLayer`]: one event per call made, `"request.http_client"`, a child of the current
//!   event, its W3C `traceparent` sent along so the next service continues the trace.
//!
//! ```no_run
//! use axum::{extract::MatchedPath, routing::get, Router};
//! use notify_http::ServerLayer;
//!
//! # async fn run() -> std::io::Result<()> {
//! let app = Router::new()
//!     .route("/books/{id}", get(|| async { "a book" }))
//!     // After routing, so the route template is known.
//!     .layer(ServerLayer::new().route_from(|request| {
//!         request.extensions.get::<MatchedPath>().map(|path| path.as_str().to_owned())
//!     }));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await
//! # }
//! ```
//!
//! ## The server event
//!
//! | payload key | value |
//! |---|---|
//! | `otel.kind` | `"server"` (`"client"` for the client layer): the OpenTelemetry bridge makes it the span kind |
//! | `http.request.method` | `"GET"` |
//! | `url.path` | `"/books/42"` (no query) |
//! | `http.route` | `"/books/{id}"`, when [`ServerLayer::route_from`] finds it |
//! | `http.response.status_code` | `200`, once the response head is ready |
//! | `http.response.body.size` | data bytes of the response body that went out |
//! | `http.request.header.<name>`, `http.response.header.<name>` | only the headers asked for ([`ServerLayer::request_headers`]) |
//! | `exception` | a failing status (by the [classifier](classify), default 5xx) or the inner service's error |
//!
//! * **When it ends.** The event starts when the request reaches the layer and ends when the
//!   response body ends (the last frame sent), so streaming bodies are measured whole. A client
//!   that goes away before (the connection closed, the body dropped) ends it as
//!   [`Outcome::Cancelled`](notify_core::event::Outcome::Cancelled); a handler that panics ends it as
//!   [`Outcome::Panicked`](notify_core::event::Outcome::Panicked) and the panic goes on (put a
//!   catch-panic layer, such as tower-http's `CatchPanicLayer`, outside this one to answer 500).
//! * **Context.** The event is the current event while the handler runs (its futures are polled
//!   and its body is produced with it current): events the handler makes are its children, and
//!   work it spawns with [`in_current_context`](notify_core::Instrument::in_current_context)
//!   too.
//! * **Trace context in.** A request with a valid W3C `traceparent` continues that trace: its
//!   event has the header's trace id, the sender's span as parent, and
//!   [`parent_is_remote`](notify_core::Event::parent_is_remote); its `tracestate` and `baggage`
//!   are current for the handler ([`notify_core::context::baggage()`],
//!   [`notify_core::context::trace_state`]). An absent or malformed header starts a new random
//!   trace, never an error the request sees, counted by
//!   [`trace_context::stats`](notify_core::trace_context::stats). The headers are read whether
//!   or not anybody listens: with nobody listening, the handler runs in the caller's trace (a
//!   non-recording span). Turn it off at a trust boundary with [`ServerLayer::continue_trace`].
//!   Level 2's `traceresponse` on request: [`ServerLayer::traceresponse`].
//! * **Trace context out.** [`ClientLayer`] sets the call's `traceparent` to its own event (a
//!   child of the current one), or, when nobody listens to calls, to a fresh random span id in
//!   the current trace, and sends the current `tracestate` and `baggage`
//!   (docs/trace-context.md in the repository: every listening configuration passes the W3C
//!   validation suite).
//! * **Status.** A failing status is recorded as the payload's `exception` (type `"http.status"`,
//!   message `"500 Internal Server Error"`), which log subscribers and the OpenTelemetry bridge
//!   report as an error; the [`Outcome`](notify_core::event::Outcome) stays about how the request
//!   ended. 404 and 401 are not failures of the server by default; see [`classify`] for the other
//!   rules (statuses in a range, gRPC).
//! * **Headers.** None are recorded unless asked. Sensitive ones (`authorization`,
//!   `proxy-authorization`, `cookie`, `set-cookie` by default) are recorded as [`REDACTED`], and
//!   the notifier's redaction policy, if any, applies to the whole payload as to every event.
//! * **Cost.** With the default name on the global notifier, whether anybody listens is one
//!   atomic load and a branch (a static callsite); an unlistened request still reads its three
//!   trace headers, draws a trace id when none came in, and attaches its context around each
//!   poll of its response future and body (docs/benchmarks.md in the repository has the
//!   figures: `benches/http.rs`, `notify_unlistened` against `no_layer`). Another name or
//!   notifier adds a name lookup.
//! * **Facts from the handler.** What the handler adds with [`notify_core::record`] is in the
//!   request's event: the event is current whenever the handler's future is polled, across awaits
//!   and on whichever worker thread resumes it (`tests/handler_record.rs`: 200 of 200 requests on
//!   a 4-thread runtime). A task the handler spawns with
//!   [`in_current_context`](notify_core::Instrument::in_current_context) carries only the
//!   request's context: its own events are children of the request, but a `record` there has no
//!   current event and does nothing (as [`notify_core::record`] documents); record in the handler,
//!   or give the task an event of its own.

#![warn(missing_docs)]

pub mod classify;
mod client;
mod headers;
pub mod keys;
mod propagation;
mod response;
mod server;
mod source;

pub use client::{ClientLayer, ClientService, CLIENT_EVENT};
pub use headers::{default_sensitive_headers, Headers, REDACTED};
pub use response::{ResponseBody, ResponseFuture};
pub use server::{ServerLayer, ServerService, SERVER_EVENT};
