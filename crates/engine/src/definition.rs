//! A compiled definition: every expression of a `Karta` compiled once, ready to evaluate.

use crate::error::{Error, ExprField};
use std::collections::BTreeMap;
use wlmap_expr::{Expr, Limits};
use wlmap_schema::{
    ComponentDefinition, Finding, GroupVersionKind, Karta, Location, Severity, Source,
    StatusMatcher,
};

/// Where a definition came from.
///
/// ```
/// assert_eq!(wlmap_engine::Origin::Cluster.to_string(), "cluster");
/// assert_eq!(serde_json::to_value(wlmap_engine::Origin::File).unwrap(), "file");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Embedded in wlmap.
    Catalog,
    /// A `kartas.run.ai` object in the cluster.
    Cluster,
    /// A file given by the user.
    File,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Catalog => "catalog",
            Origin::Cluster => "cluster",
            Origin::File => "file",
        })
    }
}

/// The spec shape of a component, compiled.
#[derive(Debug)]
pub(crate) enum SpecShape {
    Template(Expr),
    PodSpec { spec: Expr, metadata: Option<Expr> },
    Fragmented(Box<Fragments>),
}

/// Compiled fragmented paths.
#[derive(Debug, Default)]
pub(crate) struct Fragments {
    pub scheduler_name: Option<Expr>,
    pub labels: Option<Expr>,
    pub annotations: Option<Expr>,
    pub resources: Option<Expr>,
    pub resource_claims: Option<Expr>,
    pub pod_affinity: Option<Expr>,
    pub node_affinity: Option<Expr>,
    pub containers: Option<Expr>,
    pub container: Option<Expr>,
    pub priority_class_name: Option<Expr>,
    pub image: Option<Expr>,
}

/// One compiled component.
#[derive(Debug)]
pub(crate) struct Component {
    pub def: ComponentDefinition,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub spec: Option<SpecShape>,
    pub replicas: Option<Expr>,
    pub min_replicas: Option<Expr>,
    pub max_replicas: Option<Expr>,
    pub instance_ids: Option<Expr>,
    pub type_key: Option<Expr>,
    pub instance_key: Option<Expr>,
    pub replica_key: Option<Expr>,
}

/// A compiled status matcher.
#[derive(Debug)]
pub(crate) struct Matcher {
    pub def: StatusMatcher,
    pub expression: Option<Expr>,
    /// The expression's name in findings and errors.
    pub field: String,
}

/// Compiled status definition.
#[derive(Debug)]
pub(crate) struct StatusRules {
    pub phase: Option<Expr>,
    pub conditions: Option<Expr>,
    pub type_field: String,
    pub status_field: String,
    pub reason_field: String,
    pub message_field: String,
    /// (status, matchers) in precedence order.
    pub mappings: Vec<(crate::Phase, Vec<Matcher>)>,
}

/// Compiled gang member (deprecated `podGroups`).
#[derive(Debug)]
pub(crate) struct GangMember {
    pub component: usize,
    pub keys: Vec<Expr>,
    pub filters: Vec<Expr>,
}

/// Compiled reference (wlmap extension).
#[derive(Debug)]
pub(crate) struct CompiledReference {
    pub def: wlmap_schema::Reference,
    pub name_path: Expr,
    pub namespace_path: Option<Expr>,
}

/// A definition with every expression compiled once. Cheap to share (`Send + Sync`).
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// assert_eq!(def.root_gvk().kind, "Pod");
/// ```
#[derive(Debug)]
pub struct Definition {
    pub(crate) karta: Karta,
    pub(crate) origin: Origin,
    pub(crate) components: Vec<Component>,
    pub(crate) status: Option<StatusRules>,
    pub(crate) gang_members: Vec<(String, Vec<GangMember>)>,
    /// `podGroup.subGroups[].instancesPath` compiled, one per sub-group (wlmap extension).
    pub(crate) sub_group_instances: Vec<Option<Expr>>,
    pub(crate) references: Vec<CompiledReference>,
    pub(crate) limits: Limits,
    /// What placing a pod reads of it: see [`Definition::pod_placement_reads`]. Found on
    /// first use (it parses the selectors again): only a live inventory asks.
    pub(crate) pod_reads: std::sync::OnceLock<Option<Vec<Vec<String>>>>,
    /// What grouping a pod reads of it: see [`Definition::pod_gang_reads`].
    pub(crate) gang_reads: std::sync::OnceLock<Option<Vec<Vec<String>>>>,
}

