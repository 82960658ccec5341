//! Which steps of a JobSet or TrainJob the catalog gangs: only those that run beside each
//! other. A step the others wait to see complete, or one started only once another is ready,
//! would hold every pod of the gang for good (its `instancesPath`).

use serde_json::{Value, json};
use wlmap_engine::{Object, ObjectsProvider, gangs, resolve_with};

/// A predicted group: its name, minMember, and its sub-groups' names and minMember.
type Group = (String, u64, Vec<(String, u64)>);

/// The predicted groups of a workload.
fn groups(root: Value, others: &[Value]) -> Vec<Group> {
    let reg = wlmap_catalog::registry().expect("catalog compiles");
    let root = Object::new(root);
    let mut objects = vec![root.clone()];
    objects.extend(others.iter().cloned().map(Object::new));
    let gvk = wlmap_schema::GroupVersionKind::from_api_version(root.api_version(), root.kind());
    let def = reg.for_kind(&gvk).expect("a catalog kind");
    let w = resolve_with(def, &root, &ObjectsProvider(&objects)).expect("resolves");
    gangs(def, &w, None)
        .expect("gangs")
        .into_iter()
        .map(|g| {
            let subs = g.sub_groups.into_iter().map(|s| (s.name, s.min_member));
            (g.name, g.min_member, subs.collect())
        })
        .collect()
}

fn job(name: &str, pods: u64, depends_on: Value) -> Value {
    json!({"name": name, "replicas": 1, "dependsOn": depends_on, "template": {"spec": {
        "parallelism": pods, "completions": pods,
        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}})
}

fn jobset(jobs: Vec<Value>, in_order: bool) -> Value {
    let mut js = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ml", "uid": "u1"},
        "spec": {"replicatedJobs": jobs}});
    if in_order {
        js["spec"]["startupPolicy"] = json!({"startupPolicyOrder": "InOrder"});
    }
    js
}

#[test]
fn a_jobset_gangs_every_replicated_job_that_starts_with_the_others() {
    let js = jobset(
        vec![
            job("leader", 1, json!(null)),
            job("workers", 2, json!(null)),
        ],
        false,
    );
    assert_eq!(
        groups(js, &[]),
        [(
            "js-gang".into(),
            3,
            vec![
                ("js-gang-replicatedjob-leader".into(), 1),
                ("js-gang-replicatedjob-workers".into(), 2)
            ]
        )]
    );
}

#[test]
fn a_jobset_leaves_out_a_job_awaited_to_complete_and_one_started_once_another_is_ready() {
    // kubernetes-sigs/jobset api/jobset/v1alpha2 DependsOn: status Complete or Ready.
    let js = jobset(
        vec![
            job("initializer", 1, json!(null)),
            job(
                "node",
                4,
                json!([{"name": "initializer", "status": "Complete"}]),
            ),
            job("launcher", 1, json!([{"name": "node", "status": "Ready"}])),
        ],
        false,
    );
    assert_eq!(
        groups(js, &[]),
        [(
            "js-gang".into(),
            4,
            vec![("js-gang-replicatedjob-node".into(), 4)]
        )]
    );
}

#[test]
fn a_jobset_started_in_order_gangs_its_first_job_alone() {
    let js = jobset(
        vec![
            job("leader", 1, json!(null)),
            job("workers", 2, json!(null)),
        ],
        true,
    );
    assert_eq!(
        groups(js, &[]),
        [(
            "js-gang".into(),
            1,
            vec![("js-gang-replicatedjob-leader".into(), 1)]
        )]
    );
}

/// kubeflow/trainer v2.3.0 manifests/base/runtimes/deepspeed_distributed.yaml: the `node`
/// workers and a launcher that waits for them to be ready (runLauncherAsNode).
#[test]
fn a_trainjob_on_deepspeed_gangs_its_nodes_not_the_launcher_that_waits_for_them() {
    let runtime = json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "deepspeed-distributed"},
        "spec": {"mlPolicy": {"numNodes": 1, "mpi": {"numProcPerNode": 1, "mpiImplementation": "OpenMPI", "runLauncherAsNode": true}},
            "template": {"spec": {"network": {"publishNotReadyAddresses": true}, "replicatedJobs": [
                {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [{"name": "node", "image": "deepspeed-runtime"}]}}}}},
                {"name": "launcher", "dependsOn": [{"name": "node", "status": "Ready"}],
                 "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "deepspeed-runtime"}]}}}}}]}}}});
    let tj = json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "ds", "namespace": "ml", "uid": "u2"},
        "spec": {"runtimeRef": {"name": "deepspeed-distributed"},
            "trainer": {"numNodes": 4, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}}});
    // numNodes 4 with the launcher as a node: 3 `node` pods, ganged; the launcher on its own.
    assert_eq!(
        groups(tj, &[runtime]),
        [("ds-gang".into(), 3, vec![("ds-gang-step-node".into(), 3)])]
    );
}
