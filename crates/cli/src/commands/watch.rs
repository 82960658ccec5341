//! `wlmap get --watch` (the listing, then a row each time a workload's row changes) and
//! `wlmap describe --watch` (the tree each time it changes), from one watch per kind feeding
//! the live inventory.

use crate::args::{GetArgs, Output};
use crate::commands::get::{Query, item};
use crate::context::Context;
use crate::exit::{Failure, Result, usage};
use crate::render;
use crate::render::list::{header, row};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use wlmap_inventory::view::GetItem;
use wlmap_inventory::{Fed, Feed, FeedEvent, Inventory, ObjectKey};
use wlmap_kube::live::{Said, Step};
use wlmap_kube::{Kind, WatchEvent};

/// `wlmap get --watch`: print the table once, then a line per workload whose row changes, until
/// interrupted.
pub fn run(ctx: &Context, a: &GetArgs, query: &Query) -> Result {
    let Some(conn) = &ctx.cluster else {
        return Err(usage(
            "--watch needs a cluster (a snapshot or the demo does not change)",
        ));
    };
    let kinds = conn.kinds_for_get(a, ctx.reg())?;
    let mut rows = Rows {
        query,
        output: ctx.output(),
        widths: Vec::new(),
        shown: BTreeMap::new(),
    };
    follow(ctx, &kinds, query.namespace.as_deref(), |feed, fed| {
        match fed {
            Fed::Listing => {}
            Fed::Synced => rows.start(&feed.inventory),
            Fed::Touched(keys) => {
                for key in keys {
                    rows.refresh(&feed.inventory, &key);
                }
            }
        }
        Ok(())
    })
}

/// A watch event for a live inventory ([`wlmap_kube::live::feed_event`]) with the CLI's
/// policy for failures: a refusal while the kinds are first listed is an error (no retry will
/// change it); any other failure is a warning, said once (the watch retries).
pub fn feed_event(
    ev: WatchEvent,
    synced: bool,
    said: &mut Said,
    trim: &dyn Fn(&mut serde_json::Value),
) -> Result<Option<FeedEvent>> {
    match wlmap_kube::live::feed_event(ev, trim, said) {
        Step::Feed(e) => Ok(Some(e)),
        Step::Failing(e) if !synced && matches!(e, wlmap_kube::Error::Forbidden(_)) => {
            Err(crate::cluster::failure(e))
        }
        Step::Failing(e) => {
            eprintln!("wlmap: warning: {e} (retrying)");
            Ok(None)
        }
        Step::StillFailing => Ok(None),
    }
}

/// Watch these kinds and hand each event's outcome to `on` until it fails.
pub fn follow(
    ctx: &Context,
    kinds: &[Kind],
    ns: Option<&str>,
    mut on: impl FnMut(&Feed, Fed) -> Result,
) -> Result {
    let Some(conn) = &ctx.cluster else {
        return Err(usage(
            "--watch needs a cluster (a snapshot or the demo does not change)",
        ));
    };
    let kinds_fed = kinds.iter().map(|k| k.group_kind()).collect();
    let mut feed = Feed::new(ctx.reg().clone(), kinds_fed);
    let mut said = Said::default();
    let mut fatal: Option<Failure> = None;
    let gate = wlmap_kube::live::DraGate::default();
    conn.cluster.watch(kinds, ns, Some(&gate), |ev| {
        let trim = |v: &mut serde_json::Value| feed.inventory.index().trim(v);
        let fed = feed_event(ev, feed.is_synced(), &mut said, &trim).map(|e| {
            e.map_or(Fed::Listing, |e| {
                let fed = feed.on(e);
                gate.after(&feed, fed)
            })
        });
        match fed.and_then(|fed| on(&feed, fed)) {
            Ok(()) => ControlFlow::Continue(()),
            Err(f) => {
                fatal = Some(f);
                ControlFlow::Break(())
            }
        }
    });
    fatal.map_or(Ok(()), Err)
}

/// The rows printed so far, and how.
struct Rows<'a> {
    query: &'a Query,
    output: Output,
    widths: Vec<usize>,
    /// The last row printed per workload.
    shown: BTreeMap<ObjectKey, String>,
}

impl<'a> Rows<'a> {
    /// Every kind is listed: print the listing.
    fn start(&mut self, inventory: &Inventory) {
        let index = inventory.index();
        let mut keys: Vec<ObjectKey> = index
            .objects()
            .filter(|o| self.query.wants(index, o))
            .map(ObjectKey::of)
            .collect();
        keys.sort();
        let items: Vec<GetItem> = keys
            .iter()
            .filter_map(|k| self.item(inventory, k))
            .collect();
        let all_ns = self.query.namespace.is_none();
        let wide = self.output == Output::Wide;
        let header = header(all_ns, wide);
        let rows: Vec<Vec<String>> = items
            .iter()
            .map(|it| row(it, all_ns, wide, render::colour_enabled()))
            .collect();
        self.widths = render::widths(&header, &rows);
        let mut out = String::new();
        if self.json() {
            for it in &items {
                out.push_str(&line("ADDED", it));
            }
        } else {
            render::row(&mut out, &self.widths, &header);
            for r in &rows {
                render::row(&mut out, &self.widths, r);
            }
        }
        crate::write_stdout(&out);
        for (k, r) in keys.into_iter().zip(&rows) {
            self.shown.insert(k, r.join("\u{1f}"));
        }
    }

