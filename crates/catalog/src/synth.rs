//! Synthetic cluster snapshots for benchmarks and tests: the demo's fixtures copied N times,
//! each copy in its own namespace with fresh uids (owner chains, labels and statuses stay what
//! the controllers wrote), each object as the API server returns it, and the whole written as
//! a user makes a snapshot: `kubectl get -A -o json` or `-o yaml` (a `List`, keys sorted), or
//! one object per line.
//!
//! "As the API server returns it": every object gets its `resourceVersion`, a
//! `creationTimestamp`, the field managers' `managedFields` (one entry for what its creator
//! set, one for the status its controller writes), and a top-level workload kubectl's
//! last-applied configuration; a pod gets what the API server defaults and the admission
//! plugins add (DNS policy, service account and its token volume, default tolerations,
//! termination settings) and what the kubelet writes (addresses, QoS class, start time, the
//! conditions' times, each container's image, ids and state). What a fixture already says is
//! never changed, so every workload reads as its fixture does.
//!
//! ```
//! use wlmap_catalog::synth::{Format, write};
//! let mut out = Vec::new();
//! let made = write(2, Format::JsonList, &mut out).unwrap();
//! let list: serde_json::Value = serde_json::from_slice(&out).unwrap();
//! assert_eq!(list["kind"], "List");
//! assert_eq!(list["items"].as_array().unwrap().len(), made.objects);
//! assert!(list["items"][0]["metadata"]["managedFields"].is_array());
//! ```

use serde_json::{Map, Value, json};
use std::io::{self, Write};

/// How a snapshot is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `kubectl get -o json`: one `List`, four-space indent, keys sorted.
    JsonList,
    /// `kubectl get -o yaml`: one `List`, keys sorted, items at the left edge.
    YamlList,
    /// One object per line, compact JSON.
    JsonLines,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "json" => Ok(Format::JsonList),
            "yaml" => Ok(Format::YamlList),
            "lines" => Ok(Format::JsonLines),
            other => Err(format!("unknown format {other:?} (json, yaml or lines)")),
        }
    }
}

/// What a snapshot holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Made {
    /// Workloads (copies of a demo fixture).
    pub workloads: usize,
    /// Objects written.
    pub objects: usize,
    /// Pods among them.
    pub pods: usize,
}

/// Write a snapshot of `n` workloads, the demo's fixtures in turn, copy `i` in namespace
/// `synth-i`.
pub fn write(n: usize, format: Format, out: &mut impl Write) -> io::Result<Made> {
    let fixtures = fixtures();
    let mut made = Made {
        workloads: n,
        ..Made::default()
    };
    match format {
        Format::JsonList => out.write_all(b"{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n")?,
        Format::YamlList => out.write_all(b"apiVersion: v1\nitems:\n")?,
        Format::JsonLines => {}
    }
    for i in 0..n {
        for o in copy(&fixtures[i % fixtures.len()], i) {
            if format == Format::JsonList && made.objects > 0 {
                out.write_all(b",\n")?;
            }
            made.objects += 1;
            made.pods += usize::from(o["kind"] == "Pod");
            write_item(&o, format, out)?;
        }
    }
    match format {
        Format::JsonList => out.write_all(
            b"\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n",
        )?,
        Format::YamlList => out.write_all(b"kind: List\nmetadata:\n  resourceVersion: \"\"\n")?,
        Format::JsonLines => {}
    }
    Ok(made)
}

/// The demo's fixtures, each a list of objects.
fn fixtures() -> Vec<Vec<Value>> {
    crate::DEMO
        .iter()
        .map(|(name, text)| {
            wlmap_schema::decode_objects(text, name)
                .unwrap_or_else(|e| panic!("the demo fixture {name} decodes: {e}"))
        })
        .collect()
}

/// Copy `i` of a fixture: fresh uids, namespace `synth-i`, as the API server returns it.
fn copy(fixture: &[Value], i: usize) -> Vec<Value> {
    let uids: Vec<&str> = fixture
        .iter()
        .filter_map(|o| o.pointer("/metadata/uid").and_then(Value::as_str))
        .collect();
    fixture
        .iter()
        .map(|o| {
            let mut text = o.to_string();
            for u in &uids {
                // Same length, unique per copy: the last 12 hex digits become the copy number.
                let fresh = format!("{}{:012x}", &u[..u.len().saturating_sub(12)], i);
                text = text.replace(u, &fresh);
            }
            let mut v: Value = serde_json::from_str(&text).expect("a fixture object re-reads");
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("namespace".into(), Value::from(format!("synth-{i}")));
            }
            as_served(&mut v, i);
            sorted(v)
        })
        .collect()
}

