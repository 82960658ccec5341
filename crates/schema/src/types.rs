//! Serde types of the public `Karta` definition format (`run.ai/v1alpha1`).
//!
//! Every struct denies unknown fields: a misspelled key such as `ownerName` is a decoding error
//! that names the field and its location instead of silently dropping the setting.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// API version of the current definition format.
///
/// ```
/// assert_eq!(wlmap_schema::Karta::example().api_version, wlmap_schema::API_VERSION);
/// ```
pub const API_VERSION: &str = "run.ai/v1alpha1";
/// Kind of the current definition format.
///
/// ```
/// assert_eq!(wlmap_schema::Karta::example().kind, wlmap_schema::KIND);
/// ```
pub const KIND: &str = "Karta";
/// API version of the older `ResourceInterface` format, read and converted.
///
/// ```
/// use wlmap_schema::{GroupVersionKind, LEGACY_API_VERSION, LEGACY_KIND};
/// let g = GroupVersionKind::from_api_version(LEGACY_API_VERSION, LEGACY_KIND);
/// assert_eq!(g.group, "optimization.nvidia.com");
/// ```
pub const LEGACY_API_VERSION: &str = "optimization.nvidia.com/v1alpha1";
/// Kind of the older format.
///
/// ```
/// let mut v = serde_json::to_value(wlmap_schema::Karta::example()).unwrap();
/// v["apiVersion"] = wlmap_schema::LEGACY_API_VERSION.into();
/// v["kind"] = wlmap_schema::LEGACY_KIND.into();
/// let k = wlmap_schema::decode_one(&v.to_string(), "legacy.json").unwrap();
/// assert_eq!(k.kind, wlmap_schema::KIND); // converted while decoding
/// ```
pub const LEGACY_KIND: &str = "ResourceInterface";

/// A workload definition: one `Karta` object.
///
/// ```
/// let yaml = r#"
/// apiVersion: run.ai/v1alpha1
/// kind: Karta
/// metadata: {name: core-pod-v1}
/// spec:
///   structureDefinition:
///     rootComponent:
///       name: pod
///       kind: {group: "", version: v1, kind: Pod}
///       specDefinition: {podTemplateSpecPath: "."}
///       statusDefinition:
///         phaseDefinition: {path: .status.phase}
///         statusMappings:
///           running: [{byPhase: Running}]
/// "#;
/// let karta = wlmap_schema::decode_one(yaml, "pod.yaml").unwrap();
/// assert_eq!(karta.root().name, "pod");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Karta {
    /// `run.ai/v1alpha1` (or the legacy `optimization.nvidia.com/v1alpha1` before conversion).
    pub api_version: String,
    /// `Karta` (or the legacy `ResourceInterface` before conversion).
    pub kind: String,
    /// Object metadata; only `name` is interpreted.
    #[serde(default)]
    pub metadata: Metadata,
    /// The definition itself.
    pub spec: KartaSpec,
    /// Status written by an in-cluster operator; kept, never interpreted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}

impl Karta {
    /// The root component of the structure.
    ///
    /// ```
    /// # let k = wlmap_schema::Karta::example();
    /// assert_eq!(k.root().name, "pod");
    /// ```
    pub fn root(&self) -> &ComponentDefinition {
        &self.spec.structure_definition.root_component
    }

    /// All components, root first, then children in definition order.
    ///
    /// ```
    /// # let k = wlmap_schema::Karta::example();
    /// assert_eq!(k.components().count(), 1);
    /// ```
    pub fn components(&self) -> impl Iterator<Item = &ComponentDefinition> {
        std::iter::once(self.root()).chain(self.spec.structure_definition.child_components.iter())
    }

    /// The definition's name (`metadata.name`), or a slug of the root kind when unnamed.
    ///
    /// ```
    /// # let k = wlmap_schema::Karta::example();
    /// assert_eq!(k.name(), "core-pod-v1");
    /// ```
    pub fn name(&self) -> String {
        match &self.metadata.name {
            Some(n) if !n.is_empty() => n.clone(),
            _ => self
                .root()
                .kind
                .as_ref()
                .map(GroupVersionKind::slug)
                .unwrap_or_else(|| "unnamed".to_string()),
        }
    }

