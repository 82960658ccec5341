#!/usr/bin/env python3
"""The scale run (BENCHMARKS.md, "On a cluster that schedules"): what wlmap costs a cluster
that really places pods. Run it through testbed/bench/scale.sh, which starts the testbed
(kube-apiserver, etcd, kube-controller-manager, kube-scheduler, KWOK, and the JobSet, LWS,
KubeRay and training operators from their modules) and tears it down.

    scale.py WORKLOADS OUT_DIR

NODES = WORKLOADS / 10 KWOK nodes of 8 GPUs (the issue's 1,000 nodes for 10,000 workloads),
then four phases, each in a namespace of its own that is deleted before the next:

  without  WORKLOADS workloads (JobSet, LeaderWorkerSet, RayCluster, PyTorchJob, Job, in turn;
           10 pods each, made by their operators and the built-in controllers), created in a
           burst, no wlmap: the time until every pod is bound.
  declared the same workloads in the same gangs, declared without wlmap: their PodGroups
           (as many, of the same minimums, as wlmap writes) created before the burst, and
           each pod put in its group by a MutatingAdmissionPolicy (CEL inside the API server,
           from the operators' pod labels). What gang scheduling itself costs the cluster, so
           that what wlmap adds to it can be told apart.
  with     the same, with `wlmap controller` running as two replicas behind one address (as
           behind a Service): native gangs, the pod webhook. The bind time and its ratio with
           `without`, the webhook's latency, the replicas' CPU and memory, API requests per
           workload, the time from a workload's creation to its PodGroups; then
           kube-state-metrics and `wlmap serve` beside each other on that loaded cluster
           (testbed/bench/ksm.sh --loaded).
  faults   the same burst while the leader is killed (SIGKILL) at a quarter and at three
           quarters of the workloads, a new replica started in its place 3 s later, and the
           API server restarted at half. Then, from the cluster: pods of ganged workloads not
           in their group, duplicate and orphaned PodGroups, pod creations refused by a
           wlmap webhook, and how long the new leader took to catch up.

WLMAP_SCALE_ROUNDS=R runs instead R rounds of a `declared` and a `with` phase, in turns of
order (declared first, then with first, ...), and reports each round's ratio of bind times,
their mean, spread and 95 % interval, the cluster's CPU with / declared, and when each kind's
last pod was bound: on a machine whose pace drifts by more than 5 % between phases, one pair
cannot tell wlmap's cost from the drift.
WLMAP_SCALE_FAULTS=R runs instead R `faults` phases one after another, each reported alone:
a pod let through without its group is rare, and one run cannot show how rare.
WLMAP_SCALE_PIN=1 puts the cluster on the first CPU and wlmap on the second (PIN below).
WLMAP_SCALE_APIPROF=1 takes the API server's CPU profile through each phase (ApiserverProfile).

Times are taken from watches (`kubectl get --watch`, each line stamped as it arrives); the
report goes to stdout and OUT_DIR/report.md, the raw streams stay in OUT_DIR.
"""
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
KUBECTL = os.environ["WLMAP_TESTBED_KUBECTL"]
KUBECONFIG = os.environ["WLMAP_TESTBED_KUBECONFIG"]
TESTBED_DIR = os.environ["WLMAP_TESTBED_DIR"]
WLMAP = os.environ.get("WLMAP_BIN", os.path.join(ROOT, "target", "release", "wlmap"))
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
PODS_PER_WORKLOAD = 10
GPUS_PER_NODE = 8
KINDS = ("JobSet", "LeaderWorkerSet", "RayCluster", "PyTorchJob", "Job")
# The PodGroups wlmap writes per workload of each kind with the catalog's definitions, as
# (name suffix in the `declared` phase, minimum): an LWS has one per group of leader and
# workers, of which these have two. The report checks it against what wlmap wrote.
LAYOUT = {"JobSet": [("gang", 10)], "LeaderWorkerSet": [("0", 5), ("1", 5)],
          "RayCluster": [("gang", 10)], "PyTorchJob": [("gang", 10)], "Job": [("gang", 10)]}
GROUPS = {kind: len(groups) for kind, groups in LAYOUT.items()}
# Each workload's pods name it in these labels (the operators' own: jobset/pkg/constants,
# lws/api/.../labels.go, kuberay/ray-operator/controllers/ray/utils/constant.go,
# training-operator/pkg/apis/kubeflow.org/v1/common_types.go, kubernetes/pkg/controller/job).
POD_LABELS = (("JobSet", "jobset.sigs.k8s.io/jobset-name"),
              ("LeaderWorkerSet", "leaderworkerset.sigs.k8s.io/name"),
              ("RayCluster", "ray.io/cluster"),
              ("PyTorchJob", "training.kubeflow.org/job-name"),
              ("Job", "batch.kubernetes.io/job-name"))
# WLMAP_SCALE_PIN=1: the cluster (the testbed's processes, this script and its kubectl) on the
# first CPU, wlmap's replicas and the Service on the second, as a cluster runs the controller
# on a node of its own: its CPU is then not taken from the control plane's.
PIN = os.environ.get("WLMAP_SCALE_PIN") == "1"
ON_ITS_OWN_CPU = ["taskset", "-c", "1"] if PIN else []
# A lease of 15 s renewed every 5 s: the controller's defaults, as the chart runs it.
LEASE = "wlmap-controller"
CONTROLLER_NS = "wlmap-system"


def log(msg):
    print(f"[bench/scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def kubectl(*args, input=None, check=True):
    r = subprocess.run([KUBECTL, f"--kubeconfig={KUBECONFIG}", *args], input=input,
                       capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def get_items(*args):
    return json.loads(kubectl("get", *args, "-o", "json"))["items"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(port, path, timeout=5):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode()


def wait_until(what, seconds, ok, every=0.5):
    end = time.time() + seconds
    while not ok():
        if time.time() > end:
            raise TimeoutError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(every)


# ------------------------------------------------------------------ objects

def container(name, gpus=0, image="registry.k8s.io/pause:3.10"):
    limits = {"cpu": "100m", "memory": "128Mi"}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    return {"name": name, "image": image, "resources": {"limits": limits, "requests": limits}}


def template(c, restart=None):
    # The label keeps a Job's pods Running under KWOK (testbed/kwok/pod-complete.yaml): the
    # run counts bound pods, and a pod that completed at once would be replaced by none.
    spec = {"containers": [c]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"wlmap.test/keep-running": "true"}}, "spec": spec}


def workload(kind, name, ns):
    """A workload of 10 pods as its users write it; two of every fifty pods ask for a GPU
    (the JobSet's leader, the PyTorchJob's master), so 100 pods a node fit 8 GPUs a node."""
    meta = {"name": name, "namespace": ns}
    if kind == "JobSet":
        def rj(rname, replicas, pods, gpus):
            return {"name": rname, "replicas": replicas, "template": {"spec": {
                "parallelism": pods, "completions": pods, "backoffLimit": 0,
                "template": template(container("main", gpus), "Never")}}}
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
                "spec": {"replicatedJobs": [rj("leader", 1, 1, 1), rj("workers", 3, 3, 0)]}}
    if kind == "LeaderWorkerSet":
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                "metadata": meta,
                "spec": {"replicas": 2, "leaderWorkerTemplate": {
                    "size": 5, "workerTemplate": template(container("serve"))}}}
    if kind == "RayCluster":
        ray = container("ray", image="rayproject/ray:2.46.0")
        return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta,
                "spec": {"rayVersion": "2.46.0",
                         "headGroupSpec": {"rayStartParams": {}, "template": template(ray)},
                         "workerGroupSpecs": [{"groupName": "workers", "replicas": 9,
                                               "minReplicas": 9, "maxReplicas": 9,
                                               "rayStartParams": {}, "template": template(ray)}]}}
    if kind == "PyTorchJob":
        def spec(n, gpus):
            return {"replicas": n, "restartPolicy": "OnFailure",
                    "template": template(container("pytorch", gpus))}
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta,
                "spec": {"pytorchReplicaSpecs": {"Master": spec(1, 1), "Worker": spec(9, 0)}}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"parallelism": 10, "completions": 10, "backoffLimit": 0,
                     "template": template(container("main"), "Never")}}


