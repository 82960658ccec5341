//! `wlmap controller`: the tasks of one replica, wired together. Every replica watches the
//! workloads and serves the webhook; the one holding the Lease writes gang objects.

use crate::leader::Elector;
use crate::state::{Shared, log};
use crate::tls::Authority;
use futures::StreamExt;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use wlmap_engine::{Object, SchedulerFormat};
use wlmap_inventory::{Fed, Feed, FeedEvent, ObjectKey};
use wlmap_kube::{Kind, WatchEvent};
use wlmap_schema::{GroupKind, GroupVersionKind};

/// Where the webhook's serving certificate comes from.
#[derive(Debug, Clone)]
pub enum Certificates {
    /// The controller's own CA (a Secret in its namespace), a serving certificate for these
    /// DNS names and IP addresses, and the CA kept as the webhook configuration's `caBundle`.
    SelfManaged {
        /// Names the API server reaches the webhook by.
        names: Vec<String>,
    },
    /// Files written by cert-manager (or another issuer), whose CA injector fills the
    /// webhook configuration's `caBundle`; the controller does not write that configuration.
    Files {
        /// PEM certificate chain.
        cert: PathBuf,
        /// PEM private key.
        key: PathBuf,
    },
}

/// How the API server reaches the webhook.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// A Service in front of the replicas (in a cluster).
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// Its port.
        port: u16,
    },
    /// A URL (a controller run outside the cluster, as the tests do).
    Url(String),
}

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Cluster connection.
    pub connect: wlmap_kube::ConnectOptions,
    /// The scheduler the gang objects and pod tags are for.
    pub format: SchedulerFormat,
    /// The controller's namespace: its Lease and CA Secret live there.
    pub namespace: String,
    /// This replica's name (the Lease holder identity; the pod name in a cluster).
    pub identity: String,
    /// The Lease's name.
    pub lease_name: String,
    /// How long a Lease renewal holds.
    pub lease_duration: Duration,
    /// How often the holder renews (and others try).
    pub renew_every: Duration,
    /// The webhook's TLS address.
    pub webhook_addr: SocketAddr,
    /// The probes' and metrics' plain HTTP address.
    pub probe_addr: SocketAddr,
    /// Serving certificate.
    pub certificates: Certificates,
    /// How the API server reaches the webhook.
    pub endpoint: Endpoint,
    /// The MutatingWebhookConfiguration the controller keeps (self-managed certificates).
    pub webhook_config: String,
}

/// Run until SIGTERM or Ctrl-C.
pub fn run(opts: Options) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(main(opts))
}

