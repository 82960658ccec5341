//! # wlmap-kube
//!
//! Cluster access for wlmap, and the only crate with a network client: kubeconfig (contexts,
//! exec credential plugins, in-cluster config), API discovery, and **paginated LISTs** that
//! turn a cluster into the same plain JSON objects a snapshot gives. One LIST per kind (in
//! pages), one GET per object; retries with backoff on throttling, server errors and timeouts,
//! up to a bound; a listing is either complete or an error, never silently partial.
//!
//! ```no_run
//! use wlmap_kube::{Cluster, ConnectOptions};
//! let cluster = Cluster::connect(&ConnectOptions::default()).unwrap();
//! let gvk = wlmap_schema::GroupVersionKind::new("batch", "v1", "Job");
//! if let Some(kind) = cluster.resource(&gvk).unwrap() {
//!     let jobs = cluster.list(&kind, Some("default")).unwrap();
//!     println!("{} jobs", jobs.len());
//! }
//! ```
//!
//! ## kube-rs at the edges
//! [`Cluster`], the blocking client the CLI uses, takes and returns only wlmap's types
//! ([`Kind`], [`Error`], `wlmap_schema` kinds) and JSON values. The async layer is for callers
//! that run kube-rs themselves (the controller: its own `Api`s, leader election, admission):
//! [`load_config`] returns a `kube::Config`, [`watch_stream`] takes a `kube::Client`,
//! [`kind_in`] reads a `kube::Discovery`, and [`Kind::api_resource`] gives the kube-rs form of
//! a kind. Those take kube-rs types on purpose; [`kube`] re-exports the version they are
//! built with, so a caller never holds two.
//!
//! [`live`] turns watch events into a live inventory's events (`wlmap-inventory`), for every
//! caller that keeps one.

pub mod live;
mod watched;

pub use kube;
use kube::discovery::{ApiResource, Scope};
use kube::{Client, Config, Discovery};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::time::Duration;
pub use watched::Watched;
use wlmap_schema::{GroupKind, GroupVersionKind};

/// Errors of cluster access. Messages name the server and never carry credentials.
///
/// ```
/// let e = wlmap_kube::Error::Api { code: 429, message: "slow down".into() };
/// assert_eq!(e.to_string(), "API error 429: slow down");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No usable kubeconfig or in-cluster configuration.
    #[error("no cluster configuration: {0}")]
    Config(String),
    /// The API server cannot be reached (refused, DNS, TLS, timeout).
    #[error("cannot reach the API server at {server}: {message}")]
    Unreachable {
        /// Server URL.
        server: String,
        /// The connection error (refused, no route, TLS), as the client reported it.
        message: String,
        /// What kind of failure it is (what retrying can do about it).
        cause: Cause,
    },
    /// RBAC refused the request.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// An admission webhook (an operator's validation, a policy engine) refused the write, in
    /// its own words (a long value it quotes is elided).
    #[error("refused: {0}")]
    Refused(String),
    /// The object (or kind) does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Another writer changed the object (optimistic concurrency).
    #[error("conflict: {0}")]
    Conflict(String),
    /// Any other API error.
    #[error("API error {code}: {message}")]
    Api {
        /// HTTP status code.
        code: u16,
        /// Server message.
        message: String,
    },
}

/// Why the API server could not be reached, told once where the client's error is read:
/// retries look at this, never at a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// No answer in time (a timeout, a connection dropped mid-request).
    NoAnswer,
    /// The connection was refused (nothing listens: a server restarting, or none at all).
    Refused,
    /// The server's name does not resolve (retrying will not make it).
    Dns,
    /// Anything else (TLS, no route, ...).
    Other,
}

impl Cause {
    /// The cause of a client error, from its chain of sources: an I/O error's kind, or
    /// hyper's label for a failed name lookup.
    ///
    /// ```
    /// use wlmap_kube::Cause;
    /// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    /// assert_eq!(Cause::of(&refused), Cause::Refused);
    /// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    /// assert_eq!(Cause::of(&reset), Cause::NoAnswer);
    /// ```
    pub fn of(e: &(dyn std::error::Error + 'static)) -> Cause {
        let mut cur = Some(e);
        while let Some(err) = cur {
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind::*;
                match io.kind() {
                    ConnectionRefused => return Cause::Refused,
                    TimedOut | ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                        return Cause::NoAnswer;
                    }
                    _ => {}
                }
            }
            // hyper-util labels a failed name lookup "dns error" (its ConnectError).
            if err.to_string().starts_with("dns error") {
                return Cause::Dns;
            }
            cur = err.source();
        }
        Cause::Other
    }
}