/// Variables every expression may read: `$parentInstance` and the references.
pub(crate) fn var_names(k: &Karta) -> Vec<String> {
    std::iter::once("parentInstance".to_string())
        .chain(k.spec.references.iter().map(|r| r.name.clone()))
        .collect()
}

struct Compiler {
    batch: wlmap_expr::Batch,
    /// (component, field, text) of every expression added, by batch index.
    added: Vec<(Option<String>, String, String)>,
    findings: Vec<Finding>,
}

fn finding(
    component: Option<&str>,
    field: &str,
    text: &str,
    e: &wlmap_expr::CompileError,
) -> Finding {
    let at = e.span.start.min(text.len());
    let near: String = text[at..].chars().take(30).collect();
    let (line, column) = line_column(text, at);
    Finding::error(
        component,
        field,
        Some(text),
        format!(
            "{field}: {} at line {line}, column {column} of the expression",
            e.message
        ),
        match near.lines().next().filter(|l| !l.is_empty()) {
            Some(l) => format!("fix the jq expression near `{l}`"),
            None => "the jq expression ends too early".to_string(),
        },
    )
}

/// Every place of a pod that placing it reads: the pod-side selector expressions of every
/// component (type, instance and replica keys) and the labels its `matchLabels` name. `None`
/// when an expression may read the pod beyond named places ([`wlmap_expr::footprint`]).
fn pod_reads(components: &[Component]) -> Option<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for c in components {
        let exprs = [&c.type_key, &c.instance_key, &c.replica_key];
        out.extend(places_read(exprs.into_iter().flatten())?);
        let labels = c
            .def
            .pod_selector
            .as_ref()
            .and_then(|s| s.component_type_selector.as_ref())
            .and_then(|t| t.match_labels.as_ref());
        for k in labels.into_iter().flat_map(|m| m.keys()) {
            out.push(vec!["metadata".into(), "labels".into(), k.clone()]);
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// The places of their input some expressions read, each a path of keys up to its first
/// `[]` (what lies below a place is compared whole); `None` when one may read beyond named
/// places, or reads its whole input.
fn places_read<'e>(exprs: impl IntoIterator<Item = &'e Expr>) -> Option<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for e in exprs {
        let f = wlmap_expr::footprint(e.text()).ok()?;
        if f.whole {
            return None;
        }
        for path in f.paths {
            let keys: Vec<String> = path
                .into_iter()
                .map_while(|k| match k {
                    wlmap_expr::Key::Field(s) => Some(s),
                    wlmap_expr::Key::Each => None,
                })
                .collect();
            if keys.is_empty() {
                return None;
            }
            out.push(keys);
        }
    }
    Some(out)
}

/// The line and column (both from 1, the column in characters) of a byte offset in a text:
/// where an error sits in an expression, wherever the expression itself is written (a file, a
/// Karta object sent to the webhook).
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// Each component's children, from their parents (a component that names itself as its
/// parent is refused by validation and not linked).
fn link_children(components: &mut [Component]) {
    for i in 0..components.len() {
        if let Some(p) = components[i].parent
            && p != i
        {
            components[p].children.push(i);
        }
    }
}

impl Compiler {
    /// Add an expression to the definition's batch (compiled once, together, by `finish`).
    fn expr(
        &mut self,
        component: Option<&str>,
        field: &str,
        text: Option<&String>,
    ) -> Option<Expr> {
        let text = text?;
        match self.batch.add(text) {
            Ok(e) => {
                self.added.push((
                    component.map(str::to_string),
                    field.to_string(),
                    text.clone(),
                ));
                Some(e)
            }
            Err(e) => {
                self.findings.push(finding(component, field, text, &e));
                None
            }
        }
    }

