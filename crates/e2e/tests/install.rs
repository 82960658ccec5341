//! How people install wlmap, done for real with the tools they use: the container image
//! (packaging/image.py, no container engine) read back and run by go-containerregistry's
//! `crane` (its registry, its `docker load` tarball and OCI layout readers, its export of the
//! root filesystem), the chart naming that image, `kubectl wlmap` installed by krew from the
//! release archive (krew's own manifest validator installs it too), `wlmap version`, and
//! packaging/install.sh. The tools come from testbed/build.sh (`WLMAP_TESTBED_BIN`); the run
//! of the image's root filesystem needs root (`chroot`). Run through
//! `testbed/with-testbed.sh cargo test -p wlmap-e2e --test install -- --include-ignored`
//! (scripts/test.sh does, in the e2e tier).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use wlmap_e2e::{run, run_command, stdout_of, wlmap_bin};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tool(name: &str) -> String {
    let bin =
        std::env::var("WLMAP_TESTBED_BIN").expect("WLMAP_TESTBED_BIN (testbed/with-testbed.sh)");
    format!("{bin}/{name}")
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A child process killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start a server and wait until its port answers.
fn serve(mut c: Command, port: u16) -> Server {
    let s = Server(c.spawn().expect("spawn server"));
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return s;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("nothing answers on 127.0.0.1:{port}");
}

/// What the host binary prints for the demo (the reference every installed form must match).
fn demo_listing(program: &str, path: Option<&str>) -> String {
    let mut c = Command::new(program);
    if program.ends_with("kubectl") {
        c.arg("wlmap");
    }
    c.args(["--demo", "get", "-A", "--all-types"]);
    if let Some(p) = path {
        c.env_clear().env("PATH", p);
    }
    stdout_of(&format!("{program} --demo get"), &run_command(c, None), 0)
}

fn version() -> Value {
    wlmap_e2e::json(&run(&wlmap_bin(), &["version", "-o", "json"], None))
}

/// Run a packaging script on the built binary, writing into `out`: the JSON it prints.
fn packaging(script: &str, out: &Path, more: &[&str]) -> Value {
    let path = repo().join("packaging").join(script);
    let bin = wlmap_bin();
    let mut args = vec![
        path.to_str().expect("utf8"),
        "--binary",
        &bin,
        "--out",
        out.to_str().expect("utf8"),
    ];
    args.extend(more);
    let o = run("python3", &args, None);
    serde_json::from_str(&stdout_of(script, &o, 0)).expect("its JSON")
}

fn build_image(out: &Path) -> Value {
    packaging("image.py", out, &[])
}

fn crane(args: &[&str]) -> String {
    let o = run(&tool("crane"), args, None);
    stdout_of(&format!("crane {}", args.join(" ")), &o, 0)
}