/// Result with this crate's error.
///
/// ```
/// fn server(kubeconfig: std::path::PathBuf) -> wlmap_kube::Result<String> {
///     let opts = wlmap_kube::ConnectOptions { kubeconfig: Some(kubeconfig), ..Default::default() };
///     let cluster = wlmap_kube::Cluster::connect(&opts)?;
///     Ok(cluster.server().to_string())
/// }
/// # let kubeconfig = wlmap_kube::example_kubeconfig();
/// assert_eq!(server(kubeconfig).unwrap(), "https://127.0.0.1:6443/");
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How to connect.
///
/// ```
/// # let kubeconfig = Some(wlmap_kube::example_kubeconfig());
/// let opts = wlmap_kube::ConnectOptions { kubeconfig, context: Some("kind-dev".into()), page_size: Some(100), ..Default::default() };
/// let cluster = wlmap_kube::Cluster::connect(&opts).unwrap();
/// assert_eq!(cluster.default_namespace(), "ml");
/// let missing = wlmap_kube::ConnectOptions { context: Some("nowhere".into()), ..opts };
/// assert!(matches!(wlmap_kube::Cluster::connect(&missing), Err(wlmap_kube::Error::Config(_))));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// A kubeconfig file (else `$KUBECONFIG`, `~/.kube/config`, then in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// A context name.
    pub context: Option<String>,
    /// Per-request timeout (default 30 s).
    pub timeout: Option<Duration>,
    /// Page size of LISTs (default 500).
    pub page_size: Option<u32>,
}

/// The client configuration of these options: the kubeconfig file given, else `$KUBECONFIG`
/// or `~/.kube/config`, else the in-cluster service account.
///
/// ```
/// # let kubeconfig = Some(wlmap_kube::example_kubeconfig());
/// # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// # rt.block_on(async {
/// let opts = wlmap_kube::ConnectOptions { kubeconfig, ..Default::default() };
/// let config = wlmap_kube::load_config(&opts).await.unwrap();
/// assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:6443/");
/// # });
/// ```
pub async fn load_config(opts: &ConnectOptions) -> Result<Config> {
    let ko = kube::config::KubeConfigOptions {
        context: opts.context.clone(),
        ..Default::default()
    };
    match &opts.kubeconfig {
        Some(p) => {
            let kc = kube::config::Kubeconfig::read_from(p).map_err(|e| Error::Config(format!("{}: {e}", p.display())))?;
            Config::from_custom_kubeconfig(kc, &ko).await.map_err(|e| Error::Config(format!("{}: {e}", p.display())))
        }
        None => match Config::from_kubeconfig(&ko).await {
            Ok(c) => Ok(c),
            Err(kerr) => Config::incluster().map_err(|ierr| Error::Config(format!("no kubeconfig ({kerr}) and not in a cluster ({ierr}); use --kubeconfig, --snapshot or --demo"))),
        },
    }
}

/// How long a watch's connection may stay silent: past kube-runtime's watch timeout (290 s,
/// after which the server ends the watch and it is started again from where it was).
pub const WATCH_READ_TIMEOUT: Duration = Duration::from_secs(330);

/// What a watch ([`Cluster::watch`]) reports, for the kind at an index of the kinds watched.
///
/// A kind's objects are first listed (`Relisting`, then `Applied` for each, then `Listed`),
/// then changes follow. When the watch cannot resume from where it was (the server answers
/// 410 Gone, or the connection was lost for longer than the server keeps history), the kind
/// is listed again the same way: the objects between `Relisting` and `Listed` replace every
/// object of the kind held before.
///
/// ```
/// let e = wlmap_kube::WatchEvent::Listed(0);
/// assert!(matches!(e, wlmap_kube::WatchEvent::Listed(0)));
/// ```
#[derive(Debug)]
pub enum WatchEvent {
    /// The kind's objects are about to be listed anew.
    Relisting(usize),
    /// An object as it now is (created or changed, or listed during a relist).
    Applied(usize, Value),
    /// An object deleted, as it was last.
    Deleted(usize, Value),
    /// The listing that `Relisting` began is complete.
    Listed(usize),
    /// The watch of the kind failed; it is retried with backoff.
    Failed(usize, Error),
}

