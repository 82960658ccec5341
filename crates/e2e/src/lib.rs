//! Helpers for the end-to-end tests: run `kubectl` and `wlmap` against the testbed started by
//! `testbed/with-testbed.sh`, and load catalog fixtures into the API server the way their
//! controllers leave them (objects created, then status written through the status
//! subresource, ownerReferences re-pointed at the uids the server assigned).

pub mod browser;
pub mod controller;
pub mod served;

pub use controller::Controller;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The testbed's environment.
pub struct Testbed {
    /// Admin kubeconfig.
    pub kubeconfig: String,
    /// Read-only-in-team-a kubeconfig.
    pub restricted: String,
    /// kubectl binary.
    pub kubectl: String,
    /// API server URL.
    pub server: String,
}

impl Testbed {
    /// From the variables `with-testbed.sh` exports; panics with a clear message otherwise.
    pub fn from_env() -> Testbed {
        let get = |k: &str| {
            std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set: run these tests through testbed/with-testbed.sh (scripts/test.sh does)"))
        };
        Testbed {
            kubeconfig: get("WLMAP_TESTBED_KUBECONFIG"),
            restricted: get("WLMAP_TESTBED_RESTRICTED_KUBECONFIG"),
            kubectl: get("WLMAP_TESTBED_KUBECTL"),
            server: get("WLMAP_TESTBED_SERVER"),
        }
    }

    /// [`Testbed::from_env`] for tests that need one that schedules (started with
    /// `WLMAP_TESTBED_SCHEDULING=1`, or with operators, which imply it).
    pub fn scheduling() -> Testbed {
        let tb = Testbed::from_env();
        assert_eq!(
            std::env::var("WLMAP_TESTBED_SCHEDULING").as_deref(),
            Ok("1"),
            "these tests need a testbed started with WLMAP_TESTBED_SCHEDULING=1 (or OPERATORS)"
        );
        tb
    }

