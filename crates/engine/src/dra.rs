//! GPUs handed out through Dynamic Resource Allocation (`resource.k8s.io/v1`): what a pod
//! template requests through ResourceClaimTemplates and ResourceClaims, and what a pod holds
//! from its allocated claims.
//!
//! A request is booked as the extended resource Kubernetes itself gives every DeviceClass
//! (KEP-5004): `deviceclass.resource.kubernetes.io/<class>: N`. A pod asking that name
//! directly, or a DeviceClass's `extendedResourceName` that is a GPU name, counts the same
//! way. Facts: kubernetes/api resource/v1/types.go (v0.37.2), kubernetes/kubernetes
//! pkg/controller/resourceclaim/controller.go (v1.37.2), the GPU drivers' DeviceClasses
//! (NVIDIA k8s-dra-driver-gpu, ROCm k8s-gpu-dra-driver, Intel resource drivers).

use crate::object::Object;
use crate::resolve::ReferenceProvider;
use crate::resources::{GpuPolicy, Resources};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use wlmap_json::Field;
use wlmap_schema::GroupVersionKind;

/// The extended-resource name of a DeviceClass (`deviceclass.resource.kubernetes.io/<class>`,
/// kubernetes/api resource/v1 `ResourceDeviceClassPrefix`).
pub const DEVICE_CLASS_RESOURCE: &str = "deviceclass.resource.kubernetes.io/";

/// DeviceClasses of the known GPU DRA drivers: NVIDIA (`gpu.nvidia.com`, `mig.nvidia.com`,
/// `vfio.gpu.nvidia.com`), AMD (`gpu.amd.com`) and Intel (`gpu.intel.com`,
/// `gpu-vfio.intel.com`).
pub const GPU_DEVICE_CLASSES: &[&str] = &[
    "gpu.nvidia.com",
    "mig.nvidia.com",
    "vfio.gpu.nvidia.com",
    "gpu.amd.com",
    "gpu.intel.com",
    "gpu-vfio.intel.com",
];

/// The known GPU DRA drivers: a DeviceClass whose selectors name one selects GPUs.
pub const GPU_DRIVERS: &[&str] = &["gpu.nvidia.com", "gpu.amd.com", "gpu.intel.com"];

/// The array at a JSON pointer, or none.
fn array<'v>(v: &'v Value, pointer: &str) -> &'v [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// A `resource.k8s.io/v1` kind.
///
/// ```
/// assert_eq!(wlmap_engine::dra::kind("ResourceClaim").group, "resource.k8s.io");
/// ```
pub fn kind(kind: &str) -> GroupVersionKind {
    GroupVersionKind::new("resource.k8s.io", "v1", kind)
}

/// True when the devices of a DeviceClass are GPUs: by name under the policy, or because the
/// DeviceClass object (when the provider has it) selects a GPU driver's devices.
///
/// ```
/// use wlmap_engine::{GpuPolicy, NoReferences, dra::is_gpu_class};
/// assert!(is_gpu_class("gpu.nvidia.com", &NoReferences, &GpuPolicy::default()));
/// assert!(!is_gpu_class("nic.example.com", &NoReferences, &GpuPolicy::default()));
/// ```
pub fn is_gpu_class(class: &str, refs: &dyn ReferenceProvider, policy: &GpuPolicy) -> bool {
    policy.is_gpu_class(class)
        || refs
            .get(&kind("DeviceClass"), None, class)
            .is_some_and(|c| selects_gpu_driver(&c))
}

/// A DeviceClass whose CEL selectors compare `device.driver` with a GPU driver's name.
fn selects_gpu_driver(class: &Value) -> bool {
    let selectors = array(class, "/spec/selectors");
    selectors.iter().any(|s| {
        let cel = s
            .pointer("/cel/expression")
            .and_then(Value::as_str)
            .unwrap_or("");
        cel.contains("device.driver")
            && GPU_DRIVERS
                .iter()
                .any(|d| cel.contains(&format!("'{d}'")) || cel.contains(&format!("\"{d}\"")))
    })
}