    /// The labels KAI Scheduler's pod-grouper finds a Karta by (a label-selector List on the
    /// root kind's group, version and kind; a Karta without them is invisible to it).
    ///
    /// ```
    /// let labels = wlmap_schema::Karta::example().lookup_labels();
    /// assert_eq!(labels["run.ai/karta-kind"], "Pod");
    /// assert_eq!(labels["run.ai/karta-version"], "v1");
    /// assert_eq!(labels["run.ai/karta-group"], "");
    /// ```
    pub fn lookup_labels(&self) -> std::collections::BTreeMap<String, String> {
        let gvk = self.root().kind.clone().unwrap_or_default();
        [
            ("run.ai/karta-group", gvk.group),
            ("run.ai/karta-version", gvk.version),
            ("run.ai/karta-kind", gvk.kind),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// A small valid definition (a Pod), for examples and tests.
    ///
    /// ```
    /// assert_eq!(wlmap_schema::Karta::example().kind, "Karta");
    /// ```
    pub fn example() -> Karta {
        let root = ComponentDefinition {
            name: "pod".into(),
            kind: Some(GroupVersionKind::new("", "v1", "Pod")),
            spec_definition: Some(SpecDefinition {
                pod_template_spec_path: Some(".".into()),
                ..Default::default()
            }),
            status_definition: Some(StatusDefinition {
                phase_definition: Some(PhaseDefinition {
                    path: ".status.phase".into(),
                }),
                status_mappings: StatusMappings {
                    running: vec![StatusMatcher {
                        by_phase: Some("Running".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                },
                ..Default::default()
            }),
            ..Default::default()
        };
        Karta {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            metadata: Metadata {
                name: Some("core-pod-v1".into()),
                ..Default::default()
            },
            spec: KartaSpec {
                structure_definition: StructureDefinition {
                    root_component: root,
                    child_components: vec![],
                    additional_child_kinds: vec![],
                },
                optimization_instructions: None,
                references: vec![],
                short_names: vec![],
                experimental: false,
            },
            status: None,
        }
    }
}

/// Kubernetes object metadata of a definition. Only `name` is interpreted; the rest is kept.
///
/// ```
/// let m: wlmap_schema::Metadata =
///     serde_json::from_value(serde_json::json!({"name": "x", "labels": {"a": "b"}})).unwrap();
/// assert_eq!(m.name.as_deref(), Some("x"));
/// assert!(m.other.contains_key("labels")); // kept, not interpreted
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Name of the definition (cluster-scoped object name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Every other metadata field (labels, uid, resourceVersion...), kept as is.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// `spec` of a definition.
///
/// ```
/// let spec: wlmap_schema::KartaSpec = serde_json::from_value(serde_json::json!({
///     "structureDefinition": {"rootComponent": {"name": "pod"}}})).unwrap();
/// assert_eq!(spec.structure_definition.root_component.name, "pod");
/// assert!(spec.references.is_empty() && spec.optimization_instructions.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KartaSpec {
    /// The component tree.
    pub structure_definition: StructureDefinition,
    /// Hints for schedulers (gang scheduling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimization_instructions: Option<OptimizationInstructions>,
    /// wlmap extension: other objects the expressions may read as `$name` variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<Reference>,
    /// wlmap extension: short names a TYPE argument may use for the root kind (`lws`,
    /// `isvc`), as a CRD's `spec.names.shortNames` gives them to kubectl. Lower case letters
    /// and digits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Workload Map v0.3: the definition is experimental. Such definitions are hidden by
    /// default: listed (`wlmap definitions` marks them) but not used unless asked for
    /// (`--experimental`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub experimental: bool,
}

/// wlmap extension: another object an expression reads as the variable `$name`.
///
/// The object is found by the caller's provider (a snapshot or the cluster); when it cannot be
/// found the variable is `null`.
///
/// ```
/// let r: wlmap_schema::Reference = serde_json::from_value(serde_json::json!({"name": "queue",
///     "kind": {"group": "scheduling.run.ai", "version": "v2", "kind": "Queue"},
///     "namePath": ".metadata.labels.queue", "clusterScoped": true})).unwrap();
/// assert!(r.cluster_scoped && r.namespace_path.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reference {
    /// Variable name without `$`.
    pub name: String,
    /// Kind of the referenced object.
    pub kind: GroupVersionKind,
    /// jq on the workload giving the referenced object's name.
    pub name_path: String,
    /// jq on the workload giving its namespace; absent = the workload's namespace, or
    /// cluster-scoped when `clusterScoped` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_path: Option<String>,
    /// The referenced kind is cluster-scoped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster_scoped: bool,
}

/// The structure: a root component and its descendants.
///
/// ```
/// let s = wlmap_schema::Karta::example().spec.structure_definition;
/// assert_eq!(s.root_component.name, "pod");
/// assert!(s.child_components.is_empty() && s.additional_child_kinds.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StructureDefinition {
    /// The workload object itself.
    pub root_component: ComponentDefinition,
    /// Components under the root, each naming its parent in `ownerRef`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub child_components: Vec<ComponentDefinition>,
    /// Kinds the workload creates that are not modelled as components.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_child_kinds: Vec<GroupVersionKind>,
}

/// Group, version and kind of a Kubernetes type.
///
/// ```
/// let g = wlmap_schema::GroupVersionKind::from_api_version("batch/v1", "Job");
/// assert_eq!(g.to_string(), "batch/v1/Job");
/// assert_eq!(wlmap_schema::GroupVersionKind::new("", "v1", "Pod").to_string(), "v1/Pod");
/// ```
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupVersionKind {
    /// API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
}

/// A kind without its version: what identifies a kind across the versions a server serves
/// (ownership, "is this kind known", definitions that read several versions).
///
/// ```
/// let gk = wlmap_schema::GroupVersionKind::new("batch", "v1", "Job").group_kind();
/// assert_eq!(gk, wlmap_schema::GroupKind::new("batch", "Job"));
/// assert_eq!(gk.to_string(), "Job.batch");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct GroupKind {
    /// API group; empty for the core group.
    pub group: String,
    /// Kind.
    pub kind: String,
}

impl GroupKind {
    /// Build a group and kind.
    ///
    /// ```
    /// assert_eq!(wlmap_schema::GroupKind::new("", "Pod").kind, "Pod");
    /// ```
    pub fn new(group: &str, kind: &str) -> Self {
        GroupKind {
            group: group.into(),
            kind: kind.into(),
        }
    }

    /// The group and kind of an `apiVersion` and `kind` as found in an object or an owner
    /// reference.
    ///
    /// ```
    /// let gk = wlmap_schema::GroupKind::from_api_version("apps/v1", "Deployment");
    /// assert_eq!((gk.group.as_str(), gk.kind.as_str()), ("apps", "Deployment"));
    /// ```
    pub fn from_api_version(api_version: &str, kind: &str) -> Self {
        let group = api_version.split_once('/').map_or("", |(g, _)| g);
        Self::new(group, kind)
    }
}

/// `Kind.group` (kubectl's spelling), or `Kind` for the core group.
impl std::fmt::Display for GroupKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

impl GroupVersionKind {
    /// Build a GVK.
    ///
    /// ```
    /// let g = wlmap_schema::GroupVersionKind::new("batch", "v1", "Job");
    /// assert_eq!(g.api_version(), "batch/v1");
    /// ```
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// Parse `apiVersion` and `kind` as found in an object.
    ///
    /// ```
    /// let g = wlmap_schema::GroupVersionKind::from_api_version("apps/v1", "Deployment");
    /// assert_eq!(g.group, "apps");
    /// ```
    pub fn from_api_version(api_version: &str, kind: &str) -> Self {
        match api_version.split_once('/') {
            Some((g, v)) => Self::new(g, v, kind),
            None => Self::new("", api_version, kind),
        }
    }

    /// The group and kind, without the version.
    ///
    /// ```
    /// let g = wlmap_schema::GroupVersionKind::new("apps", "v1", "Deployment");
    /// assert_eq!(g.group_kind().kind, "Deployment");
    /// ```
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }

    /// `group/version`, or `version` for the core group.
    ///
    /// ```
    /// assert_eq!(wlmap_schema::GroupVersionKind::new("", "v1", "Pod").api_version(), "v1");
    /// ```
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The catalog slug: `{group with . as -, or core}-{kind lowercased}-{version}`.
    ///
    /// ```
    /// let g = wlmap_schema::GroupVersionKind::new("jobset.x-k8s.io", "v1alpha2", "JobSet");
    /// assert_eq!(g.slug(), "jobset-x-k8s-io-jobset-v1alpha2");
    /// ```
    pub fn slug(&self) -> String {
        let group = if self.group.is_empty() {
            "core".to_string()
        } else {
            self.group.replace('.', "-")
        };
        format!("{}-{}-{}", group, self.kind.to_lowercase(), self.version)
    }
}

impl std::fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.kind)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.kind)
        }
    }
}

