//! Colour never leaks into a sink that is not a terminal (issue 14, item 5).
//!
//! Each test runs itself again as a child process whose standard error is a real pseudo-terminal
//! (opened with `openpt`), installs there a `log` logger that writes to a file, attaches a log
//! subscriber and publishes one event; the parent reads the file and checks its exact bytes. The
//! child first asserts that its standard error *is* a terminal, so the premise cannot silently
//! fail (a test harness that captures or redirects it would make the test prove nothing).
#![cfg(unix)]

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use log::{Level, LevelFilter, Log, Metadata, Record};
use notify_core::{Notifier, Payload};
use notify_log::{Color, ColorChoice, LogConfig, LogEvent, LogSubscriber};

/// Set in the child: which scenario to run.
const CHILD_MODE: &str = "NOTIFY_LOG_COLOR_SINK_MODE";
/// Set in the child: the log file.
const CHILD_LOG: &str = "NOTIFY_LOG_COLOR_SINK_FILE";

/// A `log` logger that writes each message, one per line, to a file.
struct FileLogger(Mutex<File>);

impl Log for FileLogger {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &Record<'_>) {
        writeln!(self.0.lock().unwrap(), "{}", record.args()).expect("the log file is writable");
    }
    fn flush(&self) {
        self.0.lock().unwrap().flush().expect("the log file is writable");
    }
}

/// Logs `"load.books"` as `Book Load (<elapsed>)  <sql>` with AS::N-style colours, with the
/// given colour choice (`None`: the configuration's default).
struct Books(Option<ColorChoice>);

impl LogSubscriber for Books {
    fn config() -> LogConfig<Books> {
        LogConfig::new("books").method("load", Level::Info, |_: &Books, event: &LogEvent<'_>| {
            Some(format!(
                "{} ({})  {}",
                event.color("Book Load", Some(Color::Cyan), true),
                event.elapsed(),
                event.get("sql")?
            ))
        })
    }
    fn color(&self) -> Option<ColorChoice> {
        self.0
    }
}

/// The child's side: standard error is a terminal; log one event to the file through a
/// [`Books`] subscriber whose colour choice `mode` names.
fn child(mode: &str) {
    let stderr = std::io::stderr();
    assert!(stderr.is_terminal(), "the child's standard error must be a terminal");
    let path = std::env::var_os(CHILD_LOG).expect("the parent names the log file");
    let file = File::create(path).expect("the log file can be created");
    let choice = match mode {
        "default" => None,
        "for_sink" => Some(ColorChoice::for_sink(&file)),
        "always" => Some(ColorChoice::Always),
        "decide" => {
            // No logging: the decision itself, on the handles this process has.
            let decided = [
                ColorChoice::for_sink(&stderr),
                ColorChoice::for_sink(&file),
                ColorChoice::for_sink(&std::io::stdout()),
            ];
            drop(file);
            std::fs::write(std::env::var_os(CHILD_LOG).unwrap(), format!("{decided:?}\n")).unwrap();
            return;
        }
        other => panic!("unknown mode {other}"),
    };
    log::set_boxed_logger(Box::new(FileLogger(Mutex::new(file)))).expect("the only logger");
    log::set_max_level(LevelFilter::Info);
    let notifier = Notifier::new();
    let attached = Books(choice).attach_to(&notifier).expect("a valid configuration");
    notifier.instrument(
        "load.books",
        || Payload::new().with("sql", "SELECT * FROM books"),
        |_| (),
    );
    attached.detach();
    log::logger().flush();
}

/// Runs test `name` of this binary again as a child in `mode`, its standard error a
/// pseudo-terminal, with `env` set (and `NO_COLOR` removed unless given); returns what it wrote to
/// its log file. Panics with the child's output if it failed.
fn run_child(name: &str, mode: &str, env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("notify.log");
    let (master, slave) = open_pty();

    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_MODE, mode)
        .env(CHILD_LOG, &log_path)
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave));
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command.spawn().expect("the test binary runs again");
    drop(command); // closes the parent's copy of the terminal's slave side
                   // Read the terminal while the child runs, so it never blocks writing there.
    let terminal = std::thread::spawn(move || {
        let mut master = File::from(master);
        let mut out = Vec::new();
        let mut buf = [0; 4096];
        // Linux reports EIO once the slave side is closed by the child's exit.
        while let Ok(n @ 1..) = master.read(&mut buf) {
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&out).into_owned()
    });
    let output = child.wait_with_output().unwrap();
    let terminal = terminal.join().unwrap();
    assert!(
        output.status.success(),
        "child `{name}` ({mode}) failed: {}\nstdout:\n{}\nterminal:\n{terminal}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
    );
    read(&log_path)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A new pseudo-terminal: its master side and its slave side opened as a file.