/// The GPU devices a claim spec (`spec.devices` of a ResourceClaim, `spec.spec.devices` of a
/// template) asks for, booked under `deviceclass.resource.kubernetes.io/<class>`:
/// - `exactly`: `count` devices (default 1) with `allocationMode: ExactCount`; with
///   `allocationMode: All`, the devices the class selects on one node, counted from the
///   ResourceSlices where the provider has them, else left out and said so;
/// - `firstAvailable`: the largest alternative, said so when there is a choice;
/// - `adminAccess` requests are not counted (they take no device for use).
///
/// `what` names the claim in the notes.
///
/// ```
/// use wlmap_engine::{GpuPolicy, NoReferences, dra::claim_request};
/// let spec = serde_json::json!({"devices": {"requests": [
///     {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}},
///     {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}]}});
/// let mut notes = vec![];
/// let r = claim_request(&spec, "claim x", &NoReferences, &GpuPolicy::default(), &mut notes);
/// assert_eq!(r.gpus(&GpuPolicy::default()), 4.0);
/// ```
pub fn claim_request(
    spec: &Value,
    what: &str,
    refs: &dyn ReferenceProvider,
    policy: &GpuPolicy,
    notes: &mut Vec<String>,
) -> Resources {
    let mut out = Resources::default();
    let requests = array(spec, "/devices/requests");
    for req in requests {
        let name = req.field("name").and_then(Value::as_str).unwrap_or("");
        if let Some(exact) = req.field("exactly") {
            if let Some((class, n)) = device_count(exact, what, name, refs, policy, notes) {
                book(&mut out, &class, n, policy);
            }
            continue;
        }
        let alternatives = array(req, "/firstAvailable");
        let counted: Vec<(String, String, f64)> = alternatives
            .iter()
            .filter_map(|alt| {
                let sub = alt.field("name").and_then(Value::as_str).unwrap_or("");
                let (class, n) =
                    device_count(alt, what, &format!("{name}/{sub}"), refs, policy, notes)?;
                Some((sub.to_string(), class, n))
            })
            .collect();
        let Some((sub, class, n)) = counted.iter().max_by(|a, b| a.2.total_cmp(&b.2)).cloned()
        else {
            continue;
        };
        if alternatives.len() > 1 {
            notes.push(format!(
                "{what}: request {name} takes the first available of {} alternatives; counted the largest, {sub} ({n} {class})",
                alternatives.len()
            ));
        }
        book(&mut out, &class, n, policy);
    }
    out
}

/// Book `n` devices of a GPU class.
fn book(out: &mut Resources, class: &str, n: f64, policy: &GpuPolicy) {
    let name = format!("{DEVICE_CLASS_RESOURCE}{class}");
    if !policy.is_gpu_class(class) {
        // A GPU by its DeviceClass's selectors: counted whatever the policy says of the name.
        out.gpu_names.insert(name.clone());
    }
    out.add_quantity(&name, n);
}

/// The class and device count of one exact request or sub-request, when it asks for GPUs.
fn device_count(
    req: &Value,
    what: &str,
    name: &str,
    refs: &dyn ReferenceProvider,
    policy: &GpuPolicy,
    notes: &mut Vec<String>,
) -> Option<(String, f64)> {
    let class = req.field("deviceClassName").and_then(Value::as_str)?;
    if req.field("adminAccess").and_then(Value::as_bool) == Some(true)
        || !is_gpu_class(class, refs, policy)
    {
        return None;
    }
    let mode = req
        .field("allocationMode")
        .and_then(Value::as_str)
        .unwrap_or("ExactCount");
    if mode == "All" {
        return match devices_per_node(class, refs) {
            Some(n) => Some((class.to_string(), n as f64)),
            None => {
                notes.push(format!(
                    "{what}: request {name} asks for all {class} devices of a node; how many is unknown without the nodes' ResourceSlices, so they are not counted"
                ));
                None
            }
        };
    }
    let n = req.field("count").and_then(Value::as_f64).unwrap_or(1.0);
    Some((class.to_string(), n))
}

/// The driver and the `type` attribute a known GPU class selects (NVIDIA's classes tell full
/// GPUs, MIG slices and passthrough GPUs apart by `type`).
fn class_selects(class: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match class {
        "gpu.nvidia.com" => ("gpu.nvidia.com", Some("gpu")),
        "mig.nvidia.com" => ("gpu.nvidia.com", Some("mig")),
        "vfio.gpu.nvidia.com" => ("gpu.nvidia.com", Some("vfio")),
        "gpu.amd.com" => ("gpu.amd.com", None),
        "gpu.intel.com" => ("gpu.intel.com", None),
        _ => return None,
    })
}