    /// One component: its spec shape, scale, instance ids and pod selectors compiled, its
    /// suspend and resume actions checked (they are compiled again when applied).
    fn component(&mut self, d: &ComponentDefinition, parent: Option<usize>) -> Component {
        let n = Some(d.name.as_str());
        let scale = d.scale_definition.as_ref();
        let sel = d.pod_selector.as_ref();
        if let Some(sd) = &d.suspend_definition {
            for a in &sd.suspend_actions {
                self.expr(n, "suspendActions.path", Some(&a.path));
            }
            for a in &sd.resume_actions {
                self.expr(n, "resumeActions.path", Some(&a.path));
            }
        }
        Component {
            def: d.clone(),
            parent,
            children: Vec::new(),
            spec: self.spec_shape(d),
            replicas: self.expr(
                n,
                "replicasPath",
                scale.and_then(|s| s.replicas_path.as_ref()),
            ),
            min_replicas: self.expr(
                n,
                "minReplicasPath",
                scale.and_then(|s| s.min_replicas_path.as_ref()),
            ),
            max_replicas: self.expr(
                n,
                "maxReplicasPath",
                scale.and_then(|s| s.max_replicas_path.as_ref()),
            ),
            instance_ids: self.expr(n, "instanceIdPath", d.instance_id_path.as_ref()),
            type_key: self.expr(
                n,
                "componentTypeSelector.keyPath",
                sel.and_then(|s| s.component_type_selector.as_ref())
                    .and_then(|t| t.key_path.as_ref()),
            ),
            instance_key: self.expr(
                n,
                "componentInstanceSelector.idPath",
                sel.and_then(|s| s.component_instance_selector.as_ref())
                    .map(|s| &s.id_path),
            ),
            replica_key: self.expr(
                n,
                "replicaSelector.keyPath",
                sel.and_then(|s| s.replica_selector.as_ref())
                    .map(|s| &s.key_path),
            ),
        }
    }

    /// Where the component keeps its pods' spec: a pod template, a pod spec (with its
    /// metadata), or fragments.
    fn spec_shape(&mut self, d: &ComponentDefinition) -> Option<SpecShape> {
        let n = Some(d.name.as_str());
        let s = d.spec_definition.as_ref()?;
        if let Some(p) = &s.pod_template_spec_path {
            return self
                .expr(n, "podTemplateSpecPath", Some(p))
                .map(SpecShape::Template);
        }
        if let Some(p) = &s.pod_spec_path {
            let spec = self.expr(n, "podSpecPath", Some(p));
            let metadata = self.expr(n, "metadataPath", s.metadata_path.as_ref());
            return spec.map(|spec| SpecShape::PodSpec { spec, metadata });
        }
        let f = s.fragmented_pod_spec_definition.as_ref()?;
        let mut e = |field: &str, text: Option<&String>| self.expr(n, field, text);
        Some(SpecShape::Fragmented(Box::new(Fragments {
            scheduler_name: e("schedulerNamePath", f.scheduler_name_path.as_ref()),
            labels: e("labelsPath", f.labels_path.as_ref()),
            annotations: e("annotationsPath", f.annotations_path.as_ref()),
            resources: e("resourcesPath", f.resources_path.as_ref()),
            resource_claims: e("resourceClaimsPath", f.resource_claims_path.as_ref()),
            pod_affinity: e("podAffinityPath", f.pod_affinity_path.as_ref()),
            node_affinity: e("nodeAffinityPath", f.node_affinity_path.as_ref()),
            containers: e("containersPath", f.containers_path.as_ref()),
            container: e("containerPath", f.container_path.as_ref()),
            priority_class_name: e("priorityClassNamePath", f.priority_class_name_path.as_ref()),
            image: e("imagePath", f.image_path.as_ref()),
        })))
    }

