//! The main example's database file: without `--db` it is a temporary file removed at exit, with
//! `--db FILE` it is kept (issue 14, item 6).
//!
//! Each test runs this test binary again as a child process with `TMPDIR` set to a fresh
//! directory; the child runs the example's command line (`run_cli`, what `examples/bookstore.rs`
//! calls) and exits with its code. The parent then lists the directory: exactly what the example
//! left behind.

use std::path::Path;
use std::process::{Command, Stdio};

use notify_core::Notifier;
use regex::Regex;

/// Set in the child: the example's arguments, separated by newlines.
const CHILD_ARGS: &str = "NOTIFY_APP_BOOKSTORE_CHILD_ARGS";

/// In the child: runs the command line and exits with its code (stdout and stderr are the
/// child's own, read by the parent).
fn child(args: &str) -> ! {
    let args: Vec<String> = args.lines().map(str::to_owned).collect();
    let code = notify_app::bookstore::run_cli(&args, &Notifier::new(), &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code.into())
}

/// Runs test `name` again as a child with `TMPDIR=tmp` running the example with `args`; returns
/// (exit code, stdout, stderr).
fn run_child(name: &str, tmp: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ARGS, args.join("\n"))
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8(output.stdout).unwrap();
    (
        output.status.code().expect("the child exited"),
        after_harness(name, &stdout).to_owned(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// What the child wrote to stdout after the test harness' own `running 1 test`, `test NAME ... `
/// (the child exits before the harness writes more).
fn after_harness<'a>(name: &str, stdout: &'a str) -> &'a str {
    let marker = format!("test {name} ... ");
    match stdout.split_once(&marker) {
        Some((_, rest)) => rest,
        None => panic!("no {marker:?} in the child's output: {stdout:?}"),
    }
}

/// The names of the files in `dir`.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn child_args() -> Option<String> {
    std::env::var(CHILD_ARGS).ok()
}

#[test]
fn without_db_the_temporary_database_is_removed_at_exit() {
    if let Some(args) = child_args() {
        child(&args);
    }
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = run_child("without_db_the_temporary_database_is_removed_at_exit", tmp.path(), &[]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(err, "");
    // The run used a database in the temporary directory ...
    let used = Regex::new(&format!(
        r"\n1200 books imported, 17 requests; database {}/bookstore-\w+\.sqlite \(temporary, removed at exit\)\n",
        regex::escape(&tmp.path().display().to_string())
    ))
    .unwrap();
    assert!(used.is_match(&out), "{out}");
    // ... and left nothing there: no database, no journal.
    assert_eq!(files(tmp.path()), Vec::<String>::new());
}

#[test]
fn a_failed_run_removes_the_temporary_database_too() {
    if let Some(args) = child_args() {
        child(&args);
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("missing.csv");
    let (code, out, err) = run_child(
        "a_failed_run_removes_the_temporary_database_too",
        tmp.path(),
        &[data.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "error: {}: cannot read the data file: No such file or directory (os error 2)\n",
            data.display()
        )
    );
    assert_eq!(files(tmp.path()), Vec::<String>::new());
}

#[test]
fn with_db_the_database_file_is_kept() {
    if let Some(args) = child_args() {
        child(&args);
    }
    let tmp = tempfile::tempdir().unwrap();
    let keep = tempfile::tempdir().unwrap();
    let db = keep.path().join("kept.sqlite");
    let (code, out, err) = run_child(
        "with_db_the_database_file_is_kept",
        tmp.path(),
        &["--db", db.to_str().unwrap()],
    );
    assert_eq!(code, 0, "stderr: {err}");
    assert!(
        out.contains(&format!(
            "\n1200 books imported, 17 requests; database {}\n",
            db.display()
        )),
        "{out}"
    );
    assert_eq!(files(tmp.path()), Vec::<String>::new());
    assert_eq!(files(keep.path()), ["kept.sqlite"]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let books: i64 = conn
        .query_row("SELECT COUNT(*) FROM books", (), |row| row.get(0))
        .unwrap();
    let orders: i64 = conn
        .query_row("SELECT COUNT(*) FROM orders", (), |row| row.get(0))
        .unwrap();
    assert_eq!((books, orders), (1200, 3));
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_serve_and_removes_the_temporary_database() {
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;
    use std::time::Duration;

    use rustix::process::{kill_process, Pid, Signal};

    let name = "ctrl_c_stops_serve_and_removes_the_temporary_database";
    if let Some(args) = child_args() {
        child(&args);
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ARGS, "--serve\n127.0.0.1:0")
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Kills the child if the test fails before it exits.
    struct Reaped(std::process::Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Reaped(child);

    let serving = Regex::new(r"^Serving the live page on http://127\.0\.0\.1:\d+/ \(Ctrl-C to stop\)$").unwrap();
    let mut lines = Vec::new();
    let marker = format!("test {name} ... ");
    while !lines.last().is_some_and(|l: &String| serving.is_match(l)) {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => lines.push(line.strip_prefix(&marker).map(str::to_owned).unwrap_or(line)),
            Err(e) => panic!("the bookstore did not start serving ({e}); its output: {lines:?}"),
        }
    }
    // Serving: the temporary database exists (the import has started or finished).
    std::thread::sleep(Duration::from_millis(300));
    let database = files(tmp.path());
    assert!(
        database.len() == 1 && database[0].starts_with("bookstore-") && database[0].ends_with(".sqlite")
            || database.len() == 2 && database[1].ends_with(".sqlite-journal"),
        "{database:?}"
    );

    kill_process(Pid::from_child(&child.0), Signal::INT).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "still running 30 s after Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status}; stderr: {stderr}");
    assert_eq!(stderr, "");
    let last = rx.recv_timeout(Duration::from_secs(5)).expect("a last line");
    assert!(
        Regex::new(r"^Stopped after \d+ rounds of requests$")
            .unwrap()
            .is_match(&last),
        "{last:?}"
    );
    assert_eq!(files(tmp.path()), Vec::<String>::new());
}