/// One component of the structure.
///
/// ```
/// use wlmap_schema::ComponentDefinition;
/// let c: ComponentDefinition = serde_json::from_value(serde_json::json!(
///     {"name": "workers", "ownerRef": "job", "specDefinition": {"podSpecPath": ".spec"}})).unwrap();
/// assert!(c.has_pod_spec());
/// let typo = serde_json::json!({"name": "w", "ownerName": "job"}); // misspelled ownerRef
/// assert!(serde_json::from_value::<ComponentDefinition>(typo).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentDefinition {
    /// Unique name within the definition.
    pub name: String,
    /// Kind of the objects this component stands for; absent for a logical grouping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<GroupVersionKind>,
    /// Name of the parent component (children only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_ref: Option<String>,
    /// Where the pod template or spec lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_definition: Option<SpecDefinition>,
    /// Where replica counts live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_definition: Option<ScaleDefinition>,
    /// jq yielding one id per instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id_path: Option<String>,
    /// How to read the status (root component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_definition: Option<StatusDefinition>,
    /// How to suspend and resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_definition: Option<SuspendDefinition>,
    /// How this component's pods are recognised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<PodSelector>,
}

impl ComponentDefinition {
    /// True when the component has a pod template, pod spec or fragmented spec.
    ///
    /// ```
    /// # let k = wlmap_schema::Karta::example();
    /// assert!(k.root().has_pod_spec());
    /// ```
    pub fn has_pod_spec(&self) -> bool {
        self.spec_definition
            .as_ref()
            .is_some_and(|s| s.shape_count() > 0)
    }
}

