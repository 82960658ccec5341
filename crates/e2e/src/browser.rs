//! Headless Chromium driven over WebDriver (ChromeDriver): Debian's `chromium` and
//! `chromium-driver` (`WLMAP_CHROMIUM`, `WLMAP_CHROMEDRIVER` to use others).

use serde_json::{Value, json};
use std::io::{BufRead, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One browser session, ended (and ChromeDriver killed) when dropped.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

/// The Chromium binary.
pub fn chromium() -> String {
    std::env::var("WLMAP_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

/// The ChromeDriver binary.
pub fn chromedriver() -> String {
    std::env::var("WLMAP_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into())
}

impl Browser {
    /// Start ChromeDriver and a headless Chromium of this window size, with a fresh profile
    /// and none of Chromium's own network traffic (the machine's network is closed).
    pub fn start(width: u32, height: u32) -> Browser {
        Browser::launch(width, height, None)
    }

    /// A browser that presents itself as a phone: a 390×844 CSS-pixel screen at 3× density,
    /// touch, a mobile user agent (Chromium's device emulation).
    pub fn phone() -> Browser {
        let metrics = json!({"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 3.0, "touch": true},
            "userAgent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Mobile Safari/537.36"});
        Browser::launch(390, 844, Some(metrics))
    }

    fn launch(width: u32, height: u32, mobile: Option<Value>) -> Browser {
        let port = crate::controller::free_port();
        let driver = Command::new(chromedriver())
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", chromedriver()));
        let profile = tempfile::tempdir().expect("profile dir");
        let mut b = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while call(port, "GET", "/status", None).is_none_or(|v| v["value"]["ready"] != true) {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            &format!("--user-data-dir={}", b._profile.path().display()),
            &format!("--window-size={width},{height}"),
        ];
        let mut options = json!({"binary": chromium(), "args": args});
        if let Some(m) = mobile {
            options["mobileEmulation"] = m;
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": options,
        }}});
        let v = call(port, "POST", "/session", Some(&caps)).expect("new session");
        b.session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        b
    }

    fn cmd(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let v = call(self.port, method, &path, body).expect("webdriver reply");
        if let Some(err) = v["value"].get("error") {
            panic!(
                "webdriver {method} {path}: {err}: {}",
                v["value"]["message"]
            );
        }
        v["value"].clone()
    }

    /// Open a URL.
    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(&json!({"url": url})));
    }

    /// Run a script in the page (`return ...;`) and give back its value.
    pub fn eval(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": []})),
        )
    }

    /// Run `script` until it returns something truthy, and return that; panic after 30 s.
    pub fn wait(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.eval(script);
            if !(v.is_null() || v == false || v == "" || v == 0) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn element(&self, using: &str, value: &str) -> String {
        let v = self.cmd(
            "POST",
            "/element",
            Some(&json!({"using": using, "value": value})),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(|id| id.as_str())
            .unwrap_or_else(|| panic!("no element {using} {value}"))
            .to_string()
    }

    /// Click the element a CSS selector finds, as a user would.
    pub fn click(&self, css: &str) {
        let id = self.element("css selector", css);
        self.cmd("POST", &format!("/element/{id}/click"), Some(&json!({})));
    }

    /// Click the link whose text is exactly this.
    pub fn click_link(&self, text: &str) {
        let id = self.element("link text", text);
        self.cmd("POST", &format!("/element/{id}/click"), Some(&json!({})));
    }

    /// Type into the element a CSS selector finds.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element("css selector", css);
        self.cmd(
            "POST",
            &format!("/element/{id}/value"),
            Some(&json!({"text": text})),
        );
    }

    /// Press keys (WebDriver key codes for special keys: Enter `\u{E007}`, Escape `\u{E00C}`)
    /// on whatever has the focus, as a user at the keyboard.
    pub fn press(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|c| {
                let k = c.to_string();
                [
                    json!({"type": "keyDown", "value": k}),
                    json!({"type": "keyUp", "value": k}),
                ]
            })
            .collect();
        let body = json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]});
        self.cmd("POST", "/actions", Some(&body));
    }

    /// The text of an open alert, if one is open.
    pub fn alert(&self) -> Option<String> {
        let path = format!("/session/{}/alert/text", self.session);
        let v = call(self.port, "GET", &path, None)?;
        v["value"].as_str().map(String::from)
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let v = self.cmd("GET", "/screenshot", None);
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .expect("base64 PNG")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = call(
                self.port,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            );
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// One WebDriver request; None when ChromeDriver cannot be reached or answers no JSON.
fn call(port: u16, method: &str, path: &str, body: Option<&Value>) -> Option<Value> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    // ChromeDriver keeps the connection open whatever the request says: read the head, then
    // exactly Content-Length bytes.
    let mut reader = std::io::BufReader::new(s);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
