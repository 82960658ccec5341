//! `wlmap controller`: the tasks of one replica, wired together. Every replica watches the
//! workloads and serves the webhook; the one holding the Lease writes gang objects.

use crate::leader::Elector;
use crate::state::{Shared, log};
use crate::watches;
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use wlmap_engine::{Object, SchedulerFormat};

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
    /// How the read-only platform view on the probe address answers (its bearer token).
    pub view: wlmap_server::Options,
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
    served(&client, opts.format).await?;
    let kartas = watches::list_kartas(&client).await;
    let registry = watches::registry_of(&kartas);
    let shared = Arc::new(Shared::new(opts.clone(), client.clone(), registry));

    let tls = crate::registration::serving_tls(&shared).await?;
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
            "format": opts.format.name(), "identity": opts.identity}),
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
    tokio::spawn(watches::watch_workloads(
        shared.clone(),
        watch_client.clone(),
    ));
    tokio::spawn(watches::watch_gang_objects(
        shared.clone(),
        watch_client.clone(),
    ));
    tokio::spawn(watches::watch_kartas(
        shared.clone(),
        watch_client.clone(),
        kartas,
    ));
    tokio::spawn(watches::watch_crds(shared.clone(), watch_client));
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

/// The hierarchical form's kinds are alpha and off by default: say at once, and how to turn
/// them on, rather than fail at every reconcile. (The other formats' kinds may arrive later,
/// with their scheduler's CRDs: their watches wait for them.)
async fn served(client: &kube::Client, format: SchedulerFormat) -> Result<(), String> {
    if format != SchedulerFormat::NativeComposite {
        return Ok(());
    }
    let d = kube::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .map_err(|e| format!("API discovery: {e}"))?;
    let missing: Vec<String> = crate::reconcile::gang_kinds(format)
        .into_iter()
        .filter(|k| {
            let gvk = kube::api::GroupVersionKind::gvk(&k.group, &k.version, &k.kind);
            d.resolve_gvk(&gvk).is_none()
        })
        .map(|k| format!("{}.{}/{}", k.plural, k.group, k.version))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "--scheduler {format} needs {} served: turn on the feature gates GenericWorkload, TopologyAwareWorkloadScheduling and CompositePodGroup (API server and scheduler) and --runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true, or use --scheduler native",
        missing.join(", ")
    ))
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
                    watches::keep_kartas(&shared);
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
