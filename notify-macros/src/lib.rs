//! `#[instrument_event]`: see notify-core's documentation. (In progress.)
