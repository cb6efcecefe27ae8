//! A real nats-server per test, on a free loopback port, killed when the guard drops (also when
//! the test fails; a frozen one too).

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `nats-server -a 127.0.0.1 -p PORT` (plus `-js -sd DIR`, `--auth TOKEN` as asked).
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    args: Vec<String>,
    frozen: bool,
    _store: Option<tempfile::TempDir>,
}

impl NatsServer {
    /// Core NATS.
    pub fn start() -> NatsServer {
        NatsServer::with_args(Vec::new(), None)
    }

    /// JetStream with a temporary store directory (kept across [`NatsServer::restart`]).
    pub fn start_jetstream() -> NatsServer {
        let store = tempfile::tempdir().expect("temporary directory");
        let args = vec!["-js".into(), "-sd".into(), store.path().display().to_string()];
        NatsServer::with_args(args, Some(store))
    }

    /// Core NATS requiring `token`.
    pub fn start_with_token(token: &str) -> NatsServer {
        NatsServer::with_args(vec!["--auth".into(), token.into()], None)
    }

    /// Core NATS requiring `user` and `password`.
    pub fn start_with_user(user: &str, password: &str) -> NatsServer {
        NatsServer::with_args(
            vec!["--user".into(), user.into(), "--pass".into(), password.into()],
            None,
        )
    }

    fn with_args(args: Vec<String>, store: Option<tempfile::TempDir>) -> NatsServer {
        let port = free_port();
        let mut server = NatsServer {
            child: None,
            port,
            args,
            frozen: false,
            _store: store,
        };
        server.spawn();
        server
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// `kill -STOP`: the process stops reading and answering, its connections stay open (the
    /// kernel still accepts what clients send, up to the socket buffers). [`NatsServer::thaw`],
    /// or dropping the guard, resumes it.
    pub fn freeze(&mut self) {
        self.signal("STOP");
        self.frozen = true;
    }

    /// `kill -CONT`: resumes a frozen server.
    pub fn thaw(&mut self) {
        if std::mem::take(&mut self.frozen) {
            self.signal("CONT");
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("nats-server is running").id();
        let status = Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .unwrap_or_else(|e| panic!("could not run kill -{signal} {pid}: {e}"));
        assert!(status.success(), "kill -{signal} {pid}: {status}");
    }

    /// `kill -9` (a frozen server too, without resuming it: it dies without handling what it
    /// had read), then waits for the process to be gone.
    pub fn kill(&mut self) {
        self.frozen = false;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port with the same arguments (and store directory).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn spawn(&mut self) {
        let child = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("could not start nats-server ({e}): install it with `apt-get install nats-server` (Debian's package, 2.9 or later)")
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().expect("nats-server status") {
                panic!(
                    "nats-server exited with {status} before accepting on port {}",
                    self.port
                );
            }
            assert!(
                Instant::now() < deadline,
                "nats-server did not accept on port {} within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind a free port")
        .local_addr()
        .unwrap()
        .port()
}

/// What a notifier publishes under `pattern`, as it arrives.
pub type Seen = Arc<Mutex<Vec<notify_core::Event>>>;

/// Subscribes a recorder of the events `notifier` publishes under `pattern` (kept for the
/// notifier's life).
pub fn recorder(notifier: &notify_core::Notifier, pattern: impl Into<notify_core::Pattern>) -> Seen {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let _ = notifier.subscribe(
        pattern,
        notify_core::Subscriber::event(move |e: &notify_core::Event| sink.lock().unwrap().push(e.clone())),
    );
    seen
}
