//! Issue 47 item 4: README.md's web-service code is the example's code, which CI builds and runs
//! (tests/end_to_end.rs); and README's glue-line counts are what `scripts/glue-lines` prints.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The first ```rust,ignore block after `heading`.
fn block<'a>(readme: &'a str, heading: &str) -> &'a str {
    let section = &readme[readme
        .find(heading)
        .unwrap_or_else(|| panic!("README has no {heading:?}"))..];
    let start = section.find("```rust,ignore\n").expect("a code block") + "```rust,ignore\n".len();
    let end = section[start..].find("```").expect("the block's end");
    &section[start..start + end]
}

#[test]
fn i47_4_readme_web_code_is_the_examples() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let source = squeeze(&std::fs::read_to_string(root().join("examples/service/src/bin/notify_service.rs")).unwrap());
    for heading in ["## A service in one call", "## A web service"] {
        let code = block(&readme, heading);
        let mut statement = String::new();
        for line in code
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
        {
            // README may join what cargo fmt splits: compare whitespace-free text.
            statement.push_str(&squeeze(line));
            assert!(
                source.contains(&statement) || source.contains(&squeeze(line)),
                "README ({heading}) has a line the example does not: {line}"
            );
            if line.ends_with(';') || line.ends_with(',') || line.ends_with('?') {
                statement.clear();
            }
        }
    }
}

#[test]
fn i47_4_readme_counts_are_glue_lines_output() {
    let output = Command::new("python3")
        .arg(root().join("scripts/glue-lines"))
        .output()
        .expect("python3 runs scripts/glue-lines");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed = String::from_utf8(output.stdout).unwrap();
    let printed = printed.trim();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("`{printed}`")),
        "README does not quote `{printed}`"
    );
    let counts: Vec<u32> = printed.split(' ').filter_map(|w| w.parse().ok()).collect();
    assert!(
        counts[0] * 2 <= counts[1],
        "issue 47's target N <= M/2 missed: {printed}"
    );
}
