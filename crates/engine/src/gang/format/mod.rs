//! The scheduler formats gangs are written in. Each format is one module holding one
//! [`Format`] that says, once: which objects it writes ([`Format::kinds`]), how groups render
//! as those objects and as pod tags ([`Format::render`]), and how to tell that a pod already
//! names its group ([`Format::already_grouped`], and the same test in CEL for the API server:
//! [`Format::grouped_condition`]). [`SchedulerFormat`] names them on command
//! lines; adding a scheduler is its module, a variant and its line in
//! [`SchedulerFormat::format`].

mod coscheduling;
mod kai;
mod kueue;

pub use kueue::QUEUE_LABEL as KUEUE_QUEUE_LABEL;
mod native;
mod native_composite;
mod volcano;
mod workload;

use super::PodGroup;
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::{Value, json};
use wlmap_schema::TopologyConstraint;

/// What one scheduler format says about gangs: each format's module holds one, as data.
pub struct Format {
    name: &'static str,
    summary: &'static str,
    kinds: &'static [GangKind],
    render: fn(&[PodGroup], &Workload, &Object) -> Rendered,
    tag: PodTag,
    not_written_by_controller: Option<&'static str>,
    when_not_served: Option<&'static str>,
}

impl Format {
    /// A format the controller writes, whose kinds are served when its scheduler is there.
    const fn new(
        name: &'static str,
        summary: &'static str,
        kinds: &'static [GangKind],
        render: fn(&[PodGroup], &Workload, &Object) -> Rendered,
        tag: PodTag,
    ) -> Format {
        Format {
            name,
            summary,
            kinds,
            render,
            tag,
            not_written_by_controller: None,
            when_not_served: None,
        }
    }

    /// The same, not written by the controller, for this reason.
    const fn not_by_controller(self, why: &'static str) -> Format {
        Format {
            not_written_by_controller: Some(why),
            ..self
        }
    }

    /// The same, its kinds built in but off by default: what to turn on.
    const fn off_by_default(self, hint: &'static str) -> Format {
        Format {
            when_not_served: Some(hint),
            ..self
        }
    }

    /// The format's name on a command line (`--format volcano`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What the format writes, in a line.
    pub fn summary(&self) -> &'static str {
        self.summary
    }

    /// The kinds of the objects it writes, parents before children (the order they are
    /// created in; deletions go the other way). Empty when groups are pod tags only.
    pub fn kinds(&self) -> &'static [GangKind] {
        self.kinds
    }

    /// The groups as the format's objects, each owned by the workload, with what ties each
    /// known pod to its group.
    pub fn render(&self, groups: &[PodGroup], w: &Workload, o: &Object) -> Rendered {
        (self.render)(groups, w, o)
    }

    /// True when the pod already names its group the way this format reads it (its operator
    /// or a native integration put it there): such a pod is left as it is.
    pub fn already_grouped(&self, pod: &Value) -> bool {
        self.tag.on(pod)
    }

    /// [`Format::already_grouped`] as a CEL expression over `object` (the pod), for a webhook's
    /// match condition: the API server evaluates it on the pod as the webhooks before have
    /// left it. It never fails on a pod without labels or annotations (a failing match
    /// condition refuses the request).
    ///
    /// ```
    /// use wlmap_engine::SchedulerFormat;
    /// assert_eq!(SchedulerFormat::Native.format().grouped_condition(),
    ///     "has(object.spec.schedulingGroup)");
    /// assert_eq!(SchedulerFormat::Coscheduling.format().grouped_condition(),
    ///     "has(object.metadata.labels) && 'scheduling.x-k8s.io/pod-group' in object.metadata.labels");
    /// ```
    pub fn grouped_condition(&self) -> String {
        self.tag.cel()
    }

    /// Why `wlmap controller` does not write this format, or `None` when it does.
    pub fn not_written_by_controller(&self) -> Option<&'static str> {
        self.not_written_by_controller
    }

    /// When the format's kinds are built into Kubernetes but off by default: what to turn on.
    pub fn when_not_served(&self) -> Option<&'static str> {
        self.when_not_served
    }
}