/// The most devices of a known class any one node publishes (ResourceSlices: one pool per node
/// for the GPU drivers), when the provider lists slices.
fn devices_per_node(class: &str, refs: &dyn ReferenceProvider) -> Option<u64> {
    let (driver, ty) = class_selects(class)?;
    let slices = refs.list(&kind("ResourceSlice"))?;
    let mut per_node: BTreeMap<String, u64> = BTreeMap::new();
    for s in &slices {
        let spec = s.field("spec");
        if spec.and_then(|x| x.field("driver")).and_then(Value::as_str) != Some(driver) {
            continue;
        }
        let node = spec
            .and_then(|x| x.field("nodeName").or_else(|| x.pointer("/pool/name")))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let devices = spec
            .and_then(|x| x.field("devices"))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let n = devices
            .iter()
            .filter(|d| ty.is_none_or(|t| attribute(d, "type").as_deref() == Some(t)))
            .count() as u64;
        *per_node.entry(node).or_default() += n;
    }
    per_node.values().max().copied().filter(|n| *n > 0)
}

/// A device attribute's value as text (`{string: ..}`, `{int: ..}`, `{version: ..}`).
fn attribute(device: &Value, name: &str) -> Option<String> {
    let a = device.pointer(&format!("/attributes/{name}"))?;
    ["string", "version", "int", "bool"]
        .iter()
        .find_map(|k| a.field(k))
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
}

/// What the ResourceClaims of one pod template ask for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplateClaims {
    /// Devices of the claims each pod gets its own of (ResourceClaimTemplates).
    pub per_pod: Resources,
    /// ResourceClaims the pods share by name: counted once for the workload.
    pub shared: BTreeMap<String, Resources>,
    /// What could not be counted, and the choices made.
    pub notes: Vec<String>,
}

/// The GPUs the `spec.resourceClaims` of a pod spec ask for, each entry's template or claim
/// read through the provider (the cluster, a snapshot or the files given). A template or
/// claim the provider does not have is said, not guessed.
///
/// ```
/// use wlmap_engine::{GpuPolicy, ObjectsProvider, Object, dra::template_claims};
/// let tpl = Object::new(serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
///     "metadata": {"name": "four-gpus", "namespace": "ml"},
///     "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}}]}}}}));
/// let spec = serde_json::json!({"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "four-gpus"},
///                                                  {"name": "x", "resourceClaimTemplateName": "gone"}]});
/// let objects = [tpl];
/// let c = template_claims(&spec, "ml", &ObjectsProvider(&objects), &GpuPolicy::default());
/// assert_eq!(c.per_pod.gpus(&GpuPolicy::default()), 4.0);
/// assert!(c.notes[0].contains("ResourceClaimTemplate ml/gone not found"));
/// ```
pub fn template_claims(
    pod_spec: &Value,
    namespace: &str,
    refs: &dyn ReferenceProvider,
    policy: &GpuPolicy,
) -> TemplateClaims {
    let mut out = TemplateClaims::default();
    let entries = array(pod_spec, "/resourceClaims");
    for e in entries {
        let text = |k: &str| e.field(k).and_then(Value::as_str);
        if let Some(t) = text("resourceClaimTemplateName") {
            let what = format!("ResourceClaimTemplate {namespace}/{t}");
            match refs.get(&kind("ResourceClaimTemplate"), Some(namespace), t) {
                Some(tpl) => {
                    let spec = tpl.pointer("/spec/spec").unwrap_or(&Value::Null);
                    let r = claim_request(spec, &what, refs, policy, &mut out.notes);
                    out.per_pod.add_scaled(&r, 1);
                }
                None => out.notes.push(format!(
                    "{what} not found: the devices it asks for are not counted"
                )),
            }
        } else if let Some(c) = text("resourceClaimName") {
            let what = format!("ResourceClaim {namespace}/{c}");
            match refs.get(&kind("ResourceClaim"), Some(namespace), c) {
                Some(claim) => {
                    let spec = claim.field("spec").unwrap_or(&Value::Null);
                    let r = claim_request(spec, &what, refs, policy, &mut out.notes);
                    out.shared.insert(c.to_string(), r);
                }
                None => out.notes.push(format!(
                    "{what} not found: the devices it asks for are not counted"
                )),
            }
        }
    }
    out
}

/// A device allocated to a pod through one of its claims.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct HeldDevice {
    /// The ResourceClaim.
    pub claim: String,
    /// The request it answers (`gpu`, or `gpu/sub` for a `firstAvailable` alternative).
    pub request: String,
    /// The DeviceClass of that request.
    pub class: String,
    /// The driver, pool (the node, for the GPU drivers) and device that identify it.
    pub driver: String,
    /// The pool.
    pub pool: String,
    /// The device.
    pub device: String,
    /// The MIG profile (`1g.10gb`), when its ResourceSlice says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// The names of the ResourceClaims a pod uses: its own claims' names (`spec.resourceClaims`
