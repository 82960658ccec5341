//! `wlmap get --watch`: the listing, then a row each time a workload's row changes, from one
//! watch per kind feeding the live inventory.

use crate::args::{GetArgs, Output};
use crate::commands::get::{Query, header, item, row};
use crate::context::Context;
use crate::exit::{Failure, Result, usage};
use crate::render;
use crate::view::GetItem;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use wlmap_engine::Object;
use wlmap_inventory::{Change, Inventory, ObjectKey};
use wlmap_kube::{Kind, WatchEvent};
use wlmap_schema::GroupKind;

/// Run.
pub fn run(ctx: &Context, a: &GetArgs, query: &Query) -> Result {
    let Some(conn) = &ctx.cluster else {
        return Err(usage(
            "--watch needs a cluster (a snapshot or the demo does not change)",
        ));
    };
    let kinds = conn.kinds_for_get(a, ctx.reg())?;
    let mut w = Watch::new(ctx, query, kinds.clone(), ctx.output());
    let mut fatal: Option<Failure> = None;
    conn.cluster
        .watch(&kinds, query.namespace.as_deref(), |ev| match w.on(ev) {
            Ok(()) => ControlFlow::Continue(()),
            Err(f) => {
                fatal = Some(f);
                ControlFlow::Break(())
            }
        });
    fatal.map_or(Ok(()), Err)
}

/// The state of a watch: the inventory, each kind's relist in progress, and what was printed.
struct Watch<'a> {
    query: &'a Query,
    output: Output,
    kinds: Vec<GroupKind>,
    inventory: Inventory,
    /// Objects of a kind being relisted, until its listing completes.
    relisting: BTreeMap<usize, Vec<Object>>,
    /// Kinds listed at least once: the table is printed when all are.
    listed: BTreeSet<usize>,
    started: bool,
    widths: Vec<usize>,
    /// The last row printed per workload.
    shown: BTreeMap<ObjectKey, String>,
    /// Warnings already said (a failing watch is retried; say each failure once).
    said: BTreeSet<String>,
}

impl<'a> Watch<'a> {
    fn new(ctx: &Context, query: &'a Query, kinds: Vec<Kind>, output: Output) -> Watch<'a> {
        Watch {
            query,
            output,
            kinds: kinds
                .iter()
                .map(|k| GroupKind::new(&k.resource.group, &k.resource.kind))
                .collect(),
            inventory: Inventory::new(ctx.reg().clone()),
            relisting: BTreeMap::new(),
            listed: BTreeSet::new(),
            started: false,
            widths: Vec::new(),
            shown: BTreeMap::new(),
            said: BTreeSet::new(),
        }
    }

    fn on(&mut self, ev: WatchEvent) -> Result {
        let touched: Vec<ObjectKey> = match ev {
            WatchEvent::Relisting(i) => {
                self.relisting.insert(i, Vec::new());
                return Ok(());
            }
            WatchEvent::Applied(i, v) => {
                let o = object(v);
                if let Some(buf) = self.relisting.get_mut(&i) {
                    buf.push(o);
                    return Ok(());
                }
                let key = ObjectKey::of(&o);
                let changes = self.inventory.apply(o);
                self.related(&key, changes)
            }
            WatchEvent::Deleted(_, v) => {
                let key = ObjectKey::of(&object(v));
                let owners = self.inventory.index().owners(&key);
                let changes = self.inventory.delete(&key);
                let mut keys = self.related(&key, changes);
                keys.extend(owners);
                keys
            }
            WatchEvent::Listed(i) => {
                let objects = self.relisting.remove(&i).unwrap_or_default();
                let changes = self.inventory.replace_kind(&self.kinds[i], objects);
                self.listed.insert(i);
                changes.into_iter().map(|c| c.key).collect()
            }
            WatchEvent::Failed(_, e) => return self.failed(e),
        };
        if !self.started {
            if self.listed.len() == self.kinds.len() {
                self.start();
            }
            return Ok(());
        }
        for key in touched {
            self.refresh(&key);
        }
        Ok(())
    }

    /// The keys an event touches: the object, its owners, and the workloads that changed.
    fn related(&self, key: &ObjectKey, changes: Vec<Change>) -> Vec<ObjectKey> {
        let mut keys = vec![key.clone()];
        keys.extend(self.inventory.index().owners(key));
        keys.extend(changes.into_iter().map(|c| c.key));
        keys
    }

    /// A watch that cannot even list its kind is an error; one that fails later is retried
    /// by the watcher, and said once.
    fn failed(&mut self, e: wlmap_kube::Error) -> Result {
        if !self.started && matches!(e, wlmap_kube::Error::Forbidden(_)) {
            return Err(crate::cluster::failure(e));
        }
        if self.said.insert(e.to_string()) {
            eprintln!("wlmap: warning: {e} (retrying)");
        }
        Ok(())
    }

    /// Every kind is listed: print the listing.
    fn start(&mut self) {
        self.started = true;
        let index = self.inventory.index();
        let mut keys: Vec<ObjectKey> = index
            .objects()
            .filter(|o| self.query.wants(index, o))
            .map(ObjectKey::of)
            .collect();
        keys.sort();
        let items: Vec<GetItem> = keys.iter().filter_map(|k| self.item(k)).collect();
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
    fn item(&self, key: &ObjectKey) -> Option<GetItem> {
        let index = self.inventory.index();
        let o = index.object(key)?;
        if !self.query.wants(index, o) {
            return None;
        }
        match self.inventory.workload(key) {
            Some(e) => Some(item(e)),
            None => index.evaluate(key, None).map(|e| item(&e)),
        }
    }

    /// Print the key's row if it differs from the last one printed.
    fn refresh(&mut self, key: &ObjectKey) {
        match self.item(key) {
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

fn object(v: serde_json::Value) -> Object {
    let mut v = v;
    wlmap_inventory::trim(&mut v);
    Object::new(v)
}

/// One watch event as a JSON line.
fn line(kind: &str, it: &GetItem) -> String {
    let mut s = serde_json::json!({"type": kind, "object": it}).to_string();
    s.push('\n');
    s
}