async fn main(opts: Options) -> Result<(), String> {
    let config = wlmap_kube::load_config(&opts.connect)
        .await
        .map_err(|e| e.to_string())?;
    let client = kube::Client::try_from(config.clone()).map_err(|e| e.to_string())?;
    let mut watch_config = config;
    watch_config.read_timeout = Some(wlmap_kube::WATCH_READ_TIMEOUT);
    let watch_client = kube::Client::try_from(watch_config).map_err(|e| e.to_string())?;
    let kartas = list_kartas(&client).await;
    let registry = registry_of(&kartas);
    let shared = Arc::new(Shared::new(opts.clone(), client.clone(), registry));

    let tls = serving_tls(&shared).await?;
    let (stop_tx, stop) = watch::channel(false);
    let webhook = tokio::net::TcpListener::bind(opts.webhook_addr)
        .await
        .map_err(|e| format!("webhook address {}: {e}", opts.webhook_addr))?;
    let probes = tokio::net::TcpListener::bind(opts.probe_addr)
        .await
        .map_err(|e| format!("probe address {}: {e}", opts.probe_addr))?;
    log(
        "info",
        "serving",
        json!({"webhook": opts.webhook_addr.to_string(), "probes": opts.probe_addr.to_string(),
            "format": format!("{:?}", opts.format), "identity": opts.identity}),
    );
    tokio::spawn(crate::serve::webhook(
        webhook,
        tls,
        shared.clone(),
        stop.clone(),
    ));
    tokio::spawn(crate::serve::probes(probes, shared.clone(), stop.clone()));
    shared
        .webhook_ready
        .store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::spawn(watch_workloads(shared.clone(), watch_client.clone()));
    tokio::spawn(watch_gang_objects(shared.clone(), watch_client.clone()));
    tokio::spawn(watch_kartas(shared.clone(), watch_client.clone(), kartas));
    tokio::spawn(watch_crds(shared.clone(), watch_client));
    tokio::spawn(crate::reconcile::worker(shared.clone()));
    let elector = Elector::new(
        kube::Api::namespaced(client.clone(), &opts.namespace),
        &opts.lease_name,
        &opts.identity,
        opts.lease_duration,
    );
    let elector = Arc::new(elector);
    tokio::spawn(lead(shared.clone(), elector.clone()));

    shutdown_signal().await;
    log("info", "shutting down", json!({}));
    let _ = stop_tx.send(true);
    shared.set_leader(false);
    if let Err(e) = elector.release().await {
        log(
            "warning",
            "could not release the Lease",
            json!({"error": e.to_string()}),
        );
    }
    Ok(())
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => futures::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// Take part in the election: renew every period; lead while the Lease is ours. A replica
/// that cannot renew steps down once its last renewal has expired.
async fn lead(shared: Arc<Shared>, elector: Arc<Elector>) {
    let mut last_renewal = tokio::time::Instant::now();
    loop {
        match elector.round().await {
            Ok(true) => {
                last_renewal = tokio::time::Instant::now();
                if shared.set_leader(true) {
                    keep_kartas(&shared);
                    log(
                        "info",
                        "became leader",
                        json!({"identity": shared.opts.identity}),
                    );
                    shared.enqueue_all();
                }
            }
            Ok(false) => {
                if shared.set_leader(false) {
                    log(
                        "info",
                        "lost the Lease",
                        json!({"identity": shared.opts.identity}),
                    );
                }
            }
            Err(e) => {
                log(
                    "warning",
                    "Lease round failed",
                    json!({"error": e.to_string()}),
                );
                if last_renewal.elapsed() > shared.opts.lease_duration && shared.set_leader(false) {
                    log("info", "stepped down: could not renew", json!({}));
                }
            }
        }
        tokio::time::sleep(shared.opts.renew_every).await;
    }
}

/// The webhook's TLS configuration; with self-managed certificates, also the CA Secret and
/// the webhook configuration carrying its bundle.
async fn serving_tls(shared: &Shared) -> Result<Arc<tokio_rustls::rustls::ServerConfig>, String> {
    match &shared.opts.certificates {
        Certificates::Files { cert, key } => {
            let read = |p: &PathBuf| {
                std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
            };
            crate::tls::server_config(&read(cert)?, &read(key)?).map_err(|e| e.to_string())
        }
        Certificates::SelfManaged { names } => {
            let ca = authority(shared).await?;
            let serving = ca.serving(names).map_err(|e| e.to_string())?;
            keep_webhook_config(shared, &ca).await?;
            crate::tls::server_config(&serving.cert_pem, &serving.key_pem)
                .map_err(|e| e.to_string())
        }
    }
}

const CA_SECRET: &str = "wlmap-webhook-ca";

/// The CA every replica signs with: read from its Secret, or made and stored (a replica that
/// loses the race to create it reads the winner's).
async fn authority(shared: &Shared) -> Result<Authority, String> {
    use base64::Engine;
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(shared.client.clone(), &shared.opts.namespace);
    for _ in 0..3 {
        if let Some(s) = api.get_opt(CA_SECRET).await.map_err(|e| e.to_string())? {
            let data = s.data.unwrap_or_default();
            let field = |k: &str| {
                data.get(k)
                    .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                    .ok_or_else(|| format!("Secret {CA_SECRET} has no {k}"))
            };
            return Ok(Authority {
                cert_pem: field("ca.crt")?,
                key_pem: field("ca.key")?,
            });
        }
        let ca = Authority::generate().map_err(|e| e.to_string())?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
            "metadata": {"name": CA_SECRET, "labels": {"app.kubernetes.io/managed-by": "wlmap"}},
            "type": "Opaque",
            "data": {"ca.crt": b64(&ca.cert_pem), "ca.key": b64(&ca.key_pem)}}))
        .map_err(|e| e.to_string())?;
        match api.create(&PostParams::default(), &secret).await {
            Ok(_) => return Ok(ca),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(format!("create Secret {CA_SECRET}: {e}")),
        }
    }
    Err(format!("Secret {CA_SECRET}: neither read nor created"))
}

/// Where the API server reaches one of the webhook's paths.
fn client_config(endpoint: &Endpoint, path: &str, bundle: &str) -> Value {
    match endpoint {
        Endpoint::Url(base) => {
            json!({"url": format!("{}{path}", base.trim_end_matches('/')), "caBundle": bundle})
        }
        Endpoint::Service {
            namespace,
            name,
            port,
        } => json!({"service": {"namespace": namespace, "name": name, "path": path, "port": port},
            "caBundle": bundle}),
    }
}