/// Every kind of gang object any scheduler format writes, each once (PodGroups, Workloads,
/// Kueue's Workloads...): what a view lists to show what the schedulers say of a workload.
///
/// ```
/// assert!(wlmap_engine::gang_object_kinds().any(|k| k.group == "scheduling.x-k8s.io" && k.kind == "PodGroup"));
/// ```
pub fn gang_object_kinds() -> impl Iterator<Item = wlmap_schema::GroupVersionKind> {
    let mut out: Vec<wlmap_schema::GroupVersionKind> = Vec::new();
    // What a scheduler writes for the groups it is given (read, never written by wlmap).
    let theirs = [kueue::WORKLOAD];
    for f in SchedulerFormat::ALL {
        for k in f.format().kinds().iter().chain(&theirs) {
            let g = wlmap_schema::GroupVersionKind::new(k.group, k.version, k.kind);
            if !out.contains(&g) {
                out.push(g);
            }
        }
    }
    out.into_iter()
}

/// The API kind of a gang object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GangKind {
    /// API group.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Resource (plural) name.
    pub plural: &'static str,
}

impl GangKind {
    /// A kind of gang object.
    pub const fn new(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        plural: &'static str,
    ) -> GangKind {
        GangKind {
            group,
            version,
            kind,
            plural,
        }
    }

    /// A `PodGroup` of this API group and version (most schedulers call theirs so).
    pub const fn pod_group(group: &'static str, version: &'static str) -> GangKind {
        GangKind::new(group, version, "PodGroup", "podgroups")
    }

    /// `group/version`, as `apiVersion` writes it.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// The registration of the formats: each line a variant of [`SchedulerFormat`] and the module
/// holding its [`Format`], in the order help lists them. Adding a scheduler is its module and
/// its line here.
macro_rules! formats {
    ($($(#[$doc:meta])* $variant:ident => $module:ident,)*) => {
        /// The scheduler languages gangs can be rendered in.
        ///
        /// ```
        /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
        /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}}));
        /// # let w = wlmap_engine::resolve(&def, &pod).unwrap();
        /// let g = vec![wlmap_engine::PodGroup { name: "p".into(), min_member: 1, sub_groups: vec![], members: vec![], topology: None, incomplete: false }];
        /// let r = wlmap_engine::render_gangs(wlmap_engine::SchedulerFormat::Volcano, &g, &w, &pod);
        /// assert_eq!(r.objects[0]["apiVersion"], "scheduling.volcano.sh/v1beta1");
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum SchedulerFormat {
            $($(#[$doc])* $variant,)*
        }

        impl SchedulerFormat {
            /// Every format, in the order help lists them.
            pub const ALL: &[SchedulerFormat] = &[$(SchedulerFormat::$variant,)*];

            /// What the format says: its module's [`Format`].
            ///
            /// ```
            /// use wlmap_engine::SchedulerFormat;
            /// let kinds: Vec<&str> = SchedulerFormat::NativeComposite.format().kinds().iter().map(|k| k.kind).collect();
            /// assert_eq!(kinds, ["Workload", "CompositePodGroup", "PodGroup"]);
            /// assert!(SchedulerFormat::Kueue.format().kinds().is_empty());
            /// ```
            pub fn format(self) -> &'static Format {
                match self {
                    $(SchedulerFormat::$variant => &$module::FORMAT,)*
                }
            }
        }
    };
}

formats! {
    /// KAI Scheduler `scheduling.run.ai/v2alpha2` PodGroup.
    Kai => kai,
    /// scheduler-plugins coscheduling `scheduling.x-k8s.io/v1alpha1` PodGroup.
    Coscheduling => coscheduling,
    /// Volcano `scheduling.volcano.sh/v1beta1` PodGroup.
    Volcano => volcano,
    /// Kueue pod-group labels and annotations.
    Kueue => kueue,
    /// Kubernetes v1.37 gang scheduling: `scheduling.k8s.io/v1beta1` PodGroups.
    Native => native,
    /// Kubernetes v1.37 hierarchical gangs (alpha, feature gate `CompositePodGroup`): a group
    /// with sub-groups is a `scheduling.k8s.io/v1alpha3` CompositePodGroup over one PodGroup
    /// per sub-group, described by a Workload; a group without is a PodGroup as in
    /// [`SchedulerFormat::Native`].
    NativeComposite => native_composite,
    /// Kubernetes v1.35 Workload API (`scheduling.k8s.io/v1alpha1`).
    Workload => workload,
}

