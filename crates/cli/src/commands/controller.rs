//! `wlmap controller`: the options turned into the controller's, then the controller runs
//! until it is told to stop.

use crate::args::{ControllerArgs, Global};
use crate::exit::{Code, Failure, Result};
use std::time::Duration;
use wlmap_controller::{Certificates, Endpoint, Options};

/// The namespace a pod runs in (in a cluster).
const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// `wlmap controller`: run the in-cluster controller and its webhook until the process is
/// stopped.
pub fn run(g: &Global, a: &ControllerArgs) -> Result {
    let namespace = g
        .namespace
        .clone()
        .or_else(|| std::fs::read_to_string(POD_NAMESPACE_FILE).ok())
        .map(|n| n.trim().to_string())
        .unwrap_or_else(|| "wlmap-system".into());
    if a.scheduler == wlmap_engine::SchedulerFormat::Kueue
        && a.webhook_config.as_str() >= wlmap_controller::gangs::KUEUE_WEBHOOK_CONFIG
    {
        return Err(crate::exit::usage(format!(
            "--scheduler kueue: the webhook configuration {:?} sorts after Kueue's ({}), so Kueue would see pods before wlmap labels them; name it to sort first (--webhook-config 00-wlmap)",
            a.webhook_config,
            wlmap_controller::gangs::KUEUE_WEBHOOK_CONFIG
        )));
    }
    let endpoint = endpoint(a, &namespace);
    let opts = Options {
        connect: wlmap_kube::ConnectOptions {
            kubeconfig: g.kubeconfig.clone(),
            context: g.context.clone(),
            timeout: Some(Duration::from_secs(g.request_timeout)),
            page_size: None,
        },
        format: a.scheduler,
        namespace,
        identity: a.identity.clone().unwrap_or_else(host_name),
        lease_name: a.lease_name.clone(),
        lease_duration: Duration::from_secs(a.lease_duration),
        renew_every: Duration::from_secs(a.renew_every),
        webhook_addr: a.webhook_address,
        probe_addr: a.probe_address,
        view: wlmap_server::Options {
            token: a
                .view_token_file
                .as_deref()
                .map(crate::commands::serve::read_token)
                .transpose()?,
        },
        certificates: certificates(a, &endpoint),
        endpoint,
        webhook_config: a.webhook_config.clone(),
        kueue_frameworks: a.kueue_frameworks.clone(),
        build: wlmap_controller::Build {
            version: env!("CARGO_PKG_VERSION").into(),
            revision: env!("WLMAP_REVISION").into(),
        },
    };
    wlmap_controller::run(opts).map_err(|e| Failure::new(Code::Runtime, anyhow::anyhow!(e)))
}

/// Where the API server reaches the webhooks: a URL, or a Service (`wlmap-webhook` in the
/// controller's namespace unless named).
fn endpoint(a: &ControllerArgs, namespace: &str) -> Endpoint {
    match &a.webhook_url {
        Some(u) => Endpoint::Url(u.clone()),
        None => Endpoint::Service {
            namespace: namespace.to_string(),
            name: a
                .webhook_service
                .clone()
                .unwrap_or_else(|| "wlmap-webhook".into()),
            port: a.webhook_service_port,
        },
    }
}

/// The webhook's serving certificate: the files given, or one the controller makes and keeps
/// for the Service's names (and any `--webhook-host`).
fn certificates(a: &ControllerArgs, endpoint: &Endpoint) -> Certificates {
    if let (Some(cert), Some(key)) = (&a.tls_cert_file, &a.tls_key_file) {
        return Certificates::Files {
            cert: cert.clone(),
            key: key.clone(),
        };
    }
    let mut names = a.webhook_host.clone();
    if let Endpoint::Service {
        namespace, name, ..
    } = endpoint
    {
        names.push(format!("{name}.{namespace}.svc"));
        names.push(format!("{name}.{namespace}.svc.cluster.local"));
    }
    Certificates::SelfManaged { names }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "wlmap-controller".into())
}