/// The MutatingWebhookConfiguration for pods, with this CA's bundle (server-side apply: the
/// same content from every replica, so they never fight).
///
/// ```
/// let endpoint = wlmap_controller::run::Endpoint::Url("https://127.0.0.1:9443".into());
/// let c = wlmap_controller::run::webhook_config("wlmap", &endpoint, "wlmap-system", "PEM");
/// let w = &c["webhooks"][0];
/// assert_eq!(w["failurePolicy"], "Ignore");
/// assert_eq!(w["rules"][0]["operations"][0], "CREATE");
/// assert_eq!(w["clientConfig"]["url"], "https://127.0.0.1:9443/mutate-pods");
/// ```
pub fn webhook_config(name: &str, endpoint: &Endpoint, own_namespace: &str, ca_pem: &str) -> Value {
    use base64::Engine;
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "wlmap"}},
        "webhooks": [{
            "name": "pods.wlmap.run.ai",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            // Never block pod creation: a pod the webhook misses is created without a group.
            "failurePolicy": "Ignore",
            "timeoutSeconds": 2,
            "matchPolicy": "Equivalent",
            "reinvocationPolicy": "Never",
            "clientConfig": client_config(endpoint, crate::serve::MUTATE_PODS, &bundle),
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["pods"], "scope": "Namespaced"}],
            // The control plane's pods and the controller's own are never held up by it.
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                "operator": "NotIn", "values": ["kube-system", own_namespace]}]}
        }]
    })
}

/// The ValidatingWebhookConfiguration for Kartas (same name, same CA): a Karta that would not
/// load, a second gang Karta for one kind, or a changed root kind is refused. It fails open
/// like the pod webhook: with the controller away a Karta is accepted, and its `Valid`
/// condition says what is wrong once the controller is back.
///
/// ```
/// let endpoint = wlmap_controller::run::Endpoint::Url("https://127.0.0.1:9443".into());
/// let c = wlmap_controller::run::karta_webhook_config("wlmap", &endpoint, "PEM");
/// assert_eq!(c["webhooks"][0]["rules"][0]["resources"][0], "kartas");
/// assert_eq!(c["webhooks"][0]["clientConfig"]["url"], "https://127.0.0.1:9443/validate-kartas");
/// ```
pub fn karta_webhook_config(name: &str, endpoint: &Endpoint, ca_pem: &str) -> Value {
    use base64::Engine;
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "wlmap"}},
        "webhooks": [{
            "name": "kartas.wlmap.run.ai",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Ignore",
            "timeoutSeconds": 2,
            "matchPolicy": "Equivalent",
            "clientConfig": client_config(endpoint, crate::serve::VALIDATE_KARTAS, &bundle),
            "rules": [{"apiGroups": ["run.ai"], "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["kartas"], "scope": "Cluster"}]
        }]
    })
}

async fn keep_webhook_config(shared: &Shared, ca: &Authority) -> Result<(), String> {
    let o = &shared.opts;
    let params = PatchParams::apply(crate::reconcile::FIELD_MANAGER).force();
    let configs = [
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            webhook_config(&o.webhook_config, &o.endpoint, &o.namespace, &ca.cert_pem),
        ),
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            karta_webhook_config(&o.webhook_config, &o.endpoint, &ca.cert_pem),
        ),
    ];
    for (kind, plural, config) in configs {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
            plural,
        );
        let api: kube::Api<DynamicObject> = kube::Api::all_with(shared.client.clone(), &ar);
        api.patch(&o.webhook_config, &params, &Patch::Apply(&config))
            .await
            .map_err(|e| format!("apply {kind} {}: {e}", o.webhook_config))?;
    }
    Ok(())
}

/// Publish an event about a workload (failures are logged, never fatal).
pub async fn event(
    shared: &Shared,
    root: &Object,
    type_: &str,
    reason: &str,
    action: &str,
    note: &str,
) {
    use kube::runtime::events::{Event, EventType};
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some(root.api_version().to_string()),
        kind: Some(root.kind().to_string()),
        name: Some(root.name().to_string()),
        namespace: Some(root.namespace().to_string()).filter(|n| !n.is_empty()),
        uid: Some(root.uid().to_string()),
        ..Default::default()
    };
    let ev = Event {
        type_: if type_ == "Warning" {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.into(),
        note: Some(note.chars().take(1000).collect()),
        action: action.into(),
        secondary: None,
    };
    if let Err(e) = shared.recorder.publish(&ev, &reference).await {
        log(
            "warning",
            "could not publish an event",
            json!({"error": e.to_string()}),
        );
    }
}

