//! A real `redis-server` for tests: started on a free loopback port with its own temporary
//! directory and no persistence, killed by pid when dropped.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server` owned by the test.
pub(crate) struct RedisServer {
    child: Child,
    /// The loopback port it listens on.
    pub(crate) port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// `redis://127.0.0.1:<port>/<db>`.
    pub(crate) fn url(&self, db: u32) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// Starts one. `None` (with the reason printed) when `redis-server` is not installed and `CI`
    /// is not set; in CI a missing server fails the test.
    pub(crate) fn start() -> Option<RedisServer> {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            assert!(
                std::env::var_os("CI").is_none(),
                "redis-server is not installed (cargo xtask setup installs Debian's redis-server)"
            );
            eprintln!("skipped: redis-server is not installed (cargo xtask setup installs it)");
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("free port")
                .port();
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--dir"])
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // lost the port race: try another
                }
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(RedisServer {
                        child,
                        port,
                        _dir: dir,
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