/// Where a component keeps its pods' specification; exactly one shape.
///
/// ```
/// let s: wlmap_schema::SpecDefinition =
///     serde_json::from_value(serde_json::json!({"podTemplateSpecPath": ".spec.template"})).unwrap();
/// assert_eq!(s.pod_template_spec_path.as_deref(), Some(".spec.template"));
/// assert_eq!(s.shape_count(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpecDefinition {
    /// jq to a full PodTemplateSpec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template_spec_path: Option<String>,
    /// jq to a PodSpec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_spec_path: Option<String>,
    /// jq to the pods' ObjectMeta, with `podSpecPath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_path: Option<String>,
    /// Pod fields spread over the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmented_pod_spec_definition: Option<FragmentedPodSpecDefinition>,
}

impl SpecDefinition {
    /// How many of the three shapes are set (valid definitions have exactly one).
    ///
    /// ```
    /// let s = wlmap_schema::SpecDefinition { pod_spec_path: Some(".spec".into()), ..Default::default() };
    /// assert_eq!(s.shape_count(), 1);
    /// ```
    pub fn shape_count(&self) -> usize {
        usize::from(self.pod_template_spec_path.is_some())
            + usize::from(self.pod_spec_path.is_some())
            + usize::from(self.fragmented_pod_spec_definition.is_some())
    }
}

/// Pod fields kept in separate places of a custom resource.
///
/// ```
/// let f: wlmap_schema::FragmentedPodSpecDefinition = serde_json::from_value(serde_json::json!(
///     {"containerPath": ".spec.container", "labelsPath": ".spec.labels"})).unwrap();
/// let s = wlmap_schema::SpecDefinition { fragmented_pod_spec_definition: Some(f), ..Default::default() };
/// assert_eq!(s.shape_count(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FragmentedPodSpecDefinition {
    /// jq to the scheduler name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name_path: Option<String>,
    /// jq to the pods' labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_path: Option<String>,
    /// jq to the pods' annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations_path: Option<String>,
    /// jq to a ResourceRequirements of the main container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_path: Option<String>,
    /// jq to the pod's resource claims (DRA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claims_path: Option<String>,
    /// jq to the pod affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_affinity_path: Option<String>,
    /// jq to the node affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity_path: Option<String>,
    /// jq to a list of containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers_path: Option<String>,
    /// jq to a single container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_path: Option<String>,
    /// jq to the priority class name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name_path: Option<String>,
    /// jq to the main image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_path: Option<String>,
}