fn karta_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("run.ai", "v1alpha1", "Karta"),
        "kartas",
    )
}

async fn list_kartas(client: &kube::Client) -> BTreeMap<String, Value> {
    let api: kube::Api<DynamicObject> = kube::Api::all_with(client.clone(), &karta_resource());
    match api.list(&Default::default()).await {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|k| serde_json::to_value(k).ok())
            .map(|v| (v["metadata"]["name"].as_str().unwrap_or("").to_string(), v))
            .collect(),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            log(
                "info",
                "the kartas.run.ai CRD is not installed: the catalog's definitions only",
                json!({}),
            );
            BTreeMap::new()
        }
        Err(e) => {
            log(
                "warning",
                "cluster definitions not read; using the catalog",
                json!({"error": e.to_string()}),
            );
            BTreeMap::new()
        }
    }
}

fn registry_of(kartas: &BTreeMap<String, Value>) -> wlmap_engine::Registry {
    let items: Vec<Value> = kartas
        .values()
        .map(|v| {
            let mut v = v.clone();
            v["apiVersion"] = json!("run.ai/v1alpha1");
            v["kind"] = json!("Karta");
            v
        })
        .collect();
    let (reg, warnings) = crate::definitions::registry(&items);
    for w in warnings {
        log("warning", &w, json!({}));
    }
    reg
}

/// Follow `kartas.run.ai`: a definition added, changed or removed takes effect at once.
async fn watch_kartas(
    shared: Arc<Shared>,
    client: kube::Client,
    mut kartas: BTreeMap<String, Value>,
) {
    let kind = Kind {
        resource: karta_resource(),
        namespaced: false,
    };
    let spec_of = |m: &BTreeMap<String, Value>| -> BTreeMap<String, String> {
        m.iter()
            .map(|(k, v)| (k.clone(), v["spec"].to_string()))
            .collect()
    };
    let mut stream = wlmap_kube::watch_stream(&client, "", &[kind], None);
    let mut listing: Option<BTreeMap<String, Value>> = None;
    let mut said = std::collections::BTreeSet::new();
    while let Some(ev) = stream.next().await {
        let before = spec_of(&kartas);
        match ev {
            WatchEvent::Relisting(_) => listing = Some(BTreeMap::new()),
            WatchEvent::Applied(_, v) => {
                let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
                match listing.as_mut() {
                    Some(l) => {
                        l.insert(name, v);
                    }
                    None => {
                        if shared.is_leader() {
                            tokio::spawn(keep_karta(shared.clone(), v.clone()));
                        }
                        kartas.insert(name, v);
                    }
                }
            }
            WatchEvent::Deleted(_, v) => {
                kartas.remove(v["metadata"]["name"].as_str().unwrap_or(""));
            }
            WatchEvent::Listed(_) => {
                kartas = listing.take().unwrap_or_default();
                *shared.kartas.write().unwrap_or_else(|e| e.into_inner()) = kartas.clone();
                keep_kartas(&shared);
            }
            WatchEvent::Failed(_, e) => {
                warn_once(&mut said, "watch of kartas.run.ai failed (retrying)", &e);
            }
        }
        *shared.kartas.write().unwrap_or_else(|e| e.into_inner()) = kartas.clone();
        if spec_of(&kartas) != before {
            log(
                "info",
                "definitions changed",
                json!({"kartas": kartas.keys().collect::<Vec<_>>()}),
            );
            *shared.registry.write().unwrap_or_else(|e| e.into_inner()) = registry_of(&kartas);
            shared.definitions_changed.notify_one();
        }
    }
}

/// Keep every Karta's labels and conditions (when this replica leads).
pub fn keep_kartas(shared: &Arc<Shared>) {
    if !shared.is_leader() {
        return;
    }
    let all: Vec<Value> = shared
        .kartas
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect();
    for k in all {
        tokio::spawn(keep_karta(shared.clone(), k));
    }
}

