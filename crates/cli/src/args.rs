//! Command-line arguments (clap). Only parsing here; no I/O.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use wlmap_engine::SchedulerFormat;

const AFTER_HELP: &str = "\
Sources (same commands for all):
  a live cluster   --kubeconfig / --context / -n / -A   (the default)
  a snapshot       --snapshot FILE (repeatable, - for stdin): YAML/JSON documents or Lists,
                   e.g. `kubectl get jobsets,jobs,pods -A -o yaml > snap.yaml`
  the demo         --demo: a small embedded cluster, no cluster needed

Exit codes: 0 ok, 1 runtime error (cluster unreachable/forbidden, evaluation failed),
2 usage, 3 object not found, 4 no definition for the kind, 5 invalid input.

Examples:
  wlmap --demo get -A --all-types
  wlmap --demo describe jobset/llm-train -n ml
  wlmap get pytorchjobs -n team-a -o wide
  wlmap describe -f my-jobset.yaml -o json
  wlmap validate my-karta.yaml";

/// wlmap: see any Kubernetes workload (JobSet, RayCluster, LeaderWorkerSet, Dynamo...) as one
/// tree of components with its status and GPU total, from definitions instead of adapters.
#[derive(Debug, Parser)]
#[command(
    name = "wlmap",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("WLMAP_REVISION"), ")"),
    about,
    after_help = AFTER_HELP,
    propagate_version = true
)]
pub struct Cli {
    /// Connection and source options.
    #[command(flatten)]
    pub global: Global,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args, Clone)]
pub struct Global {
    /// Path to the kubeconfig file.
    #[arg(long, global = true, env = "KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Namespace (default: the context's namespace, else "default").
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// All namespaces.
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// Read objects from a snapshot instead of a cluster (repeatable; - for stdin).
    #[arg(long, global = true, value_name = "FILE")]
    pub snapshot: Vec<PathBuf>,
    /// Use the embedded demo cluster.
    #[arg(long, global = true)]
    pub demo: bool,
    /// Extra definitions (file or directory of YAML/JSON); they override built-in and cluster ones.
    #[arg(long, global = true, value_name = "FILE|DIR")]
    pub definitions: Vec<PathBuf>,
    /// Use definitions marked experimental (`spec.experimental: true`) too; without it they
    /// are listed by `wlmap definitions` but not used.
    #[arg(long, global = true)]
    pub experimental: bool,
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum)]
    pub output: Option<Output>,
    /// More detail on errors.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// Maximum time for each API request, in seconds.
    #[arg(long, global = true, default_value_t = 30)]
    pub request_timeout: u64,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned columns.
    Table,
    /// Columns with more detail.
    Wide,
    /// JSON (stable contract, see README).
    Json,
    /// YAML (same data as JSON).
    Yaml,
}

