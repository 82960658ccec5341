#!/usr/bin/env python3
"""Objects for the API-server benchmark: N workloads of four kinds (JobSet, PyTorchJob,
Deployment, Job), each with the children and pods their controllers create (10 pods per
workload), in three waves so that ownerReferences carry the uids the server assigned.

    objects.py roots N                 > roots.json       (a v1 List)
    objects.py children created.json   > children.json
    objects.py pods created.json...    > pods.json

Labels and ownerReferences follow the controllers (JobSet: jobset/pkg/constants; Kubeflow
training-operator: pkg/apis/kubeflow.org/v1/common_types.go; Deployment/ReplicaSet and Job:
kubernetes/pkg/controller), the same as the catalog fixtures.
"""
import json
import sys

NS = "bench"
CONTAINER = {"name": "main", "image": "registry.k8s.io/pause:3.10",
             "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def pod_template(labels):
    return {"metadata": {"labels": labels},
            "spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}


def roots(n):
    items = []
    for i in range(n):
        kind = ("JobSet", "PyTorchJob", "Deployment", "Job")[i % 4]
        name = f"w{i:05d}"
        if kind == "JobSet":
            rj = lambda rname, par: {"name": rname, "replicas": 1, "template": {"spec": {
                "parallelism": par, "completions": par, "template": pod_template({})}}}
            items.append({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                          "metadata": {"name": name, "namespace": NS},
                          "spec": {"replicatedJobs": [rj("driver", 1), rj("workers", 9)]}})
        elif kind == "PyTorchJob":
            spec = lambda r: {"replicas": r, "restartPolicy": "OnFailure",
                              "template": {"spec": {"containers": [dict(CONTAINER, name="pytorch")]}}}
            items.append({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                          "metadata": {"name": name, "namespace": NS},
                          "spec": {"pytorchReplicaSpecs": {"Master": spec(1), "Worker": spec(9)}}})
        elif kind == "Deployment":
            labels = {"app": name}
            t = pod_template(labels)
            t["spec"]["restartPolicy"] = "Always"
            items.append({"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": name, "namespace": NS},
                          "spec": {"replicas": 10, "selector": {"matchLabels": labels}, "template": t}})
        else:
            items.append({"apiVersion": "batch/v1", "kind": "Job",
                          "metadata": {"name": name, "namespace": NS},
                          "spec": {"parallelism": 10, "completions": 10, "template": pod_template({})}})
    return items


def owner(o):
    return {"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def load(paths):
    out = []
    # `kubectl create -o json` prints one document per object, back to back.
    dec = json.JSONDecoder()
    for p in paths:
        with open(p) as f:
            text = f.read()
        i = 0
        while i < len(text):
            while i < len(text) and text[i].isspace():
                i += 1
            if i == len(text):
                break
            d, i = dec.raw_decode(text, i)
            out.extend(d.get("items", [d]))
    return out


def children(created):
    items = []
    for o in created:
        name = o["metadata"]["name"]
        if o["kind"] == "JobSet":
            for rj, par in (("driver", 1), ("workers", 9)):
                labels = {"jobset.sigs.k8s.io/jobset-name": name,
                          "jobset.sigs.k8s.io/replicatedjob-name": rj,
                          "jobset.sigs.k8s.io/job-index": "0"}
                items.append({"apiVersion": "batch/v1", "kind": "Job",
                              "metadata": {"name": f"{name}-{rj}-0", "namespace": NS, "labels": labels,
                                           "ownerReferences": [owner(o)]},
                              "spec": {"parallelism": par, "completions": par,
                                       "template": pod_template(dict(labels))}})
        elif o["kind"] == "Deployment":
            labels = {"app": name, "pod-template-hash": "5d8f7c9b6"}
            t = pod_template(labels)
            t["spec"]["restartPolicy"] = "Always"
            items.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                          "metadata": {"name": f"{name}-5d8f7c9b6", "namespace": NS, "labels": labels,
                                       "ownerReferences": [owner(o)]},
                          "spec": {"replicas": 10, "selector": {"matchLabels": labels}, "template": t}})
    return items


def pod(name, labels, own):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels, "ownerReferences": [own]},
            "spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}


def pods(created):
    items = []
    for o in created:
        name, kind = o["metadata"]["name"], o["kind"]
        if kind == "Job":
            n = o["spec"]["parallelism"]
            labels = dict(o["metadata"].get("labels", {}), **{"batch.kubernetes.io/job-name": name,
                                                              "job-name": name})
            for k in range(n):
                items.append(pod(f"{name}-{k}-x{k:02d}", labels, owner(o)))
        elif kind == "PyTorchJob":
            for rtype, count in (("master", 1), ("worker", 9)):
                for k in range(count):
                    items.append(pod(f"{name}-{rtype}-{k}",
                                     {"training.kubeflow.org/job-name": name,
                                      "training.kubeflow.org/replica-type": rtype,
                                      "training.kubeflow.org/replica-index": str(k),
                                      "training.kubeflow.org/operator-name": "pytorchjob-controller"},
                                     owner(o)))
        elif kind == "ReplicaSet":
            for k in range(10):
                items.append(pod(f"{name}-p{k:02d}", dict(o["spec"]["selector"]["matchLabels"]), owner(o)))
    return items


def main():
    verb = sys.argv[1]
    if verb == "roots":
        items = roots(int(sys.argv[2]))
    elif verb == "children":
        items = children(load(sys.argv[2:]))
    elif verb == "pods":
        items = pods(load(sys.argv[2:]))
    else:
        sys.exit(__doc__)
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


if __name__ == "__main__":
    main()
