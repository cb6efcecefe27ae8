//! The default layer publishes on the global notifier through a static callsite: it notices
//! subscriptions made after it was built and stops when they are gone. (Its own test binary: the
//! global notifier is shared by the tests of one binary.)

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use notify_core::{Event, Notifier, Subscriber};
use notify_http::{ServerLayer, SERVER_EVENT};
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

#[tokio::test]
async fn the_default_layer_follows_the_global_notifiers_subscriptions() {
    let mut service = ServiceBuilder::new()
        .layer(ServerLayer::new())
        .service(service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
        }));
    let mut call = |path: &'static str| {
        let future = service.call(Request::get(path).body(()).unwrap());
        async move { future.await.unwrap().into_body().collect().await.unwrap() }
    };
    assert_eq!(ServerLayer::new().event_name(), SERVER_EVENT);
    call("/before").await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let subscription = Notifier::global().subscribe(
        SERVER_EVENT,
        Subscriber::event(move |e: &Event| {
            sink.lock()
                .unwrap()
                .push(e.payload().get("url.path").unwrap().to_string())
        }),
    );
    call("/during").await;
    subscription.unsubscribe().unwrap();
    call("/after").await;
    assert_eq!(*seen.lock().unwrap(), ["/during"]);
    // `ready` is the inner service's.
    assert!(service.ready().await.is_ok());
}
