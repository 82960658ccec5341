//! Resource requests: Kubernetes quantities, the effective pod request, GPU counting.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use wlmap_json::Field;

/// Which extended resources and which DRA DeviceClasses count as GPUs.
///
/// The defaults are the known GPU device plugins' resource names and the known GPU DRA
/// drivers' DeviceClasses ([`crate::dra::GPU_DEVICE_CLASSES`]). Others are added with the
/// environment: `WLMAP_GPU_RESOURCES` (extended-resource names) and `WLMAP_GPU_DEVICE_CLASSES`
/// (DeviceClass names), each a comma-separated list, read once per process.
///
/// ```
/// let p = wlmap_engine::GpuPolicy::default();
/// assert!(p.is_gpu("nvidia.com/gpu"));
/// assert!(p.is_gpu("nvidia.com/mig-1g.10gb"));
/// assert!(p.is_gpu("deviceclass.resource.kubernetes.io/gpu.nvidia.com")); // KEP-5004's name
/// assert!(!p.is_gpu("deviceclass.resource.kubernetes.io/nic.example.com"));
/// assert!(!p.is_gpu("cpu"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuPolicy {
    /// Resource names counted as GPUs.
    pub names: Vec<String>,
    /// Name prefixes counted as GPUs (each unit is one GPU or GPU slice).
    pub prefixes: Vec<String>,
    /// DRA DeviceClasses whose devices are GPUs (or GPU slices).
    pub device_classes: Vec<String>,
}

impl Default for GpuPolicy {
    fn default() -> Self {
        static POLICY: std::sync::OnceLock<GpuPolicy> = std::sync::OnceLock::new();
        POLICY
            .get_or_init(|| {
                let env = |name: &str| -> Vec<String> {
                    std::env::var(name)
                        .unwrap_or_default()
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                };
                GpuPolicy::builtin()
                    .with(env("WLMAP_GPU_RESOURCES"), env("WLMAP_GPU_DEVICE_CLASSES"))
            })
            .clone()
    }
}

impl GpuPolicy {
    /// The built-in names only (no environment).
    ///
    /// ```
    /// assert!(wlmap_engine::GpuPolicy::builtin().is_gpu_class("mig.nvidia.com"));
    /// ```
    pub fn builtin() -> GpuPolicy {
        GpuPolicy {
            names: [
                "nvidia.com/gpu",
                "amd.com/gpu",
                "habana.ai/gaudi",
                "gpu.intel.com/i915",
            ]
            .map(String::from)
            .to_vec(),
            prefixes: vec!["nvidia.com/mig-".to_string()],
            device_classes: crate::dra::GPU_DEVICE_CLASSES
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }

    /// This policy with more resource names and DeviceClasses counted as GPUs.
    ///
    /// ```
    /// let p = wlmap_engine::GpuPolicy::builtin().with(vec!["example.com/tpu".into()], vec!["tpu.example.com".into()]);
    /// assert!(p.is_gpu("example.com/tpu") && p.is_gpu_class("tpu.example.com"));
    /// ```
    pub fn with(mut self, names: Vec<String>, device_classes: Vec<String>) -> GpuPolicy {
        self.names.extend(names);
        self.device_classes.extend(device_classes);
        self
    }

    /// True when the resource counts as a GPU: a GPU resource name, or the extended-resource
    /// name Kubernetes gives a GPU DeviceClass (`deviceclass.resource.kubernetes.io/<class>`).
    ///
    /// ```
    /// assert!(wlmap_engine::GpuPolicy::default().is_gpu("amd.com/gpu"));
    /// ```
    pub fn is_gpu(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
            || self.prefixes.iter().any(|p| name.starts_with(p.as_str()))
            || name
                .strip_prefix(crate::dra::DEVICE_CLASS_RESOURCE)
                .is_some_and(|c| self.is_gpu_class(c))
    }

    /// True when a DeviceClass's devices count as GPUs by name (see also
    /// [`crate::dra::is_gpu_class`], which reads the class's selectors too).
    ///
    /// ```
    /// assert!(wlmap_engine::GpuPolicy::default().is_gpu_class("gpu.amd.com"));
    /// ```
    pub fn is_gpu_class(&self, class: &str) -> bool {
        self.device_classes.iter().any(|c| c == class)
    }
}

/// Requested resources: one number per resource name in base units (cores, bytes, units).
///
/// ```
/// let mut r = wlmap_engine::Resources::default();
/// r.add_quantity("cpu", 0.5);
/// assert_eq!(r.cpu_millis(), 500);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Resources {
    /// Resource name → amount in base units.
    pub amounts: BTreeMap<String, f64>,
    /// Names counted as GPUs whatever the policy: DRA DeviceClasses found to be GPUs from their
    /// selectors (`deviceclass.resource.kubernetes.io/<class>`), see [`crate::dra`].
    #[serde(skip)]
    pub gpu_names: std::collections::BTreeSet<String>,
}