/// A kind the server serves: its group, version, kind and resource name, and its scope.
///
/// ```
/// let job = wlmap_kube::Kind::new("batch", "v1", "Job", "jobs", true);
/// assert_eq!(job.api_version(), "batch/v1");
/// assert_eq!(job.gvk(), wlmap_schema::GroupVersionKind::new("batch", "v1", "Job"));
/// assert_eq!(wlmap_kube::Kind::new("", "v1", "Pod", "pods", true).api_version(), "v1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kind {
    /// API group; empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind (`Job`).
    pub kind: String,
    /// Resource name in URLs (`jobs`).
    pub plural: String,
    /// True for namespaced kinds.
    pub namespaced: bool,
}

impl Kind {
    /// A kind from its parts.
    ///
    /// ```
    /// let k = wlmap_kube::Kind::new("run.ai", "v1alpha1", "Karta", "kartas", false);
    /// assert_eq!(k.group_kind(), wlmap_schema::GroupKind::new("run.ai", "Karta"));
    /// ```
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Kind {
        Kind {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
            namespaced,
        }
    }

    /// `group/version`, or `version` for the core group, as objects spell it.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Group, version and kind.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, &self.kind)
    }

    /// Group and kind.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }

    /// The kube-rs form, for callers that build `kube::Api`s of their own (see the crate's
    /// "kube-rs at the edges").
    ///
    /// ```
    /// let r = wlmap_kube::Kind::new("batch", "v1", "Job", "jobs", true).api_resource();
    /// assert_eq!((r.api_version.as_str(), r.plural.as_str()), ("batch/v1", "jobs"));
    /// ```
    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(&self.group, &self.version, &self.kind),
            &self.plural,
        )
    }
}

/// A connected cluster.
///
/// ```
/// # let kubeconfig = Some(wlmap_kube::example_kubeconfig());
/// let opts = wlmap_kube::ConnectOptions { kubeconfig, ..Default::default() };
/// let mut cluster = wlmap_kube::Cluster::connect(&opts).unwrap();
/// cluster.max_retries = 1;
/// assert_eq!(format!("{} (namespace {})", cluster.server(), cluster.default_namespace()),
///     "https://127.0.0.1:6443/ (namespace ml)");
/// ```
pub struct Cluster {
    rt: tokio::runtime::Runtime,
    client: Client,
    /// The same connection settings with a read timeout that outlasts a quiet watch.
    watch_client: Client,
    server: String,
    default_namespace: String,
    discovery: RefCell<Option<Discovery>>,
    timeout: Duration,
    page_size: u32,
    requests: Cell<u64>,
    /// The server has answered at least once: a refused connection after that is a server
    /// restarting (retried), before it a wrong address (reported at once).
    answered: Cell<bool>,
    /// Retries per request on 429/5xx/timeouts (and refused connections once the server has
    /// answered), with exponential backoff capped at 3.2 s: 0.4, 0.8, 1.6, 3.2, 3.2, 3.2, 3.2 s
    /// (about 16 s in all: an API server restart takes 5–10 s).
    pub max_retries: u32,
}

