//! Issue 11, fault 1, with the rename inherited from the workspace (`ncw = { workspace = true }`
//! here, `ncw = { package = "notify-core" }` in the root's `[workspace.dependencies]`): the
//! attribute reads the root's manifest and finds notify-core as `::ncw`.

use ncw::testing::capture_notifications;
use ncw::{Notifier, Value};

#[ncw::instrument_event("inherited.ds")]
fn f() -> u32 {
    1
}

#[test]
fn inherited_renamed_dependency_needs_no_option() {
    let (value, events) = capture_notifications(Notifier::global(), "inherited.ds", f);
    assert_eq!(value, 1);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].name(), "inherited.ds");
}

#[test]
fn inherited_renamed_dependency_in_the_library_records_fields() {
    let (value, events) = capture_notifications(Notifier::global(), "inherited.lib", || {
        notify_macro_inherited::double(4)
    });
    assert_eq!(value, 8);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload().get("x"), Some(&Value::U64(4)));
    assert_eq!(events[0].payload().get("return").and_then(Value::as_str), Some("8"));
}