impl Resources {
    /// Add an amount.
    ///
    /// ```
    /// let mut r = wlmap_engine::Resources::default();
    /// r.add_quantity("memory", 1024.0);
    /// r.add_quantity("memory", 1024.0);
    /// assert_eq!(r.memory_bytes(), 2048);
    /// ```
    pub fn add_quantity(&mut self, name: &str, amount: f64) {
        // No key copy when the resource is already there (this runs per container of every pod).
        match self.amounts.get_mut(name) {
            Some(a) => *a += amount,
            None => {
                self.amounts.insert(name.to_string(), amount);
            }
        }
    }

    /// Add every amount of `other`, `times` times.
    ///
    /// ```
    /// let mut a = wlmap_engine::Resources::default();
    /// let mut b = wlmap_engine::Resources::default();
    /// b.add_quantity("nvidia.com/gpu", 4.0);
    /// a.add_scaled(&b, 3);
    /// assert_eq!(a.gpus(&Default::default()), 12.0);
    /// ```
    pub fn add_scaled(&mut self, other: &Resources, times: u64) {
        for (k, v) in &other.amounts {
            self.add_quantity(k, v * times as f64);
        }
        self.gpu_names.extend(other.gpu_names.iter().cloned());
    }

    /// CPU in millicores.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Resources::default().cpu_millis(), 0);
    /// ```
    pub fn cpu_millis(&self) -> u64 {
        (self.amounts.get("cpu").copied().unwrap_or(0.0) * 1000.0).round() as u64
    }

    /// Memory in bytes.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Resources::default().memory_bytes(), 0);
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.amounts.get("memory").copied().unwrap_or(0.0).round() as u64
    }

    /// GPUs (and GPU slices) under a policy.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Resources::default().gpus(&Default::default()), 0.0);
    /// ```
    pub fn gpus(&self, policy: &GpuPolicy) -> f64 {
        self.amounts
            .iter()
            .filter(|(k, _)| policy.is_gpu(k) || self.gpu_names.contains(k.as_str()))
            .fold(0.0, |a, (_, v)| a + v)
    }

    /// Extended resources: everything but cpu, memory, ephemeral-storage and pods.
    ///
    /// ```
    /// let mut r = wlmap_engine::Resources::default();
    /// r.add_quantity("nvidia.com/gpu", 1.0);
    /// r.add_quantity("cpu", 1.0);
    /// assert_eq!(r.extended().len(), 1);
    /// ```
    pub fn extended(&self) -> BTreeMap<String, f64> {
        self.amounts
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage" | "pods"))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    fn max_with(&mut self, other: &Resources) {
        for (k, v) in &other.amounts {
            let e = self.amounts.entry(k.clone()).or_insert(0.0);
            if *v > *e {
                *e = *v;
            }
        }
    }
}