/// Where replica counts live.
///
/// ```
/// let s: wlmap_schema::ScaleDefinition = serde_json::from_value(serde_json::json!(
///     {"replicasPath": ".spec.replicas", "maxReplicasPath": ".spec.maxReplicas"})).unwrap();
/// assert_eq!(s.replicas_path.as_deref(), Some(".spec.replicas"));
/// assert!(s.min_replicas_path.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScaleDefinition {
    /// jq to the desired replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas_path: Option<String>,
    /// jq to the minimum replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas_path: Option<String>,
    /// jq to the maximum replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas_path: Option<String>,
}

/// How to read a workload's status.
///
/// ```
/// let s = wlmap_schema::Karta::example().root().status_definition.clone().unwrap();
/// assert_eq!(s.phase_definition.unwrap().path, ".status.phase");
/// assert_eq!(s.status_mappings.running.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusDefinition {
    /// Where the phase string lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_definition: Option<PhaseDefinition>,
    /// Where the conditions live and their field names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions_definition: Option<ConditionsDefinition>,
    /// Matchers per common status.
    #[serde(default)]
    pub status_mappings: StatusMappings,
}

/// Where the phase lives.
///
/// ```
/// use wlmap_schema::PhaseDefinition;
/// let p: PhaseDefinition = serde_json::from_value(serde_json::json!({"path": ".status.phase"})).unwrap();
/// assert_eq!(p.path, ".status.phase");
/// assert!(serde_json::from_value::<PhaseDefinition>(serde_json::json!({})).is_err()); // path is required
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhaseDefinition {
    /// jq to the phase.
    pub path: String,
}

/// Where the conditions live.
///
/// ```
/// let c: wlmap_schema::ConditionsDefinition = serde_json::from_value(serde_json::json!(
///     {"path": ".status.conditions", "typeFieldName": "kind"})).unwrap();
/// assert_eq!(c.type_field_name.as_deref(), Some("kind"));
/// assert!(c.status_field_name.is_none()); // `status` is used
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConditionsDefinition {
    /// jq to the list of conditions.
    pub path: String,
    /// Field holding the condition type (default `type`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_field_name: Option<String>,
    /// Field holding the condition status (default `status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_field_name: Option<String>,
    /// Field holding the message (default `message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_field_name: Option<String>,
    /// Field holding the reason (default `reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_field_name: Option<String>,
}

/// Matchers for each common status; each list is ORed.
///
/// ```
/// let m: wlmap_schema::StatusMappings =
///     serde_json::from_value(serde_json::json!({"failed": [{"byPhase": "Failed"}]})).unwrap();
/// assert_eq!(m.failed[0].by_phase.as_deref(), Some("Failed"));
/// assert!(m.running.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusMappings {
    /// Starting up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initializing: Vec<StatusMatcher>,
    /// Running.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<StatusMatcher>,
    /// Finished successfully.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completed: Vec<StatusMatcher>,
    /// Failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<StatusMatcher>,
    /// Running with reduced capacity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<StatusMatcher>,
    /// Suspended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspended: Vec<StatusMatcher>,
    /// Being suspended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspending: Vec<StatusMatcher>,
    /// Being resumed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resuming: Vec<StatusMatcher>,
    /// From a release of the format before the vocabulary settled (the catalog of
    /// dsx-ai-factory/karta at 9eca29c): read as `initializing` (validation says so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<StatusMatcher>,
    /// From the same release: a rollout under way, read as `initializing` too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progressing: Vec<StatusMatcher>,
}

/// One matcher: the parts present are ANDed.
///
/// ```
/// let m: wlmap_schema::StatusMatcher = serde_json::from_value(serde_json::json!(
///     {"byPhase": "Running", "byConditions": [{"type": "Ready", "status": "True"}]})).unwrap();
/// assert_eq!(m.by_conditions[0].type_, "Ready");
/// assert!(m.by_expression.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusMatcher {
    /// The phase equals this string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_phase: Option<String>,
    /// Every listed condition matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_conditions: Vec<ExpectedCondition>,
    /// The expression's first output, as a string, equals `expectedResult`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_expression: Option<ExpressionMatcher>,
}

