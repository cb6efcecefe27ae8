//! A tour of `#[instrument_event]`: every option (`"name"`/`name =`, `fields(..)` in each form,
//! `err`, `ret`, `parent = expr`, `crate = path`), methods, errors, panics, async fns and functions that return a
//! boxed future (as `#[async_trait]` writes them), with a subscriber that prints every event it
//! receives.
//!
//! ```text
//! cargo run --release --example macro_tour
//! ```

use std::fmt;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use notify_core::{instrument_event, Event, Pattern, Subscriber};

mod catalog {
    use notify_core::instrument_event;

    /// No options: the event is named `"{function}.{module}"`, here `"lookup.catalog"`.
    #[instrument_event]
    pub fn lookup(isbn: &str) -> Option<&'static str> {
        (isbn == "978-0").then_some("The Pragmatic Programmer")
    }
}

/// A bare string literal names the event; `fields(...)` lists the payload: `sql` is the argument as
/// it is, `%` records `Display` text, `?` records `Debug` text, `key = expr` any expression, and a
/// quoted key is one that is not an identifier.
#[instrument_event("query.sql", fields(sql, %table, ?params, len = sql.len(), "db.system" = "sqlite"))]
fn query(sql: &str, table: &Table, params: &[i64]) -> usize {
    params.len()
}

/// `name = ...` is the keyed form; `ret` records the return value's `Debug` text.
#[instrument_event(name = "price.catalog", fields(isbn), ret)]
fn price(isbn: &str) -> (u32, &'static str) {
    let cents = u32::try_from(isbn.len()).unwrap_or(0) * 100;
    (cents, "EUR")
}

/// `err` records an `Err`'s type and message under `"exception"`; early returns and `?` finish
/// the event like the tail does.
#[instrument_event("parse.order", fields(input), err)]
fn parse_quantity(input: &str) -> Result<u32, std::num::ParseIntError> {
    if input.is_empty() {
        return Ok(0);
    }
    let quantity = input.trim().parse::<u32>()?;
    Ok(quantity)
}

/// `err` and `ret` together: the `Ok` value under `"return"`, an `Err` under `"exception"`.
#[instrument_event("reserve.stock", fields(isbn), err, ret)]
fn reserve(isbn: &str) -> Result<u32, std::fmt::Error> {
    if isbn.is_empty() {
        return Err(std::fmt::Error);
    }
    Ok(3)
}

/// What a crate that re-exports notify (a facade, such as a company's `observability` crate) gives
/// its users, who may not depend on notify-core themselves.
mod observability {
    pub use notify_core;
    pub use notify_core::instrument_event;
}

/// `crate = path`: where notify-core is, for a crate that reaches it only through a facade. (A
/// renamed dependency, `nc = { package = "notify-core" }`, needs no option: `#[nc::instrument_event]`.)
#[observability::instrument_event("audit.facade", crate = observability::notify_core)]
fn audit() {}

/// A request that queues a job: it hands the job its own context (`Context::current()` is this
/// event's while it runs).
#[instrument_event("enqueue.http")]
fn enqueue() -> notify_core::Context {
    notify_core::Context::current()
}

/// `parent = expr`: the job's event is a child of the request that queued it, not of whatever is
/// current when it runs (here nothing: it runs after the request finished).
#[instrument_event("run.job", fields(job), parent = queued_in)]
fn run_job(job: u32, queued_in: notify_core::Context) {}

/// A trait whose method returns a boxed future, written here as `#[async_trait]` writes it.
trait Inventory {
    fn count(&self) -> Pin<Box<dyn Future<Output = usize> + Send + '_>>;
}

struct Shelf(Vec<&'static str>);

impl Inventory for Shelf {
    /// The attribute finds the async block inside `Box::pin(..)` and instruments it: the event
    /// covers the future's run, not the call that boxes it.
    #[instrument_event("count.inventory", ret)]
    fn count(&self) -> Pin<Box<dyn Future<Output = usize> + Send + '_>> {
        Box::pin(async move {
            YieldOnce(false).await;
            let _ = catalog::lookup("978-0");
            self.0.len()
        })
    }
}