/// Keep one Karta's lookup labels (server-side apply of the labels alone) and its
/// conditions (the status subresource); nothing is written when both are as they should be.
async fn keep_karta(shared: Arc<Shared>, k: Value) {
    let name = k["metadata"]["name"].as_str().unwrap_or("").to_string();
    let root = &k["spec"]["structureDefinition"]["rootComponent"]["kind"];
    let text = |f: &str| root[f].as_str().unwrap_or("").to_string();
    let gvk = kube::api::GroupVersionKind::gvk(&text("group"), &text("version"), &text("kind"));
    let served = kube::discovery::pinned_kind(&shared.client, &gvk)
        .await
        .is_ok();
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let u = crate::definitions::upkeep(&k, served, &now);
    let api: kube::Api<DynamicObject> =
        kube::Api::all_with(shared.client.clone(), &karta_resource());
    if let Some(labels) = u.labels {
        let patch = json!({"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
            "metadata": {"name": name, "labels": labels}});
        let params = PatchParams::apply(crate::reconcile::FIELD_MANAGER).force();
        if let Err(e) = api.patch(&name, &params, &Patch::Apply(&patch)).await {
            log(
                "warning",
                "could not label a Karta",
                json!({"karta": name, "error": e.to_string()}),
            );
        }
    }
    if let Some(conditions) = u.conditions {
        let patch = json!({"status": {"conditions": conditions}});
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            log(
                "warning",
                "could not write a Karta's status",
                json!({"karta": name, "error": e.to_string()}),
            );
        }
    }
}

/// Follow CustomResourceDefinitions: a kind a definition names may be served only later
/// (its CRD installed after the controller started), or no longer.
async fn watch_crds(shared: Arc<Shared>, client: kube::Client) {
    let kind = Kind {
        resource: ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
            ),
            "customresourcedefinitions",
        ),
        namespaced: false,
    };
    let mut stream = wlmap_kube::watch_stream(&client, "", &[kind], None);
    let mut listed = false;
    let mut said = std::collections::BTreeSet::new();
    while let Some(ev) = stream.next().await {
        match ev {
            WatchEvent::Listed(_) => listed = true,
            // Established or gone: the kinds to watch may differ.
            WatchEvent::Applied(..) | WatchEvent::Deleted(..) if listed => {
                shared.definitions_changed.notify_one();
                // A Karta's kind may be served now, or no longer.
                keep_kartas(&shared);
            }
            WatchEvent::Failed(_, e) => {
                warn_once(&mut said, "watch of CRDs failed (retrying)", &e);
            }
            _ => {}
        }
    }
}

/// The kinds to watch for the definitions in force, as the server serves them.
async fn kinds_for(
    client: &kube::Client,
    reg: &wlmap_engine::Registry,
) -> Result<Vec<Kind>, String> {
    let roots: Vec<GroupVersionKind> = reg.iter().map(|d| d.root_gvk()).collect();
    let d = kube::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .map_err(|e| format!("API discovery: {e}"))?;
    let mut kinds: Vec<Kind> = Vec::new();
    for g in wlmap_inventory::kinds_to_watch(reg, &roots) {
        if let Some(k) = wlmap_kube::kind_in(&d, &g)
            && !kinds
                .iter()
                .any(|x| x.resource.group == k.resource.group && x.resource.kind == k.resource.kind)
        {
            kinds.push(k);
        }
    }
    Ok(kinds)
}