/// A condition to look for.
///
/// ```
/// let c: wlmap_schema::ExpectedCondition =
///     serde_json::from_value(serde_json::json!({"type": "Complete", "status": "True"})).unwrap();
/// assert_eq!((c.type_.as_str(), c.status.as_deref()), ("Complete", Some("True")));
/// assert!(c.reason.is_none()); // any reason
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectedCondition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// Expected status (`True`, `False`, `Unknown`); any when absent. wlmap extension: `Absent`
    /// matches when no condition of this type exists (Karta never matches it, which is safe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Expected reason; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An expression and the string its first output must equal.
///
/// ```
/// let e: wlmap_schema::ExpressionMatcher = serde_json::from_value(serde_json::json!(
///     {"expression": ".status.active > 0", "expectedResult": "true"})).unwrap();
/// assert_eq!(e.expected_result, "true");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpressionMatcher {
    /// jq on the workload.
    pub expression: String,
    /// Expected result, compared with the first output's `tostring`.
    pub expected_result: String,
}

/// Suspend and resume actions.
///
/// ```
/// let s: wlmap_schema::SuspendDefinition = serde_json::from_value(serde_json::json!(
///     {"suspendActions": [{"path": ".spec.suspend", "value": "true"}]})).unwrap();
/// assert_eq!(s.suspend_actions[0].path, ".spec.suspend");
/// assert!(s.resume_actions.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuspendDefinition {
    /// Applied in order to suspend.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspend_actions: Vec<Action>,
    /// Applied in order to resume.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resume_actions: Vec<Action>,
}

/// Set the value at a path.
///
/// ```
/// let a: wlmap_schema::Action =
///     serde_json::from_value(serde_json::json!({"path": ".spec.suspend", "value": "true"})).unwrap();
/// let value: serde_json::Value = serde_json::from_str(&a.value).unwrap();
/// assert_eq!(value, serde_json::json!(true));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Action {
    /// jq path to write.
    pub path: String,
    /// JSON-encoded value, e.g. `true` or `"\"Suspended\""`.
    pub value: String,
}

/// How a component's pods are recognised; every path runs on the pod.
///
/// ```
/// let p: wlmap_schema::PodSelector = serde_json::from_value(serde_json::json!(
///     {"componentTypeSelector": {"keyPath": ".metadata.labels.role", "value": "worker"}})).unwrap();
/// assert_eq!(p.component_type_selector.unwrap().value.as_deref(), Some("worker"));
/// assert!(p.replica_selector.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSelector {
    /// Which component a pod belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_type_selector: Option<ComponentTypeSelector>,
    /// Which instance a pod belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_instance_selector: Option<ComponentInstanceSelector>,
    /// Which replica (copy of a sub-structure) a pod belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_selector: Option<ReplicaSelector>,
}

/// Component type selector.
///
/// ```
/// let s: wlmap_schema::ComponentTypeSelector =
///     serde_json::from_value(serde_json::json!({"matchLabels": {"role": "worker"}})).unwrap();
/// assert_eq!(s.match_labels.unwrap()["role"], "worker");
/// assert!(s.key_path.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentTypeSelector {
    /// jq on the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_path: Option<String>,
    /// Expected value of `keyPath`; when absent, the key only has to exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Labels the pod must carry (ANDed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
}

/// Instance selector.
///
/// ```
/// let s: wlmap_schema::ComponentInstanceSelector =
///     serde_json::from_value(serde_json::json!({"idPath": ".metadata.labels.index"})).unwrap();
/// assert_eq!(s.id_path, ".metadata.labels.index");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentInstanceSelector {
    /// jq on the pod yielding its instance id.
    pub id_path: String,
}

/// Replica selector.
///
/// ```
/// let s: wlmap_schema::ReplicaSelector =
///     serde_json::from_value(serde_json::json!({"keyPath": ".metadata.labels.replica"})).unwrap();
/// assert_eq!(s.key_path, ".metadata.labels.replica");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSelector {
    /// jq on the pod yielding its replica key.
    pub key_path: String,
}

/// Hints for schedulers.
///
/// ```
/// let o: wlmap_schema::OptimizationInstructions = serde_json::from_value(serde_json::json!(
///     {"gangScheduling": {"podGroup": {"name": "gang"}}})).unwrap();
/// assert_eq!(o.gang_scheduling.unwrap().pod_group.unwrap().name, "gang");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OptimizationInstructions {
    /// Gang scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang_scheduling: Option<GangScheduling>,
}

