//! `wlmap controller` as the end-to-end tests run it: a process next to the testbed's API
//! server, its webhooks reached by URL, its certificates its own, its log kept.

use crate::Testbed;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// Where controller logs are kept, `target/e2e-logs/` (the testbed's own directory goes when
/// the testbed stops).
fn logs_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/e2e-logs");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// A free local port (bound, then released for the controller to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `GET path` on a local plain-HTTP port: status code and body (None while nothing answers).
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    crate::served::try_request(port, "GET", path, &[]).map(|r| (r.status, r.body))
}

/// One controller replica, killed when dropped (its webhook configuration deleted with it,
/// so the tests that follow create pods as if it never ran).
pub struct Controller {
    child: Child,
    /// The port its webhooks listen on (127.0.0.1).
    pub webhook_port: u16,
    probes: u16,
    kubectl: String,
    kubeconfig: String,
    webhook_config: String,
    log_path: PathBuf,
}

impl Controller {
    /// Start one as the testbed's admin, in `wlmap-system`, and wait until it is ready.
    pub fn start(tb: &Testbed, identity: &str, webhook_config: &str) -> Controller {
        Controller::start_with(tb, identity, webhook_config, &[])
    }

    /// Start one with more flags.
    pub fn start_with(
        tb: &Testbed,
        identity: &str,
        webhook_config: &str,
        extra: &[&str],
    ) -> Controller {
        Controller::start_as(
            tb,
            &tb.kubeconfig,
            "wlmap-system",
            identity,
            webhook_config,
            extra,
        )
    }

    /// Start one with this kubeconfig, in this namespace, with more flags.
    pub fn start_as(
        tb: &Testbed,
        kubeconfig: &str,
        namespace: &str,
        identity: &str,
        webhook_config: &str,
        extra: &[&str],
    ) -> Controller {
        let (webhook, probes) = (free_port(), free_port());
        // Kept after the run (the testbed's directory is not) for a failing test to be read.
        let log_path = logs_dir().join(format!("controller-{identity}.log"));
        let log = std::fs::File::create(&log_path).expect("log file");
        let child = Command::new(crate::wlmap_bin())
            .args([
                "--kubeconfig",
                kubeconfig,
                "controller",
                "-n",
                namespace,
                "--identity",
                identity,
                "--webhook-address",
                &format!("127.0.0.1:{webhook}"),
                "--probe-address",
                &format!("127.0.0.1:{probes}"),
                "--webhook-url",
                &format!("https://127.0.0.1:{webhook}"),
                "--webhook-host",
                "127.0.0.1",
                "--webhook-config",
                webhook_config,
                "--lease-duration",
                "6",
                "--renew-every",
                "2",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("wlmap controller starts");
        let c = Controller {
            child,
            webhook_port: webhook,
            probes,
            kubectl: tb.kubectl.clone(),
            kubeconfig: tb.kubeconfig.clone(),
            webhook_config: webhook_config.to_string(),
            log_path,
        };
        tb.wait_for("the controller ready", 120, || {
            http_get(c.probes, "/readyz").is_some_and(|(code, _)| code == 200)
        });
        c
    }

    /// Kill the process at once (no Lease release), leaving its webhook configuration behind,
    /// as a crashed replica does.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stop it with SIGTERM and wait for it to exit.
    pub fn terminate(&mut self) {
        let pid = self.child.id().to_string();
        // The shell's own kill: no procps needed on the machine.
        let _ = Command::new("sh")
            .args(["-c", "kill -TERM \"$1\"", "sh", &pid])
            .status();
        let status = self.child.wait().expect("the controller exits");
        assert!(status.success(), "a clean exit on SIGTERM: {status}");
    }

    /// The value of a metric line (`name{labels}` exactly as exported), 0 when absent.
    pub fn metric(&self, series: &str) -> f64 {
        let (_, body) = http_get(self.probes, "/metrics").expect("metrics");
        body.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0.0)
    }

    /// GET a path of its plain listener (probes, metrics, the web view and its API).
    pub fn get(&self, path: &str) -> (u16, String) {
        http_get(self.probes, path).expect("the controller's plain listener")
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for kind in [
            "mutatingwebhookconfiguration",
            "validatingwebhookconfiguration",
        ] {
            let _ = Command::new(&self.kubectl)
                .args(["--kubeconfig", &self.kubeconfig, "delete", kind])
                .args([&self.webhook_config, "--ignore-not-found"])
                .output();
        }
    }
}