def workloads(n, ns):
    return [workload(KINDS[i % len(KINDS)], f"w{i:05d}", ns) for i in range(n)]


def node(i):
    name = f"kwok-{i:04d}"
    res = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(GPUS_PER_NODE)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "annotations": {"kwok.x-k8s.io/node": "fake",
                                         "node.alpha.kubernetes.io/ttl": "0"},
                         "labels": {"type": "kwok", "kubernetes.io/arch": "amd64",
                                    "kubernetes.io/os": "linux", "kubernetes.io/hostname": name}},
            "status": {"allocatable": res, "capacity": res}}


def add_nodes(n):
    for start in range(0, n, 200):
        items = [node(i) for i in range(start, min(n, start + 200))]
        kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": items}))

    def ready():
        nodes = get_items("nodes", "-l", "type=kwok")
        return len(nodes) == n and all(
            any(c["type"] == "Ready" and c["status"] == "True"
                for c in x["status"].get("conditions", []))
            and not x["spec"].get("taints") for x in nodes)
    wait_until(f"{n} KWOK nodes Ready and untainted", 600, ready, every=2)


# ------------------------------------------------------------------ gangs declared without wlmap

POLICY = "scale-declared-gangs"


def declared_groups(n, ns):
    out = []
    for i in range(n):
        kind, name = KINDS[i % len(KINDS)], f"w{i:05d}"
        for suffix, minimum in LAYOUT[kind]:
            out.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": f"{name}-{suffix}", "namespace": ns},
                        "spec": {"schedulingPolicy": {"gang": {"minCount": minimum}}}})
    return out


def declared_policy(ns):
    """A MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in v1.36) that names each
    new pod's PodGroup from its operator's labels (POD_LABELS): `<workload>-gang`, and for an
    LWS `<lws>-<group>` (a worker's group-index label; a leader's StatefulSet ordinal, since
    LWS's own webhook adds its group-index). It fails open, as wlmap's webhook does."""
    label = "object.metadata.labels"
    has = lambda k: f"'{k}' in {label}"
    get = lambda k: f"{label}['{k}']"
    lws_group = (f"({has('leaderworkerset.sigs.k8s.io/group-index')} ? "
                 f"{get('leaderworkerset.sigs.k8s.io/group-index')} : "
                 f"{get('apps.kubernetes.io/pod-index')})")
    group = (f"{has('jobset.sigs.k8s.io/jobset-name')} ? {get('jobset.sigs.k8s.io/jobset-name')} + '-gang' : "
             f"{has('leaderworkerset.sigs.k8s.io/name')} ? {get('leaderworkerset.sigs.k8s.io/name')} + '-' + {lws_group} : "
             f"{has('ray.io/cluster')} ? {get('ray.io/cluster')} + '-gang' : "
             f"{has('training.kubeflow.org/job-name')} ? {get('training.kubeflow.org/job-name')} + '-gang' : "
             f"{get('batch.kubernetes.io/job-name')} + '-gang'")
    keys = ", ".join(f"'{k}'" for _, k in POD_LABELS)
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Ignore", "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                    "operations": ["CREATE"], "resources": ["pods"]}]},
            "matchConditions": [{"name": "in-a-workload",
                                 "expression": f"has(object.metadata.labels) && [{keys}].exists(k, k in {label})"}],
            "variables": [{"name": "group", "expression": group}],
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                "expression": "Object{spec: Object.spec{schedulingGroup: "
                              "Object.spec.schedulingGroup{podGroupName: variables.group}}}"}}]}}
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY},
        "spec": {"policyName": POLICY, "matchResources": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}}
    return [policy, binding]


def declare_gangs(ns, n):
    """Before the burst: the policy, then every PodGroup (200 to a request)."""
    kubectl("apply", "--server-side", "-f", "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": declared_policy(ns)}))
    groups = declared_groups(n, ns)
    for start in range(0, len(groups), 200):
        kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": groups[start:start + 200]}))
    log(f"declared: {len(groups)} PodGroups and the policy {POLICY}")
    # A policy takes effect once the API server's informers have it (about a second).
    time.sleep(5)


def declared_audit(ns):
    """Pods that name no PodGroup that exists (the declared PodGroups have no owner to check)."""
    groups = {g["metadata"]["name"] for g in get_items("podgroups.scheduling.k8s.io", "-n", ns)}
    pods = get_items("pods", "-n", ns)
    ungrouped = [p["metadata"]["name"] for p in pods
                 if (p["spec"].get("schedulingGroup") or {}).get("podGroupName") not in groups]
    return {"pods": len(pods), "podgroups": len(groups), "ungrouped": ungrouped}


def layout(ns):
    """The minimums of the PodGroups wlmap wrote per workload of each kind, as every distinct
    sorted list seen (LAYOUT's minimums, when wlmap writes what the `declared` phase did)."""
    per = {}
    for g in get_items("podgroups.scheduling.k8s.io", "-n", ns):
        owner = next((r for r in g["metadata"].get("ownerReferences", []) if r.get("controller")), None)
        if owner and owner["kind"] in KINDS:
            per.setdefault(owner["uid"], (owner["kind"], []))[1].append(
                g["spec"]["schedulingPolicy"].get("gang", {}).get("minCount"))
    shapes = {}
    for kind, mins in per.values():
        shapes.setdefault(kind, set()).add(tuple(sorted(mins)))
    return {k: sorted(v) for k, v in shapes.items()}


def declared_layout():
    return {k: [tuple(sorted(m for _, m in v))] for k, v in LAYOUT.items()}


# ------------------------------------------------------------------ watches