impl Cluster {
    /// Connect with a kubeconfig (or in-cluster configuration). No request is made yet.
    ///
    /// ```
    /// # let kubeconfig = Some(wlmap_kube::example_kubeconfig());
    /// let opts = wlmap_kube::ConnectOptions { kubeconfig, ..Default::default() };
    /// let cluster = wlmap_kube::Cluster::connect(&opts).unwrap();
    /// assert_eq!(cluster.requests(), 0); // no request made yet (nothing listens there)
    /// ```
    pub fn connect(opts: &ConnectOptions) -> Result<Cluster> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Config(e.to_string()))?;
        let timeout = opts.timeout.unwrap_or(Duration::from_secs(30));
        let mut config = rt.block_on(load_config(opts))?;
        config.connect_timeout = Some(timeout.min(Duration::from_secs(10)));
        config.read_timeout = Some(timeout);
        // One retry policy, ours (`with_retries`): kube's own layer would retry 429/503 inside
        // each of our attempts, multiplying the bound and hiding the attempts from the error.
        config.default_retry = false;
        let server = config.cluster_url.to_string();
        let default_namespace = config.default_namespace.clone();
        // A watch is quiet for as long as nothing changes: its client may wait for the server's
        // own end of a watch (kube-runtime asks for 290 s) before calling the connection dead.
        let mut watch_config = config.clone();
        watch_config.read_timeout = Some(WATCH_READ_TIMEOUT);
        // The client's buffer layer spawns onto the current runtime.
        let (client, watch_client) = {
            let _guard = rt.enter();
            let client = |c: Config| Client::try_from(c).map_err(|e| Error::Config(e.to_string()));
            (client(config)?, client(watch_config)?)
        };
        Ok(Cluster {
            rt,
            client,
            watch_client,
            server,
            default_namespace,
            discovery: RefCell::new(None),
            timeout,
            page_size: opts.page_size.unwrap_or(500),
            requests: Cell::new(0),
            answered: Cell::new(false),
            max_retries: 7,
        })
    }

    /// The API server URL.
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// assert!(cluster.server().starts_with("https://"));
    /// ```
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The context's namespace (or `default`).
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// assert!(!cluster.default_namespace().is_empty());
    /// ```
    pub fn default_namespace(&self) -> &str {
        &self.default_namespace
    }

    /// Requests sent so far (LIST pages, GETs, discovery).
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// let before = cluster.requests();
    /// cluster.kartas().unwrap();
    /// assert!(cluster.requests() > before);
    /// ```
    pub fn requests(&self) -> u64 {
        self.requests.get()
    }

    fn classify(&self, e: kube::Error, what: &str) -> Error {
        classify(&self.server, e, what)
    }

    fn send(&self, req: http::Request<Vec<u8>>, what: &str) -> Result<Value> {
        self.with_retries(|| {
            self.requests.set(self.requests.get() + 1);
            let r = self.rt.block_on(async {
                tokio::time::timeout(self.timeout, self.client.request::<Value>(clone_req(&req)))
                    .await
            });
            match r {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(self.classify(e, what)),
                Err(_) => Err(Error::Unreachable {
                    server: self.server.clone(),
                    message: format!("{what}: no answer within {:?}", self.timeout),
                    cause: Cause::NoAnswer,
                }),
            }
        })
    }

    /// Run one request with the retry policy: throttling (429), server errors (5xx), timeouts
    /// and dropped connections are retried with exponential backoff up to `max_retries` times;
    /// a refused connection only once the server has answered (it is restarting). Anything
    /// else, or the last failure, is returned, saying how many attempts were made.
    fn with_retries<T>(&self, mut once: impl FnMut() -> Result<T>) -> Result<T> {
        let mut attempt = 0;
        loop {
            let err = match once() {
                Ok(v) => {
                    self.answered.set(true);
                    return Ok(v);
                }
                Err(e) => e,
            };
            let retriable = match &err {
                Error::Api { code, .. } => *code == 429 || *code >= 500,
                Error::Unreachable { cause, .. } => match cause {
                    Cause::Dns => false,
                    Cause::Refused => self.answered.get(),
                    Cause::NoAnswer | Cause::Other => true,
                },
                _ => false,
            };
            if !matches!(err, Error::Unreachable { .. }) {
                self.answered.set(true);
            }
            if !retriable || attempt >= self.max_retries {
                return Err(gave_up(err, attempt + 1));
            }
            attempt += 1;
            std::thread::sleep(Duration::from_millis(200 * (1 << attempt.min(4))));
        }
    }

    fn discovery(&self) -> Result<()> {
        if self.discovery.borrow().is_some() {
            return Ok(());
        }
        let d = self.with_retries(|| {
            self.requests.set(self.requests.get() + 2);
            let d = self.rt.block_on(async {
                tokio::time::timeout(
                    self.timeout * 2,
                    Discovery::new(self.client.clone()).run_aggregated(),
                )
                .await
            });
            match d {
                Ok(Ok(d)) => Ok(d),
                Ok(Err(e)) => Err(self.classify(e, "API discovery")),
                Err(_) => Err(Error::Unreachable {
                    server: self.server.clone(),
                    message: "API discovery timed out".into(),
                    cause: Cause::NoAnswer,
                }),
            }
        })?;
        *self.discovery.borrow_mut() = Some(d);
        Ok(())
    }

    /// Resolve a kind by discovery: the exact version when served, else the group's preferred
    /// version of the same kind. `None` when the server does not serve the kind.
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// let pods = cluster.resource(&wlmap_schema::GroupVersionKind::new("", "v1", "Pod")).unwrap();
    /// assert_eq!(pods.unwrap().plural, "pods");
    /// ```
    pub fn resource(&self, gvk: &GroupVersionKind) -> Result<Option<Kind>> {
        self.discovery()?;
        let d = self.discovery.borrow();
        Ok(d.as_ref().and_then(|d| kind_in(d, gvk)))
    }

    fn url(&self, k: &Kind, ns: Option<&str>, name: Option<&str>) -> String {
        let ar = k;
        let base = if ar.group.is_empty() {
            format!("/api/{}", ar.version)
        } else {
            format!("/apis/{}/{}", ar.group, ar.version)
        };
        let nsp = match (k.namespaced, ns) {
            (true, Some(n)) => format!("/namespaces/{n}"),
            _ => String::new(),
        };
        let name = name.map(|n| format!("/{n}")).unwrap_or_default();
        format!("{base}{nsp}/{}{name}", ar.plural)
    }

    /// List every object of a kind (in a namespace, or all), page by page. If a continue token
    /// expires (410) the listing restarts once; otherwise an error, never a partial list.
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// # let job = cluster.resource(&wlmap_schema::GroupVersionKind::new("batch", "v1", "Job")).unwrap().unwrap();
    /// let jobs = cluster.list(&job, Some("default")).unwrap();
    /// assert!(jobs.iter().all(|j| j["kind"] == "Job")); // LIST items get apiVersion and kind
    /// ```
    pub fn list(&self, k: &Kind, ns: Option<&str>) -> Result<Vec<Value>> {
        let what = format!("list {}", k.plural);
        let mut restarted = false;
        'outer: loop {
            let mut out = Vec::new();
            let mut cont: Option<String> = None;
            loop {
                let mut url = format!("{}?limit={}", self.url(k, ns, None), self.page_size);
                if let Some(c) = &cont {
                    url.push_str(&format!("&continue={}", encode(c)));
                }
                let req = http::Request::get(url)
                    .body(Vec::new())
                    .map_err(|e| Error::Config(e.to_string()))?;
                let page = match self.send(req, &what) {
                    Ok(p) => p,
                    Err(Error::Api { code: 410, .. }) if !restarted => {
                        restarted = true;
                        continue 'outer;
                    }
                    Err(e) => return Err(e),
                };
                if let Some(items) = page.get("items").and_then(Value::as_array) {
                    for it in items {
                        let mut it = it.clone();
                        // LIST items carry no apiVersion/kind; set them so objects look alike
                        // whatever their source.
                        if let Some(m) = it.as_object_mut() {
                            m.insert("apiVersion".into(), Value::from(k.api_version()));
                            m.insert("kind".into(), Value::from(k.kind.clone()));
                        }
                        out.push(it);
                    }
                }
                cont = page
                    .pointer("/metadata/continue")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string);
                if cont.is_none() {
                    return Ok(out);
                }
            }
        }
    }

    /// Watch these kinds (in a namespace, or all) until `on` says stop: one watch per kind,
    /// resuming from the last resourceVersion seen, relisting when the server no longer has
    /// it (410 Gone), with bookmarks, retried with backoff when a watch fails. Objects are
    /// handed over with `apiVersion` and `kind` set, as [`Cluster::list`] gives them. With a
    /// gate, the kinds that wait for DRA use start once it opens ([`watch_stream_gated`]).
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// # let pods = cluster.resource(&wlmap_schema::GroupVersionKind::new("", "v1", "Pod")).unwrap().unwrap();
    /// use std::ops::ControlFlow;
    /// let mut seen = 0;
    /// cluster.watch(&[pods], Some("default"), None, |e| match e {
    ///     wlmap_kube::WatchEvent::Listed(_) => ControlFlow::Break(()),
    ///     _ => { seen += 1; ControlFlow::Continue(()) }
    /// });
    /// ```
    pub fn watch(
        &self,
        kinds: &[Kind],
        ns: Option<&str>,
        gate: Option<&live::DraGate>,
        mut on: impl FnMut(WatchEvent) -> std::ops::ControlFlow<()>,
    ) {
        use futures::StreamExt;
        let mut all = watch_stream_gated(&self.watch_client, &self.server, kinds, ns, gate);
        self.rt.block_on(async {
            while let Some(event) = all.next().await {
                if on(event).is_break() {
                    break;
                }
            }
        });
    }

    /// Get one object.
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// # let job = cluster.resource(&wlmap_schema::GroupVersionKind::new("batch", "v1", "Job")).unwrap().unwrap();
    /// let train = cluster.get(&job, Some("default"), "train").unwrap();
    /// assert_eq!(train["metadata"]["name"], "train");
    /// ```
    pub fn get(&self, k: &Kind, ns: Option<&str>, name: &str) -> Result<Value> {
        let req = http::Request::get(self.url(k, ns, Some(name)))
            .body(Vec::new())
            .map_err(|e| Error::Config(e.to_string()))?;
        self.send(req, &format!("get {} {name}", k.kind))
    }

    /// Replace an object (PUT). The object's `metadata.resourceVersion` is the precondition: a
    /// concurrent change makes this fail with [`Error::Conflict`].
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// # let job = cluster.resource(&wlmap_schema::GroupVersionKind::new("batch", "v1", "Job")).unwrap().unwrap();
    /// let mut train = cluster.get(&job, Some("default"), "train").unwrap();
    /// train["spec"]["suspend"] = true.into();
    /// let out = cluster.replace(&job, Some("default"), "train", &train, true).unwrap(); // dry run
    /// assert_eq!(out["spec"]["suspend"], true);
    /// ```
    pub fn replace(
        &self,
        k: &Kind,
        ns: Option<&str>,
        name: &str,
        obj: &Value,
        dry_run: bool,
    ) -> Result<Value> {
        let mut url = self.url(k, ns, Some(name));
        if dry_run {
            url.push_str("?dryRun=All");
        }
        let req = http::Request::put(url).header("content-type", "application/json");
        self.send_object(req, obj, &format!("update {} {name}", k.kind))
    }

    /// Server-side apply an object (PATCH `application/apply-patch+yaml`, forced: the
    /// manager takes the fields it names), or a server-side dry run of it.
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// # let cm = cluster.resource(&wlmap_schema::GroupVersionKind::new("", "v1", "ConfigMap")).unwrap().unwrap();
    /// let obj = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
    /// let out = cluster.apply(&cm, Some("default"), "c", &obj, "wlmap", false).unwrap();
    /// assert_eq!(out["data"]["a"], "1");
    /// ```
    pub fn apply(
        &self,
        k: &Kind,
        ns: Option<&str>,
        name: &str,
        obj: &Value,
        field_manager: &str,
        dry_run: bool,
    ) -> Result<Value> {
        let mut url = format!(
            "{}?fieldManager={}&force=true",
            self.url(k, ns, Some(name)),
            encode(field_manager)
        );
        if dry_run {
            url.push_str("&dryRun=All");
        }
        let req = http::Request::patch(url).header("content-type", "application/apply-patch+yaml");
        self.send_object(req, obj, &format!("apply {} {name}", k.kind))
    }

    /// Send a request whose body is `obj` as JSON (which is also YAML, for apply patches).
    fn send_object(&self, req: http::request::Builder, obj: &Value, what: &str) -> Result<Value> {
        let body = serde_json::to_vec(obj).map_err(|e| Error::Config(e.to_string()))?;
        let req = req.body(body).map_err(|e| Error::Config(e.to_string()))?;
        self.send(req, what)
    }

    /// Delete an object; `Ok(false)` when it did not exist.
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// # let cm = cluster.resource(&wlmap_schema::GroupVersionKind::new("", "v1", "ConfigMap")).unwrap().unwrap();
    /// let existed = cluster.delete(&cm, Some("default"), "c").unwrap();
    /// # let _ = existed;
    /// ```
    pub fn delete(&self, k: &Kind, ns: Option<&str>, name: &str) -> Result<bool> {
        let req = http::Request::delete(self.url(k, ns, Some(name)))
            .body(Vec::new())
            .map_err(|e| Error::Config(e.to_string()))?;
        match self.send(req, &format!("delete {} {name}", k.kind)) {
            Ok(_) => Ok(true),
            Err(Error::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The `kartas.run.ai` kind.
    ///
    /// ```
    /// assert_eq!(wlmap_kube::Cluster::karta_kind().plural, "kartas");
    /// ```
    pub fn karta_kind() -> Kind {
        Kind::new("run.ai", "v1alpha1", "Karta", "kartas", false)
    }

    /// The `kartas.run.ai` definitions in the cluster.
    ///
    /// ```no_run
    /// # let cluster = wlmap_kube::Cluster::connect(&wlmap_kube::ConnectOptions::default()).unwrap();
    /// let defs = cluster.kartas().unwrap();
    /// assert!(defs.iter().all(|k| k["kind"] == "Karta"));
    /// ```
    pub fn kartas(&self) -> Result<Vec<Value>> {
        self.list(&Cluster::karta_kind(), None)
    }
}

fn clone_req(r: &http::Request<Vec<u8>>) -> http::Request<Vec<u8>> {
    let mut b = http::Request::builder()
        .method(r.method().clone())
        .uri(r.uri().clone());
    for (k, v) in r.headers() {
        b = b.header(k, v);
    }
    b.body(r.body().clone()).unwrap_or_default()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg = s.to_string();
        src = s.source();
    }
    msg
}

/// Longest value an `Invalid value: V: detail` field error keeps; a longer one (a webhook
/// quoting a whole list of pod templates) becomes `…`, so the refusal stays one readable line.
const INVALID_VALUE_KEPT: usize = 80;

/// `message` with each long value quoted by a Kubernetes field error (`Invalid value: V:`,
/// V a JSON value) elided.
///
/// ```
/// let m = r#"spec.replicatedJobs: Invalid value: [{"name":"node","template":{"spec":{"parallelism":2,"completions":2,"template":{}}}}]: field is immutable"#;
/// assert_eq!(
///     wlmap_kube::elide_invalid_values(m),
///     "spec.replicatedJobs: Invalid value: …: field is immutable"
/// );
/// assert_eq!(wlmap_kube::elide_invalid_values("x: Invalid value: 3: too big"), "x: Invalid value: 3: too big");
/// ```
pub fn elide_invalid_values(message: &str) -> String {
    const MARK: &str = "Invalid value: ";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(MARK) {
        let (head, tail) = rest.split_at(at + MARK.len());
        out.push_str(head);
        let mut values = serde_json::Deserializer::from_str(tail).into_iter::<Value>();
        let len = match values.next() {
            Some(Ok(_)) => values.byte_offset(),
            _ => 0,
        };
        if len > INVALID_VALUE_KEPT {
            out.push('…');
            rest = &tail[len..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// Say how many attempts were made when a request failed after retries.
fn gave_up(err: Error, attempts: u32) -> Error {
    if attempts <= 1 {
        return err;
    }
    let note = format!(" (gave up after {attempts} attempts)");
    match err {
        Error::Api { code, message } => Error::Api {
            code,
            message: message + &note,
        },
        Error::Unreachable {
            server,
            message,
            cause,
        } => Error::Unreachable {
            server,
            message: message + &note,
            cause,
        },
        other => other,
    }
}

/// One error of a request to `server`, classified.
fn classify(server: &str, e: kube::Error, what: &str) -> Error {
    match e {
        // The API server answers a webhook's denial with the code the webhook chose (403 by
        // default), so the message says which it is.
        kube::Error::Api(s)
            if s.message.contains("admission webhook")
                && s.message.contains("denied the request") =>
        {
            Error::Refused(format!("{what}: {}", elide_invalid_values(&s.message)))
        }
        kube::Error::Api(s) => match s.code {
            403 => Error::Forbidden(format!("{what}: {}", s.message)),
            404 => Error::NotFound(format!("{what}: {}", s.message)),
            409 => Error::Conflict(format!("{what}: {}", s.message)),
            code => Error::Api {
                code,
                message: format!("{what}: {}", s.message),
            },
        },
        other => Error::Unreachable {
            server: server.to_string(),
            message: root_cause(&other),
            cause: Cause::of(&other),
        },
    }
}

/// The events of one watch per kind (in a namespace, or all), merged: what
/// [`Cluster::watch`] hands over, as a stream for callers with a runtime of their own. The
/// client should have a read timeout past 290 s (a quiet watch is not a dead one).
///
/// ```no_run
/// # async fn f(client: kube::Client, pods: wlmap_kube::Kind) {
/// use futures::StreamExt;
/// let mut events = wlmap_kube::watch_stream(&client, "https://k8s", &[pods], None);
/// while let Some(e) = events.next().await {
///     println!("{e:?}");
/// }
/// # }
/// ```
pub fn watch_stream(
    client: &Client,
    server: &str,
    kinds: &[Kind],
    ns: Option<&str>,
) -> futures::stream::BoxStream<'static, WatchEvent> {
    watch_stream_gated(client, server, kinds, ns, None)
}

/// [`watch_stream`] where the kinds that wait for DRA use
/// ([`wlmap_inventory::waits_for_dra_use`]) start watching only once `gate` opens.
pub fn watch_stream_gated(
    client: &Client,
    server: &str,
    kinds: &[Kind],
    ns: Option<&str>,
    gate: Option<&live::DraGate>,
) -> futures::stream::BoxStream<'static, WatchEvent> {
    use futures::StreamExt;
    let streams = kinds.iter().enumerate().map(|(i, k)| {
        let stream = kind_stream(client, server, i, k, ns);
        match gate.filter(|_| wlmap_inventory::waits_for_dra_use(&k.group_kind())) {
            Some(gate) => {
                let gate = gate.clone();
                futures::stream::once(async move {
                    gate.opened().await;
                    stream
                })
                .flatten()
                .boxed()
            }
            None => stream,
        }
    });
    futures::stream::select_all(streams).boxed()
}

/// The watch of one kind, at index `i` of the kinds watched.
fn kind_stream(
    client: &Client,
    server: &str,
    i: usize,
    k: &Kind,
    ns: Option<&str>,
) -> futures::stream::BoxStream<'static, WatchEvent> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    {
        let api: kube::Api<Watched> = match (k.namespaced, ns) {
            (true, Some(n)) => kube::Api::namespaced_with(client.clone(), n, &k.api_resource()),
            _ => kube::Api::all_with(client.clone(), &k.api_resource()),
        };
        let resource = k.clone();
        let server = server.to_string();
        watcher(api, watcher::Config::default())
            .default_backoff()
            .map(move |e| match e {
                Ok(watcher::Event::Init) => WatchEvent::Relisting(i),
                Ok(watcher::Event::InitDone) => WatchEvent::Listed(i),
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                    WatchEvent::Applied(i, o.into_typed(&resource))
                }
                Ok(watcher::Event::Delete(o)) => WatchEvent::Deleted(i, o.into_typed(&resource)),
                Err(e) => WatchEvent::Failed(i, watch_error(&server, e, &resource.plural)),
            })
            .boxed()
    }
}