/// Keep the inventory live: one watch per kind the definitions need; new definitions with
/// the same kinds are swapped in place, new kinds start the watches again.
async fn watch_workloads(shared: Arc<Shared>, watch_client: kube::Client) {
    loop {
        let reg = shared
            .registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let kinds = match kinds_for(&shared.client, &reg).await {
            Ok(k) => k,
            Err(e) => {
                log(
                    "warning",
                    "cannot tell which kinds to watch (retrying)",
                    json!({"error": e}),
                );
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
        };
        let gks: Vec<GroupKind> = kinds
            .iter()
            .map(|k| GroupKind::new(&k.resource.group, &k.resource.kind))
            .collect();
        log(
            "info",
            "watching",
            json!({"kinds": gks.iter().map(|g| g.to_string()).collect::<Vec<_>>()}),
        );
        *shared.kinds.write().unwrap_or_else(|e| e.into_inner()) = kinds.clone();
        *shared.write_feed() = Feed::new(reg, gks.clone());
        let mut stream = wlmap_kube::watch_stream(&watch_client, "", &kinds, None);
        let mut said = std::collections::BTreeSet::new();
        loop {
            tokio::select! {
                ev = stream.next() => {
                    let Some(ev) = ev else { break };
                    on_workload_event(&shared, ev, &mut said);
                }
                _ = shared.definitions_changed.notified() => {
                    let reg = shared.registry.read().unwrap_or_else(|e| e.into_inner()).clone();
                    match kinds_for(&shared.client, &reg).await {
                        Ok(k) if same_kinds(&k, &kinds) => {
                            let changes = shared.write_feed().inventory.set_definitions(reg);
                            shared.enqueue(changes.into_iter().map(|c| c.key));
                        }
                        // New kinds (or discovery failed): watch again from scratch.
                        _ => break,
                    }
                }
            }
        }
    }
}

fn same_kinds(a: &[Kind], b: &[Kind]) -> bool {
    let set = |k: &[Kind]| -> std::collections::BTreeSet<(String, String)> {
        k.iter()
            .map(|k| (k.resource.group.clone(), k.resource.kind.clone()))
            .collect()
    };
    set(a) == set(b)
}

fn on_workload_event(
    shared: &Shared,
    ev: WatchEvent,
    said: &mut std::collections::BTreeSet<String>,
) {
    let object = |v: Value| {
        let mut v = v;
        wlmap_inventory::trim(&mut v);
        Object::new(v)
    };
    let ev = match ev {
        WatchEvent::Relisting(i) => FeedEvent::Relisting(i),
        WatchEvent::Applied(i, v) => FeedEvent::Applied(i, object(v)),
        WatchEvent::Deleted(i, v) => FeedEvent::Deleted(i, object(v)),
        WatchEvent::Listed(i) => FeedEvent::Listed(i),
        WatchEvent::Failed(_, e) => {
            warn_once(said, "a watch failed (retrying)", &e);
            return;
        }
    };
    let fed = shared.write_feed().on(ev);
    match fed {
        Fed::Listing => {}
        Fed::Synced => {
            log(
                "info",
                "inventory listed",
                json!({"workloads": shared.read_feed().inventory.workloads().count()}),
            );
            shared.enqueue_all();
        }
        Fed::Touched(keys) => {
            let feed = shared.read_feed();
            let workloads: Vec<ObjectKey> = keys
                .into_iter()
                .filter(|k| feed.inventory.workload(k).is_some())
                .collect();
            drop(feed);
            shared.enqueue(workloads);
        }
    }
}

/// Keep the store of gang objects that exist; one of ours deleted by someone else is
/// written again (its workload is queued).
async fn watch_gang_objects(shared: Arc<Shared>, watch_client: kube::Client) {
    let kind = Kind {
        resource: crate::reconcile::gang_resource(shared.opts.format),
        namespaced: true,
    };
    let mut stream = wlmap_kube::watch_stream(&watch_client, "", &[kind], None);
    let mut listing: Option<Vec<Value>> = None;
    let mut said = std::collections::BTreeSet::new();
    let store = || {
        shared
            .gang_objects
            .write()
            .unwrap_or_else(|e| e.into_inner())
    };
    while let Some(ev) = stream.next().await {
        match ev {
            WatchEvent::Relisting(_) => listing = Some(Vec::new()),
            WatchEvent::Applied(_, v) => match listing.as_mut() {
                Some(l) => l.push(v),
                None => store().insert(v),
            },
            WatchEvent::Deleted(_, v) => {
                store().remove(&v);
                if crate::gangs::is_ours(&v) {
                    shared.enqueue(owner_key(&v));
                }
            }
            WatchEvent::Listed(_) => {
                store().replace_all(listing.take().unwrap_or_default());
                shared.enqueue_all();
            }
            WatchEvent::Failed(_, e) => {
                warn_once(&mut said, "watch of gang objects failed (retrying)", &e);
            }
        }
    }
}

/// The workload that owns a gang object.
fn owner_key(v: &Value) -> Option<ObjectKey> {
    let r = v["metadata"]["ownerReferences"].as_array()?.first()?;
    Some(ObjectKey::new(
        v["metadata"]["namespace"].as_str().unwrap_or(""),
        GroupKind::from_api_version(r["apiVersion"].as_str()?, r["kind"].as_str()?),
        r["name"].as_str()?,
    ))
}

/// Log a failure once per distinct message (a failing watch is retried with backoff and
/// would otherwise say the same thing at every attempt).
fn warn_once(said: &mut std::collections::BTreeSet<String>, msg: &str, e: &wlmap_kube::Error) {
    if said.insert(e.to_string()) {
        log("warning", msg, json!({"error": e.to_string()}));
    }
}