/// The image, pushed to crane's registry from both forms the build writes, says what the
/// binary says, runs as 65532, and its root filesystem alone runs the demo as the host does.
#[test]
#[ignore = "needs the testbed's crane and root (scripts/test.sh runs it)"]
fn the_image_holds_the_binary_and_runs_it_in_an_empty_root() {
    let dir = tempfile::tempdir().expect("tmp");
    let built = build_image(dir.path());
    // The same binary gives the same image, digest for digest.
    let again = build_image(&dir.path().join("again"));
    assert_eq!(built["manifest"], again["manifest"], "reproducible");

    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut reg = Command::new(tool("crane"));
    reg.args(["registry", "serve", "--address", &addr])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _registry = serve(reg, port);
    let oci = format!("{addr}/wlmap-oci:test");
    let tarball = format!("{addr}/wlmap-tar:test");
    crane(&[
        "push",
        "--insecure",
        built["oci"].as_str().expect("oci"),
        &oci,
    ]);
    crane(&[
        "push",
        "--insecure",
        built["archive"].as_str().expect("tar"),
        &tarball,
    ]);
    // The OCI layout arrives as written.
    assert_eq!(
        crane(&["digest", "--insecure", &oci]).trim(),
        built["manifest"].as_str().expect("digest")
    );

    let v = version();
    for image in [&oci, &tarball] {
        let config: Value =
            serde_json::from_str(&crane(&["config", "--insecure", image])).expect("config");
        let c = &config["config"];
        assert_eq!(c["User"], "65532:65532", "{image}");
        assert_eq!(c["Entrypoint"], serde_json::json!(["/usr/local/bin/wlmap"]));
        let label = |k: &str| c["Labels"][format!("org.opencontainers.image.{k}")].clone();
        assert_eq!(label("version"), v["version"]);
        assert_eq!(label("revision"), v["revision"]);
        assert_eq!(label("licenses"), "Apache-2.0");
        assert!(
            label("source")
                .as_str()
                .is_some_and(|s| s.starts_with("https://"))
        );
        assert_eq!(config["os"], "linux");
    }

    // Its root filesystem, and nothing else, runs the demo as user 65532.
    let root = dir.path().join("rootfs");
    std::fs::create_dir(&root).expect("mkdir");
    let export = format!(
        "{} export --insecure {oci} - | tar -x -C {}",
        tool("crane"),
        root.display()
    );
    stdout_of("crane export", &run("sh", &["-c", &export], None), 0);
    let files = run("find", &[root.to_str().expect("utf8"), "-type", "f"], None);
    for f in String::from_utf8_lossy(&files.stdout).lines() {
        let f = f.strip_prefix(root.to_str().expect("utf8")).expect("below");
        assert!(
            f == "/usr/local/bin/wlmap"
                || f == "/etc/ssl/certs/ca-certificates.crt"
                || f == "/etc/passwd"
                || f == "/etc/group"
                || f.starts_with("/lib"),
            "unexpected file in the image: {f}"
        );
    }
    // Absolute: the environment is cleared, so no PATH finds it.
    let mut chroot = Command::new("/usr/sbin/chroot");
    chroot.args([
        "--userspec=65532:65532",
        root.to_str().expect("utf8"),
        "/usr/local/bin/wlmap",
        "--demo",
        "get",
        "-A",
        "--all-types",
    ]);
    chroot.env_clear();
    let inside = stdout_of("wlmap in the image's root", &run_command(chroot, None), 0);
    assert_eq!(inside, demo_listing(&wlmap_bin(), None));
}

/// `helm template` with default values names the image the build writes.
#[test]
#[ignore = "needs the testbed's helm (scripts/test.sh runs it)"]
fn the_chart_by_default_runs_the_image_the_build_writes() {
    let dir = tempfile::tempdir().expect("tmp");
    let built = build_image(dir.path());
    let chart = repo().join("charts/wlmap");
    let o = run(
        &tool("helm"),
        &["template", "wlmap", chart.to_str().expect("utf8")],
        None,
    );
    let docs = wlmap_schema::decode_objects(&stdout_of("helm template", &o, 0), "chart")
        .expect("rendered YAML");
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    let image = &deployment["spec"]["template"]["spec"]["containers"][0]["image"];
    assert_eq!(image, &built["image"]);
}