fn watch_error(server: &str, e: kube::runtime::watcher::Error, plural: &str) -> Error {
    use kube::runtime::watcher::Error as W;
    let what = format!("watch {plural}");
    match e {
        W::InitialListFailed(e) | W::WatchStartFailed(e) | W::WatchFailed(e) => {
            classify(server, e, &what)
        }
        W::WatchError(s) => classify(server, kube::Error::Api(s), &what),
        W::NoResourceVersion => Error::Api {
            code: 0,
            message: format!("{what}: no resourceVersion (does the kind support watch?)"),
        },
    }
}

/// A kind in a discovery: the exact version when served, else the group's preferred version
/// of the same kind. `None` when the server does not serve the kind.
///
/// ```no_run
/// # async fn f(client: kube::Client) {
/// let d = kube::Discovery::new(client).run_aggregated().await.unwrap();
/// let job = wlmap_kube::kind_in(&d, &wlmap_schema::GroupVersionKind::new("batch", "v1", "Job"));
/// assert_eq!(job.unwrap().plural, "jobs");
/// # }
/// ```
pub fn kind_in(d: &Discovery, gvk: &GroupVersionKind) -> Option<Kind> {
    let exact = kube::api::GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
    let kind = |(ar, caps): (ApiResource, kube::discovery::ApiCapabilities)| Kind {
        group: ar.group,
        version: ar.version,
        kind: ar.kind,
        plural: ar.plural,
        namespaced: caps.scope == Scope::Namespaced,
    };
    if let Some(found) = d.resolve_gvk(&exact) {
        return Some(kind(found));
    }
    d.get(&gvk.group)?.recommended_kind(&gvk.kind).map(kind)
}

/// A kubeconfig file for examples: context `kind-dev` (the current one), namespace `ml`, a
/// server on `https://127.0.0.1:6443` that need not exist (connecting makes no request).
#[doc(hidden)]
pub fn example_kubeconfig() -> PathBuf {
    let path = std::env::temp_dir().join(format!("wlmap-kube-example-{}.yaml", std::process::id()));
    let text = "apiVersion: v1\nkind: Config\ncurrent-context: kind-dev\n\
        clusters:\n- name: dev\n  cluster:\n    server: https://127.0.0.1:6443\n\
        contexts:\n- name: kind-dev\n  context:\n    cluster: dev\n    user: dev\n    namespace: ml\n\
        users:\n- name: dev\n  user:\n    token: example\n";
    // Examples run in parallel processes; each writes its own file.
    std::fs::write(&path, text).expect("write the example kubeconfig");
    path
}
