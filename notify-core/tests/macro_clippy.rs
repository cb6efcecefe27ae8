//! shared/cases M5: the expansion of `#[instrument_event]` causes no clippy warning, pedantic
//! included. Runs `cargo clippy` on the fixture crate in `tests/macro/clippy_fixture` (a copy of it
//! in the test's temporary target directory, with this workspace's `Cargo.lock`).

use std::path::Path;
use std::process::Command;

#[test]
fn m5_the_expansion_is_clippy_pedantic_clean() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = Path::new(env!("CARGO_TARGET_TMPDIR")).join("clippy_fixture");
    std::fs::create_dir_all(fixture.join("src")).unwrap();
    std::fs::copy(
        manifest_dir.join("tests/macro/clippy_fixture/src/lib.rs"),
        fixture.join("src/lib.rs"),
    )
    .unwrap();
    let lock = manifest_dir.join("../Cargo.lock");
    if lock.exists() {
        std::fs::copy(lock, fixture.join("Cargo.lock")).unwrap();
    }
    let manifest = format!(
        "[package]\nname = \"notify-clippy-fixture\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\nnotify-core = {{ path = {:?} }}\n\n[workspace]\n",
        manifest_dir.display().to_string()
    );
    std::fs::write(fixture.join("Cargo.toml"), manifest).unwrap();

    let output = Command::new(env!("CARGO"))
        .args(["clippy", "--quiet", "--manifest-path"])
        .arg(fixture.join("Cargo.toml"))
        .args(["--", "-D", "warnings", "-W", "clippy::pedantic"])
        .env("CARGO_TARGET_DIR", fixture.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo clippy runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "clippy found warnings in the fixture:\n{stderr}"
    );
    assert!(!stderr.contains("warning"), "clippy warned:\n{stderr}");
}