    /// Run kubectl as admin; panics on failure.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        let o = run(
            &self.kubectl,
            &[&["--kubeconfig", &self.kubeconfig], args].concat(),
            stdin,
        );
        stdout_of(&format!("kubectl {args:?}"), &o, 0)
    }

    /// Run kubectl as admin, its exit and both streams returned (for a step that must fail).
    pub fn kubectl_output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        run(
            &self.kubectl,
            &[&["--kubeconfig", &self.kubeconfig], args].concat(),
            stdin,
        )
    }

    /// `kubectl get RESOURCE -n NAMESPACE -o name`: the objects' `kind/name`, one a line.
    pub fn names(&self, resource: &str, namespace: &str) -> String {
        self.kubectl(&["get", resource, "-n", namespace, "-o", "name"], None)
    }

    /// Wait until CRDs are Established (`names`: `crd/NAME` or `crd --all`-style args).
    /// `kubectl wait` alone fails when it reads a CRD before the API server has written any
    /// condition (`.status.conditions accessor error: <nil>`), so this polls it for 60 s.
    pub fn wait_established(&self, names: &[&str]) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let o = run(
                &self.kubectl,
                &[
                    &["--kubeconfig", &self.kubeconfig, "wait"],
                    names,
                    &["--for=condition=Established", "--timeout=10s"],
                ]
                .concat(),
                None,
            );
            if o.status.success() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "CRDs {names:?} not Established: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }

    /// Run wlmap as admin.
    pub fn wlmap(&self, args: &[&str]) -> Output {
        run(
            &wlmap_bin(),
            &[&["--kubeconfig", &self.kubeconfig], args].concat(),
            None,
        )
    }

    /// Run wlmap as the restricted user.
    pub fn wlmap_restricted(&self, args: &[&str]) -> Output {
        run(
            &wlmap_bin(),
            &[&["--kubeconfig", &self.restricted], args].concat(),
            None,
        )
    }

    /// Add a KWOK node (a fake node the KWOK controller runs pods on) with `gpus`
    /// `nvidia.com/gpu`, 32 CPUs, 256 GiB of memory and 110 pods, labelled
    /// `wlmap.test/pool: POOL` so a test's pods land only on its own nodes. Needs a testbed
    /// started with `WLMAP_TESTBED_SCHEDULING=1`. The node is created with its status (a
    /// Node's status may be set on create), then waits until it is Ready and schedulable.
    pub fn add_node(&self, name: &str, pool: &str, gpus: u32) {
        let node = serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {"type": "kwok", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
                    "kubernetes.io/hostname": name, "wlmap.test/pool": pool}},
            "status": {
                "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus.to_string()},
                "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus.to_string()},
                "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "fake"}}
        });
        self.kubectl(&["create", "-f", "-"], Some(&node.to_string()));
        // Ready (KWOK) and untainted (the node lifecycle controller lifts not-ready).
        self.wait_for(&format!("node {name} Ready and schedulable"), 120, || {
            let n = self.get_json(&["get", "node", name]);
            let ready = n["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            ready && n["spec"]["taints"].as_array().is_none_or(|t| t.is_empty())
        });
    }

    /// Remove a node added by [`Testbed::add_node`].
    pub fn remove_node(&self, name: &str) {
        self.kubectl(&["delete", "node", name, "--wait=false"], None);
    }

    /// `kubectl ARGS -o json`, parsed.
    pub fn get_json(&self, args: &[&str]) -> Value {
        let text = self.kubectl(&[args, &["-o", "json"]].concat(), None);
        serde_json::from_str(&text).expect("kubectl -o json")
    }

    /// Poll `ok` every 300 ms until it holds; panic naming `what` after `seconds` (a bound on
    /// a failure, never a measurement).
    pub fn wait_for(&self, what: &str, seconds: u64, mut ok: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
        while !ok() {
            assert!(
                std::time::Instant::now() < deadline,
                "timed out after {seconds} s waiting for {what}"
            );
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }

    /// Restart the API server (same flags, same etcd) and wait until it answers again.
    pub fn restart_api_server(&self) {
        self.api_server("1");
    }

    /// Stop the API server (etcd keeps the state); [`Testbed::start_api_server`] brings it back.
    pub fn stop_api_server(&self) {
        self.api_server("--stop");
    }

    /// Start the API server stopped by [`Testbed::stop_api_server`] and wait until it is ready.
    pub fn start_api_server(&self) {
        self.api_server("--start");
    }

    fn api_server(&self, mode: &str) {
        let script = std::env::var("WLMAP_TESTBED_RESTART_APISERVER").expect("restart script");
        let dir = std::env::var("WLMAP_TESTBED_DIR").expect("testbed dir");
        let r = run(&script, &[&dir, mode], None);
        assert!(
            r.status.success(),
            "restart-apiserver.sh {mode}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }

    /// A kubeconfig for the same server, authenticated by this bearer token (a
    /// ServiceAccount's, from `kubectl create token`), written next to the admin one; its path.
    pub fn kubeconfig_with_token(&self, token: &str, file: &str) -> String {
        let text = std::fs::read_to_string(&self.kubeconfig).expect("admin kubeconfig");
        let mut kc: Value = serde_saphyr::from_str(&text).expect("kubeconfig YAML");
        for u in kc["users"].as_array_mut().into_iter().flatten() {
            u["user"] = serde_json::json!({"token": token});
        }
        let dir = Path::new(&self.kubeconfig).parent().expect("testbed dir");
        let path = dir.join(file);
        std::fs::write(&path, kc.to_string()).expect("write kubeconfig");
        path.to_string_lossy().into_owned()
    }

    /// Create a namespace unless it exists.
    pub fn namespace(&self, name: &str) {
        let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        self.kubectl(&["apply", "-f", "-"], Some(&ns.to_string()));
    }

    /// The pods of a namespace, as the API server has them.
    pub fn pods(&self, ns: &str) -> Vec<Value> {
        self.get_json(&["get", "pods", "-n", ns])["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The scheduler's verdict on a v1.37 PodGroup (`PodGroupInitiallyScheduled`): `Some(true)`
    /// placed, `Some(false)` tried and found unschedulable, `None` not yet tried.
    pub fn pod_group_scheduled(&self, ns: &str, name: &str) -> Option<bool> {
        let g = self.get_json(&[
            "get",
            &format!("podgroups.scheduling.k8s.io/{name}"),
            "-n",
            ns,
        ]);
        g["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "PodGroupInitiallyScheduled")
            .map(|c| c["status"] == "True")
    }

    /// Apply a manifest file.
    pub fn apply_file(&self, path: &Path) {
        self.kubectl(&["apply", "-f", path.to_str().expect("utf8 path")], None);
    }

    /// Apply a manifest file server-side (an operator's CRD is larger than client-side
    /// apply's last-applied annotation may be).
    pub fn apply_server_side(&self, path: &Path) {
        let file = path.to_str().expect("utf8 path");
        self.kubectl(
            &["apply", "--server-side", "--force-conflicts", "-f", file],
            None,
        );
    }

    /// Create the objects of a fixture as its controller would: namespace, objects in file
    /// order (owners first) with server-assigned uids, then each status via the subresource.
    /// Returns the created objects by name.
    pub fn load_fixture(&self, rel: &str) -> HashMap<String, Value> {
        let path = fixtures().join(rel).join("objects.yaml");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let docs: Vec<Value> =
            serde_saphyr::from_multiple_with_options(&text, wlmap_schema::yaml_options())
                .expect("fixture parses");
        let mut uids: HashMap<String, String> = HashMap::new();
        let mut created = HashMap::new();
        for mut d in docs.into_iter().filter(|d| d.is_object()) {
            let ns = d
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_string();
            let _ = run(
                &self.kubectl,
                &["--kubeconfig", &self.kubeconfig, "create", "namespace", &ns],
                None,
            );
            let old_uid = d
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let status = d.as_object_mut().and_then(|m| m.remove("status"));
            if let Some(m) = d.get_mut("metadata").and_then(Value::as_object_mut) {
                for k in [
                    "uid",
                    "resourceVersion",
                    "creationTimestamp",
                    "generation",
                    "managedFields",
                ] {
                    m.remove(k);
                }
            }
            if d["kind"] == "Job" && d["apiVersion"] == "batch/v1" {
                // The API server generates a Job's selector and controller-uid labels from the
                // uid it assigns, as it does for the real controllers.
                if let Some(spec) = d.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("selector");
                    spec.remove("manualSelector");
                }
                if let Some(l) = d
                    .pointer_mut("/spec/template/metadata/labels")
                    .and_then(Value::as_object_mut)
                {
                    l.remove("controller-uid");
                    l.remove("batch.kubernetes.io/controller-uid");
                }
            }
            // Owner references and uid-valued labels point at the uids the server assigned.
            let mut text = d.to_string();
            for (old, new) in &uids {
                if !old.is_empty() {
                    text = text.replace(old.as_str(), new);
                }
            }
            let out = self.kubectl(&["create", "-o", "json", "-f", "-"], Some(&text));
            let obj: Value = serde_json::from_str(&out).expect("created object");
            let new_uid = obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            uids.insert(old_uid, new_uid);
            let kind = obj["kind"].as_str().unwrap_or("").to_string();
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if let Some(st) = status {
                let res = format!("{}/{}", resource_of(&obj), name);
                self.kubectl(
                    &[
                        "patch",
                        &res,
                        "-n",
                        &ns,
                        "--subresource=status",
                        "--type=merge",
                        "-p",
                        &serde_json::json!({"status": st}).to_string(),
                    ],
                    None,
                );
            }
            created.insert(format!("{kind}/{name}"), obj);
        }
        created
    }
}

/// `kind.group` for kubectl.
fn resource_of(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("").to_lowercase();
    let av = obj["apiVersion"].as_str().unwrap_or("");
    match av.split_once('/') {
        Some((g, _)) => format!("{kind}.{g}"),
        None => kind,
    }
}

/// The catalog fixtures directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/fixtures")
}

/// The testbed's CRD directory: the CRDs the testbed runs no operator of (the gang
/// schedulers' PodGroups, in `schedulers/`).
pub fn testbed_crds() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testbed/crds")
}

/// The CRDs an operator's own module ships, as `testbed/build.sh` copied them next to the
/// testbed's binaries (`WLMAP_TESTBED_BIN/../NAME/`): `jobset`, `lws`, `kuberay`,
/// `training-operator`, `trainer`. For a testbed that
/// does not run the operator (its webhooks are not registered), so that objects meet the
/// operator's real schema and validation rules.
pub fn operator_crds(name: &str) -> Vec<PathBuf> {
    let bin = std::env::var("WLMAP_TESTBED_BIN")
        .expect("WLMAP_TESTBED_BIN is not set: run these tests through testbed/with-testbed.sh");
    let bases = match name {
        "jobset" => "components/crd/bases",
        "lws" => "crd/bases",
        "kuberay" => "",
        "training-operator" => "base/crds",
        "trainer" => "base/crds",
        "scheduler-plugins" => "",
        other => panic!("no CRDs known for operator {other}"),
    };
    let dir = Path::new(&bin).join("..").join(name).join(bases);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (run testbed/build.sh)", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter(|p| p.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .collect();
    out.sort();
    out
}

/// The built `wlmap` binary (`WLMAP_BIN`, else `target/debug/wlmap`).
pub fn wlmap_bin() -> String {
    std::env::var("WLMAP_BIN").unwrap_or_else(|_| {
        let target = std::env::var("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
        target.join("debug/wlmap").display().to_string()
    })
}

/// Run a program with optional stdin.
pub fn run(bin: &str, args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = Command::new(bin);
    c.args(args).env("NO_COLOR", "1");
    run_command(c, stdin)
}

/// Run a prepared command with optional stdin, its output captured.
pub fn run_command(mut c: Command, stdin: Option<&str>) -> Output {
    use std::io::Write;
    let program = c.get_program().to_string_lossy().into_owned();
    let mut child = c
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    if let Some(s) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(s.as_bytes())
            .expect("write stdin");
    }
    child.wait_with_output().expect("wait")
}

/// The stdout of a command that had to exit with `code` (0: success), failing with `what`
/// and both streams shown.
pub fn stdout_of(what: &str, o: &Output, code: i32) -> String {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Parse stdout as JSON, failing with both streams shown.
pub fn json(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

/// The testbed's fault-injecting proxy (`testbed/faultproxy`) in front of its API server, with
/// a kubeconfig that reaches the server through it (authenticated by a token that the proxy
/// drops: the token exists to prove it never appears in wlmap's output).
pub struct FaultProxy {
    child: std::process::Child,
    /// The proxy's own address (`https://127.0.0.1:PORT`; its certificate is the testbed's
    /// API server's, signed by the testbed's CA).
    pub url: String,
    /// Kubeconfig pointing at the proxy.
    pub kubeconfig: String,
    /// The token in that kubeconfig.
    pub token: String,
    kubectl: String,
    _dir: tempfile::TempDir,
}

impl FaultProxy {
    /// Start the proxy; `None` when the testbed could not build it.
    pub fn start(tb: &Testbed) -> Option<FaultProxy> {
        FaultProxy::in_front_of(tb, &tb.server)
    }

    /// Start the proxy in front of another HTTPS server than the API server (a webhook),
    /// whose certificate the testbed's CA signed; it presents the testbed's admin
    /// certificate there, which such a server ignores.
    pub fn in_front_of(tb: &Testbed, upstream: &str) -> Option<FaultProxy> {
        use std::io::BufRead;
        let bin = std::env::var("WLMAP_TESTBED_FAULTPROXY")
            .ok()
            .filter(|b| !b.is_empty())?;
        let pki = PathBuf::from(std::env::var("WLMAP_TESTBED_PKI").expect("WLMAP_TESTBED_PKI"));
        let p = |f: &str| pki.join(f).display().to_string();
        let mut child = Command::new(&bin)
            .args(["-upstream", upstream, "-ca", &p("ca.crt")])
            .args(["-cert", &p("admin.crt"), "-key", &p("admin.key")])
            .args([
                "-serve-cert",
                &p("apiserver.crt"),
                "-serve-key",
                &p("apiserver.key"),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{bin}: {e}"));
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut url)
            .expect("proxy address");
        let dir = tempfile::tempdir().expect("tmp");
        let kubeconfig = dir.path().join("proxy.kubeconfig");
        let token = "e2e-secret-token-never-printed".to_string();
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: proxy\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: proxy\n  context: {{cluster: proxy, user: u}}\ncurrent-context: proxy\n",
                url.trim(),
                p("ca.crt")
            ),
        )
        .expect("write kubeconfig");
        Some(FaultProxy {
            child,
            url: url.trim().to_string(),
            kubeconfig: kubeconfig.display().to_string(),
            token,
            kubectl: tb.kubectl.clone(),
            _dir: dir,
        })
    }

    fn control(&self, path: &str) -> String {
        let o = run(
            &self.kubectl,
            &["--kubeconfig", &self.kubeconfig, "get", "--raw", path],
            None,
        );
        stdout_of(path, &o, 0)
    }

    /// Arm a fault: `kind` is `429`, `503`, `410`, `delay`, `drop` or `hold` (the request waits
    /// for [`FaultProxy::release`]); `count` < 0 means every request; `on_continue` limits it to
    /// LIST pages that carry a continue token.
    pub fn arm(&self, kind: &str, count: i32, on_continue: bool, ms: u64) {
        let on = if on_continue { "&on=continue" } else { "" };
        self.control(&format!("/__fault?kind={kind}&count={count}&ms={ms}{on}"));
    }

    /// Arm a fault for the next `count` requests of one HTTP method (`PUT`, `PATCH`, ...).
    pub fn arm_method(&self, kind: &str, count: i32, method: &str) {
        self.control(&format!(
            "/__fault?kind={kind}&count={count}&method={method}"
        ));
    }

    /// Arm a fault for the next `count` requests (`count` < 0: every one) whose path and
    /// query contain each of `parts` (`["/jobsets?", "watch=true"]`: the JobSet watches).
    pub fn arm_matching(&self, kind: &str, count: i32, parts: &[&str]) {
        let encode = |p: &str| -> String {
            p.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'/' => {
                        char::from(b).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect()
        };
        let matches: String = parts
            .iter()
            .map(|p| format!("&match={}", encode(p)))
            .collect();
        self.control(&format!("/__fault?kind={kind}&count={count}{matches}"));
    }

    /// Let every held request go on, to the API server as it is now.
    pub fn release(&self) {
        self.control("/__release");
    }

    /// Wait until the request log has a line that contains every one of `needles` (bounded:
    /// a proxy that never logs it fails the test instead of hanging it).
    pub fn wait_for_log(&self, needles: &[&str]) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !self
            .log()
            .iter()
            .any(|l| needles.iter().all(|n| l.contains(n)))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the proxy never logged a line with {needles:?}: {:#?}",
                self.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Clear faults and the request log.
    pub fn reset(&self) {
        self.control("/__reset");
    }

    /// The requests seen since the last reset: `METHOD URI -> STATUS`.
    pub fn log(&self) -> Vec<String> {
        self.control("/__log").lines().map(str::to_string).collect()
    }

    /// Run wlmap through the proxy.
    pub fn wlmap(&self, args: &[&str]) -> Output {
        run(
            &wlmap_bin(),
            &[&["--kubeconfig", &self.kubeconfig], args].concat(),
            None,
        )
    }

    /// Start wlmap through the proxy without waiting.
    pub fn spawn_wlmap(&self, args: &[&str]) -> std::process::Child {
        Command::new(wlmap_bin())
            .args(["--kubeconfig", &self.kubeconfig])
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn wlmap")
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A container asking for `gpus` GPUs (requests = limits, as the device plugin requires), one
/// CPU and 1 GiB; no GPU resource at all when `gpus` is 0.
pub fn gpu_container(gpus: u32) -> Value {
    let mut r = serde_json::json!({"cpu": "1", "memory": "1Gi"});
    if gpus > 0 {
        r["nvidia.com/gpu"] = Value::from(gpus.to_string());
    }
    serde_json::json!({"name": "main", "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": r, "limits": r}})
}

/// A RayCluster `tune` in `ns` as a user writes it for the KubeRay operator: a CPU-only head
/// and two workers of `worker_gpus` GPUs each, all kept on the node pool `pool`.
pub fn raycluster(ns: &str, pool: &str, worker_gpus: u32) -> Value {
    let template = |gpus: u32| {
        let mut c = gpu_container(gpus);
        c["name"] = Value::from("ray");
        c["image"] = Value::from("rayproject/ray:2.46.0");
        serde_json::json!({"spec": {"nodeSelector": {"wlmap.test/pool": pool}, "containers": [c]}})
    };
    serde_json::json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "tune", "namespace": ns},
        "spec": {"rayVersion": "2.46.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template(0)},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "minReplicas": 0,
                "maxReplicas": 4, "rayStartParams": {}, "template": template(worker_gpus)}]}})
}

/// Panic unless the testbed runs this operator (`WLMAP_TESTBED_OPERATORS`).
pub fn require_operator(name: &str) {
    assert!(
        std::env::var("WLMAP_TESTBED_OPERATORS").is_ok_and(|o| o.split(',').any(|x| x == name)),
        "needs a testbed started with WLMAP_TESTBED_OPERATORS={name}"
    );
}