/// Gang scheduling, in the deprecated and the current form.
///
/// ```
/// let g: wlmap_schema::GangScheduling = serde_json::from_value(serde_json::json!(
///     {"podGroups": [{"name": "all", "members": [{"componentName": "workers"}]}]})).unwrap();
/// assert_eq!(g.pod_groups[0].members[0].component_name, "workers");
/// assert!(g.pod_group.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GangScheduling {
    /// Deprecated: groups keyed by pod expressions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_groups: Vec<PodGroupDefinition>,
    /// One group per workload with sub-groups per component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_group: Option<PodGroupMapping>,
}

/// Deprecated pod group.
///
/// ```
/// let d: wlmap_schema::PodGroupDefinition =
///     serde_json::from_value(serde_json::json!({"name": "all"})).unwrap();
/// assert_eq!(d.name, "all");
/// assert!(d.members.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupDefinition {
    /// Group name.
    pub name: String,
    /// Member components.
    #[serde(default)]
    pub members: Vec<PodGroupMember>,
}

/// Member of a deprecated pod group.
///
/// ```
/// let m: wlmap_schema::PodGroupMember = serde_json::from_value(serde_json::json!(
///     {"componentName": "workers", "groupByKeyPaths": [".metadata.labels.replica"]})).unwrap();
/// assert_eq!(m.group_by_key_paths.len(), 1);
/// assert!(m.filters.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupMember {
    /// Component name.
    pub component_name: String,
    /// jq on the pod; each must yield exactly one non-empty value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_by_key_paths: Vec<String>,
    /// jq on the pod, ANDed; only a literal `true` passes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<String>,
}

/// Current pod group form.
///
/// ```
/// let m: wlmap_schema::PodGroupMapping = serde_json::from_value(serde_json::json!(
///     {"name": "gang", "subGroups": [{"componentName": "workers"}]})).unwrap();
/// assert_eq!(m.sub_groups[0].component_name, "workers");
/// assert!(m.topology.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupMapping {
    /// Group name.
    pub name: String,
    /// Sub-groups, one per component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_groups: Vec<SubGroup>,
    /// Topology constraint of the whole group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyConstraint>,
}

/// A sub-group.
///
/// ```
/// let s: wlmap_schema::SubGroup = serde_json::from_value(serde_json::json!(
///     {"componentName": "workers", "topology": {"topologyName": "rack"}})).unwrap();
/// assert_eq!(s.topology.unwrap().topology_name, "rack");
/// // `instancesPath` selects among a component's instances: one without them is refused.
/// let mut k = wlmap_schema::Karta::example();
/// k.spec.optimization_instructions = Some(serde_json::from_value(serde_json::json!({"gangScheduling":
///     {"podGroup": {"name": "g", "subGroups": [{"componentName": "pod", "instancesPath": ".x"}]}}})).unwrap());
/// assert!(wlmap_schema::validate(&k).iter().any(|f| f.field.field == "instancesPath"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubGroup {
    /// Component name.
    pub component_name: String,
    /// wlmap extension: a jq expression on the workload object (references as variables)
    /// yielding the ids of the component's instances (as its `instanceIdPath` yields them)
    /// this sub-group covers; absent, it covers every instance. The pods of the instances left
    /// out are in no sub-group and are scheduled on their own: steps that must finish before
    /// the others start (a TrainJob's initializers), or that start only once others run.
    /// Implementations of the format that do not know the field cover every instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances_path: Option<String>,
    /// Topology constraint of the sub-group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyConstraint>,
}

/// Topology constraint.
///
/// ```
/// let t: wlmap_schema::TopologyConstraint = serde_json::from_value(serde_json::json!(
///     {"topologyName": "dc", "requiredTopologyLevel": "rack"})).unwrap();
/// assert_eq!(t.required_topology_level, "rack");
/// assert_eq!(t.preferred_topology_level, ""); // absent levels are empty
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologyConstraint {
    /// Topology object name.
    pub topology_name: String,
    /// Preferred level.
    #[serde(default)]
    pub preferred_topology_level: String,
    /// Required level.
    #[serde(default)]
    pub required_topology_level: String,
}