/// The release archive installs with krew (its validator installs it for every platform the
/// manifest names), and kubectl runs it as `kubectl wlmap`.
#[test]
#[ignore = "needs the testbed's kubectl and krew (scripts/test.sh runs it)"]
fn kubectl_runs_wlmap_installed_by_krew() {
    let validate = tool("validate-krew-manifest");
    let manifest = repo().join("packaging/krew/wlmap.yaml");
    let o = run(
        &validate,
        &[
            "-manifest",
            manifest.to_str().expect("utf8"),
            "-skip-install",
        ],
        None,
    );
    stdout_of("validate-krew-manifest (repository)", &o, 0);

    let dir = tempfile::tempdir().expect("tmp");
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let release = packaging("release.py", dir.path(), &["--base-url", &base]);
    let mut http = Command::new("python3");
    http.args([
        "-m",
        "http.server",
        "--bind",
        "127.0.0.1",
        &port.to_string(),
    ])
    .current_dir(dir.path())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let _http = serve(http, port);

    let testbed_bin = Path::new(&tool("kubectl"))
        .parent()
        .expect("bin")
        .to_path_buf();
    let path = format!("{}:/usr/bin:/bin", testbed_bin.display());
    // The validator downloads the archive and runs `kubectl krew install` on it.
    let mut c = Command::new(&validate);
    c.args(["-manifest", release["manifest"].as_str().expect("manifest")])
        .env("PATH", &path);
    stdout_of("validate-krew-manifest (release)", &run_command(c, None), 0);

    let krew_root = dir.path().join("krew");
    let mut install = Command::new(tool("kubectl"));
    install
        .args([
            "krew",
            "install",
            &format!("--manifest={}", release["manifest"].as_str().expect("m")),
            &format!("--archive={}", release["archive"].as_str().expect("a")),
        ])
        .env("KREW_ROOT", &krew_root)
        .env("PATH", &path);
    stdout_of("kubectl krew install", &run_command(install, None), 0);
    let with_plugin = format!("{}:{path}", krew_root.join("bin").display());
    assert_eq!(
        demo_listing(&tool("kubectl"), Some(&with_plugin)),
        demo_listing(&wlmap_bin(), None)
    );
}

/// `wlmap version -o json` names the checkout it was built from and the catalog it carries.
#[test]
fn version_names_the_revision_and_the_catalog() {
    let v = version();
    let head = run(
        "git",
        &["-C", repo().to_str().expect("utf8"), "rev-parse", "HEAD"],
        None,
    );
    assert_eq!(v["revision"], stdout_of("git rev-parse", &head, 0).trim());
    let defs = std::fs::read_dir(repo().join("crates/catalog/definitions"))
        .expect("definitions")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        })
        .count();
    assert_eq!(v["catalog"]["definitions"], defs);
    assert_eq!(v["formats"][0]["apiVersion"], "run.ai/v1alpha1");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let short = stdout_of("--version", &run(&wlmap_bin(), &["--version"], None), 0);
    assert_eq!(
        short.trim(),
        format!(
            "wlmap {} ({})",
            v["version"].as_str().expect("v"),
            v["revision"].as_str().expect("r")
        )
    );
}

/// packaging/install.sh puts the binary, its kubectl plugin name, manual pages and
/// completions where they are looked for.
#[test]
fn install_script_puts_everything_in_place() {
    let prefix = tempfile::tempdir().expect("tmp");
    let mut c = Command::new(repo().join("packaging/install.sh"));
    c.arg(prefix.path()).env("WLMAP_BINARY", wlmap_bin());
    stdout_of("packaging/install.sh", &run_command(c, None), 0);
    let p = prefix.path();
    let link = std::fs::read_link(p.join("bin/kubectl-wlmap")).expect("kubectl-wlmap");
    assert_eq!(link, Path::new("wlmap"));
    for page in [
        "wlmap.1",
        "wlmap-get.1",
        "wlmap-describe.1",
        "wlmap-controller.1",
    ] {
        let text = std::fs::read_to_string(p.join("share/man/man1").join(page)).expect(page);
        let title = page.trim_end_matches(".1");
        assert!(text.contains(&format!(".TH {title} 1")), "{page}");
    }
    assert!(
        !p.join("share/man/man1/wlmap-man.1").exists(),
        "hidden commands have no page"
    );
    for (file, needle) in [
        ("share/bash-completion/completions/wlmap", "_wlmap()"),
        ("share/zsh/site-functions/_wlmap", "#compdef wlmap"),
        (
            "share/fish/vendor_completions.d/wlmap.fish",
            "complete -c wlmap",
        ),
    ] {
        let text = std::fs::read_to_string(p.join(file)).expect(file);
        assert!(text.contains(needle), "{file}");
    }
}