    fn json(&self) -> bool {
        matches!(self.output, Output::Json | Output::Yaml)
    }

    /// The row of a key as the query lists it now: a top-level workload from the inventory,
    /// any other object resolved on the spot. None when the query does not list it.
    fn item(&self, inventory: &Inventory, key: &ObjectKey) -> Option<GetItem> {
        let index = inventory.index();
        let o = index.object(key)?;
        if !self.query.wants(index, o) {
            return None;
        }
        match inventory.workload(key) {
            Some(e) => Some(item(e)),
            None => index.evaluate(key, None).map(|e| item(&e)),
        }
    }

    /// Print the key's row if it differs from the last one printed.
    fn refresh(&mut self, inventory: &Inventory, key: &ObjectKey) {
        match self.item(inventory, key) {
            Some(it) => self.show(key, &it),
            None => {
                if self.shown.remove(key).is_some() {
                    self.print_deleted(key);
                }
            }
        }
    }

    fn show(&mut self, key: &ObjectKey, it: &GetItem) {
        let all_ns = self.query.namespace.is_none();
        let wide = self.output == Output::Wide;
        let cells = row(it, all_ns, wide, render::colour_enabled());
        let text = cells.join("\u{1f}");
        let previous = self.shown.insert(key.clone(), text.clone());
        if previous.as_ref() == Some(&text) {
            return;
        }
        let mut out = String::new();
        if self.json() {
            out.push_str(&line(
                if previous.is_some() {
                    "MODIFIED"
                } else {
                    "ADDED"
                },
                it,
            ));
        } else {
            render::row(&mut out, &self.widths, &cells);
        }
        crate::write_stdout(&out);
    }

    fn print_deleted(&self, key: &ObjectKey) {
        let mut out = String::new();
        if self.json() {
            let gone = serde_json::json!({"type": "DELETED", "object": {
                "kind": key.kind.kind, "name": key.name, "namespace": key.namespace}});
            out.push_str(&gone.to_string());
            out.push('\n');
        } else {
            let mut cells = vec![];
            if self.query.namespace.is_none() {
                cells.push(key.namespace.clone());
            }
            cells.extend([key.name.clone(), key.kind.kind.clone(), "Deleted".into()]);
            render::row(&mut out, &self.widths, &cells);
        }
        crate::write_stdout(&out);
    }
}

/// A workload as `describe` shows it: a JSON line, or the text of the tree.
fn described(e: &wlmap_inventory::Entry, json: bool, explain: bool) -> String {
    match (&e.result, json) {
        (Err(err), _) => format!("{}/{}: {err}\n", e.key.kind.kind, e.key.name),
        (Ok(w), true) => {
            let v = wlmap_inventory::view::describe(&e.definition, w, explain);
            let mut line = serde_json::to_string(&v).unwrap_or_default();
            line.push('\n');
            line
        }
        (Ok(w), false) => crate::render::tree::text(&e.definition, w, &e.object, explain, false),
    }
}

/// One watch event as a JSON line.
fn line(kind: &str, it: &GetItem) -> String {
    let mut s = serde_json::json!({"type": kind, "object": it}).to_string();
    s.push('\n');
    s
}

/// `wlmap describe --watch`: the tree, drawn again each time it changes (on a terminal the
/// screen is cleared first); with `-o json`, one JSON object per line.
pub fn describe(ctx: &Context, a: &crate::args::DescribeArgs) -> Result {
    let Some(conn) = &ctx.cluster else {
        return Err(usage(
            "--watch needs a cluster (a snapshot or the demo does not change)",
        ));
    };
    if a.file.is_some() {
        return Err(usage(
            "--watch describes a workload of the cluster, not a file",
        ));
    }
    let (gvk, name) = crate::defs::single(ctx.reg(), &a.targets)?;
    let mut kinds = conn.kinds_below(&gvk, ctx.reg())?;
    match conn
        .cluster
        .resource(&gvk)
        .map_err(crate::cluster::failure)?
    {
        Some(k) => kinds.insert(0, k),
        None => {
            return Err(crate::exit::not_found(format!(
                "the server does not serve {gvk}"
            )));
        }
    }
    let ns = ctx.namespace();
    let json = matches!(ctx.output(), Output::Json | Output::Yaml);
    let clear = !json && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let mut last = String::new();
    follow(ctx, &kinds, ns.as_deref(), |feed, fed| {
        if matches!(fed, Fed::Listing) {
            return Ok(());
        }
        let index = feed.inventory.index();
        let key = index
            .objects()
            .filter(|o| o.name() == name && o.gvk().group_kind() == gvk.group_kind())
            .filter(|o| ns.as_deref().is_none_or(|n| n == o.namespace()))
            .map(ObjectKey::of)
            .min();
        let shown = match key.and_then(|k| index.evaluate(&k, None)) {
            Some(e) => described(&e, json, a.explain),
            None if json => format!(
                "{}\n",
                serde_json::json!({"notFound": format!("{} {name:?}{}", gvk.kind, ctx.where_())})
            ),
            None => format!("{} {name:?} not found{}\n", gvk.kind, ctx.where_()),
        };
        if shown != last {
            let screen = if clear { "\u{1b}[2J\u{1b}[H" } else { "" };
            crate::write_stdout(&format!("{screen}{shown}"));
            last = shown;
        }
        Ok(())
    })
}