/// by name, `status.resourceClaimStatuses` for those made from templates) and the claim the
/// scheduler made for its DRA-backed extended resources.
///
/// ```
/// let pod = serde_json::json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
///     "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x7k2q"}]}});
/// assert_eq!(wlmap_engine::dra::pod_claim_names(&pod), ["p-gpu-x7k2q"]);
/// ```
pub fn pod_claim_names(pod: &Value) -> Vec<String> {
    let list = |p: &str| array(pod, p);
    let mut names: Vec<String> = list("/spec/resourceClaims")
        .iter()
        .chain(list("/status/resourceClaimStatuses"))
        .filter_map(|e| e.field("resourceClaimName").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    if let Some(n) = pod
        .pointer("/status/extendedResourceClaimStatus/resourceClaimName")
        .and_then(Value::as_str)
    {
        names.push(n.to_string());
    }
    names.sort();
    names.dedup();
    names
}

/// The ResourceClaims a pod names itself (`spec.resourceClaims[].resourceClaimName`): claims
/// made apart from it, which several pods may share, and which no pod owns.
///
/// ```
/// let pod = serde_json::json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpus"},
///     {"name": "own", "resourceClaimTemplateName": "t"}]}});
/// assert_eq!(wlmap_engine::dra::shared_claim_names(&pod), ["shared-gpus"]);
/// ```
pub fn shared_claim_names(pod: &Value) -> Vec<String> {
    array(pod, "/spec/resourceClaims")
        .iter()
        .filter_map(|e| e.field("resourceClaimName").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// The GPU devices allocated to a pod: the allocation results of its claims whose request
/// asks a GPU class (admin access left out; a device named twice counted once). Claims,
/// DeviceClasses and ResourceSlices are read through the provider.
pub fn held_devices(
    pod: &Object,
    refs: &dyn ReferenceProvider,
    policy: &GpuPolicy,
) -> Vec<HeldDevice> {
    let mut out: Vec<HeldDevice> = Vec::new();
    let ns = pod.namespace();
    // The nodes' ResourceSlices, listed once for the pod, when it holds a device.
    let mut slices: Option<Vec<Value>> = None;
    for name in pod_claim_names(pod.json()) {
        let Some(claim) = refs.get(&kind("ResourceClaim"), Some(ns), &name) else {
            continue;
        };
        let classes = request_classes(&claim);
        let results = array(&claim, "/status/allocation/devices/results");
        for r in results {
            let text = |k: &str| r.field(k).and_then(Value::as_str).unwrap_or("").to_string();
            if r.field("adminAccess").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let request = text("request");
            let Some(class) = classes.get(&request) else {
                continue;
            };
            if !is_gpu_class(class, refs, policy) {
                continue;
            }
            let (driver, pool, device) = (text("driver"), text("pool"), text("device"));
            if out
                .iter()
                .any(|d| d.driver == driver && d.pool == pool && d.device == device)
            {
                continue;
            }
            let slices =
                slices.get_or_insert_with(|| refs.list(&kind("ResourceSlice")).unwrap_or_default());
            let profile = device_profile(slices, &driver, &pool, &device);
            out.push(HeldDevice {
                claim: name.clone(),
                request,
                class: class.clone(),
                driver,
                pool,
                device,
                profile,
            });
        }
    }
    out.sort();
    out
}

/// Request name (and `request/sub` for `firstAvailable` alternatives) → DeviceClass.
fn request_classes(claim: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let requests = array(claim, "/spec/devices/requests");
    let class = |v: &Value| {
        v.field("deviceClassName")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    for r in requests {
        let name = r.field("name").and_then(Value::as_str).unwrap_or("");
        if let Some(c) = r.field("exactly").and_then(class) {
            out.insert(name.to_string(), c);
        }
        for alt in array(r, "/firstAvailable") {
            let sub = alt.field("name").and_then(Value::as_str).unwrap_or("");
            if let Some(c) = class(alt) {
                out.insert(format!("{name}/{sub}"), c);
            }
        }
    }
    out
}

/// A device's `profile` attribute (MIG), from the nodes' ResourceSlices.
fn device_profile(slices: &[Value], driver: &str, pool: &str, device: &str) -> Option<String> {
    slices
        .iter()
        .filter(|s| {
            s.pointer("/spec/driver").and_then(Value::as_str) == Some(driver)
                && s.pointer("/spec/pool/name").and_then(Value::as_str) == Some(pool)
        })
        .flat_map(|s| array(s, "/spec/devices"))
        .find(|d| d.field("name").and_then(Value::as_str) == Some(device))
        .and_then(|d| attribute(d, "profile"))
}