impl SchedulerFormat {
    /// The formats `wlmap controller` writes.
    ///
    /// ```
    /// let names: Vec<&str> = wlmap_engine::SchedulerFormat::controller_formats().map(|f| f.name()).collect();
    /// assert_eq!(names, ["coscheduling", "volcano", "kueue", "native", "native-composite"]);
    /// ```
    pub fn controller_formats() -> impl Iterator<Item = SchedulerFormat> {
        SchedulerFormat::ALL
            .iter()
            .copied()
            .filter(|f| f.format().not_written_by_controller().is_none())
    }

    /// The format's name on a command line (`--format volcano`).
    ///
    /// ```
    /// use wlmap_engine::SchedulerFormat;
    /// assert_eq!(SchedulerFormat::Volcano.name(), "volcano");
    /// assert_eq!("native".parse::<SchedulerFormat>(), Ok(SchedulerFormat::Native));
    /// assert!("slurm".parse::<SchedulerFormat>().unwrap_err().contains("kai, coscheduling"));
    /// ```
    pub fn name(self) -> &'static str {
        self.format().name()
    }

    /// What the format writes, in a line.
    pub fn summary(self) -> &'static str {
        self.format().summary()
    }
}

impl std::str::FromStr for SchedulerFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        SchedulerFormat::ALL
            .iter()
            .copied()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = SchedulerFormat::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown scheduler format {s:?} (one of {})",
                    names.join(", ")
                )
            })
    }
}

impl std::fmt::Display for SchedulerFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The label every gang object wlmap writes carries: the controller changes and deletes only
/// objects with it (an object of the same name without it belongs to someone else).
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "wlmap");

/// What a scheduler format renders of a workload's gang groups.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// The objects to create, each owned by the workload (valid for `kubectl apply`). Kueue
    /// has none: its groups are pod labels and annotations only.
    pub objects: Vec<Value>,
    /// What ties each known pod to its group: `{"pod", "labels"?, "annotations"?, "spec"?}`.
    /// A pod carries these from its creation (a webhook or the operator sets them): the
    /// native `spec.schedulingGroup` cannot change afterwards.
    pub pod_tags: Vec<Value>,
    /// What the format could not say (more groups than it holds, ...).
    pub warnings: Vec<String>,
    /// Kueue: the labels and annotations each group's pod templates need.
    pub templates: Vec<Value>,
}

impl Rendered {
    fn extend(&mut self, other: Rendered) {
        self.objects.extend(other.objects);
        self.pod_tags.extend(other.pod_tags);
        self.warnings.extend(other.warnings);
        self.templates.extend(other.templates);
    }
}

/// Render groups as a scheduler's objects: PodGroups (KAI, coscheduling, Volcano, the
/// Kubernetes v1.37 `PodGroup`), a v1.35 `Workload`, or pod labels and annotations (Kueue),
/// each owned by the workload, with what ties each known pod to its group.
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}}));
/// let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// let g = vec![wlmap_engine::PodGroup { name: "p".into(), min_member: 1, sub_groups: vec![], members: vec!["p".into()], topology: None, incomplete: false }];
/// let r = wlmap_engine::render_gangs(wlmap_engine::SchedulerFormat::Native, &g, &w, &pod);
/// assert_eq!(r.objects[0]["apiVersion"], "scheduling.k8s.io/v1beta1");
/// assert_eq!(r.objects[0]["spec"]["schedulingPolicy"]["gang"]["minCount"], 1);
/// assert_eq!(r.pod_tags[0]["spec"]["schedulingGroup"]["podGroupName"], "p");
/// ```
pub fn render_gangs(
    format: SchedulerFormat,
    groups: &[PodGroup],
    w: &Workload,
    o: &Object,
) -> Rendered {
    format.format().render(groups, w, o)
}

/// The `metadata` of a gang object: its name, namespace, the managed-by label, and the
/// workload as its controlling owner.
fn meta(name: &str, o: &Object) -> Value {
    let owner = json!([{"apiVersion": o.api_version(), "kind": o.kind(), "name": o.name(), "uid": o.uid(), "controller": true, "blockOwnerDeletion": false}]);
    let mut m =
        json!({"name": name, "labels": {MANAGED_BY.0: MANAGED_BY.1}, "ownerReferences": owner});
    if !o.namespace().is_empty() {
        m["namespace"] = json!(o.namespace());
    }
    m
}

