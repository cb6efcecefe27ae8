//! Issue 49 item 2: with `RUST_LOG=off` and no sink configured, the setup subscribes nothing, so
//! an event takes the engine's unlistened path (a lookup) instead of asking a silenced line
//! subscriber on every call. One process, one setup.

use instrumentation_setup::{Config, Setup};

#[test]
fn i49_2_rust_log_off_and_no_sink_leave_every_name_unlistened() {
    let config = Config::from_vars([("RUST_LOG", "off")]).unwrap();
    let guard = Setup::production().config(config).init().expect("set up");
    for name in ["request.http", "request.http_client", "query.sql", "anything"] {
        let listeners = notify_core::Notifier::global().listeners_for(name);
        assert!(listeners.is_empty(), "{name} has subscribers: {listeners:?}");
    }
    assert_eq!(log::max_level(), log::LevelFilter::Off);
    drop(guard);
}
