//! How the controller runs: its options, where its certificate comes from and how the API
//! server reaches its webhook.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use wlmap_engine::SchedulerFormat;

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "wlmap-controller";

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

/// Which wlmap runs (logged at start, `wlmap_build_info`).
#[derive(Debug, Clone, Default)]
pub struct Build {
    /// wlmap's version.
    pub version: String,
    /// The git revision it was built from.
    pub revision: String,
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
    /// Kueue's integrations that are on (`--scheduler kueue`): see
    /// [`crate::gangs::kueue_runs_itself`].
    pub kueue_frameworks: Vec<String>,
    /// Which wlmap this is.
    pub build: Build,
}