    /// The root's status rules, in the precedence order of the vocabulary.
    fn status_rules(&mut self, root: &ComponentDefinition) -> Option<StatusRules> {
        let sd = root.status_definition.as_ref()?;
        let n = Some(root.name.as_str());
        let cd = sd.conditions_definition.as_ref();
        let m = &sd.status_mappings;
        use crate::Phase::*;
        let mut initializing = self.matchers(n, "initializing", &m.initializing);
        // The older release's `pending` and `progressing` are starts too.
        initializing.extend(self.matchers(n, "pending", &m.pending));
        initializing.extend(self.matchers(n, "progressing", &m.progressing));
        let mappings = vec![
            (Failed, self.matchers(n, "failed", &m.failed)),
            (Completed, self.matchers(n, "completed", &m.completed)),
            (Suspending, self.matchers(n, "suspending", &m.suspending)),
            (Resuming, self.matchers(n, "resuming", &m.resuming)),
            (Suspended, self.matchers(n, "suspended", &m.suspended)),
            (Degraded, self.matchers(n, "degraded", &m.degraded)),
            (Running, self.matchers(n, "running", &m.running)),
            (Initializing, initializing),
        ];
        let field =
            |f: Option<&String>, default: &str| f.cloned().unwrap_or_else(|| default.into());
        Some(StatusRules {
            phase: self.expr(
                n,
                "phaseDefinition.path",
                sd.phase_definition.as_ref().map(|p| &p.path),
            ),
            conditions: self.expr(n, "conditionsDefinition.path", cd.map(|p| &p.path)),
            type_field: field(cd.and_then(|d| d.type_field_name.as_ref()), "type"),
            status_field: field(cd.and_then(|d| d.status_field_name.as_ref()), "status"),
            reason_field: field(cd.and_then(|d| d.reason_field_name.as_ref()), "reason"),
            message_field: field(cd.and_then(|d| d.message_field_name.as_ref()), "message"),
            mappings,
        })
    }

    /// The matchers of one status, each expression named by its place
    /// (`statusMappings.running[1].byExpression.expression`).
    fn matchers(&mut self, n: Option<&str>, status: &str, list: &[StatusMatcher]) -> Vec<Matcher> {
        list.iter()
            .enumerate()
            .map(|(i, mm)| {
                // Named only where there is an expression to name (most matchers have none).
                let field = match &mm.by_expression {
                    Some(_) => format!("statusMappings.{status}[{i}].byExpression.expression"),
                    None => String::new(),
                };
                let expression =
                    self.expr(n, &field, mm.by_expression.as_ref().map(|e| &e.expression));
                Matcher {
                    def: mm.clone(),
                    expression,
                    field,
                }
            })
            .collect()
    }

    /// The members of each `podGroups` entry (the deprecated gang form), with their keys and
    /// filters compiled.
    /// Each `podGroup` sub-group's `instancesPath`, compiled (`None` where it has none).
    fn sub_group_instances(&mut self, karta: &Karta) -> Vec<Option<Expr>> {
        let subs = karta
            .spec
            .optimization_instructions
            .as_ref()
            .and_then(|o| o.gang_scheduling.as_ref())
            .and_then(|g| g.pod_group.as_ref())
            .map(|pg| pg.sub_groups.as_slice())
            .unwrap_or_default();
        subs.iter()
            .map(|s| {
                let n = Some(s.component_name.as_str());
                self.expr(n, "instancesPath", s.instances_path.as_ref())
            })
            .collect()
    }

    fn gang_members(
        &mut self,
        karta: &Karta,
        index: &BTreeMap<&str, usize>,
    ) -> Vec<(String, Vec<GangMember>)> {
        let Some(g) = karta
            .spec
            .optimization_instructions
            .as_ref()
            .and_then(|o| o.gang_scheduling.as_ref())
        else {
            return Vec::new();
        };
        g.pod_groups
            .iter()
            .map(|pg| {
                let members = pg
                    .members
                    .iter()
                    .filter_map(|m| {
                        let component = *index.get(m.component_name.as_str())?;
                        let n = Some(m.component_name.as_str());
                        let keys = m
                            .group_by_key_paths
                            .iter()
                            .filter_map(|k| self.expr(n, "groupByKeyPaths", Some(k)))
                            .collect();
                        let filters = m
                            .filters
                            .iter()
                            .filter_map(|k| self.expr(n, "filters", Some(k)))
                            .collect();
                        Some(GangMember {
                            component,
                            keys,
                            filters,
                        })
                    })
                    .collect();
                (pg.name.clone(), members)
            })
            .collect()
    }

