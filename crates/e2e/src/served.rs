//! A running `wlmap serve`, and plain HTTP requests to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `wlmap ... serve` process on a port of its choosing, killed when dropped.
pub struct Served {
    child: Child,
    /// The port it listens on (loopback).
    pub port: u16,
}

impl Served {
    /// Start `BIN ARGS... serve --listen 127.0.0.1:0 EXTRA...` and wait for the line that
    /// names its address.
    pub fn start(bin: &str, args: &[&str], extra: &[&str]) -> Served {
        let mut child = Command::new(bin)
            .args(args)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{bin}: {e}"));
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let port = loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("wlmap serve ended before it listened");
            };
            if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                break rest
                    .split('/')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("port");
            }
        };
        // Keep draining stderr so the process never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Served { child, port }
    }

    /// GET a path: status, headers (lower-case names) and body.
    pub fn get(&self, path: &str) -> Reply {
        self.get_with(path, &[])
    }

    /// GET a path with extra request headers.
    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        request(self.port, "GET", path, headers)
    }

    /// The base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Poll `/api/workloads` until `done` holds for it (the server re-reads its source on its
    /// own schedule), or panic after three minutes.
    pub fn wait_rows(
        &self,
        what: &str,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let v: serde_json::Value =
                serde_json::from_str(&self.get("/api/workloads").body).unwrap_or_default();
            if done(&v) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// Body as text.
    pub body: String,
}

impl Reply {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`, body read to the end).
pub fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    try_request(port, method, path, headers)
        .unwrap_or_else(|| panic!("{method} {path} on 127.0.0.1:{port}: no HTTP answer"))
}

/// [`request`], None when the port cannot be reached or answers no HTTP (a server still
/// starting).
pub fn try_request(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> Option<Reply> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Reply {
        status,
        headers,
        body: body.to_string(),
    })
}