/// The subcommands, kubectl-style: reading workloads, acting on them, and authoring definitions.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List workloads with status, pods and GPUs.
    #[command(
        after_help = "Examples:\n  wlmap --demo get -A --all-types\n  wlmap get jobsets -n ml -o wide\n  wlmap get rayclusters/my-cluster -n ray -o json"
    )]
    Get(GetArgs),
    /// Show one workload as a tree: components, instances, replicas, pods, totals, status.
    #[command(
        after_help = "Examples:\n  wlmap --demo describe jobset/llm-train -n ml\n  wlmap describe -f jobset.yaml --explain\n  wlmap describe lws/vllm -n serving -o json"
    )]
    Describe(DescribeArgs),
    /// List the definitions in use (built-in, cluster, files).
    #[command(
        after_help = "Examples:\n  wlmap definitions\n  wlmap definitions jobset-x-k8s-io-jobset-v1alpha2 -o yaml > jobset-karta.yaml"
    )]
    Definitions(DefinitionsArgs),
    /// Check definition files: decoding (an unknown field is a warning), structure, expressions.
    #[command(
        after_help = "Examples:\n  wlmap validate my-karta.yaml\n  wlmap validate defs/*.yaml"
    )]
    Validate(ValidateArgs),
    /// Change the pod templates of a workload (scheduler, labels, annotations, ...).
    #[command(
        after_help = "Examples:\n  wlmap set -f jobset.yaml --scheduler-name kai-scheduler -o yaml\n  wlmap set -f lws.yaml --component worker --label team=ml --toleration nvidia.com/gpu:NoSchedule"
    )]
    Set(SetArgs),
    /// Gang-scheduling groups of a workload, in the format of a scheduler.
    #[command(
        after_help = "Examples:\n  wlmap --demo gang lws/qwen-72b -n serving\n  wlmap gang -f jobset.yaml --format kai"
    )]
    Gang(GangArgs),
    /// Run the controller: gang objects for every workload with gang instructions, and the
    /// pod admission webhook that puts each pod in its group (run as a Deployment).
    #[command(
        after_help = "Examples:\n  wlmap controller --namespace wlmap-system --webhook-service wlmap-webhook\n  wlmap controller --scheduler volcano --tls-cert-file /certs/tls.crt --tls-key-file /certs/tls.key\n  wlmap controller --webhook-url https://127.0.0.1:9443 --webhook-host 127.0.0.1"
    )]
    Controller(ControllerArgs),
    /// Serve the platform view: Prometheus workload metrics on /metrics and a live web page of
    /// every workload, its tree and its GPUs on / (read-only).
    #[command(
        after_help = "Examples:\n  wlmap --demo serve\n  wlmap serve -A --listen 0.0.0.0:8080 --token-file /etc/wlmap/token\n  wlmap --snapshot cluster.yaml serve   # re-read when the file changes"
    )]
    Serve(ServeArgs),
    /// Draft a definition for a CRD: its pod templates, replicas, status and suspend from the
    /// schema (`# TODO` where it guesses); `--from-objects` confirms them with live objects.
    #[command(
        after_help = "Examples:\n  wlmap scaffold crds/ray.io_rayclusters.yaml > raycluster.yaml\n  wlmap scaffold --crd rayclusters.ray.io --from-objects\n  wlmap --snapshot cluster.yaml scaffold trainer-crd.yaml --from-objects"
    )]
    Scaffold(ScaffoldArgs),
    /// Check that every definition in force still fits its kind: served, its paths in the
    /// schema, its condition types and phases allowed, live objects evaluated (exit 5 on findings).
    #[command(
        after_help = "Examples:\n  wlmap check\n  wlmap check --crd crds/ -o json\n  wlmap check --definitions raycluster.yaml --crd ray.io_rayclusters.yaml"
    )]
    Check(CheckArgs),
    /// Compare the catalog with recorded states of real operators.
    #[command(after_help = "Examples:\n  wlmap conformance ../shared/conformance/recorded")]
    Conformance(ConformanceArgs),
    /// Print shell completions.
    #[command(
        after_help = "Examples:\n  wlmap completion bash > /etc/bash_completion.d/wlmap\n  wlmap completion zsh > \"${fpath[1]}/_wlmap\""
    )]
    Completion {
        /// The shell to write the completion script for.
        shell: clap_complete::Shell,
    },
    /// Print wlmap's version, the git revision it was built from, its catalog and the
    /// definition formats it reads.
    #[command(after_help = "Examples:\n  wlmap version\n  wlmap version -o json")]
    Version,
    /// Write the manual pages (wlmap.1 and one per command) into a directory.
    #[command(
        hide = true,
        after_help = "Examples:\n  wlmap man /usr/local/share/man/man1"
    )]
    Man {
        /// The directory (created if missing).
        dir: PathBuf,
    },
}

/// `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// TYPE, TYPE/NAME, or TYPE NAME (kind, plural or `kind.group`).
    pub targets: Vec<String>,
    /// Every kind that has a definition; only top-level workloads.
    #[arg(long)]
    pub all_types: bool,
    /// Label selector (`k=v,k!=v,k`).
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// After the listing, watch the cluster and print a row each time a workload's row
    /// changes (status, pods, GPUs), until interrupted; with `-o json`, one JSON object per
    /// line: `{"type": "ADDED"|"MODIFIED"|"DELETED", "object": ITEM}`.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

/// `describe`.
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// TYPE/NAME or TYPE NAME.
    pub targets: Vec<String>,
    /// A manifest to describe (file mode: spec only, plus any pods in the file); - for stdin.
    #[arg(short = 'f', long)]
    pub file: Option<PathBuf>,
    /// Show how every status rule evaluated.
    #[arg(long)]
    pub explain: bool,
    /// Watch the cluster and draw the tree again each time it changes, until interrupted
    /// (`-o json`: one JSON object per line).
    #[arg(short = 'w', long)]
    pub watch: bool,
}

/// `definitions`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DefinitionsArgs {
    /// A definition name.
    pub name: Option<String>,
    /// Register or remove definitions in the cluster.
    #[command(subcommand)]
    pub action: Option<DefinitionsAction>,
}