/// An object of a gang kind.
fn object(kind: &GangKind, name: &str, o: &Object, spec: Value) -> Value {
    json!({"apiVersion": kind.api_version(), "kind": kind.kind, "metadata": meta(name, o), "spec": spec})
}

/// A topology constraint as KAI writes it.
fn topology(t: &TopologyConstraint) -> Value {
    json!({"topology": t.topology_name, "requiredTopologyLevel": t.required_topology_level, "preferredTopologyLevel": t.preferred_topology_level})
}

/// Tags for each member pod of each group.
fn tag_members(groups: &[PodGroup], tag: impl Fn(&PodGroup, &str) -> Value) -> Vec<Value> {
    groups
        .iter()
        .flat_map(|g| g.members.iter().map(move |p| (g, p)))
        .map(|(g, p)| tag(g, p))
        .collect()
}

/// Where a format's pod names its group: one field of the pod's spec, one label or one
/// annotation. Said once, as data, it is read two ways: by wlmap on a pod
/// ([`Format::already_grouped`]) and by the API server in CEL ([`Format::grouped_condition`]).
#[derive(Clone, Copy, Debug)]
enum PodTag {
    /// A field of `spec` (not null).
    Spec(&'static str),
    /// A label (any value).
    Label(&'static str),
    /// An annotation (any value).
    Annotation(&'static str),
}

impl PodTag {
    /// True when the pod carries the tag.
    fn on(self, pod: &Value) -> bool {
        let at = match self {
            PodTag::Spec(field) => &pod["spec"][field],
            PodTag::Label(key) => &pod["metadata"]["labels"][key],
            PodTag::Annotation(key) => &pod["metadata"]["annotations"][key],
        };
        !at.is_null()
    }

    /// The same test in CEL. Keys hold only the characters of qualified names (no quote).
    fn cel(self) -> String {
        let in_map = |map: &str, key: &str| {
            format!("has(object.metadata.{map}) && '{key}' in object.metadata.{map}")
        };
        match self {
            PodTag::Spec(field) => format!("has(object.spec.{field})"),
            PodTag::Label(key) => in_map("labels", key),
            PodTag::Annotation(key) => in_map("annotations", key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_renders_only_its_own_kinds() {
        let def =
            crate::Definition::compile(wlmap_schema::Karta::example(), crate::Origin::Catalog)
                .unwrap();
        let pod = Object::new(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ml", "uid": "u"}, "spec": {}}));
        let w = crate::resolve(&def, &pod).unwrap();
        let g = PodGroup {
            name: "p-gang".into(),
            min_member: 2,
            sub_groups: vec![],
            members: vec!["p".into()],
            topology: None,
            incomplete: false,
        };
        for &f in SchedulerFormat::ALL {
            let r = render_gangs(f, std::slice::from_ref(&g), &w, &pod);
            let kinds = f.format().kinds();
            for o in &r.objects {
                assert!(
                    kinds
                        .iter()
                        .any(|k| o["kind"] == k.kind && o["apiVersion"] == k.api_version()),
                    "{f}: {} {} is not among its kinds",
                    o["apiVersion"],
                    o["kind"]
                );
                assert_eq!(o["metadata"]["labels"][MANAGED_BY.0], MANAGED_BY.1, "{f}");
            }
            // A pod tagged as the format tags it reads as grouped by the same format.
            for t in &r.pod_tags {
                let mut tagged = json!({"metadata": {"name": "p"}, "spec": {}});
                for part in ["labels", "annotations"] {
                    if !t[part].is_null() {
                        tagged["metadata"][part] = t[part].clone();
                    }
                }
                if let Some(spec) = t["spec"].as_object() {
                    for (k, v) in spec {
                        tagged["spec"][k] = v.clone();
                    }
                }
                assert!(f.format().already_grouped(&tagged), "{f}: {t}");
                // The API server's test (CEL) names the field or key the tag sets.
                let cel = f.format().grouped_condition();
                let set: Vec<&String> = ["labels", "annotations", "spec"]
                    .iter()
                    .filter_map(|part| t[*part].as_object())
                    .flat_map(|m| m.keys())
                    .collect();
                assert!(
                    set.iter().any(|k| cel.contains(k.as_str())),
                    "{f}: {cel} {t}"
                );
                assert!(
                    !f.format()
                        .already_grouped(&json!({"metadata": {}, "spec": {}})),
                    "{f}"
                );
            }
        }
    }
}
