//! Lints and `#[instrument_event]`: clippy on fixture crates (copies of `tests/macro/*_fixture` in
//! the test's temporary directory, with this workspace's `Cargo.lock` and one target directory
//! for both, so notify-core is checked once).
//!
//! * shared/cases M5: the expansion causes no clippy warning, pedantic included.
//! * Issue 11, fault 4: the user's own lints fire the same with and without the attribute.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Writes the fixture crate `name` (its `src/lib.rs` from `tests/macro/{name}`) with a manifest
/// depending on this notify-core, plus `extra` manifest lines; returns its manifest path.
fn fixture(name: &str, extra: &str) -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(fixture.join("src")).unwrap();
    std::fs::copy(
        manifest_dir.join("tests/macro").join(name).join("src/lib.rs"),
        fixture.join("src/lib.rs"),
    )
    .unwrap();
    let lock = manifest_dir.join("../Cargo.lock");
    if lock.exists() {
        std::fs::copy(lock, fixture.join("Cargo.lock")).unwrap();
    }
    let manifest = format!(
        "[package]\nname = \"notify-{}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\nnotify-core = {{ path = {:?} }}\n{extra}\n[workspace]\n",
        name.replace('_', "-"),
        manifest_dir.display().to_string()
    );
    std::fs::write(fixture.join("Cargo.toml"), manifest).unwrap();
    fixture.join("Cargo.toml")
}

/// Runs `cargo clippy` on `manifest` with `args`, in the shared target directory.
fn clippy(manifest: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO"))
        .args(["clippy", "--quiet", "--manifest-path"])
        .arg(manifest)
        .args(args)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("clippy_target"),
        )
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo clippy runs")
}

#[test]
fn m5_the_expansion_is_clippy_pedantic_clean() {
    let manifest = fixture("clippy_fixture", "");
    let output = clippy(&manifest, &["--", "-D", "warnings", "-W", "clippy::pedantic"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "clippy found warnings in the fixture:\n{stderr}"
    );
    assert!(!stderr.contains("warning"), "clippy warned:\n{stderr}");
}

/// One warning: its lint, and where (line, column) in the fixture's `src/lib.rs`.
type Warning = (String, u64, u64);

/// The fixture's warnings (not notify-core's), from clippy's JSON messages.
fn warnings(manifest: &Path, features: &[&str]) -> BTreeSet<Warning> {
    let mut args = vec!["--message-format=json"];
    args.extend_from_slice(features);
    let output = clippy(manifest, &args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "clippy failed ({features:?}):\n{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let fixture_src = manifest.parent().unwrap().join("src");
    let mut found = BTreeSet::new();
    for line in stdout.lines() {
        let message: serde_json::Value = serde_json::from_str(line).expect("JSON message");
        if message["reason"] != "compiler-message" {
            continue;
        }
        let target = message["target"]["src_path"].as_str().unwrap_or_default();
        if !Path::new(target).starts_with(&fixture_src) {
            continue;
        }
        let diagnostic = &message["message"];
        if diagnostic["level"] != "warning" {
            continue;
        }
        let Some(code) = diagnostic["code"]["code"].as_str() else {
            continue; // "N warnings emitted"
        };
        let spans = diagnostic["spans"].as_array().expect("spans");
        let primary = spans
            .iter()
            .find(|span| span["is_primary"] == true)
            .expect("a primary span");
        found.insert((
            code.to_owned(),
            primary["line_start"].as_u64().unwrap(),
            primary["column_start"].as_u64().unwrap(),
        ));
    }
    found
}

/// Line `line` (1-based) of the lint fixture's source.
fn fixture_line(line: u64) -> String {
    let source = include_str!("macro/lint_fixture/src/lib.rs");
    source
        .lines()
        .nth(usize::try_from(line).unwrap() - 1)
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn user_lints_fire_the_same_with_and_without_the_attribute() {
    let manifest = fixture("lint_fixture", "\n[features]\ninstrumented = []\n");
    let plain = warnings(&manifest, &[]);
    let instrumented = warnings(&manifest, &["--features", "instrumented"]);
    // The fixture trips these lints without the attribute (so the comparison means something).
    for lint in [
        "clippy::needless_return",
        "clippy::unused_async",
        "clippy::let_and_return",
        "clippy::semicolon_if_nothing_returned",
        "clippy::missing_panics_doc",
        "clippy::must_use_candidate",
        "clippy::unnecessary_wraps",
        "clippy::needless_pass_by_value",
        "clippy::await_holding_lock",
        "clippy::manual_async_fn",
        "unused_mut",
        "unreachable_code",
    ] {
        assert!(
            plain.iter().any(|(code, ..)| code == lint),
            "the fixture no longer trips {lint}: {plain:#?}"
        );
    }
    // The one known loss: with `err` or `ret` a sync body runs in a closure (so that `return` and
    // `?` can be recorded), and `unnecessary_wraps` reads only the function's own return values
    // (`always_ok_err`; `always_ok`, without an option, keeps it).
    let known_lost: Vec<_> = plain
        .iter()
        .filter(|(code, line, _)| code == "clippy::unnecessary_wraps" && fixture_line(*line).contains("always_ok_err"))
        .collect();
    assert_eq!(known_lost.len(), 1, "{plain:#?}");
    let lost: Vec<_> = plain
        .difference(&instrumented)
        .filter(|warning| !known_lost.contains(warning))
        .collect();
    let added: Vec<_> = instrumented.difference(&plain).collect();
    assert!(
        lost.is_empty() && added.is_empty(),
        "with the attribute, these warnings are lost: {lost:#?}\nand these are new: {added:#?}"
    );
}