/// `definitions apply|delete`.
#[derive(Debug, Subcommand)]
pub enum DefinitionsAction {
    /// Register built-in (or --definitions) definitions as Karta objects: server-side apply
    /// (field manager wlmap), with the labels KAI Scheduler finds them by; says what changes.
    #[command(
        after_help = "Examples:\n  wlmap definitions apply --all\n  wlmap definitions apply jobset-x-k8s-io-jobset-v1alpha2 --dry-run=server"
    )]
    Apply(DefinitionsApplyArgs),
    /// Remove Karta objects (with --all: every one wlmap applied).
    #[command(after_help = "Examples:\n  wlmap definitions delete --all")]
    Delete(DefinitionsDeleteArgs),
}

/// `definitions apply`.
#[derive(Debug, Args)]
pub struct DefinitionsApplyArgs {
    /// Definition names.
    #[arg(required_unless_present = "all")]
    pub names: Vec<String>,
    /// Every definition in use (the catalog and --definitions files).
    #[arg(long, conflicts_with = "names")]
    pub all: bool,
    /// client: say what would change; server: also let the API server check it (dryRun=All).
    #[arg(long, value_name = "client|server")]
    pub dry_run: Option<String>,
}

/// `definitions delete`.
#[derive(Debug, Args)]
pub struct DefinitionsDeleteArgs {
    /// Karta names.
    #[arg(required_unless_present = "all")]
    pub names: Vec<String>,
    /// Every Karta wlmap applied (labelled app.kubernetes.io/managed-by=wlmap).
    #[arg(long, conflicts_with = "names")]
    pub all: bool,
}

/// `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Definition files (- for stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The target kind's CRD, to check that spec paths exist there.
    #[arg(long, value_name = "CRD_FILE")]
    pub crd: Option<PathBuf>,
    /// Count warnings as errors (an unknown field, which the format's Go implementation
    /// ignores, among them): exit 5 when there is one.
    #[arg(long)]
    pub strict: bool,
}

/// `set`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// TYPE/NAME or TYPE NAME (cluster).
    pub targets: Vec<String>,
    /// A manifest to update; the result is printed.
    #[arg(short = 'f', long)]
    pub file: Option<PathBuf>,
    /// Only this component (and instance: NAME/INSTANCE).
    #[arg(long, value_name = "NAME[/INSTANCE]")]
    pub component: Option<String>,
    /// Scheduler name.
    #[arg(long)]
    pub scheduler_name: Option<String>,
    /// Label k=v (repeatable).
    #[arg(long, value_name = "K=V")]
    pub label: Vec<String>,
    /// Annotation k=v (repeatable).
    #[arg(long, value_name = "K=V")]
    pub annotation: Vec<String>,
    /// Priority class name.
    #[arg(long)]
    pub priority_class_name: Option<String>,
    /// Node selector k=v (repeatable).
    #[arg(long, value_name = "K=V")]
    pub node_selector: Vec<String>,
    /// Toleration key[=value]:Effect (repeatable).
    #[arg(long, value_name = "KEY[=VALUE]:EFFECT")]
    pub toleration: Vec<String>,
    /// Suspend the workload through its definition.
    #[arg(long, conflicts_with = "resume")]
    pub suspend: bool,
    /// Resume the workload through its definition.
    #[arg(long)]
    pub resume: bool,
    /// client: print only; server: send with dryRun=All.
    #[arg(long, value_name = "client|server")]
    pub dry_run: Option<String>,
}

/// `gang`.
#[derive(Debug, Args)]
pub struct GangArgs {
    /// TYPE/NAME or TYPE NAME.
    pub targets: Vec<String>,
    /// A manifest (predicted groups, plus pods found in the file).
    #[arg(short = 'f', long)]
    pub file: Option<PathBuf>,
    /// Output objects for a scheduler.
    #[arg(long, value_parser = scheduler_formats(SchedulerFormat::ALL.iter().copied()))]
    pub format: Option<SchedulerFormat>,
}

/// `scaffold`.
#[derive(Debug, Args)]
pub struct ScaffoldArgs {
    /// A file holding the CustomResourceDefinition (YAML or JSON; - for stdin).
    #[arg(conflicts_with = "crd")]
    pub file: Option<PathBuf>,
    /// A CRD served by the cluster, by name (`rayclusters.ray.io`).
    #[arg(long, value_name = "NAME")]
    pub crd: Option<String>,
    /// The kind to draft when the file holds several CRDs.
    #[arg(long)]
    pub kind: Option<String>,
    /// Learn from live objects of the kind and their pods (the cluster's, or the snapshot's):
    /// pod labels, the kinds between the workload and its pods, condition types.
    #[arg(long)]
    pub from_objects: bool,
}