/// A panic finishes the event marked as panicked, then goes on.
#[instrument_event("checkout.order")]
fn checkout(items: u32) -> u32 {
    assert!(items > 0, "empty cart");
    items
}

struct Table(&'static str);

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "table {}", self.0)
    }
}

#[derive(Debug)]
struct Cart {
    id: u64,
    items: Vec<&'static str>,
}

impl Cart {
    /// `self` works in field expressions.
    #[instrument_event("add.cart", fields(id = self.id, before = self.items.len(), item))]
    fn add(&mut self, item: &'static str) -> usize {
        self.items.push(item);
        // A nested instrumented call: its event's parent is this one.
        let _ = catalog::lookup("978-0");
        self.items.len()
    }

    /// An async method: the event covers first poll to completion; its polls make it the current
    /// event, so `lookup` nests under it.
    #[instrument_event("total.cart", fields(id = self.id), ret)]
    async fn total(&self) -> u32 {
        YieldOnce(false).await;
        let _ = catalog::lookup("978-0");
        let count = u32::try_from(self.items.len()).unwrap_or(u32::MAX);
        count * 1_500
    }
}

/// An async fn whose future is dropped before it completes: its event is finished as cancelled.
#[instrument_event("ship.order", fields(order))]
async fn ship(order: u64) {
    YieldOnce(false).await;
    YieldOnce(false).await;
    println!("   (shipped {order}: never printed, the future is dropped first)");
}

/// Pending once, then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

struct NoopWake;

impl Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}

fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(NoopWake));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

fn print_event(event: &Event) {
    let parent = event.parent_id().map_or_else(|| "-".to_owned(), |id| id.to_string());
    println!(
        "   event {:<16} id {:<5} parent {:<5} {:?} payload {:?}",
        event.name(),
        event.id(),
        parent,
        event.outcome(),
        event.payload()
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("Nobody listens yet: instrumented calls cost one atomic load and a branch.");
    let _ = catalog::lookup("978-0");

    let subscription = notify_core::subscribe(Pattern::all(), Subscriber::event(print_event));

    println!("\n1. default name \"{{function}}.{{module}}\":");
    let _ = catalog::lookup("978-0");

    println!("\n2. a bare name and fields (value, %Display, ?Debug, expression):");
    let _ = query("SELECT * FROM books WHERE id = ?", &Table("books"), &[7]);

    println!("\n3. name = ..., ret:");
    let _ = price("978-0");

    println!("\n4. err: tail, early return, ? on an Err:");
    let _ = parse_quantity("3");
    let _ = parse_quantity("");
    let _ = parse_quantity("three");

    println!("\n4b. err and ret together:");
    let _ = reserve("978-0");
    let _ = reserve("");

    println!("\n5. a panic: the event is finished as panicked, the panic goes on:");
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let caught = std::panic::catch_unwind(|| checkout(0));
    std::panic::set_hook(default_hook);
    println!("   panic caught by the caller: {}", caught.is_err());

    println!("\n6. methods: self in fields, a nested event:");
    let mut cart = Cart { id: 42, items: vec![] };
    let _ = cart.add("978-0");

    println!("\n7. async: first poll to completion, nested event, ret:");
    let total = block_on(cart.total());
    println!("   total {total}");

    println!("\n8. async future dropped before completion: cancelled:");
    {
        let mut shipping = Box::pin(ship(7));
        let waker = Waker::from(Arc::new(NoopWake));
        let _ = shipping.as_mut().poll(&mut Context::from_waker(&waker));
    }

    println!("\n9. crate = path, through a facade:");
    audit();

    println!("\n10. a method returning Box::pin(async move {{ .. }}) (#[async_trait]'s shape): the run, nested event:");
    let count = block_on(Shelf(vec!["978-0", "978-1"]).count());
    println!("   count {count}");

    println!("\n11. parent = expr: a job run later is the child of the request that queued it:");
    let queued_in = enqueue();
    run_job(1, queued_in);

    subscription.unsubscribe()?;
    println!("\nUnsubscribed: nothing is printed for this call.");
    let _ = catalog::lookup("978-0");
    Ok(())
}
