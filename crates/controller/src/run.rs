//! `wlmap controller`: the tasks of one replica, wired together. Every replica watches the
//! workloads and serves the webhook; the one holding the Lease writes gang objects.

use crate::error::Error;
use crate::leader::Elector;
use crate::options::Options;
use crate::queue::Queue;
use crate::report::log;
use crate::state::Shared;
use crate::watches;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::watch;
use wlmap_engine::SchedulerFormat;

/// Run until SIGTERM or Ctrl-C.
pub fn run(opts: Options) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Setup(format!("cannot start the runtime: {e}")))?;
    rt.block_on(main(opts))
}

async fn main(opts: Options) -> Result<(), Error> {
    log(
        "info",
        "starting",
        json!({"version": opts.build.version, "revision": opts.build.revision}),
    );
    let config = wlmap_kube::load_config(&opts.connect)
        .await
        .map_err(|e| Error::Setup(e.to_string()))?;
    let client = kube::Client::try_from(config.clone()).map_err(Error::api("client"))?;
    let mut watch_config = config;
    watch_config.read_timeout = Some(wlmap_kube::WATCH_READ_TIMEOUT);
    let watch_client = kube::Client::try_from(watch_config).map_err(Error::api("client"))?;
    served(&client, opts.format).await?;
    let kartas = watches::list_kartas(&client).await;
    let registry = watches::registry_of(&kartas);
    let (queue, due) = Queue::new();
    let shared = Arc::new(Shared::new(opts.clone(), client.clone(), registry, queue));

    let tls = crate::registration::serving_tls(&shared).await?;
    let (stop_tx, stop) = watch::channel(false);
    let webhook = tokio::net::TcpListener::bind(opts.webhook_addr)
        .await
        .map_err(|e| Error::Setup(format!("webhook address {}: {e}", opts.webhook_addr)))?;
    let probes = tokio::net::TcpListener::bind(opts.probe_addr)
        .await
        .map_err(|e| Error::Setup(format!("probe address {}: {e}", opts.probe_addr)))?;
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
    tokio::spawn(watches::catch_up(shared.clone()));
    tokio::spawn(crate::reconcile::worker(shared.clone(), due));
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

/// A format whose kinds are built in but off by default (the hierarchical form's are alpha)
/// says at once what to turn on, rather than fail at every reconcile. (The other formats'
/// kinds may arrive later, with their scheduler's CRDs: their watches wait for them.)
async fn served(client: &kube::Client, format: SchedulerFormat) -> Result<(), Error> {
    let Some(hint) = format.format().when_not_served() else {
        return Ok(());
    };
    let d = kube::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .map_err(Error::api("API discovery"))?;
    let missing: Vec<String> = crate::gangs::kinds(format)
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
    Err(Error::Setup(format!(
        "--scheduler {format} needs {} served: {hint}",
        missing.join(", ")
    )))
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
                    // What was put off while following is resolved before it is decided on.
                    shared.catch_up();
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