/// `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Check against these CRD files instead of the cluster (definitions of other kinds are
    /// not checked).
    #[arg(long, value_name = "FILE")]
    pub crd: Vec<PathBuf>,
}

/// `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback by default: say 0.0.0.0:8080 to expose it).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// A file holding a bearer token every request but /healthz and /readyz must present
    /// (`Authorization: Bearer TOKEN`; a browser opens /?token=TOKEN once).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

/// `controller`.
#[derive(Debug, Args)]
pub struct ControllerArgs {
    /// The scheduler to write gang objects and pod tags for.
    #[arg(long, default_value = "native", value_parser = scheduler_formats(SchedulerFormat::controller_formats()))]
    pub scheduler: SchedulerFormat,
    /// This replica's identity in the leader Lease (default: $POD_NAME, else the host name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// The leader Lease's name (in the controller's namespace, -n).
    #[arg(long, default_value = "wlmap-controller")]
    pub lease_name: String,
    /// Seconds a Lease renewal holds.
    #[arg(long, default_value_t = 15)]
    pub lease_duration: u64,
    /// Seconds between renewals.
    #[arg(long, default_value_t = 5)]
    pub renew_every: u64,
    /// The webhook's TLS address.
    #[arg(long, default_value = "0.0.0.0:9443")]
    pub webhook_address: std::net::SocketAddr,
    /// The address of /healthz, /readyz and /metrics, and of the read-only web view and its
    /// JSON API (`wlmap serve`'s `/` and `/api/...`) (plain HTTP).
    #[arg(long, default_value = "0.0.0.0:8081")]
    pub probe_address: std::net::SocketAddr,
    /// A file holding a bearer token the web view and its API require (not the probes, not
    /// /metrics); see `wlmap serve --token-file`.
    #[arg(long, value_name = "FILE")]
    pub view_token_file: Option<PathBuf>,
    /// The Service the API server reaches the webhook through (in the controller's namespace).
    #[arg(long, conflicts_with = "webhook_url")]
    pub webhook_service: Option<String>,
    /// The Service's port.
    #[arg(long, default_value_t = 443)]
    pub webhook_service_port: u16,
    /// The base URL the API server reaches the webhooks at, a controller outside the cluster
    /// (paths /mutate-pods and /validate-kartas are appended).
    #[arg(long)]
    pub webhook_url: Option<String>,
    /// Extra names (DNS or IP) for the self-managed serving certificate (repeatable).
    #[arg(long)]
    pub webhook_host: Vec<String>,
    /// The MutatingWebhookConfiguration the controller keeps (self-managed certificates).
    /// With `--scheduler kueue` its name must sort before Kueue's
    /// (`kueue-mutating-webhook-configuration`): the API server calls mutating webhooks in the
    /// order of their configurations' names, and Kueue's must see the pod group's labels.
    #[arg(long, default_value = "wlmap")]
    pub webhook_config: String,
    /// With `--scheduler kueue`: Kueue's integrations that are on (its configuration's
    /// `integrations.frameworks`, comma-separated); a workload of such a kind labelled with
    /// a queue is Kueue's own, and wlmap writes no pod group for it. Default: Kueue v0.17's.
    #[arg(long, value_delimiter = ',', default_values_t = wlmap_controller::gangs::KUEUE_FRAMEWORKS.iter().map(|f| f.to_string()))]
    pub kueue_frameworks: Vec<String>,
    /// Serving certificate from a file (cert-manager); the CA injector fills the caBundle.
    #[arg(long, requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// Its private key.
    #[arg(long, requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
}

/// A parser of scheduler format names, taking only `formats` (help lists each with its
/// summary).
fn scheduler_formats(
    formats: impl IntoIterator<Item = SchedulerFormat>,
) -> impl clap::builder::TypedValueParser<Value = SchedulerFormat> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        formats
            .into_iter()
            .map(|f| PossibleValue::new(f.name()).help(f.summary())),
    )
    .try_map(|name| name.parse::<SchedulerFormat>())
}

/// `conformance`.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The recordings directory (`conformance/recorded`).
    pub dir: PathBuf,
}