    /// The `references` (wlmap extension) with their name and namespace paths compiled.
    fn references(&mut self, karta: &Karta) -> Vec<CompiledReference> {
        karta
            .spec
            .references
            .iter()
            .filter_map(|r| {
                let name_path = self.expr(None, "references.namePath", Some(&r.name_path))?;
                let namespace_path =
                    self.expr(None, "references.namespacePath", r.namespace_path.as_ref());
                Some(CompiledReference {
                    def: r.clone(),
                    name_path,
                    namespace_path,
                })
            })
            .collect()
    }

    fn finish(self) -> Vec<Finding> {
        let mut findings = self.findings;
        if let Err(errs) = self.batch.finish() {
            for (i, e) in errs {
                let (c, f, t) = &self.added[i];
                findings.push(finding(c.as_deref(), f, t, &e));
            }
        }
        findings
    }
}

impl Definition {
    /// Validate and compile a definition. Errors carry every finding (structure and
    /// expressions); warnings do not stop compilation.
    ///
    /// ```
    /// let mut k = wlmap_schema::Karta::example();
    /// k.spec.structure_definition.root_component.spec_definition.as_mut().unwrap().pod_template_spec_path = Some(".spec |".into());
    /// let err = wlmap_engine::Definition::compile(k, wlmap_engine::Origin::File).unwrap_err();
    /// assert!(err.to_string().contains("podTemplateSpecPath"));
    /// ```
    pub fn compile(karta: Karta, origin: Origin) -> Result<Definition, Error> {
        let (def, findings) = Self::compile_with_findings(karta, origin);
        match def {
            Some(d) => Ok(d),
            None => Err(Error::InvalidDefinition {
                findings: findings
                    .into_iter()
                    .filter(|f| f.severity == Severity::Error)
                    .collect(),
            }),
        }
    }

    /// Every finding of a definition (structure and expressions), located in its source when
    /// given. This is what `wlmap validate` prints.
    ///
    /// ```
    /// let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: x}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: x\n      kind: {group: a.io, version: v1, kind: X}\n      scaleDefinition: {replicasPath: '.spec.replicas +'}\n      statusDefinition: {statusMappings: {running: [{byExpression: {expression: 'true', expectedResult: 'true'}}]}}\n";
    /// let k = wlmap_schema::decode_one(text, "x.yaml").unwrap();
    /// let f = wlmap_engine::Definition::check(&k, Some(&wlmap_schema::Source { file: "x.yaml", text }));
    /// assert_eq!(f[0].1.as_ref().unwrap().line, 9);
    /// ```
    pub fn check(karta: &Karta, source: Option<&Source>) -> Vec<(Finding, Option<Location>)> {
        let (_, findings) = Self::compile_with_findings(karta.clone(), Origin::File);
        let names: Vec<String> = karta.components().map(|c| c.name.clone()).collect();
        findings
            .into_iter()
            .map(|f| {
                let loc = source.and_then(|s| locate(s, &f, &names));
                (f, loc)
            })
            .collect()
    }

    fn compile_with_findings(karta: Karta, origin: Origin) -> (Option<Definition>, Vec<Finding>) {
        let mut findings = wlmap_schema::validate(&karta);
        let names = var_names(&karta);
        let vars: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut c = Compiler {
            batch: wlmap_expr::Batch::new(&vars),
            added: Vec::new(),
            findings: Vec::new(),
        };
        let index: BTreeMap<&str, usize> = karta
            .components()
            .enumerate()
            .map(|(i, d)| (d.name.as_str(), i))
            .collect();
        let mut components: Vec<Component> = karta
            .components()
            .map(|d| {
                c.component(
                    d,
                    d.owner_ref.as_deref().and_then(|p| index.get(p).copied()),
                )
            })
            .collect();
        link_children(&mut components);
        let status = c.status_rules(karta.root());
        let gang_members = c.gang_members(&karta, &index);
        let sub_group_instances = c.sub_group_instances(&karta);
        let references = c.references(&karta);
        findings.extend(c.finish());
        if findings.iter().any(|f| f.severity == Severity::Error) {
            return (None, findings);
        }
        let def = Definition {
            karta,
            origin,
            components,
            status,
            gang_members,
            sub_group_instances,
            references,
            limits: Limits::default(),
            pod_reads: std::sync::OnceLock::new(),
            gang_reads: std::sync::OnceLock::new(),
        };
        (Some(def), findings)
    }

