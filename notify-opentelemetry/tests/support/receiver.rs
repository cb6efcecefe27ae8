//! An OTLP trace receiver on a loopback port, started by the test: over gRPC, opentelemetry-proto's
//! generated tonic server (`TraceServiceServer`); over HTTP/protobuf, an axum endpoint at
//! `/v1/traces` decoding `ExportTraceServiceRequest` with prost. It keeps every span it received,
//! can answer slowly, and can be stopped and started again on the same port. It runs on a tokio
//! runtime of its own, so the exporter under test shares nothing with it.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use notify_export::testing::Seen;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::{status, Span};
use prost::Message;
use tokio::sync::oneshot;

/// Which OTLP transport the receiver speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Grpc,
    HttpProtobuf,
}

/// One span as received, with its resource's `service.name`.
#[derive(Clone, Debug)]
pub struct Received {
    pub service_name: Option<String>,
    pub span: Span,
}

impl Received {
    /// What the sink contract compares.
    pub fn seen(&self) -> Seen {
        let span = &self.span;
        Seen {
            name: span.name.clone(),
            id: notify_core::event::EventId::new(u64::from_be_bytes(span.span_id[..].try_into().unwrap())),
            parent_id: (!span.parent_span_id.is_empty()).then(|| {
                notify_core::event::EventId::new(u64::from_be_bytes(span.parent_span_id[..].try_into().unwrap()))
            }),
            trace_id: notify_core::TraceId::from_bytes(span.trace_id[..].try_into().unwrap()).unwrap(),
            error: span
                .status
                .as_ref()
                .is_some_and(|s| s.code == status::StatusCode::Error as i32),
        }
    }
}

#[derive(Default)]
struct State {
    spans: Mutex<Vec<Received>>,
    /// How long each request is held before its answer.
    delay: Mutex<Duration>,
    requests: Mutex<u64>,
    /// The headers (gRPC metadata) of the latest request.
    headers: Mutex<HeaderMap>,
}

impl State {
    async fn take(&self, headers: HeaderMap, request: ExportTraceServiceRequest) {
        *self.requests.lock().unwrap() += 1;
        *self.headers.lock().unwrap() = headers;
        let delay = *self.delay.lock().unwrap();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let mut spans = self.spans.lock().unwrap();
        for resource_spans in request.resource_spans {
            let service_name = resource_spans.resource.as_ref().and_then(|r| {
                r.attributes.iter().find(|kv| kv.key == "service.name").and_then(|kv| {
                    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                        Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                        _ => None,
                    }
                })
            });
            for scope_spans in resource_spans.scope_spans {
                for span in scope_spans.spans {
                    spans.push(Received {
                        service_name: service_name.clone(),
                        span,
                    });
                }
            }
        }
    }
}

struct Grpc(Arc<State>);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let headers = request.metadata().clone().into_headers();
        self.0.take(headers, request.into_inner()).await;
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

async fn http_export(
    state: axum::extract::State<Arc<State>>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    match ExportTraceServiceRequest::decode(body) {
        Ok(request) => {
            state.take(headers, request).await;
            let answer = ExportTraceServiceResponse { partial_success: None }.encode_to_vec();
            ([(header::CONTENT_TYPE, "application/x-protobuf")], answer).into_response()
        }
        Err(error) => (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
    }
}

/// The receiver. Dropping it stops the server and its runtime.
pub struct Receiver {
    protocol: Protocol,
    addr: SocketAddr,
    state: Arc<State>,
    runtime: tokio::runtime::Runtime,
    stop: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<()>>,
}

impl Receiver {
    /// A receiver listening on a free loopback port.
    pub fn start(protocol: Protocol) -> Receiver {
        let mut receiver = Receiver::stopped(protocol);
        receiver.resume();
        receiver
    }

    /// A receiver with a port reserved but nothing listening yet ([`resume`](Self::resume) starts
    /// it): the exporter's first batches find the connection refused.
    pub fn stopped(protocol: Protocol) -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        Receiver {
            protocol,
            addr,
            state: Arc::default(),
            runtime,
            stop: None,
            served: None,
        }
    }

    /// The URL an OTLP exporter is given: `http://127.0.0.1:PORT` (gRPC) or
    /// `http://127.0.0.1:PORT/v1/traces` (HTTP).
    pub fn endpoint(&self) -> String {
        match self.protocol {
            Protocol::Grpc => format!("http://{}", self.addr),
            Protocol::HttpProtobuf => format!("http://{}/v1/traces", self.addr),
        }
    }

    /// Each request is answered after `delay`.
    pub fn set_delay(&self, delay: Duration) {
        *self.state.delay.lock().unwrap() = delay;
    }

    /// Starts listening (again) on the receiver's port.
    pub fn resume(&mut self) {
        assert!(self.stop.is_none(), "already listening");
        let (stop, stopped) = oneshot::channel::<()>();
        let state = self.state.clone();
        let protocol = self.protocol;
        let addr = self.addr;
        let listener = self.runtime.block_on(async move {
            // The port was just given up by the previous server (or the reservation): retry a bind
            // that races its release.
            let mut tries = 0;
            loop {
                match tokio::net::TcpListener::bind(addr).await {
                    Ok(listener) => break listener,
                    Err(error) if tries < 100 => {
                        tries += 1;
                        let _ = error;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Err(error) => panic!("bind {addr}: {error}"),
                }
            }
        });
        let served = self.runtime.spawn(async move {
            let stopped = async {
                let _ = stopped.await;
            };
            match protocol {
                Protocol::Grpc => {
                    tonic::transport::Server::builder()
                        .add_service(TraceServiceServer::new(Grpc(state)))
                        .serve_with_incoming_shutdown(tonic::transport::server::TcpIncoming::from(listener), stopped)
                        .await
                        .unwrap();
                }
                Protocol::HttpProtobuf => {
                    let app = axum::Router::new()
                        .route("/v1/traces", axum::routing::post(http_export))
                        .with_state(state);
                    axum::serve(listener, app)
                        .with_graceful_shutdown(stopped)
                        .await
                        .unwrap();
                }
            }
        });
        self.stop = Some(stop);
        self.served = Some(served);
    }

    /// Stops listening (connections are closed once the requests in progress are answered).
    pub fn pause(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            let _ = self
                .runtime
                .block_on(async { tokio::time::timeout(Duration::from_secs(10), served).await });
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Received> {
        self.state.spans.lock().unwrap().clone()
    }

    /// The value of header (gRPC metadata) `name` in the latest request.
    pub fn header(&self, name: &str) -> Option<String> {
        let headers = self.state.headers.lock().unwrap();
        headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    }

    /// Export requests received so far (also those still being answered).
    pub fn requests(&self) -> u64 {
        *self.state.requests.lock().unwrap()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.pause();
    }
}