class Stream:
    """A `kubectl get --watch` kept running, each line stamped with the time it arrived. A
    watch kubectl opened while the API server was restarting can stay open and silent for
    good (seen in the faults phase: the cluster had every PodGroup and every pod bound, the
    watches had stopped some seconds after the restart), so each watch ends after 30 s
    (`--request-timeout`) and starts again, listing first: an object is seen at most 30 s
    late after such a stall, and first times seen before are kept. Columns, not a jsonpath:
    kubectl prints a watch's first listing as one List, which a jsonpath of an object's
    fields prints as an empty line (the objects listed would be lost at each restart)."""

    def __init__(self, path, args):
        self.path, self.args = path, args
        self.lines = []  # (time, text)
        self.lock = threading.Lock()
        self.stopped = False
        self.proc = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        with open(self.path, "a") as out:
            while not self.stopped:
                self.proc = subprocess.Popen(
                    [KUBECTL, f"--kubeconfig={KUBECONFIG}", "get", "--watch",
                     "--request-timeout=30s", *self.args],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
                for line in self.proc.stdout:
                    t = time.time()
                    line = line.rstrip("\n")
                    with self.lock:
                        self.lines.append((t, line))
                    out.write(f"{t:.3f} {line}\n")
                self.proc.wait()

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def stop(self):
        self.stopped = True
        if self.proc:
            self.proc.terminate()


def first_seen(lines, key_of):
    """The first time each key appears (key_of(fields) -> key or None); the columns'
    `<none>` (a field not set) is an empty field."""
    seen = {}
    for t, text in lines:
        k = key_of(["" if f == "<none>" else f for f in text.split()])
        if k is not None and k not in seen:
            seen[k] = t
    return seen


def bound_times(stream):
    # "NAME NODE": the first line with a node is the pod's binding as seen by a watch.
    return first_seen(stream.snapshot(), lambda f: f[0] if len(f) > 1 and f[1] else None)


# ------------------------------------------------------------------ metrics

def scrape(text, name):
    """Every sample of a metric family: [(labels dict, value)]."""
    out = []
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(r'^([a-zA-Z_:]+)(\{(.*)\})? (\S+)$', line)
        if not m or m.group(1) != name:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out.append((labels, float(m.group(4))))
    return out


def quantile(buckets, q):
    """histogram_quantile: linear interpolation inside the bucket holding the rank."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][1] == 0:
        return float("nan")
    rank, lo, below = q * buckets[-1][1], 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == float("inf"):
                return lo
            return lo + (le - lo) * (rank - below) / max(c - below, 1e-9)
        lo, below = le, c
    return float("nan")


def merge_buckets(samples, match=lambda labels: True):
    acc = {}
    for labels, v in samples:
        if match(labels):
            le = float(labels["le"])
            acc[le] = acc.get(le, 0.0) + v
    return list(acc.items())


def diff_buckets(after, before):
    b = dict(before)
    return [(le, c - b.get(le, 0.0)) for le, c in after]


def apiserver_metrics():
    return kubectl("get", "--raw", "/metrics")


def apiserver_requests(text):
    """Requests served, by resource (with subresource) and verb."""
    out = {}
    for labels, v in scrape(text, "apiserver_request_total"):
        res = labels.get("resource", "") + ("/" + labels["subresource"] if labels.get("subresource") else "")
        key = (res, labels.get("verb", ""))
        out[key] = out.get(key, 0.0) + v
    return out


def counter_delta(after, before):
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def webhook_buckets(text):
    return merge_buckets(scrape(text, "apiserver_admission_webhook_admission_duration_seconds_bucket"),
                         lambda l: l.get("name") == "pods.wlmap.run.ai")


def wlmap_refusals(text):
    """Requests a wlmap webhook refused; pods let through the first pod webhook failing open
    (its call made again by the second); and those let through the second too."""
    rejected = sum(v for l, v in scrape(text, "apiserver_admission_webhook_rejection_count")
                   if "wlmap" in l.get("name", ""))

    def failed_open(name):
        return sum(v for l, v in scrape(text, "apiserver_admission_webhook_fail_open_count")
                   if l.get("name") == name)
    return rejected, failed_open("pods.wlmap.run.ai"), failed_open("again.pods.wlmap.run.ai")


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_mem(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) / 1024
    return out


def pct(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


# ------------------------------------------------------------------ the service

class Service:
    """What a Service does for the replicas' webhook: one address, each connection passed to
    a replica that is up (round robin, a replica checked every 200 ms and skipped once its
    port refuses), bytes passed through untouched (TLS ends in the replica, as behind
    kube-proxy). Debian's HAProxy forwards (TCP mode, one event loop in C) as kube-proxy's
    rules do in the kernel: a forwarder in Python, a thread per connection and direction,
    took CPU of its own and added milliseconds to each review on the saturated machine.
    Changing the replicas starts a new HAProxy that takes over the address (`-sf`: the old
    one finishes its connections and exits); its CPU is reported apart from wlmap's."""

    def __init__(self, out_dir):
        self.port = free_port()
        self.config = os.path.join(out_dir, "service.cfg")
        self.procs = []
        self.set_backends([])
        wait_until("the service listening", 10, self.listening, every=0.1)

    def listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def set_backends(self, ports):
        servers = "".join(f"  server r{p} 127.0.0.1:{p} check inter 200ms fall 1 rise 1\n"
                          for p in ports)
        with open(self.config, "w") as f:
            f.write("global\n  maxconn 4096\n  nbthread 1\n"
                    "defaults\n  mode tcp\n  timeout connect 2s\n  timeout client 60s\n"
                    "  timeout server 60s\n  retries 2\n  option redispatch\n"
                    f"frontend webhook\n  bind 127.0.0.1:{self.port}\n  default_backend replicas\n"
                    f"backend replicas\n  balance roundrobin\n{servers}")
        old = [str(p.pid) for p in self.procs if p.poll() is None]
        self.procs.append(subprocess.Popen([*ON_ITS_OWN_CPU, HAPROXY, "-db", "-q", "-f", self.config]
                                           + (["-sf", *old] if old else []),
                                           stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))

    def running(self):
        return sum(1 for p in self.procs if p.poll() is None)

    def cpu(self):
        """CPU seconds of the HAProxy processes running now."""
        return sum(proc_cpu(p.pid) for p in self.procs if p.poll() is None)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                p.wait()


class Replica:
    """One `wlmap controller` process, reached by the API server through the Service."""

    def __init__(self, identity, service, out_dir):
        self.identity = identity
        self.webhook, self.probes = free_port(), free_port()
        self.log = open(os.path.join(out_dir, f"controller-{identity}.log"), "w")
        self.proc = subprocess.Popen(
            [*ON_ITS_OWN_CPU, WLMAP, "--kubeconfig", KUBECONFIG, "controller", "-n", CONTROLLER_NS,
             "--identity", identity,
             "--webhook-address", f"127.0.0.1:{self.webhook}",
             "--probe-address", f"127.0.0.1:{self.probes}",
             "--webhook-url", f"https://127.0.0.1:{service.port}",
             "--webhook-host", "127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        self.cpu0 = None
        wait_until(f"replica {identity} ready", 120, self.ready, every=0.2)

    def ready(self):
        try:
            return http_get(self.probes, "/readyz") is not None
        except OSError:
            if self.proc.poll() is not None:
                raise RuntimeError(f"replica {self.identity} exited; see its log")
            return False

    def metrics(self):
        return http_get(self.probes, "/metrics")

    def leads(self):
        try:
            return any(v == 1 for _, v in scrape(self.metrics(), "wlmap_controller_leader"))
        except OSError:
            return False

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.alive():
            self.proc.terminate()
            self.proc.wait()


# ------------------------------------------------------------------ a phase

class Phase:
    def __init__(self, name, n, out_dir):
        self.name, self.n, self.out = name, n, out_dir
        self.ns = f"scale-{name}"
        self.expected_pods = n * PODS_PER_WORKLOAD
        self.created = {}  # workload name -> time its creation was answered
        kubectl("create", "namespace", self.ns)
        self.pods = Stream(os.path.join(out_dir, f"{name}.pods"),
                           ["pods", "-n", self.ns, "--no-headers", "-o",
                            "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName"])
        self.groups = Stream(os.path.join(out_dir, f"{name}.podgroups"),
                             ["podgroups.scheduling.k8s.io", "-n", self.ns, "--no-headers", "-o",
                              "custom-columns=NAME:.metadata.name,OWNER:.metadata.ownerReferences[0].name"])

    def create(self, at_fraction=None):
        """Create the workloads in a burst, 25 to a request batch, each batch tried again until
        the API server takes it (server-side apply: a retried batch changes nothing);
        `at_fraction(f)` is called as the share f of workloads created passes 1/4, 1/2, 3/4."""
        objs = workloads(self.n, self.ns)
        marks = [0.25, 0.5, 0.75]
        self.t0 = time.time()
        for start in range(0, len(objs), 25):
            batch = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs[start:start + 25]})
            for attempt in range(120):
                p = subprocess.Popen([KUBECTL, f"--kubeconfig={KUBECONFIG}", "apply",
                                      "--server-side", "-f", "-", "-o", "name"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
                p.stdin.write(batch)
                p.stdin.close()
                for line in p.stdout:
                    name = line.strip().rsplit("/", 1)[-1]
                    self.created.setdefault(name, time.time())
                err = p.stderr.read()
                if p.wait() == 0:
                    break
                log(f"{self.name}: a batch failed ({err.strip()[:200]}); again in 1 s")
                time.sleep(1)
            else:
                raise RuntimeError("the API server took no batch for 2 minutes")
            done = (start + 25) / len(objs)
            while marks and done >= marks[0]:
                f = marks.pop(0)
                if at_fraction:
                    at_fraction(f)
        self.t_created = time.time()
        log(f"{self.name}: {len(self.created)} workloads created in {self.t_created - self.t0:.1f} s")

    def wait_bound(self, seconds, replicas=()):
        """Wait until every pod is bound. If some never are, say which workloads hold them,
        whether each has its PodGroups, and whether each live replica holds the workload
        (OUT_DIR/PHASE.stuck.json), and go on: the report then says so."""
        self.stuck = None
        try:
            wait_until(f"{self.expected_pods} pods bound in {self.ns}", seconds,
                       lambda: len(bound_times(self.pods)) >= self.expected_pods, every=1)
        except TimeoutError as e:
            log(f"{self.name}: {e}")
            self.stuck = self.diagnose(replicas)
        times = bound_times(self.pods)
        self.t_bound = max(times.values())
        log(f"{self.name}: {len(times)} pods bound {self.t_bound - self.t0:.1f} s after the first creation")

    def diagnose(self, replicas):
        bound = bound_times(self.pods)
        groups = {g["metadata"]["name"]: g for g in get_items("podgroups.scheduling.k8s.io", "-n", self.ns)}
        held = {}
        for r in replicas:
            if r.alive():
                try:
                    rows = json.loads(http_get(r.probes, "/api/workloads"))["items"]
                    held[r.identity] = {(x.get("namespace"), x.get("name")) for x in rows}
                except (OSError, ValueError):
                    pass
        stuck = {}
        for p in get_items("pods", "-n", self.ns):
            if p["metadata"]["name"] in bound:
                continue
            kind, name = workload_of(p)
            w = stuck.setdefault(f"{kind}/{name}", {"pods": 0, "groups_named": set()})
            w["pods"] += 1
            w["groups_named"].add((p["spec"].get("schedulingGroup") or {}).get("podGroupName"))
        for key, w in stuck.items():
            name = key.split("/", 1)[1]
            w["groups_named"] = sorted(str(g) for g in w["groups_named"])
            w["groups_exist"] = [g in groups for g in w["groups_named"]]
            w["held_by"] = sorted(i for i, rows in held.items() if (self.ns, name) in rows)
        with open(os.path.join(self.out, f"{self.name}.stuck.json"), "w") as f:
            json.dump(stuck, f, indent=1)
        return stuck

    def last_bound_by_kind(self):
        """For each kind, when its last pod was bound (s from the first creation): a kind
        whose operator makes its pods one request after another falls behind the burst by
        as much as each request takes."""
        last = {}
        for pod, t in bound_times(self.pods).items():
            kind = KINDS[int(pod[1:6]) % len(KINDS)]  # pods are named after w00000, w00001, ...
            last[kind] = max(last.get(kind, 0.0), t - self.t0)
        return last

    def gang_latency(self):
        seen = first_seen(self.groups.snapshot(), lambda f: f[1] if len(f) > 1 and f[1] else None)
        return [seen[w] - t for w, t in self.created.items() if w in seen], seen

    def delete(self):
        self.pods.stop()
        self.groups.stop()
        kubectl("delete", "namespace", self.ns, "--wait=false")
        wait_until(f"namespace {self.ns} gone", 1800,
                   lambda: kubectl("get", "namespace", self.ns, check=False) == "", every=3)


# ------------------------------------------------------------------ checks from the cluster

def workload_of(pod):
    labels = pod["metadata"].get("labels", {})
    for kind, key in POD_LABELS:
        if key in labels:
            return kind, labels[key]
    return None, None


def audit(ns):
    """Pods of ganged workloads not in their group, duplicate and orphaned PodGroups."""
    roots = {}
    for kind, res in (("JobSet", "jobsets.jobset.x-k8s.io"),
                      ("LeaderWorkerSet", "leaderworkersets.leaderworkerset.x-k8s.io"),
                      ("RayCluster", "rayclusters.ray.io"), ("PyTorchJob", "pytorchjobs.kubeflow.org"),
                      ("Job", "jobs.batch")):
        for o in get_items(res, "-n", ns):
            if kind == "Job" and o["metadata"].get("ownerReferences"):
                continue  # a JobSet's Job: its pods are the JobSet's
            roots[o["metadata"]["uid"]] = (kind, o["metadata"]["name"])
    groups = get_items("podgroups.scheduling.k8s.io", "-n", ns)
    by_name = {g["metadata"]["name"]: g for g in groups}
    per_root, orphans = {}, []
    for g in groups:
        owner = next((r for r in g["metadata"].get("ownerReferences", []) if r.get("controller")), None)
        if owner is None or owner["uid"] not in roots:
            orphans.append(g["metadata"]["name"])
            continue
        per_root.setdefault(owner["uid"], []).append(g["metadata"]["name"])
    duplicates = sum(max(0, len(v) - GROUPS[roots[uid][0]]) for uid, v in per_root.items())
    missing_groups = sum(max(0, GROUPS[k] - len(per_root.get(uid, []))) for uid, (k, _) in roots.items())
    ungrouped, pods = [], get_items("pods", "-n", ns)
    for p in pods:
        kind, name = workload_of(p)
        group = (p["spec"].get("schedulingGroup") or {}).get("podGroupName")
        g = by_name.get(group)
        owner = g and next((r for r in g["metadata"].get("ownerReferences", []) if r.get("controller")), None)
        if not owner or roots.get(owner["uid"]) != (kind, name):
            ungrouped.append(p["metadata"]["name"])
    refused = [e for e in get_items("events", "-n", ns)
               if e.get("reason") in ("FailedCreate", "FailedCreatePod", "Failed")
               and "wlmap" in e.get("message", "")]
    return {"workloads": len(roots), "pods": len(pods), "podgroups": len(groups),
            "ungrouped": ungrouped, "duplicates": duplicates, "orphans": orphans,
            "missing_groups": missing_groups, "refused_events": len(refused)}


# ------------------------------------------------------------------ the run

def component_cpu():
    out = {}
    for name in ("kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok"):
        try:
            with open(os.path.join(TESTBED_DIR, "pids", f"{name}.pid")) as f:
                out[name] = proc_cpu(int(f.read().strip()))
        except (OSError, ValueError):
            pass
    return out


def pin_cluster():
    """WLMAP_SCALE_PIN=1: every testbed process (each of its threads) and this script, with
    the kubectl it starts, on the first CPU."""
    os.sched_setaffinity(0, {0})
    pids = os.path.join(TESTBED_DIR, "pids")
    for name in sorted(os.listdir(pids)):
        with open(os.path.join(pids, name)) as f:
            pid = f.read().strip()
        subprocess.run(["taskset", "-a", "-p", "-c", "0", pid], check=True, capture_output=True)
    log(f"the cluster's {len(os.listdir(pids))} processes on CPU 0, wlmap's on CPU 1")


def cpu_delta(before, after):
    return {k: after[k] - before[k] for k in after if k in before}


class ApiserverProfile:
    """WLMAP_SCALE_APIPROF=1 (scale.sh starts the API server with its profiling on): the API
    server's CPU profile through a phase, in 20 s pieces (Go's profile endpoint takes a fixed
    length), OUT_DIR/PHASE.apiserver.N.pprof: `go tool pprof -top` them together, and
    `-diff_base` one phase's against another's, to see where the API server's CPU goes with
    wlmap and without it. Does nothing when not asked for."""

    def __init__(self, name, out_dir):
        self.name, self.out, self.done = name, out_dir, threading.Event()
        self.thread = None
        if os.environ.get("WLMAP_SCALE_APIPROF") == "1":
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()

    def run(self):
        piece = 0
        while not self.done.is_set():
            path = os.path.join(self.out, f"{self.name}.apiserver.{piece}.pprof")
            with open(path, "wb") as out:
                subprocess.run([KUBECTL, f"--kubeconfig={KUBECONFIG}", "get", "--raw",
                                "/debug/pprof/profile?seconds=20"], stdout=out,
                               stderr=subprocess.DEVNULL)
            piece += 1

    def stop(self):
        self.done.set()
        if self.thread:
            self.thread.join()


# Where the API server's CPU goes, from its profiles (WLMAP_SCALE_APIPROF): each path's
# cumulative seconds, the function the path goes through in v1.37.2's kube-apiserver.
API_PATHS = (
    ("mutating webhooks called (wlmap's and the operators')",
     "admission/plugin/webhook/mutating.(*mutatingDispatcher).callAttrMutatingHook"),
    ("webhooks' rules and match conditions evaluated",
     "admission/plugin/webhook/generic.(*Webhook).ShouldCallHook"),
    ("mutating admission policies", "admission/plugin/policy/mutating.(*Plugin).Admit"),
    ("watches served", "endpoints/handlers.(*WatchServer).HandleHTTP"),
    ("lists served", "endpoints/handlers.ListResource.func1"),
    ("server-side applies", "endpoints/handlers.(*applyPatcher).applyPatchToCurrentObject"),
    ("garbage collection", "runtime.gcBgMarkWorker"),
)
# The first paths of API_PATHS: those wlmap changes (its webhooks called in place of the
# admission policy, its replicas' watches). Their share of the API server's CPU in a phase
# moves less with the machine's pace than the phase's CPU, which moves as a whole.
ADMISSION_AND_WATCHES = 4


def apiserver_paths(out_dir, name):
    """The API server's CPU seconds in a phase, in all and along each of API_PATHS, from the
    phase's profiles (`go tool pprof`); None without profiles or Go."""
    files = sorted(f for f in os.listdir(out_dir) if f.startswith(f"{name}.apiserver.")
                   and f.endswith(".pprof") and os.path.getsize(os.path.join(out_dir, f)))
    go = shutil.which("go")
    if not files or not go:
        return None
    top = subprocess.run([go, "tool", "pprof", "-top", "-cum", "-nodecount=1000000", "-nodefraction=0",
                          *[os.path.join(out_dir, f) for f in files]],
                         capture_output=True, text=True).stdout
    total = re.search(r"Total samples = ([0-9.]+)(m?s)", top)
    if not total:
        return None
    secs = lambda v, unit: float(v) / (1000 if unit == "ms" else 1)
    cum = {}
    for line in top.splitlines():
        m = re.match(r"\s*\S+\s+\S+\s+\S+\s+([0-9.]+)(m?s)\s+\S+\s+(.+)$", line)
        if m:
            cum[m.group(3).strip()] = secs(m.group(1), m.group(2))
    found = lambda suffix: sum(v for k, v in cum.items() if k.endswith(suffix))
    return secs(total.group(1), total.group(2)), [found(f) for _, f in API_PATHS]


def say_apiserver_paths(out_dir, phases, say):
    got = [(ph.name, apiserver_paths(out_dir, ph.name)) for ph in phases]
    got = [(n, p) for n, p in got if p]
    if not got:
        return
    say()
    say("The API server's CPU in each phase, from its profiles (s; `go tool pprof -top -cum "
        "OUT_DIR/PHASE.apiserver.*.pprof`):")
    say()
    say("| phase | profiled | " + " | ".join(label for label, _ in API_PATHS)
        + " | admission and watches, of all profiled |")
    say("|---|---|" + "---|" * (len(API_PATHS) + 1))
    for name, (total, paths) in got:
        say(f"| {name} | {total:.1f} | " + " | ".join(f"{v:.2f}" for v in paths)
            + f" | {100 * sum(paths[:ADMISSION_AND_WATCHES]) / total:.1f} % |")


def run_phase(name, n, out_dir, bound_timeout, replicas=(), prepare=None):
    ph = Phase(name, n, out_dir)
    if prepare:
        prepare(ph.ns)
    cpu0, m0 = component_cpu(), apiserver_metrics()
    profile = ApiserverProfile(name, out_dir)
    ph.create()
    ph.wait_bound(bound_timeout, replicas)
    m1 = apiserver_metrics()
    ph.cpu = cpu_delta(cpu0, component_cpu())
    # The profile's last piece runs its 20 s out: after the phase's CPU is taken.
    profile.stop()
    ph.requests_by = counter_delta(apiserver_requests(m1), apiserver_requests(m0))
    ph.requests = sum(ph.requests_by.values())
    ph.webhook = diff_buckets(webhook_buckets(m1), webhook_buckets(m0))
    ph.refusals = [a - b for a, b in zip(wlmap_refusals(m1), wlmap_refusals(m0))]
    return ph


def fmt_ms(s):
    return f"{s * 1000:.1f}"


def declared_phase(name, n, out_dir, bound_timeout):
    """The gangs declared without wlmap: the phase, its audit (`.check`), then its namespace
    and the admission policy removed."""
    ph = run_phase(name, n, out_dir, bound_timeout, prepare=lambda ns: declare_gangs(ns, n))
    ph.check = declared_audit(ph.ns)
    log(f"{name}: {len(ph.check['ungrouped'])} of {ph.check['pods']} pods outside their PodGroup")
    ph.delete()
    kubectl("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", POLICY)
    return ph


def start_pair(service, out_dir, tag=""):
    """Two replicas behind the Service, the first one leading (as a rollout leaves them)."""
    first = Replica(f"scale-{tag}a", service, out_dir)
    service.set_backends([first.webhook])
    wait_until(f"replica {first.identity} leads", 60, first.leads)
    second = Replica(f"scale-{tag}b", service, out_dir)
    service.set_backends([first.webhook, second.webhook])
    wait_until("the service's former HAProxy gone", 10, lambda: service.running() == 1, every=0.1)
    return [first, second]


def remove_pair(replicas, service):
    """Stop the replicas and take away what they registered (the webhook configurations, the
    Lease), so that the next phase without wlmap has no webhook to call."""
    for r in replicas:
        r.stop()
    service.set_backends([])
    kubectl("delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration", "wlmap",
            "--ignore-not-found")
    kubectl("delete", "lease", "-n", CONTROLLER_NS, LEASE, "--ignore-not-found")


# Student's t at 97.5 % for 1..10 degrees of freedom: the 95 % interval of a mean of few rounds.
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def in_run_order(rows):
    """The phases of paired rounds (order, declared, with) in the order they ran."""
    return [ph for order, d, w in rows for ph in ((d, w) if order[0] == "declared" else (w, d))]


def paired_rounds(n, out_dir, rounds, say):
    """WLMAP_SCALE_ROUNDS=R: R rounds of a `declared` and a `with` phase, in turns of order
    (declared then with, with then declared, ...: a drift of the machine over the run weighs
    on both alike), each pair's ratio of bind times, and their mean and spread. One run per
    size cannot tell wlmap's cost from the machine's drift between phases; rounds show both."""
    service = Service(out_dir)
    bound_timeout = max(600, n * 3)
    rows, stuck = [], False
    for r in range(rounds):
        order = ("declared", "with") if r % 2 == 0 else ("with", "declared")
        got = {}
        for kind in order:
            name = f"{kind}-{r + 1}"
            if kind == "declared":
                ph = declared_phase(name, n, out_dir, bound_timeout)
                ph.extra_cpu = 0.0
            else:
                replicas = start_pair(service, out_dir, f"{r + 1}")
                extra = lambda: sum(proc_cpu(x.proc.pid) for x in replicas) + service.cpu()
                cpu0 = extra()
                ph = run_phase(name, n, out_dir, bound_timeout, replicas)
                ph.extra_cpu, ph.check = extra() - cpu0, audit(ph.ns)
                remove_pair(replicas, service)
                ph.delete()
            stuck = stuck or bool(ph.stuck)
            got[kind] = ph
        rows.append((order, got["declared"], got["with"]))
        d, w = got["declared"], got["with"]
        log(f"round {r + 1}: with / declared ×{(w.t_bound - w.t0) / (d.t_bound - d.t0):.3f}")
    service.stop()

    bound = lambda ph: ph.t_bound - ph.t0
    cluster_cpu = lambda ph: sum(ph.cpu.values()) + ph.extra_cpu
    ratios = [bound(w) / bound(d) for _, d, w in rows]
    say(f"## Paired rounds: {n} workloads, {n * PODS_PER_WORKLOAD} pods, {max(2, n // 10)} KWOK nodes "
        f"of {GPUS_PER_NODE} GPUs; {rounds} rounds of the same gangs declared without wlmap and "
        "with wlmap (2 replicas)")
    say()
    say("| round | order | declared: created / every pod bound (s) | with: created / every pod bound (s) "
        "| with / declared, bound | with / declared, cluster CPU |")
    say("|---|---|---|---|---|---|")
    for i, (order, d, w) in enumerate(rows):
        say(f"| {i + 1} | {', '.join(order)} | {d.t_created - d.t0:.1f} / {bound_text(d)} "
            f"| {w.t_created - w.t0:.1f} / {bound_text(w)} | ×{ratios[i]:.3f} "
            f"| ×{cluster_cpu(w) / cluster_cpu(d):.3f} |")
    say()
    mean, median = statistics.mean(ratios), statistics.median(ratios)
    line = (f"- Bound, with / declared: mean ×{mean:.3f}, median ×{median:.3f}, "
            f"range ×{min(ratios):.3f}–×{max(ratios):.3f}")
    if len(ratios) > 1:
        sd = statistics.stdev(ratios)
        half = T975[min(len(ratios), len(T975) + 1) - 2] * sd / len(ratios) ** 0.5
        line += (f", standard deviation {sd:.3f}, 95 % interval of the mean ×{mean - half:.3f}–"
                 f"×{mean + half:.3f} (Student's t, {len(ratios) - 1} degrees of freedom)")
    pooled = sum(bound(w) for _, _, w in rows) / sum(bound(d) for _, d, _ in rows)
    say(line + f"; all rounds pooled ×{pooled:.3f}")
    cpu = sum(cluster_cpu(w) for _, _, w in rows) / sum(cluster_cpu(d) for _, d, _ in rows)
    say(f"- Cluster CPU (etcd, API server, controller manager, scheduler, KWOK; with: and the "
        f"replicas and HAProxy), all rounds pooled: with / declared ×{cpu:.3f}")
    total = lambda phases, f: sum(f(ph.check) for ph in phases)
    withs, decls = [w for _, _, w in rows], [d for _, d, _ in rows]
    say(f"- Audits, all rounds: declared {total(decls, lambda c: len(c['ungrouped']))} of "
        f"{total(decls, lambda c: c['pods'])} pods outside their PodGroup; with "
        f"{total(withs, lambda c: len(c['ungrouped']))} of {total(withs, lambda c: c['pods'])} pods "
        f"not in their group, PodGroups duplicate {total(withs, lambda c: c['duplicates'])}, orphaned "
        f"{total(withs, lambda c: len(c['orphans']))}, missing {total(withs, lambda c: c['missing_groups'])}; "
        f"creations refused mentioning wlmap (events) {total(withs, lambda c: c['refused_events'])}")
    calls = {}
    for w in withs:
        for le, c in w.webhook:
            calls[le] = calls.get(le, 0.0) + c
    calls = list(calls.items())
    say(f"- The pod webhook's call as the API server measures it, all `with` phases: p50 "
        f"{fmt_ms(quantile(calls, 0.5))} ms, p99 {fmt_ms(quantile(calls, 0.99))} ms")
    pooled_requests = lambda phases: {k: sum(ph.requests_by.get(k, 0.0) for ph in phases)
                                      for ph in phases for k in ph.requests_by}
    w_req, d_req = pooled_requests(withs), pooled_requests(decls)
    apart = sorted(((w_req.get(k, 0.0) - d_req.get(k, 0.0), k) for k in {*w_req, *d_req}),
                   key=lambda x: -abs(x[0]))[:8]
    per = n * rounds
    say("- API requests that differ most, with against declared, per workload (all rounds pooled): "
        + ", ".join(f"{r} {verb} {d / per:+.2f}" for d, (r, verb) in apart))
    say()
    say("CPU of each phase by component (s):")
    say()
    comps = sorted({c for _, d, w in rows for c in (*d.cpu, *w.cpu)})
    say("| phase | " + " | ".join(comps) + " | replicas and HAProxy | bound (s) |")
    say("|---|" + "---|" * (len(comps) + 2))
    for ph in in_run_order(rows):
        say(f"| {ph.name} | " + " | ".join(f"{ph.cpu.get(c, 0):.1f}" for c in comps)
            + f" | {ph.extra_cpu:.1f} | {bound(ph):.1f} |")
    say()
    say("When the last pod of each kind was bound (s from the phase's first creation):")
    say()
    say("| phase | workloads created | " + " | ".join(KINDS) + " |")
    say("|---|---|" + "---|" * len(KINDS))
    for ph in in_run_order(rows):
        last = ph.last_bound_by_kind()
        say(f"| {ph.name} | {ph.t_created - ph.t0:.1f} | "
            + " | ".join(f"{last.get(k, 0):.1f}" for k in KINDS) + " |")
    say_apiserver_paths(out_dir, in_run_order(rows), say)
    return stuck


def faults_phase(name, n, out_dir, bound_timeout, service, replicas):
    """The burst while the leader is killed (SIGKILL) at a quarter and at three quarters of the
    workloads, a new replica started in its place 3 s later (appended to `replicas`), and the
    API server restarted at half; then what the cluster holds."""
    events, takeover = [], {}
    counted = [0.0, 0.0, 0.0]  # wlmap_refusals: what the API server counted before its restart

    def elected(killed, t):
        def watch():
            while time.time() - t < 120:
                if any(r.alive() and r.leads() for r in replicas):
                    takeover[killed] = time.time() - t
                    return
                time.sleep(0.2)
        threading.Thread(target=watch, daemon=True).start()

    def fault(f):
        if f in (0.25, 0.75):
            leader = next((r for r in replicas if r.alive() and r.leads()), None)
            if leader is None:
                log("faults: no replica leads at the moment of the kill")
                return
            t = time.time()
            leader.kill()
            log(f"faults: killed the leader {leader.identity}")
            events.append(("kill", t, leader.identity))
            elected(leader.identity, t)
            time.sleep(3)
            fresh = Replica(f"scale-{chr(ord('a') + len(replicas))}", service, out_dir)
            replicas.append(fresh)
            service.set_backends([r.webhook for r in replicas if r.alive()])
        else:
            now = wlmap_refusals(apiserver_metrics())
            for i, (a, b) in enumerate(zip(now, start)):
                counted[i] += a - b
            t = time.time()
            subprocess.run([os.environ["WLMAP_TESTBED_RESTART_APISERVER"], TESTBED_DIR, "2"],
                           check=True, capture_output=True)
            log("faults: restarted the API server")
            events.append(("restart", t, "kube-apiserver"))

    faults = Phase(name, n, out_dir)
    start = wlmap_refusals(apiserver_metrics())
    faults.create(fault)
    faults.wait_bound(bound_timeout, replicas)
    if not faults.stuck:
        wait_until("every workload's PodGroups after the faults", 300,
                   lambda: len(faults.gang_latency()[0]) >= n, every=1)
    time.sleep(10)  # the leader's last writes settle before the cluster is read
    faults.audit = audit(faults.ns)
    faults.latency, seen = faults.gang_latency()
    # The API server's counters restart with it: what it counted before, and since.
    faults.refusals = [a + b for a, b in zip(counted, wlmap_refusals(apiserver_metrics()))]
    faults.takeovers = []
    for kind, t, who in events:
        if kind != "kill":
            continue
        before = [w for w, c in faults.created.items() if c <= t]
        caught = max((seen.get(w, float("inf")) for w in before), default=t) - t
        faults.takeovers.append((who, takeover.get(who, float("nan")), max(caught, 0.0),
                                 len(before)))
    return faults


def fault_lines(faults, say):
    """The report's lines on one faults phase."""
    latency = faults.latency
    say(f"- Every pod bound {bound_text(faults)} s after the first creation; "
        f"creation to PodGroups p50 {fmt_ms(pct(latency, 0.5))} ms, p99 {fmt_ms(pct(latency, 0.99))} ms")
    say(f"- Audit: {audit_line(faults.audit)}")
    refused, fail_open, fail_open_again = faults.refusals
    say(f"- Pod creations refused by a wlmap webhook: {refused:.0f}; let through failing open: "
        f"the first call {fail_open:.0f}, the second too {fail_open_again:.0f} (the API "
        f"server's counters, before and after its restart)")
    for who, elected_s, caught, before in faults.takeovers:
        say(f"- Leader {who} killed: a new leader {elected_s:.1f} s later; the {before} workloads "
            f"created before the kill had all their PodGroups {caught:.1f} s after it")


def repeated_faults(n, out_dir, runs, say):
    """WLMAP_SCALE_FAULTS=R: R faults phases one after another (two replicas, then those
    started in place of the killed ones), each in a namespace of its own: a pod let through
    without its group is rare (a call broken by the kill, and its second call too), so one
    run cannot show how rare."""
    service = Service(out_dir)
    replicas = start_pair(service, out_dir)
    bound_timeout = max(600, n * 3)
    say(f"## Faults, {runs} runs: {n} workloads, {n * PODS_PER_WORKLOAD} pods each; the leader "
        "killed at 1/4 and 3/4 of the workloads, the API server restarted at 1/2")
    stuck = False
    for r in range(runs):
        faults = faults_phase(f"faults-{r + 1}", n, out_dir, bound_timeout, service, replicas)
        say()
        say(f"### Run {r + 1}")
        say()
        fault_lines(faults, say)
        stuck = stuck or bool(faults.stuck)
        faults.delete()
        # The killed replicas stay in the list (dead): each new one is named after the list's
        # length, an identity no replica has had, as each pod of a Deployment has its own
        # name; one that took a killed replica's identity would find itself the Lease's holder.
    for x in replicas:
        x.stop()
    service.stop()
    return stuck


def main():
    n, out_dir = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    nodes = max(2, n // 10)
    report = []

    def say(line=""):
        print(line, flush=True)
        report.append(line)

    if PIN:
        pin_cluster()
    kubectl("create", "namespace", CONTROLLER_NS)
    t = time.time()
    add_nodes(nodes)
    log(f"{nodes} nodes Ready in {time.time() - t:.1f} s")
    bound_timeout = max(600, n * 3)
    rounds = int(os.environ.get("WLMAP_SCALE_ROUNDS", "0"))
    fault_runs = int(os.environ.get("WLMAP_SCALE_FAULTS", "0"))
    if rounds or fault_runs:
        if rounds:
            stuck = paired_rounds(n, out_dir, rounds, say)
        else:
            stuck = repeated_faults(n, out_dir, fault_runs, say)
        with open(os.path.join(out_dir, "report.md"), "w") as f:
            f.write("\n".join(report) + "\n")
        sys.exit(1 if stuck else 0)

    # ---- without wlmap
    plain = run_phase("without", n, out_dir, bound_timeout)
    plain.delete()

    # ---- the same gangs declared without wlmap (PodGroups made before, a policy in the API server)
    declared = declared_phase("declared", n, out_dir, bound_timeout)

    # ---- with wlmap: two replicas behind one address
    service = Service(out_dir)
    replicas = start_pair(service, out_dir)
    ctl0 = {r.identity: (proc_cpu(r.proc.pid), r.metrics()) for r in replicas}
    service0 = service.cpu()
    # WLMAP_SCALE_PERF=1: a flat `perf record` of each replica through the phase
    # (OUT_DIR/IDENTITY.perf.data; `perf report -i` it); =fp: with call graphs walked by frame
    # pointers, for a wlmap built with them (RUSTFLAGS="-C force-frame-pointers=yes").
    perf = os.environ.get("WLMAP_SCALE_PERF")
    graph = ["--call-graph", "fp"] if perf == "fp" else []
    profiles = [subprocess.Popen(["perf", "record", "-F", "199", *graph, "-p", str(r.proc.pid),
                                  "-o", os.path.join(out_dir, f"{r.identity}.perf.data")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for r in replicas if perf in ("1", "fp")]
    with_ = run_phase("with", n, out_dir, bound_timeout, replicas)
    for p in profiles:
        p.send_signal(signal.SIGINT)
        p.wait()
    if not with_.stuck:
        wait_until("every workload's PodGroups", 300,
                   lambda: len(with_.gang_latency()[0]) >= n, every=1)
    service_cpu = service.cpu() - service0
    ctl = {}
    for r in replicas:
        cpu0, m0 = ctl0[r.identity]
        m1 = r.metrics()
        ctl[r.identity] = {
            "cpu": proc_cpu(r.proc.pid) - cpu0, "mem": proc_mem(r.proc.pid), "leader": r.leads(),
            "hist": diff_buckets(merge_buckets(scrape(m1, "wlmap_admission_duration_seconds_bucket")),
                                 merge_buckets(scrape(m0, "wlmap_admission_duration_seconds_bucket"))),
            "writes": sum(v for _, v in scrape(m1, "wlmap_controller_gang_object_writes_total"))
            - sum(v for _, v in scrape(m0, "wlmap_controller_gang_object_writes_total")),
            "fetches": sum(v for _, v in scrape(m1, "wlmap_admission_owner_fetches_total"))
            - sum(v for _, v in scrape(m0, "wlmap_admission_owner_fetches_total")),
        }
    with_audit = audit(with_.ns)
    wlmap_layout = layout(with_.ns)
    log(f"with: audit {json.dumps({k: (len(v) if isinstance(v, list) else v) for k, v in with_audit.items()})}")
    ksm = subprocess.run(["bash", os.path.join(HERE, "ksm.sh"), "--loaded", "5"],
                         capture_output=True, text=True, env=dict(os.environ, WLMAP_BIN=WLMAP))
    with open(os.path.join(out_dir, "ksm.txt"), "w") as f:
        f.write(ksm.stdout + ksm.stderr)
    with_.delete()

    # ---- faults: the leader killed twice, the API server restarted once, mid-burst
    faults = faults_phase("faults", n, out_dir, bound_timeout, service, replicas)
    for r in replicas:
        r.stop()
    service.stop()

    # ---- report
    bind_plain = plain.t_bound - plain.t0
    bind_with = with_.t_bound - with_.t0
    pods = with_.expected_pods
    lat, _ = with_.gang_latency()
    leader = next(v for v in ctl.values() if v["leader"])
    hist = [(le, sum(dict(v["hist"]).get(le, 0.0) for v in ctl.values())) for le, _ in leader["hist"]]
    say(f"## Scale run: {n} workloads, {pods} pods, {nodes} KWOK nodes of {GPUS_PER_NODE} GPUs")
    say()
    bind_declared = declared.t_bound - declared.t0
    phases = (plain, declared, with_)
    say("| | without wlmap | the same gangs declared without wlmap | with wlmap (2 replicas) |")
    say("|---|---|---|---|")
    say("| workloads created (s) | " + " | ".join(f"{p.t_created - p.t0:.1f}" for p in phases) + " |")
    say(f"| every pod bound (s from the first creation) | {bound_text(plain)} | {bound_text(declared)} "
        f"(×{bind_declared / bind_plain:.3f}) | {bound_text(with_)} "
        f"(×{bind_with / bind_plain:.3f}; ×{bind_with / bind_declared:.3f} of declared) |")
    say("| API requests in the phase, per workload | "
        + " | ".join(f"{p.requests / n:.1f}" for p in phases) + " |")

    def added(ph, base):
        more = sorted(((v - base.requests_by.get(k, 0.0), k) for k, v in ph.requests_by.items()),
                      reverse=True)[:4]
        return ", ".join(f"{r} {verb} +{d / n:.1f}" for d, (r, verb) in more)
    say(f"| the most added requests, per workload (of without; with: of declared) | | "
        f"{added(declared, plain)} | {added(with_, declared)} |")
    for comp in sorted(with_.cpu):
        say(f"| {comp} CPU (s) | " + " | ".join(f"{p.cpu.get(comp, 0):.1f}" for p in phases) + " |")
    say()
    say(f"- Webhook latency inside wlmap: p50 {fmt_ms(quantile(hist, 0.5))} ms, "
        f"p99 {fmt_ms(quantile(hist, 0.99))} ms ({int(hist[-1][1]) if hist else 0} reviews); "
        f"as the API server measures the call: p50 {fmt_ms(quantile(with_.webhook, 0.5))} ms, "
        f"p99 {fmt_ms(quantile(with_.webhook, 0.99))} ms")
    for ident, v in sorted(ctl.items()):
        say(f"- Replica {ident} ({'leader' if v['leader'] else 'standby'}): CPU {v['cpu']:.1f} s "
            f"({v['cpu'] / (pods / 1000):.2f} s per 1,000 pods), resident {v['mem']['VmRSS']:.0f} MiB, "
            f"peak {v['mem']['VmHWM']:.0f} MiB ({v['mem']['VmHWM'] / (pods / 1000):.1f} MiB per 1,000 pods); "
            f"gang object writes {v['writes']:.0f}, owner fetches {v['fetches']:.0f}")
    say(f"- The Service forwarding the reviews to the replicas (HAProxy, standing in for kube-proxy): "
        f"CPU {service_cpu:.1f} s")
    say(f"- wlmap's own API requests per workload: {sum(v['writes'] + v['fetches'] for v in ctl.values()) / n:.2f} "
        "(gang object writes and owner fetches)")
    say(f"- Creation to PodGroups: p50 {fmt_ms(pct(lat, 0.5))} ms, p99 {fmt_ms(pct(lat, 0.99))} ms "
        f"({len(lat)} workloads)")
    same = "the same" if wlmap_layout == declared_layout() else f"DIFFERENT: wlmap wrote {wlmap_layout}"
    say(f"- Gangs declared without wlmap: {len(declared.check['ungrouped'])} of {declared.check['pods']} pods "
        f"outside their PodGroup; PodGroup minimums per workload of each kind {declared_layout()}, "
        f"as wlmap wrote them: {same}")
    say(f"- Audit after the phase: {audit_line(with_audit)}; pod creations refused by a wlmap "
        f"webhook {with_.refusals[0]:.0f}, let through failing open: the first call "
        f"{with_.refusals[1]:.0f}, the second too {with_.refusals[2]:.0f}")
    say()
    say("### Faults (leader killed at 1/4 and 3/4 of the workloads, API server restarted at 1/2)")
    say()
    fault_lines(faults, say)
    say()
    say("### Beside kube-state-metrics on the loaded cluster (the `with` phase's objects)")
    say()
    say("```")
    say(ksm.stdout.strip())
    say("```")
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(report) + "\n")
    # The run ends by itself either way; the report says which goals were met, and a
    # phase whose pods were not all bound makes it fail.
    stuck = any(ph.stuck for ph in (plain, declared, with_, faults))
    sys.exit(0 if ksm.returncode == 0 and not stuck else 1)


def bound_text(ph):
    return f"{ph.t_bound - ph.t0:.1f}" + (" (NOT all: see below)" if ph.stuck else "")


def audit_line(a):
    return (f"{a['workloads']} workloads, {a['pods']} pods, {a['podgroups']} PodGroups; "
            f"pods not in their group {len(a['ungrouped'])}, duplicate PodGroups {a['duplicates']}, "
            f"orphaned {len(a['orphans'])}, missing {a['missing_groups']}; "
            f"creations refused mentioning wlmap (events) {a['refused_events']}")


if __name__ == "__main__":
    main()