fn write_item(o: &Value, format: Format, out: &mut impl Write) -> io::Result<()> {
    match format {
        Format::JsonLines => writeln!(out, "{o}"),
        Format::JsonList => {
            let mut text = Vec::new();
            let indent = serde_json::ser::PrettyFormatter::with_indent(b"    ");
            serde::Serialize::serialize(
                o,
                &mut serde_json::Serializer::with_formatter(&mut text, indent),
            )
            .map_err(io::Error::other)?;
            let text = String::from_utf8(text).map_err(io::Error::other)?;
            let lines: Vec<String> = text.lines().map(|l| format!("        {l}")).collect();
            out.write_all(lines.join("\n").as_bytes())
        }
        Format::YamlList => {
            let text = serde_saphyr::to_string(o).map_err(io::Error::other)?;
            for (n, line) in text.lines().enumerate() {
                let lead = if n == 0 {
                    "- "
                } else if line.is_empty() {
                    ""
                } else {
                    "  "
                };
                writeln!(out, "{lead}{line}")?;
            }
            Ok(())
        }
    }
}

/// Keys sorted at every level, as kubectl prints them.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

const TIME: &str = "2026-11-30T10:00:00Z";

/// What the API server, its admission plugins and the controllers add to an object the
/// fixture shows compactly (nothing the fixture says is changed).
fn as_served(v: &mut Value, i: usize) {
    let api_version = v["apiVersion"].as_str().unwrap_or("v1").to_string();
    let is_pod = v["kind"] == "Pod" && api_version == "v1";
    let top_level = v.pointer("/metadata/ownerReferences").is_none();
    if is_pod {
        pod_defaults(v);
    }
    let managed = managed_fields(v, &api_version, is_pod);
    let applied = top_level.then(|| last_applied(v));
    let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    fill(meta, "resourceVersion", json!((2_210_000 + i).to_string()));
    fill(meta, "creationTimestamp", json!(TIME));
    if !is_pod {
        fill(meta, "generation", json!(1));
    }
    fill(meta, "managedFields", managed);
    if let Some(applied) = applied {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            fill(
                a,
                "kubectl.kubernetes.io/last-applied-configuration",
                json!(applied),
            );
        }
    }
}

/// Insert `value` at `key` unless the map has one.
fn fill(m: &mut Map<String, Value>, key: &str, value: Value) {
    m.entry(key).or_insert(value);
}

/// kubectl's last-applied configuration: what the user applied, as compact JSON.
fn last_applied(v: &Value) -> String {
    let meta = &v["metadata"];
    let mut applied = json!({"apiVersion": v["apiVersion"], "kind": v["kind"],
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]}});
    if let Some(labels) = meta.get("labels") {
        applied["metadata"]["labels"] = labels.clone();
    }
    if let Some(spec) = v.get("spec") {
        applied["spec"] = spec.clone();
    }
    format!("{applied}\n")
}

/// Two field managers: the creator's (metadata and spec) and the status writer's.
fn managed_fields(v: &Value, api_version: &str, is_pod: bool) -> Value {
    let entry = |manager: &str, fields: Map<String, Value>, status: bool| {
        let mut e = json!({"apiVersion": api_version, "fieldsType": "FieldsV1",
            "fieldsV1": fields, "manager": manager, "operation": "Update", "time": TIME});
        if status {
            e["subresource"] = json!("status");
        }
        e
    };
    let mut own = Map::new();
    if let Some(meta) = v.get("metadata").and_then(Value::as_object) {
        let mut m = Map::new();
        for k in ["labels", "annotations", "ownerReferences", "finalizers"] {
            if let Some(x) = meta.get(k) {
                m.insert(format!("f:{k}"), fields_of(x));
            }
        }
        own.insert("f:metadata".into(), Value::Object(m));
    }
    if let Some(spec) = v.get("spec") {
        own.insert("f:spec".into(), fields_of(spec));
    }
    let creator = if v.pointer("/metadata/ownerReferences").is_some() {
        "kube-controller-manager"
    } else {
        "kubectl-client-side-apply"
    };
    let mut entries = vec![entry(creator, own, false)];
    if let Some(status) = v.get("status") {
        let mut s = Map::new();
        s.insert("f:status".into(), fields_of(status));
        let writer = if is_pod {
            "kubelet"
        } else {
            "kube-controller-manager"
        };
        entries.push(entry(writer, s, true));
    }
    Value::Array(entries)
}

