// Issue 33 item 9: a handle's scope guard held across `.await` would make the handle the parent
// of every other task's events polled on that thread meanwhile. The guard is `!Send`, so a `Send`
// future (what `tokio::spawn` takes) that holds it across an await does not compile.
use notify_core::{Notifier, Payload};

fn spawn<F: std::future::Future + Send + 'static>(_: F) {}

async fn other_work() {}

fn main() {
    let notifier = Notifier::new();
    spawn(async move {
        let mut handle = notifier.build_handle("request.app", Payload::new());
        handle.start().unwrap();
        let _entered = handle.enter();
        other_work().await;
    });
}
