//! `wlmap`: a thin binary over the wlmap libraries. Parse, pick the source of objects, run one
//! command, map the outcome to an exit code.

mod args;
mod cluster;
mod commands;
mod context;
mod defs;
mod exit;
mod render;
mod source;

use args::{Cli, Command};
use clap::{CommandFactory, Parser};
use context::Context;
use exit::{Code, Failure};
use std::io::Write;
use wlmap_inventory::Index;

// Resolving a cluster-wide view allocates many small JSON and jaq values; with mimalloc the
// view of a large snapshot takes about a quarter less time, and 8 % less memory, than with
// glibc's allocator (BENCHMARKS.md, "What features cost").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Write to stdout; a closed pipe (`wlmap get ... | head`) ends the process quietly.
pub fn write_stdout(s: &str) {
    let mut out = std::io::stdout().lock();
    if out
        .write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .is_err()
    {
        std::process::exit(0);
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match &cli.command {
        Command::Completion { shell } => {
            let mut cmd = Cli::command();
            let mut buf = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "wlmap", &mut buf);
            write_stdout(&String::from_utf8_lossy(&buf));
            return Ok(());
        }
        Command::Validate(a) => return commands::validate::run(a),
        Command::Version => return commands::version::run(cli.global.output),
        Command::Man { dir } => return commands::version::man(dir),
        Command::Controller(a) => return commands::controller::run(&cli.global, a),
        _ => {}
    }
    let mut g = cli.global.clone();
    if matches!(cli.command, Command::Serve(_)) && g.namespace.is_none() {
        // The platform view is of the whole cluster unless a namespace is named.
        g.all_namespaces = true;
    }
    let (objects, cluster) = commands::reads(&cli.command);
    let ctx = match source_of(cluster, &g) {
        Source::Offline => offline(&cli.command, g)?,
        Source::Catalog => {
            let reg = defs::registry(&g.definitions, &[], g.experimental)?;
            Context {
                global: g,
                index: Index::new(reg, []),
                offline: true,
                cluster: None,
            }
        }
        Source::Cluster => connected(objects, g)?,
    };
    dispatch(&cli.command, ctx)
}

/// Where a command's objects come from.
enum Source {
    /// The demo, snapshot files, or nothing (the command needs no objects).
    Offline,
    /// No cluster configured at all: the catalog (and files) is the whole answer.
    Catalog,
    /// The cluster of the kubeconfig.
    Cluster,
}

/// Where a command's objects come from, given whether it talks to a cluster.
fn source_of(cluster: commands::Cluster, g: &args::Global) -> Source {
    use commands::Cluster;
    if g.demo || !g.snapshot.is_empty() || cluster == Cluster::No {
        Source::Offline
    } else if cluster == Cluster::IfConfigured
        && g.kubeconfig.is_none()
        && std::env::var_os("KUBECONFIG").is_none()
        && !default_kubeconfig_exists()
    {
        Source::Catalog
    } else {
        Source::Cluster
    }
}

/// The demo, the snapshot files, or no objects; the catalog and `--definitions` files.
fn offline(command: &Command, g: args::Global) -> Result<Context, Failure> {
    let reg = defs::registry(&g.definitions, &[], g.experimental)?;
    let objects = if g.demo {
        source::ObjectSet::demo()?.objects
    } else {
        let reader = Index::new(reg.clone(), []);
        source::snapshot_objects(&reader, &g.snapshot, snapshot_scope(command, &g))?
    };
    Ok(Context {
        global: g,
        index: Index::new(reg, objects),
        offline: true,
        cluster: None,
    })
}

/// What a command keeps of a snapshot: what it would LIST or watch from a cluster (one
/// namespace unless `-A`); for a listing and the platform view, objects trimmed as the live
/// inventory holds them (their views read nothing else); a workload's own commands read its
/// objects whole.
fn snapshot_scope<'g>(command: &Command, g: &'g args::Global) -> wlmap_inventory::Scope<'g> {
    let namespace = (!g.all_namespaces).then(|| g.namespace.as_deref().unwrap_or("default"));
    match (command, commands::reads(command).0) {
        (Command::Serve(_), _) | (_, commands::Objects::Listed(_)) => wlmap_inventory::Scope {
            namespace,
            trim: true,
        },
        (_, commands::Objects::One(_)) => wlmap_inventory::Scope {
            namespace,
            trim: false,
        },
        _ => wlmap_inventory::Scope::default(),
    }
}

/// The cluster's definitions and the objects the command has listed for it.
fn connected(objects: commands::Objects, mut g: args::Global) -> Result<Context, Failure> {
    let conn = cluster::Connection::new(&g)?;
    if g.namespace.is_none() {
        g.namespace = Some(conn.cluster.default_namespace().to_string());
    }
    let reg = defs::registry(&g.definitions, &conn.kartas()?, g.experimental)?;
    let ns = if g.all_namespaces {
        None
    } else {
        g.namespace.clone()
    };
    let set = match objects {
        commands::Objects::Listed(a) => conn.workloads(a, ns.as_deref(), &reg)?,
        commands::Objects::One(targets) => conn.one_workload(targets, ns.as_deref(), &reg)?,
        commands::Objects::None | commands::Objects::ItsOwn => source::ObjectSet::default(),
    };
    if g.verbose {
        eprintln!(
            "wlmap: {} API request(s) to {}",
            conn.cluster.requests(),
            conn.cluster.server()
        );
    }
    Ok(Context {
        global: g,
        index: Index::new(reg, set.objects),
        offline: false,
        cluster: Some(conn),
    })
}

fn dispatch(command: &Command, ctx: Context) -> Result<(), Failure> {
    match command {
        Command::Get(a) => commands::get::run(&ctx, a),
        Command::Describe(a) => commands::describe::run(&ctx, a),
        Command::Definitions(a) => commands::definitions::run(&ctx, a),
        Command::Set(a) => commands::set::run(&ctx, a),
        Command::Gang(a) => commands::gang::run(&ctx, a),
        Command::Conformance(a) => commands::conformance::run(&ctx, a),
        Command::Serve(a) => commands::serve::run(ctx, a),
        Command::Scaffold(a) => commands::scaffold::run(&ctx, a),
        Command::Check(a) => commands::check::run(&ctx, a),
        Command::Validate(_)
        | Command::Controller(_)
        | Command::Completion { .. }
        | Command::Version
        | Command::Man { .. } => Ok(()),
    }
}

fn default_kubeconfig_exists() -> bool {
    std::env::var_os("HOME").is_some_and(|h| std::path::Path::new(&h).join(".kube/config").exists())
        || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                Code::Usage as i32
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let verbose = cli.global.verbose;
    if let Err(f) = run(cli) {
        if verbose {
            eprintln!("wlmap: error: {:?}", f.error);
        } else {
            eprintln!("wlmap: error: {}", crate::exit::one_line(&f.error));
        }
        std::process::exit(f.code as i32);
    }
}