/// The FieldsV1 set of a value: `f:` per map key, `k:{"name":...}` per named list item.
fn fields_of(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (format!("f:{k}"), fields_of(x)))
                .collect(),
        ),
        Value::Array(items) => Value::Object(
            items
                .iter()
                .filter_map(|x| {
                    let name = x.get("name").or_else(|| x.get("type"))?;
                    let key = if x.get("name").is_some() {
                        "name"
                    } else {
                        "type"
                    };
                    let mut f = fields_of(x);
                    f.as_object_mut()?.insert(".".into(), json!({}));
                    Some((format!("k:{{\"{key}\":{name}}}"), f))
                })
                .collect(),
        ),
        _ => json!({}),
    }
}

/// What the API server defaults and the admission plugins add to a pod, and what the kubelet
/// writes once it runs it.
fn pod_defaults(v: &mut Value) {
    let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for (k, d) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("enableServiceLinks", json!(true)),
        ("preemptionPolicy", json!("PreemptLowerPriority")),
        ("priority", json!(0)),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("securityContext", json!({})),
        ("serviceAccount", json!("default")),
        ("serviceAccountName", json!("default")),
        ("terminationGracePeriodSeconds", json!(30)),
        (
            "tolerations",
            json!([
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}]),
        ),
    ] {
        fill(spec, k, d);
    }
    let token_volume = json!({"name": "kube-api-access-x7k2q", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}});
    if let Value::Array(volumes) = spec.entry("volumes").or_insert_with(|| json!([])) {
        volumes.push(token_volume);
    }
    for list in ["containers", "initContainers"] {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(c) = c.as_object_mut() else { continue };
            fill(c, "imagePullPolicy", json!("IfNotPresent"));
            fill(c, "terminationMessagePath", json!("/dev/termination-log"));
            fill(c, "terminationMessagePolicy", json!("File"));
            if let Value::Array(mounts) = c.entry("volumeMounts").or_insert_with(|| json!([])) {
                mounts.push(
                    json!({"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "name": "kube-api-access-x7k2q", "readOnly": true}),
                );
            }
        }
    }
    let image_of: Vec<(String, String)> = spec
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some((
                c.get("name")?.as_str()?.to_string(),
                c.get("image")?.as_str()?.to_string(),
            ))
        })
        .collect();
    let Some(status) = v.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let placed = matches!(
        status.get("phase").and_then(Value::as_str),
        Some("Running" | "Succeeded" | "Failed")
    );
    if placed {
        for (k, d) in [
            ("hostIP", json!("10.1.0.7")),
            ("hostIPs", json!([{"ip": "10.1.0.7"}])),
            ("podIP", json!("10.244.3.17")),
            ("podIPs", json!([{"ip": "10.244.3.17"}])),
            ("startTime", json!(TIME)),
        ] {
            fill(status, k, d);
        }
    }
    fill(status, "qosClass", json!("Burstable"));
    for c in status
        .get_mut("conditions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(c) = c.as_object_mut() {
            fill(c, "lastProbeTime", Value::Null);
            fill(c, "lastTransitionTime", json!(TIME));
        }
    }
    for c in status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(c) = c.as_object_mut() else { continue };
        let image = c
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| image_of.iter().find(|(name, _)| name == n))
            .map_or("registry.example/image:latest".to_string(), |(_, i)| {
                i.clone()
            });
        fill(
            c,
            "containerID",
            json!("containerd://4f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f"),
        );
        fill(
            c,
            "imageID",
            json!(format!(
                "{image}@sha256:9b1c4e6a2f8d0c3b5a7e9f1d2c4b6a8e0f2d4c6b8a0e2f4d6c8b0a2e4f6d8c0b"
            )),
        );
        fill(c, "image", json!(image));
        fill(c, "lastState", json!({}));
        fill(c, "started", json!(placed));
        fill(
            c,
            "volumeMounts",
            json!([{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "name": "kube-api-access-x7k2q", "readOnly": true, "recursiveReadOnly": "Disabled"}]),
        );
    }
}