    /// The definition's name.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert_eq!(def.name(), "core-pod-v1");
    /// ```
    pub fn name(&self) -> String {
        self.karta.name()
    }

    /// Where it came from.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert_eq!(def.origin(), &wlmap_engine::Origin::Catalog);
    /// ```
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Marked experimental (`spec.experimental`, Workload Map v0.3): a [`crate::Registry`]
    /// keeps it aside unless asked to use experimental definitions.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert!(!def.experimental());
    /// ```
    pub fn experimental(&self) -> bool {
        self.karta().spec.experimental
    }

    /// The source definition.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert_eq!(def.karta().kind, "Karta");
    /// ```
    pub fn karta(&self) -> &Karta {
        &self.karta
    }

    /// True when the definition says how to gang its workloads (`gangScheduling` with a
    /// `podGroup` or at least one `podGroups` entry).
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert!(!def.has_gangs());
    /// ```
    pub fn has_gangs(&self) -> bool {
        self.karta
            .spec
            .optimization_instructions
            .as_ref()
            .and_then(|o| o.gang_scheduling.as_ref())
            .is_some_and(|g| g.pod_group.is_some() || !self.gang_members.is_empty())
    }

    /// The kind of workload it describes.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert_eq!(def.root_gvk().version, "v1");
    /// ```
    pub fn root_gvk(&self) -> GroupVersionKind {
        self.karta.root().kind.clone().unwrap_or_default()
    }

    /// Component names, root first.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert_eq!(def.component_names(), vec!["pod"]);
    /// ```
    pub fn component_names(&self) -> Vec<&str> {
        self.components
            .iter()
            .map(|c| c.def.name.as_str())
            .collect()
    }

    /// Kinds of the objects the workload creates (component kinds and additional child kinds),
    /// excluding the root; used to walk owner chains and to hide owned objects in listings.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert!(def.child_kinds().is_empty());
    /// ```
    pub fn child_kinds(&self) -> Vec<GroupVersionKind> {
        let mut out: Vec<GroupVersionKind> = self
            .components
            .iter()
            .skip(1)
            .filter_map(|c| c.def.kind.clone())
            .chain(
                self.karta
                    .spec
                    .structure_definition
                    .additional_child_kinds
                    .iter()
                    .cloned(),
            )
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The places of a pod that placing it in a workload reads (each a path of keys), or
    /// `None` when a selector may read more than named places. Two versions of a pod that
    /// agree at every place, under the same owner, are placed alike: a caller holding an
    /// attributed workload reads the new version's facts where the pod already is
    /// ([`crate::Workload::refresh_pod`]) instead of attributing every pod again.
    ///
    /// ```
    /// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert_eq!(def.pod_placement_reads(), Some(&[][..])); // a Pod is its own only pod
    /// ```
    pub fn pod_placement_reads(&self) -> Option<&[Vec<String>]> {
        self.pod_reads
            .get_or_init(|| pod_reads(&self.components))
            .as_deref()
    }

    /// The places of a pod that grouping it into gangs reads (each a path of keys): where it
    /// is placed ([`Definition::pod_placement_reads`]) and what the `podGroups` members'
    /// `groupByKeyPaths` and `filters` read of it. `None` when one of them may read more than
    /// named places. Two versions of a pod under the same owner that agree at every place
    /// fall in the same groups: a controller need not group a workload again when a pod's
    /// status moves on.
    ///
    /// ```
    /// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// assert_eq!(def.pod_gang_reads(), Some(&[][..])); // no gangs, and a Pod is its own pod
    /// ```
    pub fn pod_gang_reads(&self) -> Option<&[Vec<String>]> {
        self.gang_reads
            .get_or_init(|| {
                let mut out = self.pod_placement_reads()?.to_vec();
                let members = self.gang_members.iter().flat_map(|(_, m)| m);
                out.extend(places_read(
                    members.flat_map(|m| m.keys.iter().chain(&m.filters)),
                )?);
                out.sort();
                out.dedup();
                Some(out)
            })
            .as_deref()
    }

    /// Change the evaluation limits (steps, outputs, time) of every expression.
    ///
    /// ```
    /// # let mut def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// def.set_limits(wlmap_expr::Limits { max_steps: 10, ..Default::default() });
    /// ```
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Evaluate one expression of the definition on an object, with error context (the
    /// expression chooses how: its JSON in place, or its jaq value, converted once per object).
    /// Parts of the object in the outputs stay borrowed.
    pub(crate) fn outputs<'o>(
        &self,
        e: &Expr,
        obj: &'o crate::Object,
        vars: &[wlmap_expr::Val],
        component: &str,
        field: &str,
    ) -> Result<Vec<wlmap_expr::Output<'o>>, Error> {
        e.evaluate(obj.input(), vars, &self.limits)
            .map_err(|source| self.located(e, component, field, source))
    }