/// Parse a Kubernetes quantity (`500m`, `4Gi`, `1.5`, `2e3`, `100M`) into base units.
///
/// ```
/// use wlmap_engine::parse_quantity;
/// assert_eq!(parse_quantity("500m"), Some(0.5));
/// assert_eq!(parse_quantity("4Gi"), Some(4.0 * 1024.0 * 1024.0 * 1024.0));
/// assert_eq!(parse_quantity("2"), Some(2.0));
/// assert_eq!(parse_quantity("x"), None);
/// ```
pub fn parse_quantity(q: &str) -> Option<f64> {
    let q = q.trim();
    // Most quantities are small whole numbers ("1", "8"): no suffix search, no float parsing.
    if !q.is_empty() && q.len() <= 15 && q.bytes().all(|b| b.is_ascii_digit()) {
        return q.parse::<u64>().ok().map(|n| n as f64);
    }
    let suffixes: [(&str, f64); 14] = [
        ("Ki", 1024.0),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("Pi", 1024f64.powi(5)),
        ("Ei", 1024f64.powi(6)),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
    ];
    for (s, mul) in suffixes {
        if let Some(num) = q.strip_suffix(s) {
            return num
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(|v| v * mul);
        }
    }
    if let Some(num) = q.strip_suffix('E') {
        return num.parse::<f64>().ok().map(|v| v * 1e18);
    }
    q.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn quantity(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => parse_quantity(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// The request of one container: `requests`, falling back to `limits` per resource (as the
/// API server defaults requests from limits).
///
/// ```
/// let c = serde_json::json!({"resources": {"limits": {"nvidia.com/gpu": 2}, "requests": {"cpu": "1"}}});
/// let r = wlmap_engine::container_request(&c);
/// assert_eq!(r.amounts["nvidia.com/gpu"], 2.0);
/// assert_eq!(r.cpu_millis(), 1000);
/// ```
pub fn container_request(container: &Value) -> Resources {
    resource_requirements(container.field("resources").unwrap_or(&Value::Null))
}

/// The request of a ResourceRequirements object (`{requests, limits}`).
///
/// ```
/// let r = wlmap_engine::resource_requirements(&serde_json::json!({"limits": {"memory": "1Ki"}}));
/// assert_eq!(r.memory_bytes(), 1024);
/// ```
pub fn resource_requirements(res: &Value) -> Resources {
    let mut r = Resources::default();
    add_requirements(&mut r, res);
    r
}

/// Adds the effective request of one `resources` block to `into`: what it requests, and its
/// limit where it requests nothing readable (what [`resource_requirements`] returns), without
/// building a map per container.
fn add_requirements(into: &mut Resources, res: &Value) {
    let req = res.field("requests");
    if let Some(req) = req.and_then(Value::as_object) {
        for (k, v) in req {
            if let Some(q) = quantity(v) {
                into.add_quantity(k, q);
            }
        }
    }
    if let Some(lim) = res.field("limits").and_then(Value::as_object) {
        for (k, v) in lim {
            // `field` scans; `Map::get` would hash the key with SipHash.
            let requested = req.and_then(|r| r.field(k)).and_then(quantity).is_some();
            if !requested && let Some(q) = quantity(v) {
                into.add_quantity(k, q);
            }
        }
    }
}

/// The Kubernetes effective request of a pod spec: the larger of the largest init container
/// (plus the restartable sidecars started before it) and the sum of the containers plus all
/// sidecars; pod-level `resources` win for what they set; `overhead` is added.
///
/// ```
/// let spec = serde_json::json!({
///   "initContainers": [{"name": "fetch", "resources": {"requests": {"cpu": "4"}}}],
///   "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "4"}}},
///                  {"name": "b", "resources": {"requests": {"cpu": "1"}}}]});
/// let r = wlmap_engine::pod_request(&spec);
/// assert_eq!(r.cpu_millis(), 4000);
/// assert_eq!(r.gpus(&Default::default()), 4.0);
/// ```
pub fn pod_request(spec: &Value) -> Resources {
    let mut sum = Resources::default();
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    if let Some(inits) = spec.field("initContainers").and_then(Value::as_array) {
        for c in inits {
            let r = container_request(c);
            if c.field("restartPolicy").and_then(Value::as_str) == Some("Always") {
                sidecars.add_scaled(&r, 1);
            } else {
                let mut at = sidecars.clone();
                at.add_scaled(&r, 1);
                init_max.max_with(&at);
            }
        }
    }
    if let Some(cs) = spec.field("containers").and_then(Value::as_array) {
        for c in cs {
            add_requirements(&mut sum, c.field("resources").unwrap_or(&Value::Null));
        }
    }
    sum.add_scaled(&sidecars, 1);
    sum.max_with(&init_max);
    if let Some(pod_level) = spec.field("resources") {
        for (k, v) in resource_requirements(pod_level).amounts {
            sum.amounts.insert(k, v);
        }
    }
    if let Some(oh) = spec.field("overhead").and_then(Value::as_object) {
        for (k, v) in oh {
            if let Some(q) = quantity(v) {
                sum.add_quantity(k, q);
            }
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sidecars_add_to_containers_and_count_for_later_init_containers() {
        let spec = json!({
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                {"name": "warmup", "resources": {"requests": {"cpu": "3"}}}],
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]});
        // containers 2 + sidecar 1 = 3; init warmup 3 + sidecar 1 = 4 wins.
        assert_eq!(pod_request(&spec).cpu_millis(), 4000);
    }

    #[test]
    fn pod_level_resources_and_overhead() {
        let spec = json!({
            "resources": {"requests": {"cpu": "8"}},
            "overhead": {"cpu": "250m"},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]});
        let r = pod_request(&spec);
        assert_eq!(r.cpu_millis(), 8250);
        assert_eq!(r.memory_bytes(), 1 << 30);
    }

    #[test]
    fn limits_fill_missing_requests_only() {
        let c = json!({"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "nvidia.com/gpu": "8"}}});
        let r = container_request(&c);
        assert_eq!(r.cpu_millis(), 1000);
        assert_eq!(r.gpus(&GpuPolicy::default()), 8.0);
    }

    #[test]
    fn mig_and_other_vendors_count_as_gpus() {
        let spec = json!({"containers": [
            {"name": "a", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 2}}},
            {"name": "b", "resources": {"limits": {"amd.com/gpu": 1, "example.com/fpga": 1}}}]});
        let r = pod_request(&spec);
        assert_eq!(r.gpus(&GpuPolicy::default()), 3.0);
        assert_eq!(r.extended().len(), 3);
    }

    #[test]
    fn malformed_quantities_are_ignored() {
        let c = json!({"resources": {"requests": {"cpu": "lots", "memory": [1]}}});
        assert!(container_request(&c).amounts.is_empty());
    }
}
