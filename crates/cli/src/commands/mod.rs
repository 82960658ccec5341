//! One module per command, and what each command reads ([`reads`]): the one place that says
//! which commands list objects, watch them, or need no cluster at all.

use crate::args::Command;

pub mod check;
pub mod conformance;
pub mod controller;
pub mod definitions;
pub mod describe;
pub mod gang;
pub mod get;
pub mod scaffold;
pub mod serve;
pub mod set;
pub mod validate;
pub mod version;
pub mod watch;

/// The objects a command reads.
#[derive(Debug, Clone, Copy)]
pub enum Objects<'a> {
    /// None: it reads definitions, CRDs or files only.
    None,
    /// The workloads of `get`'s types (or of every definition), listed once.
    Listed(&'a crate::args::GetArgs),
    /// One workload (`TYPE/NAME`) and what it is made of.
    One(&'a [String]),
    /// What it reads itself (its watches, its own LISTs): nothing is listed before it runs.
    ItsOwn,
}

/// Whether a command talks to a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cluster {
    /// Never (its input is files).
    No,
    /// For the cluster's definitions when one is configured; the catalog alone otherwise.
    IfConfigured,
    /// Always, unless `--demo` or `--snapshot` replaces it.
    Yes,
}

/// What a command reads: its objects, and whether it goes to a cluster for them (or for the
/// cluster's definitions).
pub fn reads(command: &Command) -> (Objects<'_>, Cluster) {
    match command {
        Command::Get(a) if a.watch => (Objects::ItsOwn, Cluster::Yes),
        Command::Get(a) => (Objects::Listed(a), Cluster::Yes),
        Command::Serve(_) => (Objects::ItsOwn, Cluster::Yes),
        Command::Describe(a) if a.file.is_some() => (Objects::None, Cluster::No),
        Command::Describe(a) if a.watch => (Objects::ItsOwn, Cluster::Yes),
        Command::Describe(a) => (Objects::One(&a.targets), Cluster::Yes),
        Command::Gang(a) if a.file.is_some() => (Objects::None, Cluster::No),
        Command::Gang(a) => (Objects::One(&a.targets), Cluster::Yes),
        Command::Set(a) if a.file.is_some() => (Objects::None, Cluster::No),
        Command::Set(a) => (Objects::One(&a.targets), Cluster::Yes),
        Command::Scaffold(a) if a.crd.is_some() => (Objects::None, Cluster::Yes),
        Command::Scaffold(a) if a.from_objects => (Objects::ItsOwn, Cluster::Yes),
        Command::Scaffold(_) => (Objects::None, Cluster::No),
        Command::Check(a) if a.crd.is_empty() => (Objects::None, Cluster::IfConfigured),
        Command::Definitions(_) => (Objects::None, Cluster::IfConfigured),
        Command::Check(_) | Command::Conformance(_) => (Objects::None, Cluster::No),
        Command::Validate(_)
        | Command::Controller(_)
        | Command::Completion { .. }
        | Command::Version
        | Command::Man { .. } => (Objects::None, Cluster::No),
    }
}
