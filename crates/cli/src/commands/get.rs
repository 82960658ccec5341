//! `wlmap get`: workloads with status, pods and GPUs.

use crate::args::{GetArgs, Output};
use crate::context::{Context, print_data};
use crate::defs::{resolve_type, targets};
use crate::exit::{Result, not_found, usage};
use crate::render;
use crate::source::Selector;
use std::collections::BTreeSet;
use wlmap_engine::Object;
use wlmap_inventory::{Entry, Index, ObjectKey, view};
use wlmap_schema::GroupKind;

/// What the arguments ask for.
pub struct Query {
    /// Every object of these kinds.
    kinds: BTreeSet<GroupKind>,
    /// These objects by name.
    names: Vec<(GroupKind, String)>,
    /// Only top-level workloads (`--all-types`), except the objects named.
    top_level: bool,
    selector: Option<Selector>,
    /// Namespace filter: None = all namespaces.
    pub namespace: Option<String>,
}

impl Query {
    /// The query of `get`'s arguments.
    pub fn new(ctx: &Context, a: &GetArgs) -> Result<Query> {
        let ts = targets(&a.targets)?;
        if ts.is_empty() && !a.all_types {
            return Err(usage(
                "name a TYPE (e.g. `wlmap get jobsets`) or use --all-types",
            ));
        }
        let mut kinds = BTreeSet::new();
        let mut names = Vec::new();
        if a.all_types {
            kinds.extend(ctx.reg().iter().map(|d| d.root_gvk().group_kind()));
        }
        for (t, n) in &ts {
            for d in resolve_type(ctx.reg(), t)? {
                let gk = d.root_gvk().group_kind();
                match n {
                    Some(n) => names.push((gk, n.clone())),
                    None => {
                        kinds.insert(gk);
                    }
                }
            }
        }
        Ok(Query {
            kinds,
            names,
            top_level: a.all_types,
            selector: a.selector.as_deref().map(Selector::parse).transpose()?,
            namespace: ctx.namespace(),
        })
    }

    fn named(&self, o: &Object, gk: &GroupKind) -> bool {
        self.names.iter().any(|(k, n)| k == gk && n == o.name())
    }

    /// Does the object belong in the listing?
    pub fn wants(&self, index: &Index, o: &Object) -> bool {
        let in_namespace = self
            .namespace
            .as_deref()
            .is_none_or(|n| n == o.namespace() || o.namespace().is_empty());
        let gk = o.gvk().group_kind();
        let named = self.named(o, &gk);
        in_namespace
            && (named || self.kinds.contains(&gk))
            && self.selector.as_ref().is_none_or(|s| s.matches(o))
            && index.definition_for(o).is_some()
            && (named || !self.top_level || index.is_top_level(o))
    }

    /// The keys listed, in kubectl's order; a named object that is not there is an error.
    fn select(&self, ctx: &Context) -> Result<Vec<ObjectKey>> {
        let mut keys: Vec<ObjectKey> = ctx
            .index
            .objects()
            .filter(|o| self.wants(&ctx.index, o))
            .map(ObjectKey::of)
            .collect();
        keys.sort();
        for (gk, n) in &self.names {
            if !keys.iter().any(|k| k.kind == *gk && k.name == *n) {
                return Err(not_found(format!(
                    "{} {n:?} not found{}",
                    gk.kind,
                    ctx.where_()
                )));
            }
        }
        Ok(keys)
    }
}

/// `get -o json|yaml`: `{"items": [...]}`.
#[derive(serde::Serialize)]
struct List<'a> {
    items: &'a [view::GetItem],
}

/// `wlmap get`: list the workloads of the named types (or every type) as a table or JSON/YAML;
/// with `--watch`, keep printing the rows that change.
pub fn run(ctx: &Context, a: &GetArgs) -> Result {
    let query = Query::new(ctx, a)?;
    if a.watch {
        return crate::commands::watch::run(ctx, a, &query);
    }
    let entries = ctx.evaluate(&query.select(ctx)?);
    let items: Vec<view::GetItem> = entries.iter().map(item).collect();
    match ctx.output() {
        // Straight from the items: no JSON value of the whole list is built first.
        Output::Json | Output::Yaml => print_data(ctx.output(), &List { items: &items })?,
        _ if items.is_empty() => {
            eprintln!("No workloads found{}.", ctx.where_());
            return Ok(());
        }
        out => crate::write_stdout(&render::list::table(
            &items,
            query.namespace.is_none(),
            out == Output::Wide,
        )),
    }
    let failed = items.iter().filter(|it| it.error.is_some()).count();
    if failed > 0 {
        return Err(crate::exit::invalid(format!(
            "{failed} workload(s) could not be evaluated"
        )));
    }
    let doubtful = warn_rule_failures(&items);
    let partial: Vec<&view::GetItem> = items
        .iter()
        .filter(|it| !it.unreadable.is_empty())
        .collect();
    for it in &partial {
        for u in &it.unreadable {
            eprintln!(
                "wlmap: warning: {}/{}/{}: component {u}",
                it.namespace, it.kind, it.name
            );
        }
    }
    if !partial.is_empty() {
        return Err(crate::exit::invalid(format!(
            "{} workload(s) with a component that could not be read",
            partial.len()
        )));
    }
    if doubtful > 0 {
        return Err(crate::exit::invalid(format!(
            "{doubtful} workload(s) with a status rule that failed (marked `!`)"
        )));
    }
    Ok(())
}

/// Say on stderr, once per definition and rule, which status rules failed, on how many
/// workloads and with what error; return how many workloads had one.
pub fn warn_rule_failures(items: &[view::GetItem]) -> usize {
    let mut by_rule: std::collections::BTreeMap<(String, String), (usize, String, String)> =
        Default::default();
    for it in items {
        for f in &it.status.failures {
            let rule = format!(
                "statusMappings.{}[{}]",
                f.status.to_string().to_ascii_lowercase(),
                f.index
            );
            let e = by_rule
                .entry((it.definition.name.clone(), rule))
                .or_insert_with(|| {
                    (
                        0,
                        format!("{}/{}/{}", it.namespace, it.kind, it.name),
                        f.error.clone(),
                    )
                });
            e.0 += 1;
        }
    }
    for ((def, rule), (n, first, error)) in &by_rule {
        eprintln!(
            "wlmap: warning: definition {def}: status rule {rule}.byExpression failed on {n} workload(s) (first {first}): {error}"
        );
    }
    items
        .iter()
        .filter(|it| !it.status.failures.is_empty())
        .count()
}

/// One row of the listing; an evaluation error is said on stderr and kept in the row.
pub fn item(e: &Entry) -> view::GetItem {
    if let Err(err) = &e.result {
        let o = &e.object;
        eprintln!(
            "wlmap: error: {}/{} in {}: {err}",
            o.kind(),
            o.name(),
            o.namespace()
        );
    }
    view::item(e)
}