fn open_pty() -> (std::os::fd::OwnedFd, File) {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    // CLOEXEC: children of tests running in parallel must not inherit this terminal.
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY;
    #[cfg(target_os = "linux")]
    let flags = flags | OpenptFlags::CLOEXEC;
    let master = openpt(flags).expect("a pseudo-terminal (/dev/ptmx)");
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .expect("the slave side of the pseudo-terminal");
    assert!(slave.is_terminal());
    (master, slave)
}

/// The child's mode, when this process is a child.
fn child_mode() -> Option<String> {
    std::env::var(CHILD_MODE).ok()
}

/// The `(…ms)` of a line, masked: the one part of it whose text is not fixed.
fn mask_elapsed(text: &str) -> String {
    let (Some(open), Some(close)) = (text.find(" ("), text.find("ms)")) else {
        return text.to_owned();
    };
    format!("{} (N.Nms{}", &text[..open], &text[close + 2..])
}

#[test]
fn a_file_logger_gets_no_escape_codes_while_stderr_is_a_terminal() {
    if let Some(mode) = child_mode() {
        return child(&mode);
    }
    let name = "a_file_logger_gets_no_escape_codes_while_stderr_is_a_terminal";
    // The default choice, and the choice decided by the file the logger writes to.
    for mode in ["default", "for_sink"] {
        let written = run_child(name, mode, &[]);
        assert!(!written.contains('\u{1b}'), "{mode}: escape code in {written:?}");
        assert_eq!(
            mask_elapsed(&written),
            "Book Load (N.Nms)  SELECT * FROM books\n",
            "{mode}"
        );
    }
}

#[test]
fn asking_for_colour_writes_colour_even_to_a_file() {
    if let Some(mode) = child_mode() {
        return child(&mode);
    }
    let written = run_child("asking_for_colour_writes_colour_even_to_a_file", "always", &[]);
    // Bold cyan name; the duration green under 10 ms (as here, unless the machine stalls the
    // child), yellow under 100 ms, red above.
    let (name, rest) = written.split_once(" (").expect("a duration");
    assert_eq!(name, "\u{1b}[1m\u{1b}[36mBook Load\u{1b}[0m");
    let (elapsed, sql) = rest.split_once(")  ").expect("the statement");
    let digits = elapsed
        .strip_prefix("\u{1b}[32m")
        .or_else(|| elapsed.strip_prefix("\u{1b}[33m"))
        .or_else(|| elapsed.strip_prefix("\u{1b}[31m"))
        .and_then(|e| e.strip_suffix("ms\u{1b}[0m"))
        .unwrap_or_else(|| panic!("a coloured duration: {elapsed:?}"));
    assert!(digits.parse::<f64>().is_ok(), "duration {elapsed:?}");
    assert_eq!(sql, "SELECT * FROM books\n");
}

#[test]
fn for_sink_colours_only_a_handle_that_is_a_terminal() {
    if let Some(mode) = child_mode() {
        return child(&mode);
    }
    let name = "for_sink_colours_only_a_handle_that_is_a_terminal";
    // [standard error (the terminal), the log file, standard output (a pipe)].
    assert_eq!(run_child(name, "decide", &[]), "[Always, Never, Never]\n");
    // NO_COLOR turns it off even for the terminal; an empty NO_COLOR does not (no-color.org).
    assert_eq!(
        run_child(name, "decide", &[("NO_COLOR", "1")]),
        "[Never, Never, Never]\n"
    );
    assert_eq!(
        run_child(name, "decide", &[("NO_COLOR", "")]),
        "[Always, Never, Never]\n"
    );
}
