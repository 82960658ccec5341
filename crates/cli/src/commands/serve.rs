//! `wlmap serve`: the platform view (workload metrics, the web page, the JSON API) of a
//! cluster, a snapshot or the demo, kept live: a cluster through one watch per kind, a
//! snapshot by reading it again when the file changes.

use crate::args::ServeArgs;
use crate::cluster::Connection;
use crate::commands::watch::feed_event;
use crate::context::Context;
use crate::exit::{Code, Failure, Result, invalid};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use wlmap_inventory::{Feed, Inventory};
use wlmap_server::{Live, Map, Options};

/// How often a snapshot file's modification time is looked at.
const SNAPSHOT_CHECK: Duration = Duration::from_secs(1);

/// Run until killed.
pub fn run(mut ctx: Context, a: &ServeArgs) -> Result {
    let opts = Options {
        token: a.token_file.as_deref().map(read_token).transpose()?,
    };
    let live = match ctx.cluster.take() {
        Some(conn) => watch_cluster(conn, &ctx)?,
        None => {
            let snapshots = ctx.global.snapshot.clone();
            let namespace = ctx.namespace();
            let reader = wlmap_inventory::Index::new(ctx.reg().clone(), []);
            let live = Arc::new(Live::fixed(Inventory::from_index(ctx.index)));
            follow_snapshots(snapshots, namespace, reader, live.clone());
            live
        }
    };
    serve(a, live, opts)
}

/// The token a `--token-file` holds (surrounding white space trimmed; empty is an error).
pub fn read_token(path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid(format!("--token-file {}: {e}", path.display())))?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(invalid(format!("--token-file {}: empty", path.display())));
    }
    Ok(token)
}

/// Bind and serve until the process is killed (the server is read-only: nothing to finish).
fn serve(a: &ServeArgs, live: Arc<Live>, opts: Options) -> Result {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(Code::Runtime, e))?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .map_err(|e| Failure::new(Code::Runtime, anyhow::anyhow!("{}: {e}", a.listen)))?;
        let addr = listener.local_addr().unwrap_or(a.listen);
        eprintln!("wlmap: serving http://{addr}/ (metrics on /metrics)");
        let (_stop, stopped) = tokio::sync::watch::channel(false);
        let map: Arc<dyn Map> = live;
        wlmap_server::serve(listener, map, Arc::new(opts), stopped).await;
        Ok(())
    })
}

/// A live inventory fed by one watch per kind that every definition's workloads are made of,
/// on a thread of its own. A refusal while the kinds are first listed ends the process.
fn watch_cluster(conn: Connection, ctx: &Context) -> Result<Arc<Live>> {
    let reg = ctx.reg().clone();
    let roots: Vec<_> = reg.iter().map(|d| d.root_gvk()).collect();
    let kinds = conn.kinds_of_workloads(&roots, &reg, true)?;
    let kinds_fed = kinds.iter().map(|k| k.group_kind()).collect();
    let live = Arc::new(Live::fed(Feed::new(reg, kinds_fed)));
    let ns = ctx.namespace();
    let feeder = live.clone();
    std::thread::spawn(move || {
        let mut said = wlmap_kube::live::Said::default();
        let gate = wlmap_kube::live::DraGate::default();
        conn.cluster
            .watch(&kinds, ns.as_deref(), Some(&gate), |ev| {
                let trim = |v: &mut serde_json::Value| feeder.read(&mut |inv| inv.index().trim(v));
                match feed_event(ev, feeder.synced(), &mut said, &trim) {
                    Ok(Some(e)) => {
                        feeder.update(|feed| {
                            let fed = feed.on(e);
                            gate.after(feed, fed)
                        });
                    }
                    Ok(None) => {}
                    Err(f) => {
                        eprintln!("wlmap: error: {}", crate::exit::one_line(&f.error));
                        std::process::exit(f.code as i32);
                    }
                }
                ControlFlow::Continue(())
            });
    });
    Ok(live)
}

/// Read the snapshot files again each time one of them changes (stdin cannot be), as they
/// were read first: the namespace's objects (every one without `-n`), trimmed for `reader`'s
/// definitions.
fn follow_snapshots(
    paths: Vec<PathBuf>,
    namespace: Option<String>,
    reader: wlmap_inventory::Index,
    live: Arc<Live>,
) {
    let paths: Vec<PathBuf> = paths.into_iter().filter(|p| p.as_os_str() != "-").collect();
    if paths.is_empty() {
        return;
    }
    // Modification time and length: a file caught between its truncation and its new
    // contents can keep the same coarse modification time, never the same length.
    let stamp = |paths: &[PathBuf]| -> Vec<Option<(SystemTime, u64)>> {
        paths
            .iter()
            .map(|p| {
                let m = std::fs::metadata(p).ok()?;
                Some((m.modified().ok()?, m.len()))
            })
            .collect()
    };
    // Stamped before the page is served, not when the thread first runs: a change made once
    // the first answer is out must be seen, however late the thread starts.
    let mut seen = stamp(&paths);
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(SNAPSHOT_CHECK);
            let now = stamp(&paths);
            if now == seen {
                continue;
            }
            seen = now;
            let scope = wlmap_inventory::Scope {
                namespace: namespace.as_deref(),
                trim: true,
            };
            match crate::source::snapshot_objects(&reader, &paths, scope) {
                Ok(objects) => {
                    live.update(|feed| feed.inventory.replace_all(objects));
                }
                // A file caught half-written, or broken: keep what is shown, say why.
                Err(f) => eprintln!("wlmap: warning: snapshot not re-read: {}", f.error),
            }
        }
    });
}