    /// [`Definition::outputs`] as jaq values.
    pub(crate) fn eval_obj(
        &self,
        e: &Expr,
        obj: &crate::Object,
        vars: &[wlmap_expr::Val],
        component: &str,
        field: &str,
    ) -> Result<Vec<wlmap_expr::Val>, Error> {
        let out = self.outputs(e, obj, vars, component, field)?;
        Ok(out.into_iter().map(wlmap_expr::Output::into_val).collect())
    }

    pub(crate) fn located(
        &self,
        e: &Expr,
        component: &str,
        field: &str,
        source: wlmap_expr::EvalError,
    ) -> Error {
        Error::Evaluation {
            at: Box::new(ExprField {
                definition: self.name(),
                component: component.to_string(),
                field: field.to_string(),
                expression: e.text().to_string(),
            }),
            source,
        }
    }
}

/// Where a finding points in the file: its field (and value) inside its component's block; the
/// component's `name:` line when the field is not in that block (a missing field must not
/// point at the next component's); the field anywhere for a finding of no component.
fn locate(s: &Source, f: &Finding, components: &[String]) -> Option<Location> {
    // A field is named by its path in the component (`componentTypeSelector.keyPath`,
    // `statusMappings.failed[1].byExpression`): its keys are looked for in turn.
    let keys: Vec<&str> = f
        .field
        .field
        .split('.')
        .map(|k| k.split('[').next().unwrap_or(k))
        .collect();
    let value = f.field.value.as_deref().unwrap_or("");
    let Some(comp) = &f.field.component else {
        let with_value: Vec<&str> = keys.iter().copied().chain([value]).collect();
        return s.find(&with_value).or_else(|| s.find(&keys));
    };
    let start_needle = format!("name: {comp}");
    let start = s.text.find(&start_needle)?;
    // The block ends where the next component's `name:` begins.
    let end = components
        .iter()
        .filter(|n| *n != comp)
        .filter_map(|n| {
            let needle = format!("name: {n}");
            s.text[start + 1..].find(&needle).map(|i| i + start + 1)
        })
        .min()
        .unwrap_or(s.text.len());
    let block = Source {
        file: s.file,
        text: &s.text[..end],
    };
    let field: Vec<&str> = std::iter::once(start_needle.as_str())
        .chain(keys.iter().copied())
        .collect();
    let with_value: Vec<&str> = field.iter().copied().chain([value]).collect();
    block
        .find(&with_value)
        .or_else(|| block.find(&field))
        .or_else(|| s.find(&[&start_needle]))
}
