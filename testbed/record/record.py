#!/usr/bin/env python3
"""Record real workloads driven through their lifecycle on the scheduling testbed.

    WLMAP_TESTBED_OPERATORS=kuberay,jobset,lws,training-operator,trainer,mpi-operator \
        testbed/with-testbed.sh \
        python3 testbed/record/record.py crates/catalog/recorded [FLOW...]

FLOW is `KIND/FLOW` (e.g. `job/failed`) or a kind (`job`, `deployment`, `statefulset`, `daemonset`,
`raycluster`, `rayjob`, `rayservice`, `jobset`, `lws`, `pytorchjob`, `trainjob`, `mpijob`); none
means every flow. `--list` prints the flows.
`record.py --rejudge OUTDIR` judges the recorded objects again (no testbed needed).

Each flow creates its own namespace and its own KWOK node pool, creates one workload, watches
that one object (a raw watch from the resourceVersion the create returned, so no version is
missed), acts on it (scale, suspend, fail a pod, ...) and writes every distinct version the
watch saw to OUTDIR/<operator>/v1.37.2/<definition>/<flow>.yaml, in the trace format of the
shared conformance corpus. The `state` of each recorded object is this file's judge (the
`judge_*` functions below, each rule citing the upstream source), never wlmap's definitions.

Developer tool: stdlib + PyYAML, talks to the testbed only through its kubectl
($WLMAP_TESTBED_KUBECTL --kubeconfig $WLMAP_TESTBED_KUBECONFIG). See README.md next to it.
"""

import copy
import datetime
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
import urllib.parse

import yaml

K8S_VERSION = "v1.37.2"
DEFAULT_TIMEOUT = 180  # seconds per flow (a bound on a stuck flow, not a measurement)
SETTLE = 2.0  # seconds the watch keeps recording after a flow's last step
POD_IMAGE = "registry.k8s.io/pause:3.10"
RAY_IMAGE = "rayproject/ray:2.46.0"


# --------------------------------------------------------------------------------------------
# kubectl


def kubectl_base():
    try:
        return [os.environ["WLMAP_TESTBED_KUBECTL"], "--kubeconfig",
                os.environ["WLMAP_TESTBED_KUBECONFIG"]]
    except KeyError as e:
        sys.exit(f"record.py: {e.args[0]} is not set; run through testbed/with-testbed.sh")


def kubectl(*args, stdin=None, check=True):
    """Run kubectl ARGS; its stdout. Raises on failure when check."""
    r = subprocess.run(kubectl_base() + list(args), input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def kjson(*args):
    return json.loads(kubectl(*args, "-o", "json"))


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------------------------
# The judge: one function per kind, from the object's own fields only. Each rule cites the
# upstream source that gives the field its meaning (kubernetes/kubernetes at v1.37.2,
# ray-project/kuberay ray-operator at v1.5.0). Vocabulary and transition semantics: wlmap's
# README, "Status during transitions" (Running = available; Initializing = not available yet
# and nothing failed for good: created, starting, scaling, rolling out, recreating a lost
# replica; Degraded = a failure reported while part of the workload serves; Suspended /
# Suspending / Resuming). Undefined where the fields cannot tell.


def conditions(obj):
    return {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}


def cond_is(obj, ctype, status="True"):
    c = conditions(obj).get(ctype)
    return c is not None and c.get("status") == status


def cond_reason(obj, ctype):
    c = conditions(obj).get(ctype)
    return c.get("reason") if c else None


def counted(statuses, field):
    """The sum of a counter over per-child status entries (a list or dict values; absent: 0)."""
    return sum((s or {}).get(field) or 0 for s in statuses or [])


def judge_job(o):
    """batch/v1 Job."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    # Terminal conditions. staging/src/k8s.io/api/batch/v1/types.go (JobComplete, JobFailed);
    # pkg/controller/job/util/utils.go FinishedCondition: a Job is finished when Complete or
    # Failed is True.
    if cond_is(o, "Failed"):
        return "Failed"
    if cond_is(o, "Complete"):
        return "Completed"
    # Interim terminal conditions: pkg/controller/job/job_controller.go syncJob sets
    # FailureTarget / SuccessCriteriaMet once the outcome is decided, then terminates the
    # remaining pods and only then adds Failed / Complete. The outcome cannot change any more.
    # CONTESTABLE: `kubectl wait --for=condition=Failed` does not hold yet; we judge the
    # decided outcome.
    if cond_is(o, "FailureTarget"):
        return "Failed"
    if cond_is(o, "SuccessCriteriaMet"):
        return "Completed"
    active = st.get("active") or 0
    terminating = st.get("terminating") or 0
    # Suspension. types.go JobSpec.suspend ("the Job controller will not create Pods ... and
    # will delete all active Pods") and JobSuspended; job_controller.go sets Suspended=True
    # (reason JobSuspended) when it has acted on suspend, Suspended=False (reason JobResumed)
    # when it has acted on a resume. A Job created suspended has no pod: Suspended.
    if spec.get("suspend"):
        return "Suspended" if active == 0 and terminating == 0 else "Suspending"
    # Resumed in the spec, the controller has not acted yet (Suspended still True): the
    # vocabulary's Resuming, the moment it names. Once the controller has acted (job_controller.go
    # syncJob: Suspended=False, reason JobResumed, a new startTime) the Job starts like a new
    # one: Initializing.
    if cond_is(o, "Suspended"):
        return "Resuming"
    succeeded = (st.get("succeeded") or 0) + len(
        (st.get("uncountedTerminatedPods") or {}).get("succeeded") or [])
    ready = st.get("ready") or 0
    started = ready > 0 or succeeded > 0 or bool(st.get("completedIndexes"))
    # backoffLimitPerIndex: status.failedIndexes lists indexes that failed for good
    # (types.go JobStatus.failedIndexes; job_controller.go fails the Job with reason
    # FailedIndexes once every index is done). While other indexes still run, a failure is
    # reported and part of the workload works on. CONTESTABLE: Degraded's "keeps retrying"
    # does not hold (the failed index is not retried); the Job is neither failed yet nor
    # healthy.
    if st.get("failedIndexes") and started:
        return "Degraded"
    # A pod failed and the Job goes on (no terminal condition yet: backoffLimit not reached):
    # the controller replaces it (README: a failed pod of a Job being replaced is Degraded).
    # status.failed counts failed pods, uncountedTerminatedPods.failed those not yet counted
    # (types.go JobStatus).
    failed = (st.get("failed") or 0) + len(
        (st.get("uncountedTerminatedPods") or {}).get("failed") or [])
    if failed > 0:
        return "Degraded"
    # Work going on: a pod is ready or work is done (README: a batch workload whose work goes
    # on is Running until its controller says Completed or Failed). status.ready counts active
    # pods with the Ready condition (types.go JobStatus.ready).
    if started:
        return "Running"
    # Created (no status yet) or pods created and not ready yet.
    return "Initializing"


def judge_deployment(o):
    """apps/v1 Deployment: its own signal is the Available condition."""
    st = o.get("status") or {}
    conds = conditions(o)
    available = cond_is(o, "Available")
    # Progress deadline: pkg/controller/deployment/util/deployment_util.go TimedOutReason =
    # "ProgressDeadlineExceeded" (Progressing=False), set by pkg/controller/deployment/
    # progress.go syncRolloutStatus once the rollout made no progress for
    # progressDeadlineSeconds. The controller takes no further action. While the old
    # replicas keep minimum availability (Available=True) part serves: Degraded; otherwise
    # Failed. CONTESTABLE: the Deployment may still progress if capacity appears.
    if cond_reason(o, "Progressing") == "ProgressDeadlineExceeded" and not cond_is(o, "Progressing"):
        return "Degraded" if available else "Failed"
    # ReplicaFailure: deployment_util.go FailedRSCreateReason etc. (pods/ReplicaSets cannot be
    # created); the controller keeps retrying. Degraded while Available; with nothing
    # available the vocabulary has no fitting word: Undefined.
    if cond_is(o, "ReplicaFailure"):
        return "Degraded" if available else "Undefined"
    # pkg/controller/deployment/sync.go calculateStatus: Available=True (reason
    # MinimumReplicasAvailable) when availableReplicas >= replicas - maxUnavailable. It stays
    # True through a rollout within maxUnavailable (README: stays Running).
    if available:
        return "Running"
    # A completed rollout (Progressing=True, reason NewReplicaSetAvailable) scaled up: the
    # replicas it had serve while the new ones start; Available=False only says the minimum
    # for the new size is not met yet. The shared corpus records this moment Running
    # (deployment/v1.34.0/apps-deployment-v1/scaled.yaml).
    if cond_is(o, "Progressing") and cond_reason(o, "Progressing") == "NewReplicaSetAvailable":
        return "Running"
    # Created (no conditions yet), or Available=False MinimumReplicasUnavailable: starting,
    # scaling up or rolling out below minimum availability.
    if not conds or "Available" not in conds or cond_is(o, "Available", "False"):
        return "Initializing"
    return "Undefined"  # Available=Unknown


def judge_statefulset(o):
    """apps/v1 StatefulSet: no availability condition of its own (Progressing exists only
    with the alpha StatefulSetRecreateStrategy gate, off here), so Running = spec observed and
    every desired replica ready at the current revision."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    want = spec.get("replicas", 1)
    # staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go
    # StatefulSetStatusViewer: not done while observedGeneration < generation ("Waiting for
    # statefulset spec update to be observed") or readyReplicas < replicas, or (partitioned
    # RollingUpdate) updatedReplicas < replicas - partition.
    if not st or st.get("observedGeneration", 0) < o["metadata"].get("generation", 0):
        return "Initializing"
    ready = st.get("readyReplicas") or 0
    have = st.get("replicas") or 0
    updated = st.get("updatedReplicas") or 0
    strategy = spec.get("updateStrategy") or {}
    partition = ((strategy.get("rollingUpdate") or {}).get("partition")) or 0
    # pkg/controller/statefulset/stateful_set_utils.go completeUpdate: currentRevision becomes
    # updateRevision once updatedReplicas == readyReplicas == replicas == spec.replicas.
    # status.replicas > spec.replicas: pods still being removed (scaling down).
    # status.currentReplicas counts pods at currentRevision; availableReplicas those ready for
    # minReadySeconds (stateful_set_control.go computeReplicaStatus).
    at_revision = (updated >= want - partition if partition
                   else st.get("currentRevision") == st.get("updateRevision")
                   and (st.get("currentReplicas") or 0) >= want)
    available = st.get("availableReplicas", ready) or 0
    if ready == want and have == want and available >= want and at_revision and (
            strategy.get("type", "RollingUpdate") != "RollingUpdate" or updated >= want - partition):
        return "Running"
    return "Initializing"  # starting, scaling up or down, rolling out


def judge_daemonset(o):
    """apps/v1 DaemonSet: no availability condition of its own, so Running = spec observed and
    a ready, available daemon pod at the current template on every node that should run one."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    # pkg/controller/daemon/daemon_controller.go updateDaemonSetStatus: desiredNumberScheduled
    # counts the nodes that should run the daemon, currentNumberScheduled those that do,
    # numberReady / numberAvailable (ready for minReadySeconds) their pods, and
    # updatedNumberScheduled the pods of the current template; observedGeneration is raised
    # once the controller's expectations are met. kubectl's DaemonSetStatusViewer
    # (rollout_status.go) waits for updated and available to reach desired.
    if not st or st.get("observedGeneration", 0) < o["metadata"].get("generation", 0):
        return "Initializing"
    want = st.get("desiredNumberScheduled")
    if want is None:
        return "Initializing"
    on_delete = (spec.get("updateStrategy") or {}).get("type") == "OnDelete"
    if ((st.get("currentNumberScheduled") or 0) == want and (st.get("numberReady") or 0) >= want
            and (st.get("numberAvailable") or 0) >= want
            and (on_delete or (st.get("updatedNumberScheduled") or 0) >= want)):
        return "Running"
    return "Initializing"  # starting, a node joining, rolling out


def judge_raycluster(o):
    """ray.io/v1 RayCluster (KubeRay v1.5.0)."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    suspend = bool(spec.get("suspend"))
    # ray-operator/apis/ray/v1/raycluster_types.go: RayClusterSuspending ("set to true when a
    # user sets .Spec.Suspend to true"), RayClusterSuspended ("set to true when all Pods
    # belonging to a suspending RayCluster are deleted"); controllers/ray/
    # raycluster_controller.go calculateStatus sets Suspended=False again once spec.suspend is
    # false, and status.state "suspended" only when suspend is set and no pod is left.
    if cond_is(o, "RayClusterSuspended"):
        return "Suspended" if suspend else "Resuming"
    # A cluster created suspended never had a pod (RayClusterProvisioned, set True once when
    # its pods first all run, never was): Suspended from the start.
    if suspend and not cond_is(o, "RayClusterProvisioned") and st.get("state") != "ready":
        return "Suspended"
    if suspend:
        return "Suspended" if st.get("state") == "suspended" else "Suspending"
    if cond_is(o, "RayClusterSuspending"):
        return "Suspending"  # the suspend is atomic: it completes even if the flag is cleared
    # After a resume status.state keeps "suspended" until calculateStatus sees every pod
    # (head + desiredWorkerReplicas) running and sets it to "ready" again.
    if st.get("state") == "suspended":
        return "Resuming"
    # raycluster_types.go RayClusterReplicaFailure ("when one of its pods fails to be created
    # or deleted"); the operator retries on the next reconcile. Degraded while the head
    # serves; otherwise the vocabulary has no fitting word.
    if cond_is(o, "ReplicaFailure"):
        return "Degraded" if cond_is(o, "HeadPodReady") else "Undefined"
    # Deprecated status.state "failed" is never set by v1.5.0 (raycluster_types.go).
    if st.get("state") == "failed":
        return "Failed"
    # No availability signal of its own: status.state "ready" is set once and kept
    # (calculateStatus never resets it), RayClusterProvisioned is "first time only". So:
    # spec observed (status.observedGeneration, set on every calculateStatus), the head ready
    # (HeadPodReady mirrors the head pod's Ready condition) and every desired worker ready
    # (readyWorkerReplicas counts Ready worker pods, desiredWorkerReplicas = sum of
    # replicas * numOfHosts).
    if not st or st.get("observedGeneration", 0) < o["metadata"].get("generation", 0):
        return "Initializing"
    if cond_is(o, "HeadPodReady") and (st.get("readyWorkerReplicas") or 0) == (
            st.get("desiredWorkerReplicas") or 0):
        return "Running"
    return "Initializing"  # starting, scaling, recreating a lost worker


def judge_rayjob(o):
    """ray.io/v1 RayJob (KubeRay v1.5.0): status.jobDeploymentStatus (the operator's
    lifecycle) and status.jobStatus (the Ray job's own status, read from the Ray dashboard)."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    suspend = bool(spec.get("suspend"))
    ds = st.get("jobDeploymentStatus") or ""
    js = st.get("jobStatus") or ""
    # ray-operator/apis/ray/v1/rayjob_types.go IsJobDeploymentTerminal: Complete and Failed
    # are terminal; ValidationFailed is set by rayjob_controller.go Reconcile when the spec is
    # invalid (no further reconciliation).
    if ds in ("Failed", "ValidationFailed"):
        return "Failed"
    if ds == "Complete":
        return "Completed"
    # rayjob_controller.go: Suspending deletes the cluster and the submitter, then Suspended;
    # in Suspended with spec.suspend false the operator goes back to New (a fresh start).
    if ds == "Suspended":
        return "Suspended" if suspend else "Resuming"
    if ds == "Suspending":
        return "Suspending"
    if ds == "":
        # New: created (the operator has written nothing yet), or reset after a resume.
        # README: created suspended before any pod existed is Suspended.
        return "Suspended" if suspend else "Initializing"
    if ds in ("Initializing", "Running") and suspend:
        # updateStatusToSuspendingIfNeeded: only Initializing and Running go to Suspending.
        return "Suspending"
    if ds == "Initializing":
        return "Initializing"  # cluster being created / waiting for status.state ready
    if ds == "Running":
        # Running = cluster ready and the job submitted; the Ray job's own status comes from
        # the dashboard (rayjob_types.go JobStatus, Ray's JobStatus). IsJobTerminal:
        # SUCCEEDED, FAILED, STOPPED. The operator keeps Running until the submitter finishes
        # (checkTransitionGracePeriodAndUpdateStatusIfNeeded), the outcome is decided.
        if js == "SUCCEEDED" or js == "STOPPED":
            return "Completed"
        if js == "FAILED":
            return "Failed"
        if js == "RUNNING":
            return "Running"
        if js == "PENDING":
            return "Initializing"
        # jobStatus empty: submitted, but the operator has not (or could not) read the Ray
        # job's status. The fields cannot tell whether the job runs.
        return "Undefined"
    # Retrying (a failed attempt being cleaned up before a retry, backoffLimit) and Waiting
    # (InteractiveMode, waiting for the user's job id): no fitting word.
    return "Undefined"


def judge_rayservice(o):
    """ray.io/v1 RayService (KubeRay v1.5.0): the Ready condition."""
    # ray-operator/apis/ray/v1/rayservice_types.go RayServiceReady ("users can send requests
    # to the underlying cluster and the number of serve endpoints is greater than 0");
    # controllers/ray/rayservice_controller.go calculateConditions sets Ready=False reason
    # Initializing at first, True (NonZeroServeEndpoints) with serve endpoints, False
    # (ZeroServeEndpoints) when they drop to 0, and markFailedOnInitializingTimeout sets
    # reason InitializingTimeout: "a terminal failure state" (controllers/ray/utils/
    # constant.go RayServiceInitializingTimeoutAnnotation).
    ready = conditions(o).get("Ready")
    if ready is None:
        return "Initializing"  # created, no condition yet
    if ready.get("status") == "True":
        # UpgradeInProgress=True keeps serving from the active cluster: still Running.
        return "Running"
    reason = ready.get("reason")
    if reason == "InitializingTimeout":
        return "Failed"
    if reason == "Initializing":
        return "Initializing"
    # ZeroServeEndpoints: served once, no endpoint now, the operator waits for one. Nothing
    # serves (not Degraded), not failed for good; no fitting word.
    return "Undefined"


def judge_jobset(o):
    """jobset.x-k8s.io/v1alpha2 JobSet (JobSet v0.11.0; sigs.k8s.io/jobset
    api/jobset/v1alpha2/jobset_types.go, pkg/controllers/jobset_controller.go). Its controller
    writes conditions only when they become True (updateCondition), so a healthy running
    JobSet has none: the per-replicatedJob counters say the rest."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    # Terminal: the Completed / Failed conditions, and status.terminalState ("Completed or
    # Failed. Otherwise, it is empty"), written together by setJobSetCompletedCondition and
    # the failure policy's setJobSetFailedCondition.
    if cond_is(o, "Failed") or st.get("terminalState") == "Failed":
        return "Failed"
    if cond_is(o, "Completed") or st.get("terminalState") == "Completed":
        return "Completed"
    def total(field):
        return counted(st.get("replicatedJobsStatus"), field)
    # Suspension. jobset_types.go JobSetSpec.suspend; suspendJobs suspends every child Job
    # (whose controller deletes its pods) and sets Suspended=True. `active` counts child Jobs
    # with a running or pending pod (ReplicatedJobStatus.active), so 0 means no pod is left.
    if spec.get("suspend"):
        return "Suspended" if total("active") == 0 else "Suspending"
    # Resumed in the spec, the controller has not acted yet (resumeJobsIfNecessary sets
    # Suspended=False, reason ResumeJobs, when it has): still Suspended, as judge_job reads
    # the same moment (the JobSet controller reports no resuming phase of its own).
    if cond_is(o, "Suspended"):
        return "Suspended"
    # A child Job failed and the JobSet is not finished: the failure policy restarts the
    # JobSet (status.restarts + 1, every Job recreated) or fails it on its next reconcile
    # (failure_policy.go executeFailurePolicy). A failure reported while the rest runs on.
    # RestartingJobSet=True (reason: the failure policy rule) stays until every recreated Job
    # is ready again (RestartingJobSet=False, reason JobsReady): the controller's own word that
    # it is retrying after a failure, so the recreation reads Degraded, not Initializing.
    if total("failed") > 0 or cond_is(o, "RestartingJobSet"):
        return "Degraded"
    # startupPolicyOrder InOrder: the replicated jobs are created one after the other, each
    # once the one before is ready (startup_policy.go); StartupPolicyInProgress=True until
    # the last one is. Starting: Initializing.
    if cond_is(o, "StartupPolicyInProgress"):
        return "Initializing"
    # Work going on: a child Job ready (`ready`: its ready and completed pods reach its
    # expected pod count) or done (`succeeded`). CONTESTABLE: a child Job `active` with no
    # pod ready yet (pods Pending or starting) is read as Running too, as the shared corpus
    # reads the same moments (jobset/v1.34.0/jobset-x-k8s-io-jobset-v1alpha2/running.yaml and
    # completed.yaml: active 1, ready 0, judged Running); README's contract would say
    # Initializing for pods that are only starting, but the counters cannot tell them from a
    # pod that has just finished.
    if total("ready") > 0 or total("succeeded") > 0 or total("active") > 0:
        return "Running"
    # Created (no status yet), or restarting (the Jobs of the last attempt deleted, the new
    # ones not yet counted).
    return "Initializing"


def judge_lws(o):
    """leaderworkerset.x-k8s.io/v1 LeaderWorkerSet (LWS v0.9.0; sigs.k8s.io/lws
    api/leaderworkerset/v1/leaderworkerset_types.go, pkg/controllers/leaderworkerset_controller.go
    updateConditions). Its own signal: Available ("at least the minimum available groups are
    up and running"), written when every group below spec.replicas is ready (leader pod
    running and ready, worker StatefulSet ready) at the current template revision; otherwise
    Progressing (with UpdateInProgress during a rolling update), the two mutually exclusive.
    No failure condition exists: a group being recreated after a pod failed
    (RecreateGroupOnPodRestart) is Progressing."""
    # README: the kind's own signal says Running where its controller gives one, also while
    # a new spec is not observed yet (staleObservedGeneration marks that version).
    if cond_is(o, "Available"):
        return "Running"
    # Created (no status yet), starting, scaling, rolling out, recreating a group.
    return "Initializing"


def judge_kubeflow_job(o):
    """kubeflow.org/v1 PyTorchJob and the training operator's other kinds (v1.8.1;
    github.com/kubeflow/training-operator pkg/apis/kubeflow.org/v1/common_types.go JobConditionType,
    pkg/controller.v1/common/job.go ReconcileJobs, pkg/controller.v1/pytorch
    pytorchjob_controller.go UpdateJobStatus), and kubeflow.org/v2beta1 MPIJob of the MPI
    operator v0.8.0 (github.com/kubeflow/mpi-operator pkg/apis/kubeflow/v2beta1/types.go, the
    same condition types; pkg/controller/mpi_job_controller.go)."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    # Terminal: Succeeded / Failed (common_types.go: "the job has ... terminated"), set by
    # UpdateJobStatus from the master's (or, without one, the workers') pods.
    if cond_is(o, "Failed"):
        return "Failed"
    if cond_is(o, "Succeeded"):
        return "Completed"
    # Suspension: runPolicy.suspend. ReconcileJobs deletes the pods, zeroes every replica's
    # `active`, sets Running=False and Suspended=True in one status write, so Suspended=True is
    # the controller's word that no pod is left; before it has acted: Suspending.
    # (The MPI operator writes Suspended=True first and removes the pods after: Suspended once
    # no replica is active either.)
    if (spec.get("runPolicy") or {}).get("suspend"):
        active = counted((st.get("replicaStatuses") or {}).values(), "active")
        return "Suspended" if cond_is(o, "Suspended") and active == 0 else "Suspending"
    # Resumed in the spec, not acted on yet (then Suspended=False, reason ...Resumed): still
    # Suspended, as judge_job and the shared corpus read an MPIJob
    # (kubeflow/v1.34.0/kubeflow-org-mpijob-v2beta1/resumed.yaml).
    if cond_is(o, "Suspended"):
        return "Suspended"
    # Restarting: a replica's pod failed with a restartable policy (ExitCode, OnFailure) and
    # is recreated (common_types.go JobRestarting): a failure retried. A replica's `failed`
    # count while the job goes on (the MPI operator's updateMPIJobStatus counts a failed worker
    # and keeps Running=True): a failure reported while the rest runs.
    failed = counted((st.get("replicaStatuses") or {}).values(), "failed")
    if cond_is(o, "Restarting") or failed > 0:
        return "Degraded"
    # Running: set once the master's pod (PyTorchJob) runs (pytorchjob_controller.go
    # UpdateJobStatus), the kind's own signal.
    if cond_is(o, "Running"):
        return "Running"
    # Created (JobCreated) and starting; or resumed, the pods made anew.
    return "Initializing"


def judge_trainjob(o):
    """trainer.kubeflow.org/v1alpha1 TrainJob (Kubeflow Trainer v2.3.0;
    github.com/kubeflow/trainer pkg/apis/trainer/v1alpha1/trainjob_types.go,
    pkg/controller/trainjob_controller.go, pkg/runtime/framework/plugins/jobset/jobset.go
    Status). The Trainer runs a TrainJob as a JobSet and copies its state: Complete / Failed
    from the JobSet's Completed / Failed, jobsStatus from its replicatedJobsStatus."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    if cond_is(o, "Failed"):
        return "Failed"
    if cond_is(o, "Complete"):
        return "Completed"
    def total(field):
        return counted(st.get("jobsStatus"), field)
    # Suspension: spec.suspend suspends the JobSet (whose controller suspends its Jobs, whose
    # pods go); setSuspendedCondition writes Suspended=True at once. Suspended once no Job is
    # `active` (no pod left) and the condition is written, else Suspending.
    if spec.get("suspend"):
        return "Suspended" if cond_is(o, "Suspended") and total("active") == 0 else "Suspending"
    # Resumed in the spec, not acted on yet (setSuspendedCondition then writes Suspended=False,
    # reason Resumed): Resuming, README's word for a controller still reporting suspended
    # after a resume. (judge_job reads the same moment Resuming; judge_jobset Suspended, after
    # the shared corpus's MPIJob.)
    if cond_is(o, "Suspended"):
        return "Resuming"
    # A child Job failed, the TrainJob not finished: the JobSet's failure policy restarts or
    # fails it.
    if total("failed") > 0:
        return "Degraded"
    # As judge_jobset (the counters are the JobSet's): a Job ready, done or active → Running,
    # with the same contestable reading of an active Job with no pod ready.
    if total("ready") > 0 or total("succeeded") > 0 or total("active") > 0:
        return "Running"
    return "Initializing"  # created, the JobSet and its Jobs not counted yet


JUDGES = {
    ("batch", "Job"): judge_job,
    ("apps", "Deployment"): judge_deployment,
    ("apps", "StatefulSet"): judge_statefulset,
    ("apps", "DaemonSet"): judge_daemonset,
    ("ray.io", "RayCluster"): judge_raycluster,
    ("ray.io", "RayJob"): judge_rayjob,
    ("ray.io", "RayService"): judge_rayservice,
    ("jobset.x-k8s.io", "JobSet"): judge_jobset,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): judge_lws,
    ("kubeflow.org", "PyTorchJob"): judge_kubeflow_job,
    ("kubeflow.org", "MPIJob"): judge_kubeflow_job,
    ("trainer.kubeflow.org", "TrainJob"): judge_trainjob,
}

# Kinds whose status has observedGeneration (the staleObservedGeneration mark).
OBSERVED_GENERATION = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
                       ("ray.io", "RayCluster"),
                       ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
                       ("ray.io", "RayService"), ("ray.io", "RayJob")}


def group_kind(o):
    return (o.get("apiVersion", "").rpartition("/")[0], o.get("kind"))


def judge(o):
    return JUDGES[group_kind(o)](o)


def stale_generation(o):
    st = o.get("status") or {}
    return (group_kind(o) in OBSERVED_GENERATION and "observedGeneration" in st
            and o["metadata"].get("generation", 0) > st["observedGeneration"])


# --------------------------------------------------------------------------------------------
# Recording


def strip(o):
    """The object without volatile metadata (as the shared corpus keeps it)."""
    o = copy.deepcopy(o)
    md = o.get("metadata") or {}
    for k in ("managedFields", "resourceVersion", "selfLink"):
        md.pop(k, None)
    ann = md.get("annotations")
    if ann is not None:
        ann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
        if not ann:
            md.pop("annotations")
    return o


class FlowTimeout(Exception):
    pass


class Watch:
    """`kubectl get --raw` watch of one object from a resourceVersion; events on a queue."""

    def __init__(self, api_path, ns, plural, name, rv):
        self.base = f"{api_path}/namespaces/{ns}/{plural}"
        self.name, self.rv = name, rv
        self.q = queue.Queue()
        self.stop = threading.Event()
        self.proc = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def url(self):
        qs = urllib.parse.urlencode({"watch": "1", "fieldSelector": f"metadata.name={self.name}",
                                     "resourceVersion": self.rv, "timeoutSeconds": "900",
                                     "allowWatchBookmarks": "false"})
        return f"{self.base}?{qs}"

    def run(self):
        while not self.stop.is_set():
            self.proc = subprocess.Popen(kubectl_base() + ["get", "--raw", self.url()],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True)
            for line in self.proc.stdout:
                line = line.strip()
                if not line:
                    continue
                ev = json.loads(line)
                if ev.get("type") == "ERROR":
                    # e.g. 410 Gone: start again from the object as it is now.
                    self.rv = self.relist()
                    self.proc.terminate()
                    break
                obj = ev["object"]
                self.rv = obj["metadata"]["resourceVersion"]
                self.q.put((ev["type"], obj))
            self.proc.wait()
            if not self.stop.is_set():
                time.sleep(0.2)

    def relist(self):
        obj = json.loads(kubectl("get", "--raw", f"{self.base}/{self.name}"))
        self.q.put(("MODIFIED", obj))
        return obj["metadata"]["resourceVersion"]

    def close(self):
        self.stop.set()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Recorder:
    def __init__(self):
        self.events = []
        self.latest = None  # newest full object seen
        self.last_key = None
        self.watch = None

    def observe(self, obj):
        self.latest = obj
        s = strip(obj)
        key = json.dumps(s, sort_keys=True)
        if key == self.last_key:
            return
        self.last_key = key
        ev = {"kind": "STATE", "object": s, "resourceVersion": obj["metadata"]["resourceVersion"],
              "state": judge(obj)}
        if stale_generation(obj):
            ev["staleObservedGeneration"] = True
        self.events.append(ev)

    def pump(self, wait=0.0):
        """Record what the watch delivered; wait up to `wait` seconds for the first event."""
        if not self.watch:
            return
        try:
            typ, obj = self.watch.q.get(timeout=wait) if wait > 0 else self.watch.q.get_nowait()
        except queue.Empty:
            return
        while True:
            if typ in ("ADDED", "MODIFIED"):
                self.observe(obj)
            try:
                typ, obj = self.watch.q.get_nowait()
            except queue.Empty:
                return

    def action(self, name, operation):
        self.pump()
        self.events.append({"kind": "ACTION", "action": {"name": name, "operation": operation}})

    def states(self):
        return [e["state"] for e in self.events if e["kind"] == "STATE"]


API = {
    "Job": ("/apis/batch/v1", "jobs"),
    "Deployment": ("/apis/apps/v1", "deployments"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"),
    "DaemonSet": ("/apis/apps/v1", "daemonsets"),
    "RayCluster": ("/apis/ray.io/v1", "rayclusters"),
    "RayJob": ("/apis/ray.io/v1", "rayjobs"),
    "RayService": ("/apis/ray.io/v1", "rayservices"),
    "JobSet": ("/apis/jobset.x-k8s.io/v1alpha2", "jobsets"),
    "LeaderWorkerSet": ("/apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
    "PyTorchJob": ("/apis/kubeflow.org/v1", "pytorchjobs"),
    "MPIJob": ("/apis/kubeflow.org/v2beta1", "mpijobs"),
    "TrainJob": ("/apis/trainer.kubeflow.org/v1alpha1", "trainjobs"),
}


class Ctx:
    """What a flow uses: its namespace and node pool, the root object, actions, waits."""

    def __init__(self, flow, timeout):
        self.flow = flow
        suffix = "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        self.ns = f"rec-{flow.key.replace('/', '-')}-{suffix}"
        self.pool = self.ns
        self.nodes = []
        self.rec = Recorder()
        self.deadline = time.monotonic() + timeout
        self.notes = []
        self.kind = self.name = None

    # setup
    def add_node(self, suffix, gpus):
        """A KWOK node of the flow's pool (as crates/e2e/src/lib.rs Testbed::add_node)."""
        name = f"{self.pool}-{suffix}"
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name,
                             "annotations": {"kwok.x-k8s.io/node": "fake",
                                             "node.alpha.kubernetes.io/ttl": "0"},
                             "labels": {"type": "kwok", "kubernetes.io/arch": "amd64",
                                        "kubernetes.io/os": "linux",
                                        "kubernetes.io/hostname": name,
                                        "wlmap.test/pool": self.pool}},
                "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110",
                                           "nvidia.com/gpu": str(gpus)},
                           "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110",
                                        "nvidia.com/gpu": str(gpus)},
                           "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                                        "kubeletVersion": "fake"}}}
        kubectl("create", "-f", "-", stdin=json.dumps(node))
        self.nodes.append(name)
        end = time.monotonic() + 120
        while time.monotonic() < end:
            n = kjson("get", "node", name)
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in n.get("status", {}).get("conditions") or [])
            if ready and not n.get("spec", {}).get("taints"):
                return
            time.sleep(0.3)
        raise FlowTimeout(f"node {name} Ready and untainted")

    def container(self, gpus, name="main", image=POD_IMAGE):
        r = {"cpu": "1", "memory": "1Gi"}
        if gpus:
            r["nvidia.com/gpu"] = str(gpus)
        return {"name": name, "image": image, "resources": {"requests": dict(r), "limits": dict(r)}}

    def pod_spec(self, gpus, **extra):
        s = {"nodeSelector": {"wlmap.test/pool": self.pool}, "containers": [self.container(gpus)]}
        s.update(extra)
        return s

    def create(self, obj):
        """Create the root object; record the version the create returned; watch from it."""
        obj.setdefault("metadata", {})["namespace"] = self.ns
        created = json.loads(kubectl("create", "-f", "-", "-o", "json", stdin=json.dumps(obj)))
        self.kind, self.name = created["kind"], created["metadata"]["name"]
        api, plural = API[self.kind]
        self.rec.observe(created)
        self.rec.watch = Watch(api, self.ns, plural, self.name, created["metadata"]["resourceVersion"])
        return created

    @property
    def obj(self):
        return self.rec.latest

    # actions
    def patch(self, name, payload, patch_type="merge"):
        """Patch the root object (recorded as an ACTION named `name`)."""
        types = {"merge": "application/merge-patch+json", "json": "application/json-patch+json"}
        self.rec.action(name, {"verb": "PATCH", "patchType": types[patch_type], "payload": payload})
        kubectl("patch", f"{self.kind.lower()}/{self.name}", "-n", self.ns, f"--type={patch_type}",
                "-p", json.dumps(payload))

    def pods(self, selector=None):
        args = ["get", "pods", "-n", self.ns] + (["-l", selector] if selector else [])
        return kjson(*args)["items"]

    def _terminate_pod(self, action, pod, phase, exit_code, reason, sticks=True):
        """Move a pod to a terminal phase through its status subresource (what a kubelet
        would report), keeping its other conditions. `sticks`: check the phase stays (not
        for a pod its controller replaces at once under the same name)."""
        now = now_rfc3339()
        st = pod.get("status") or {}
        conds = [c for c in st.get("conditions") or [] if c.get("type") not in ("Ready", "ContainersReady")]
        for t in ("Ready", "ContainersReady"):
            conds.append({"type": t, "status": "False", "reason": "PodCompleted" if phase == "Succeeded" else "PodFailed",
                          "lastTransitionTime": now, "lastProbeTime": None})
        cstat = []
        for c in pod["spec"]["containers"]:
            started = next((s.get("state", {}).get("running", {}).get("startedAt")
                            for s in st.get("containerStatuses") or [] if s.get("name") == c["name"]), None)
            cstat.append({"name": c["name"], "image": c["image"], "imageID": "", "ready": False,
                          "restartCount": 0, "started": False,
                          "state": {"terminated": {"exitCode": exit_code, "reason": reason,
                                                   "startedAt": started or now, "finishedAt": now}}})
        payload = {"status": {"phase": phase, "conditions": conds, "containerStatuses": cstat}}
        name = pod["metadata"]["name"]
        self.rec.action(action, {"verb": "PATCH", "patchType": "application/merge-patch+json",
                                 "target": {"apiVersion": "v1", "kind": "Pod", "name": name,
                                            "subresource": "status"},
                                 "payload": payload})
        kubectl("patch", "pod", name, "-n", self.ns, "--subresource=status", "--type=merge",
                "-p", json.dumps(payload))
        if not sticks:
            return
        # Check it sticks (KWOK must not move it back).
        self.wait_pods(lambda ps: any(p["metadata"]["name"] == name and p["status"].get("phase") == phase
                                      for p in ps), f"pod {name} {phase}")
        self.settle(0.5)
        cur = [p for p in self.pods() if p["metadata"]["name"] == name]
        if cur and cur[0]["status"].get("phase") != phase:
            self.note(f"pod {name} did not stay {phase} (now {cur[0]['status'].get('phase')})")

    def fail_pod(self, pod, sticks=True, exit_code=1):
        self._terminate_pod("FailPod", pod, "Failed", exit_code, "Error", sticks)

    def succeed_pod(self, pod):
        self._terminate_pod("SucceedPod", pod, "Succeeded", 0, "Completed")

    def delete_pod(self, pod):
        name = pod["metadata"]["name"]
        self.rec.action("DeletePod", {"verb": "DELETE", "target": {"apiVersion": "v1", "kind": "Pod", "name": name}})
        kubectl("delete", "pod", name, "-n", self.ns, "--wait=false")

    # waits
    def check_deadline(self, what):
        if time.monotonic() > self.deadline:
            raise FlowTimeout(what)

    def wait(self, pred, what):
        """Record until pred(latest object) holds."""
        while True:
            self.rec.pump(0.5)
            if self.obj is not None and pred(self.obj):
                return
            self.check_deadline(what)

    def wait_pods(self, pred, what, selector=None):
        """Record while polling the namespace's pods until pred(pods) holds."""
        while True:
            self.rec.pump()
            ps = self.pods(selector)
            if pred(ps):
                return ps
            self.check_deadline(what)
            self.rec.pump(0.4)

    def settle(self, seconds):
        """Keep recording for `seconds` (bounded by the deadline)."""
        end = min(time.monotonic() + seconds, self.deadline)
        while time.monotonic() < end:
            self.rec.pump(min(0.5, max(0.01, end - time.monotonic())))

    def note(self, text):
        self.notes.append(text)

    def close(self):
        if self.rec.watch:
            self.rec.watch.close()
            self.rec.pump()
        # The nodes stay until the run ends (main): KWOK must be there to finish the pods the
        # namespace deletion terminates.
        kubectl("delete", "namespace", self.ns, "--wait=false", check=False)


# --------------------------------------------------------------------------------------------
# Field helpers for the flows' waits (not the judge)


def st(o):
    return o.get("status") or {}


def running_pods(ps):
    return [p for p in ps if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
            and any(c.get("type") == "Ready" and c.get("status") == "True" for c in p["status"].get("conditions") or [])]


def running_pod_labelled(c, key, value):
    """Wait for a running pod of the flow labelled key=value, and return it."""
    def labelled(ps):
        return [p for p in running_pods(ps) if p["metadata"]["labels"].get(key) == value]
    return labelled(c.wait_pods(lambda ps: labelled(ps), f"a running pod {key}={value}"))[0]


def index_of(p):
    return int(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"])


def observed(o):
    return st(o).get("observedGeneration", 0) >= o["metadata"].get("generation", 0)


def has_cond(o, t, status="True", reason=None):
    c = conditions(o).get(t)
    return c is not None and c.get("status") == status and (reason is None or c.get("reason") == reason)


# --------------------------------------------------------------------------------------------
# Flows


class Flow:
    def __init__(self, key, operator, definition, want, fn, timeout=DEFAULT_TIMEOUT):
        self.key, self.operator, self.definition, self.want = key, operator, definition, want
        self.fn, self.timeout = fn, timeout

    @property
    def name(self):
        return self.key.split("/", 1)[1]


FLOWS = []


def flow(key, operator, definition, want, timeout=DEFAULT_TIMEOUT):
    def deco(fn):
        FLOWS.append(Flow(key, operator, definition, want, fn, timeout))
        return fn
    return deco


def suspend_and_resume(c, patch, suspended, running):
    """Suspend (the merge patch `patch(True)`), wait until `suspended(obj)` holds and no pod
    is left, then resume (`patch(False)`) and wait until `running(obj)` holds."""
    c.patch("Suspend", patch(True))
    c.wait(suspended, "suspended")
    c.wait_pods(lambda ps: not ps, "no pod left")
    c.settle(1)
    c.patch("Resume", patch(False))
    c.wait(running, "running again")


def spec_suspend(value):
    return {"spec": {"suspend": value}}


def run_policy_suspend(value):
    return {"spec": {"runPolicy": {"suspend": value}}}


KEEP = {"wlmap.test/keep-running": "true"}  # testbed/kwok/pod-complete.yaml: a Job's pod stays Running


def job(c, name, spec, labels=None, gpus=2):
    tmpl = {"spec": c.pod_spec(gpus, restartPolicy="Never")}
    if labels:
        tmpl["metadata"] = {"labels": labels}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": dict(spec, template=tmpl)}


# Job, non-indexed

@flow("job/completed", "batch-job", "batch-job-v1", "Completed")
def job_completed(c):
    c.add_node("gpu-0", 8)
    c.create(job(c, "train", {"parallelism": 2, "completions": 2, "backoffLimit": 0}))
    c.wait(lambda o: has_cond(o, "Complete"), "Job Complete")


@flow("job/failed", "batch-job", "batch-job-v1", "Failed")
def job_failed(c):
    c.add_node("gpu-0", 8)
    c.create(job(c, "train", {"parallelism": 1, "completions": 1, "backoffLimit": 0}, KEEP, gpus=4))
    ps = c.wait_pods(lambda ps: len(running_pods(ps)) == 1, "the pod running")
    c.wait(lambda o: st(o).get("ready") == 1, "status.ready 1")
    c.fail_pod(running_pods(ps)[0])
    c.wait(lambda o: has_cond(o, "Failed"), "Job Failed")


@flow("job/suspended", "batch-job", "batch-job-v1", "Completed")
def job_suspended(c):
    c.add_node("gpu-0", 8)
    c.create(job(c, "train", {"parallelism": 2, "completions": 2, "backoffLimit": 0, "suspend": True}))
    c.wait(lambda o: has_cond(o, "Suspended"), "Suspended condition")
    c.settle(1)
    if c.pods():
        c.note("pods exist while suspended")
    c.patch("Resume", {"spec": {"suspend": False}})
    c.wait(lambda o: has_cond(o, "Complete"), "Job Complete")


@flow("job/scaled", "batch-job", "batch-job-v1", "Running")
def job_scaled(c):
    c.add_node("gpu-0", 8)
    c.add_node("gpu-1", 8)
    c.create(job(c, "train", {"parallelism": 1, "backoffLimit": 0}, KEEP))
    c.wait(lambda o: st(o).get("ready") == 1, "1 pod ready")
    c.patch("Scale", {"spec": {"parallelism": 3}})
    c.wait(lambda o: st(o).get("ready") == 3 and st(o).get("active") == 3, "3 pods ready")
    c.patch("Scale", {"spec": {"parallelism": 1}})
    c.wait(lambda o: st(o).get("active") == 1 and not st(o).get("terminating"), "1 pod active, none terminating")


# Job, indexed

@flow("job/indexed-completed", "batch-job", "batch-job-v1", "Completed")
def job_indexed_completed(c):
    c.add_node("gpu-0", 8)
    c.add_node("gpu-1", 8)
    c.create(job(c, "train", {"parallelism": 3, "completions": 3, "completionMode": "Indexed",
                              "backoffLimit": 0}, gpus=4))
    c.wait(lambda o: has_cond(o, "Complete"), "Job Complete")


@flow("job/indexed-partial", "batch-job", "batch-job-v1", "Running")
def job_indexed_partial(c):
    c.add_node("gpu-0", 8)
    c.create(job(c, "train", {"parallelism": 4, "completions": 4, "completionMode": "Indexed",
                              "backoffLimit": 0}, KEEP))
    ps = c.wait_pods(lambda ps: len(running_pods(ps)) == 4, "4 pods running")
    c.wait(lambda o: st(o).get("ready") == 4, "status.ready 4")
    for p in sorted(running_pods(ps), key=index_of)[:2]:
        c.succeed_pod(p)
    c.wait(lambda o: st(o).get("completedIndexes") == "0,1" and st(o).get("active") == 2
           and not (st(o).get("uncountedTerminatedPods") or {}).get("succeeded"),
           "indexes 0,1 completed, 2 active")


@flow("job/indexed-failed", "batch-job", "batch-job-v1", "Failed")
def job_indexed_failed(c):
    c.add_node("gpu-0", 8)
    c.create(job(c, "train", {"parallelism": 3, "completions": 3, "completionMode": "Indexed",
                              "backoffLimitPerIndex": 0}, KEEP))
    ps = c.wait_pods(lambda ps: len(running_pods(ps)) == 3, "3 pods running")
    c.wait(lambda o: st(o).get("ready") == 3, "status.ready 3")
    pods = sorted(running_pods(ps), key=index_of)
    c.fail_pod(pods[0])
    c.wait(lambda o: st(o).get("failedIndexes") == "0" and st(o).get("failed") == 1, "index 0 failed")
    for p in pods[1:]:
        c.succeed_pod(p)
    c.wait(lambda o: has_cond(o, "Failed"), "Job Failed")


# Deployment

def deployment(c, name, replicas, gpus=2, **spec):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": dict({"replicas": replicas, "selector": {"matchLabels": labels},
                          "template": {"metadata": {"labels": labels}, "spec": c.pod_spec(gpus)}}, **spec)}


def deployment_done(n):
    def ok(o):
        s = st(o)
        return (observed(o) and s.get("replicas") == n and s.get("updatedReplicas") == n
                and s.get("availableReplicas") == n and s.get("readyReplicas") == n
                and has_cond(o, "Available"))
    return ok


def scale_up_and_down(c, make, done):
    """Two nodes of 8 GPUs; one replica, scaled to 3, then back to 1, each step awaited."""
    c.add_node("gpu-0", 8)
    c.add_node("gpu-1", 8)
    c.create(make(1))
    c.wait(done(1), "1 replica ready")
    c.patch("Scale", {"spec": {"replicas": 3}})
    c.wait(done(3), "3 replicas ready")
    c.patch("Scale", {"spec": {"replicas": 1}})
    c.wait(done(1), "back to 1 replica")


@flow("deployment/scaled", "deployment", "apps-deployment-v1", "Running")
def deployment_scaled(c):
    scale_up_and_down(c, lambda n: deployment(c, "serve", n), deployment_done)


@flow("deployment/rollout", "deployment", "apps-deployment-v1", "Running")
def deployment_rollout(c):
    c.add_node("gpu-0", 8)
    c.add_node("gpu-1", 8)
    c.create(deployment(c, "serve", 3))
    c.wait(deployment_done(3), "3 replicas available")
    c.patch("UpdateTemplate", {"spec": {"template": {"metadata": {"annotations": {"wlmap.test/model-version": "v2"}}}}})
    c.wait(lambda o: deployment_done(3)(o) and cond_reason(o, "Progressing") == "NewReplicaSetAvailable"
           and o["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision") == "2",
           "rollout to revision 2 complete")


@flow("deployment/deadline", "deployment", "apps-deployment-v1", "Failed")
def deployment_deadline(c):
    # Pods of 4 GPUs on a pool whose only node has 2: never schedulable.
    c.add_node("gpu-0", 2)
    c.create(deployment(c, "serve", 2, gpus=4, progressDeadlineSeconds=20))
    c.wait(lambda o: cond_reason(o, "Progressing") == "ProgressDeadlineExceeded", "ProgressDeadlineExceeded")


@flow("deployment/rollout-deadline", "deployment", "apps-deployment-v1", "Degraded")
def deployment_rollout_deadline(c):
    # 3 replicas of 2 GPUs on one node of 8; the new template asks 4 GPUs: the surge pod
    # (maxSurge 25% -> 1, maxUnavailable 25% -> 0) never fits, the old replicas keep serving.
    c.add_node("gpu-0", 8)
    c.create(deployment(c, "serve", 3, progressDeadlineSeconds=20))
    c.wait(deployment_done(3), "3 replicas available")
    r = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}
    c.patch("UpdateTemplate", {"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": POD_IMAGE, "resources": {"requests": r, "limits": r}}]}}}})
    c.wait(lambda o: cond_reason(o, "Progressing") == "ProgressDeadlineExceeded", "ProgressDeadlineExceeded")


# StatefulSet

def statefulset(c, name, replicas, gpus=2):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": c.pod_spec(gpus)}}}


def statefulset_done(n):
    def ok(o):
        s = st(o)
        return (observed(o) and s.get("replicas") == n and s.get("readyReplicas") == n
                and s.get("availableReplicas") == n and s.get("updatedReplicas") == n
                and s.get("currentRevision") == s.get("updateRevision"))
    return ok


@flow("statefulset/scaled", "statefulset", "apps-statefulset-v1", "Running")
def statefulset_scaled(c):
    scale_up_and_down(c, lambda n: statefulset(c, "shard", n), statefulset_done)


@flow("statefulset/rollout", "statefulset", "apps-statefulset-v1", "Running")
def statefulset_rollout(c):
    c.add_node("gpu-0", 8)
    c.add_node("gpu-1", 8)
    c.create(statefulset(c, "shard", 3))
    c.wait(statefulset_done(3), "3 replicas ready")
    rev = st(c.obj).get("updateRevision")
    c.patch("UpdateTemplate", {"spec": {"template": {"metadata": {"annotations": {"wlmap.test/model-version": "v2"}}}}})
    c.wait(lambda o: statefulset_done(3)(o) and st(o).get("currentRevision") != rev, "rollout complete")


# DaemonSet

def daemonset(c, name, gpus=1):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": c.pod_spec(gpus)}}}


def daemonset_done(n):
    def ok(o):
        s = st(o)
        return (observed(o) and s.get("desiredNumberScheduled") == n
                and s.get("numberAvailable") == n and s.get("updatedNumberScheduled") == n)
    return ok


@flow("daemonset/rollout", "daemonset", "apps-daemonset-v1", "Running")
def daemonset_rollout(c):
    c.add_node("gpu-0", 8)
    c.add_node("gpu-1", 8)
    c.create(daemonset(c, "exporter"))
    c.wait(daemonset_done(2), "a daemon pod ready on both nodes")
    gen = c.obj["metadata"]["generation"]
    c.patch("UpdateTemplate", {"spec": {"template": {"metadata": {"annotations": {"wlmap.test/model-version": "v2"}}}}})
    c.wait(lambda o: daemonset_done(2)(o) and o["metadata"]["generation"] > gen, "rollout complete")


# RayCluster

def ray_template(c, gpus, name):
    ctr = c.container(gpus, name=name, image=RAY_IMAGE)
    return {"spec": {"nodeSelector": {"wlmap.test/pool": c.pool}, "containers": [ctr]}}


def ray_cluster_spec(c, workers, worker_gpus=4):
    # As crates/e2e/src/lib.rs raycluster(): a CPU-only head and GPU workers, on the pool.
    return {"rayVersion": "2.46.0",
            "headGroupSpec": {"rayStartParams": {}, "template": ray_template(c, 0, "ray-head")},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers, "minReplicas": 0,
                                  "maxReplicas": 4, "rayStartParams": {},
                                  "template": ray_template(c, worker_gpus, "ray-worker")}]}


def ray_nodes(c, gpu_nodes=2):
    c.add_node("cpu-0", 0)
    for i in range(gpu_nodes):
        c.add_node(f"gpu-{i}", 8)


def raycluster_ready(workers):
    def ok(o):
        s = st(o)
        return (observed(o) and s.get("state") == "ready" and has_cond(o, "HeadPodReady")
                and s.get("desiredWorkerReplicas") == workers and (s.get("readyWorkerReplicas") or 0) == workers)
    return ok


def raycluster(c, workers=2):
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "tune"},
            "spec": ray_cluster_spec(c, workers)}


def worker_pods(c):
    return c.pods("ray.io/node-type=worker")


@flow("raycluster/running", "kuberay", "ray-io-raycluster-v1", "Running")
def raycluster_running(c):
    ray_nodes(c)
    c.create(raycluster(c))
    c.wait(raycluster_ready(2), "RayCluster ready with 2 workers")


@flow("raycluster/scaled", "kuberay", "ray-io-raycluster-v1", "Running")
def raycluster_scaled(c):
    ray_nodes(c)
    c.create(raycluster(c))
    c.wait(raycluster_ready(2), "RayCluster ready with 2 workers")
    c.patch("Scale", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3}], "json")
    c.wait(raycluster_ready(3), "3 workers ready")
    c.patch("Scale", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 1}], "json")
    c.wait(raycluster_ready(1), "1 worker ready")
    c.wait_pods(lambda ps: len(ps) == 1, "one worker pod left", "ray.io/node-type=worker")


@flow("raycluster/suspended", "kuberay", "ray-io-raycluster-v1", "Running")
def raycluster_suspended(c):
    ray_nodes(c)
    c.create(raycluster(c))
    c.wait(raycluster_ready(2), "RayCluster ready with 2 workers")
    suspend_and_resume(c, spec_suspend, lambda o: has_cond(o, "RayClusterSuspended"), raycluster_ready(2))


@flow("raycluster/worker-deleted", "kuberay", "ray-io-raycluster-v1", "Running")
def raycluster_worker_deleted(c):
    ray_nodes(c)
    c.create(raycluster(c))
    c.wait(raycluster_ready(2), "RayCluster ready with 2 workers")
    ps = c.wait_pods(lambda ps: len(running_pods(ps)) == 2, "2 workers running", "ray.io/node-type=worker")
    gone = running_pods(ps)[0]["metadata"]["name"]
    c.delete_pod(running_pods(ps)[0])
    c.wait_pods(lambda ps: gone not in [p["metadata"]["name"] for p in ps] and len(running_pods(ps)) == 2,
                "the worker replaced", "ray.io/node-type=worker")
    c.wait(raycluster_ready(2), "2 workers ready again")


# RayJob

def rayjob(c, keep_running=False, **spec):
    labels = dict(KEEP) if keep_running else {}
    submitter = {"metadata": {"labels": labels},
                 "spec": {"restartPolicy": "Never", "nodeSelector": {"wlmap.test/pool": c.pool},
                          "containers": [{"name": "ray-job-submitter", "image": RAY_IMAGE,
                                          "resources": {"requests": {"cpu": "500m", "memory": "512Mi"},
                                                        "limits": {"cpu": "500m", "memory": "512Mi"}}}]}}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "batch-infer"},
            "spec": dict({"entrypoint": "python -c \"print('hello')\"",
                          "rayClusterSpec": ray_cluster_spec(c, 1),
                          "submitterPodTemplate": submitter}, **spec)}


def rayjob_ds(o):
    return st(o).get("jobDeploymentStatus")


RAYJOB_NOTE = ("KWOK pods serve no Ray dashboard: the operator submits the job (K8sJobMode: a "
               "submitter Job) but never reads the Ray job's status (status.jobStatus stays empty).")


@flow("rayjob/failed", "kuberay", "ray-io-rayjob-v1", "Failed", timeout=240)
def rayjob_failed(c):
    ray_nodes(c, 1)
    c.create(rayjob(c))
    c.wait(lambda o: rayjob_ds(o) == "Running", "jobDeploymentStatus Running")
    c.wait(lambda o: rayjob_ds(o) in ("Failed", "Complete"), "jobDeploymentStatus terminal")
    c.note(RAYJOB_NOTE + " KWOK completes the submitter pod at once; 30 s after the submitter Job "
           "finished the operator fails the RayJob (rayjob_controller.go "
           "checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded, DefaultSubmitterFinishedTimeout).")


@flow("rayjob/running", "kuberay", "ray-io-rayjob-v1", "Running")
def rayjob_running(c):
    ray_nodes(c, 1)
    c.create(rayjob(c, keep_running=True))
    c.wait(lambda o: rayjob_ds(o) == "Running", "jobDeploymentStatus Running")
    c.settle(20)
    c.note(RAYJOB_NOTE + " The submitter pod is kept Running (wlmap.test/keep-running), so the "
           "operator stays in jobDeploymentStatus Running with no jobStatus: the judge says "
           "Undefined, not the Running this journey was meant to reach.")


@flow("rayjob/suspended", "kuberay", "ray-io-rayjob-v1", "Suspended")
def rayjob_suspended(c):
    ray_nodes(c, 1)
    c.create(rayjob(c, keep_running=True, suspend=True, shutdownAfterJobFinishes=True))
    c.wait(lambda o: rayjob_ds(o) == "Suspended", "jobDeploymentStatus Suspended")
    c.settle(1)
    c.patch("Resume", {"spec": {"suspend": False}})
    c.wait(lambda o: rayjob_ds(o) == "Running", "jobDeploymentStatus Running")
    c.patch("Suspend", {"spec": {"suspend": True}})
    c.wait(lambda o: rayjob_ds(o) == "Suspended", "jobDeploymentStatus Suspended again")
    c.wait_pods(lambda ps: not [p for p in ps if p["metadata"].get("labels", {}).get("ray.io/node-type")],
                "no Ray pod left")
    c.settle(1)
    c.note(RAYJOB_NOTE)


# RayService

def rayservice(c, annotations=None):
    serve = ("applications:\n- name: echo\n  import_path: echo:app\n  route_prefix: /\n"
             "  runtime_env: {}\n")
    md = {"name": "llm"}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": md,
            "spec": {"serveConfigV2": serve, "rayClusterConfig": ray_cluster_spec(c, 1)}}


RAYSERVICE_NOTE = ("KWOK pods serve no Ray dashboard: the operator creates the RayCluster, its "
                   "pods run and become ready, but it can neither deploy the Serve applications "
                   "nor find serve endpoints, so Ready stays False.")


@flow("rayservice/initializing", "kuberay", "ray-io-rayservice-v1", "Initializing")
def rayservice_initializing(c):
    ray_nodes(c, 1)
    c.create(rayservice(c))
    c.wait(lambda o: (st(o).get("pendingServiceStatus") or {}).get("rayClusterName")
           or (st(o).get("activeServiceStatus") or {}).get("rayClusterName"), "a RayCluster named")
    c.wait_pods(lambda ps: len(running_pods(ps)) == 2, "head and worker running")
    c.settle(30)
    c.note(RAYSERVICE_NOTE + " The operator fails on the dashboard request before it writes the "
           "status (rayservice_controller.go Reconcile returns reconcileServe's error), so the "
           "status stays as first written.")


@flow("rayservice/initializing-timeout", "kuberay", "ray-io-rayservice-v1", "Failed")
def rayservice_initializing_timeout(c):
    # The head asks for more CPUs than any node of the pool has: it stays Pending, so the
    # operator keeps reconciling the status (reconcileServe returns early while HeadPodReady is
    # False) and its initializing timeout fires. (With a ready head the operator fails on the
    # missing dashboard before it writes status, and the timeout is never checked.)
    ray_nodes(c, 1)
    svc = rayservice(c, {"ray.io/initializing-timeout": "30s"})
    head = svc["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = {"requests": {"cpu": "48", "memory": "8Gi"}, "limits": {"cpu": "48", "memory": "8Gi"}}
    c.create(svc)
    c.wait(lambda o: cond_reason(o, "Ready") == "InitializingTimeout", "Ready reason InitializingTimeout")
    c.settle(5)
    c.note("The head pod (48 CPUs asked, nodes of 32) is never scheduled. With the "
           "ray.io/initializing-timeout annotation (30s) the operator marks the RayService failed "
           "for good (Ready=False, reason InitializingTimeout) and deletes its RayCluster.")


# JobSet (the real JobSet controller v0.11.0, its webhooks on)

def jobset(c, name, workers=2, keep=True, gpus=2, **spec):
    """A leader Job and `workers` worker Jobs of one pod each, on the flow's pool."""
    labels = dict(KEEP) if keep else {}

    def rjob(rname, replicas):
        return {"name": rname, "replicas": replicas, "template": {"spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 0,
            "template": {"metadata": {"labels": labels},
                         "spec": c.pod_spec(gpus, restartPolicy="Never")}}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": dict({"replicatedJobs": [rjob("leader", 1), rjob("workers", workers)]}, **spec)}


def jobset_ready(jobs):
    def ok(o):
        return sum(r.get("ready") or 0 for r in st(o).get("replicatedJobsStatus") or []) == jobs
    return ok


def jobset_pods(c):
    return [p for p in running_pods(c.pods()) if p["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name")]


@flow("jobset/completed", "jobset", "jobset-x-k8s-io-jobset-v1alpha2", "Completed")
def jobset_completed(c):
    c.add_node("gpu-0", 8)
    c.create(jobset(c, "train", keep=False))
    c.wait(lambda o: has_cond(o, "Completed"), "JobSet Completed")


@flow("jobset/restarted-then-failed", "jobset", "jobset-x-k8s-io-jobset-v1alpha2", "Failed")
def jobset_restarted_then_failed(c):
    c.add_node("gpu-0", 8)
    c.create(jobset(c, "train", failurePolicy={"maxRestarts": 1}))
    c.wait(jobset_ready(3), "3 Jobs ready")
    c.wait_pods(lambda ps: len(jobset_pods(c)) == 3, "3 pods running")
    worker = next(p for p in jobset_pods(c) if p["metadata"]["labels"].get(
        "jobset.sigs.k8s.io/replicatedjob-name") == "workers")
    c.fail_pod(worker)
    c.wait(lambda o: (st(o).get("restarts") or 0) == 1, "the failure policy restarts the JobSet")
    c.wait(jobset_ready(3), "3 Jobs of the second attempt ready")
    c.wait_pods(lambda ps: len([p for p in jobset_pods(c) if p["metadata"]["labels"].get(
        "jobset.sigs.k8s.io/restart-attempt") == "1"]) == 3, "3 pods of the second attempt running")
    worker = next(p for p in jobset_pods(c) if p["metadata"]["labels"].get(
        "jobset.sigs.k8s.io/replicatedjob-name") == "workers"
        and p["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt") == "1")
    c.fail_pod(worker)
    c.wait(lambda o: has_cond(o, "Failed"), "JobSet Failed (maxRestarts reached)")


@flow("jobset/suspended-resumed", "jobset", "jobset-x-k8s-io-jobset-v1alpha2", "Running")
def jobset_suspended_resumed(c):
    c.add_node("gpu-0", 8)
    c.create(jobset(c, "train"))
    c.wait(jobset_ready(3), "3 Jobs ready")
    suspend_and_resume(c, spec_suspend, lambda o: has_cond(o, "Suspended"), jobset_ready(3))


@flow("jobset/startup-in-order", "jobset", "jobset-x-k8s-io-jobset-v1alpha2", "Running")
def jobset_startup_in_order(c):
    c.add_node("gpu-0", 8)
    c.create(jobset(c, "train", startupPolicy={"startupPolicyOrder": "InOrder"}))
    c.wait(lambda o: has_cond(o, "StartupPolicyCompleted"), "StartupPolicyCompleted")
    c.wait(jobset_ready(3), "3 Jobs ready")


# LeaderWorkerSet (the real LWS controller v0.9.0, its webhooks on)

LWS_DEF = "leaderworkerset-x-k8s-io-leaderworkerset-v1"


def lws(c, name, replicas, size=2, gpus=2):
    """`replicas` groups of a leader and size-1 workers (the worker template for both)."""
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {
                "size": size, "workerTemplate": {"spec": c.pod_spec(gpus)}}}}


def lws_done(n):
    def ok(o):
        s = st(o)
        return (observed(o) and has_cond(o, "Available") and s.get("readyReplicas") == n
                and s.get("updatedReplicas") == n and s.get("replicas") == n)
    return ok


@flow("lws/scaled", "lws", LWS_DEF, "Running")
def lws_scaled(c):
    c.add_node("gpu-0", 8)
    c.add_node("gpu-1", 8)
    c.create(lws(c, "serve", 1))
    c.wait(lws_done(1), "1 group ready")
    c.patch("Scale", {"spec": {"replicas": 3}})
    c.wait(lws_done(3), "3 groups ready")
    c.patch("Scale", {"spec": {"replicas": 1}})
    c.wait(lws_done(1), "1 group again")
    c.wait_pods(lambda ps: len(ps) == 2, "the pods of one group left")


@flow("lws/rollout", "lws", LWS_DEF, "Running")
def lws_rollout(c):
    c.add_node("gpu-0", 8)
    c.add_node("gpu-1", 8)
    c.create(lws(c, "serve", 2))
    c.wait(lws_done(2), "2 groups ready")
    c.patch("UpdateTemplate", {"spec": {"leaderWorkerTemplate": {"workerTemplate": {
        "metadata": {"annotations": {"wlmap.test/model-version": "v2"}}}}}})
    c.wait(lambda o: has_cond(o, "UpdateInProgress"), "the rolling update under way")
    c.wait(lambda o: lws_done(2)(o) and not has_cond(o, "UpdateInProgress"), "the rolling update done")


@flow("lws/size-one", "lws", LWS_DEF, "Running")
def lws_size_one(c):
    # size 1: each group is its leader alone, no worker StatefulSet.
    c.add_node("gpu-0", 8)
    c.create(lws(c, "serve", 2, size=1))
    c.wait(lws_done(2), "2 groups ready")


@flow("lws/worker-failed", "lws", LWS_DEF, "Running")
def lws_worker_failed(c):
    c.add_node("gpu-0", 8)
    c.create(lws(c, "serve", 1, size=3))
    c.wait(lws_done(1), "the group ready")
    ps = c.wait_pods(lambda ps: len(running_pods(ps)) == 3, "3 pods running")
    worker = next(p for p in running_pods(ps)
                  if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/worker-index") == "1")
    uid = worker["metadata"]["uid"]
    # The LWS pod controller deletes the failed pod's whole group (restartPolicy
    # RecreateGroupOnPodRestart, the default) and the StatefulSets make it anew, same names.
    c.fail_pod(worker, sticks=False)
    c.wait_pods(lambda ps: uid not in [p["metadata"]["uid"] for p in ps] and len(running_pods(ps)) == 3,
                "the group recreated, 3 pods running")
    c.wait(lws_done(1), "the group ready again")


# PyTorchJob (the real Kubeflow training operator v1.8.1, its webhook on). Its pods are not
# a Job's: KWOK runs them until the flow moves them (SucceedPod, FailPod).

PYTORCH_DEF = "kubeflow-org-pytorchjob-v1"


def pytorchjob(c, name, workers=1, restart="Never", gpus=2, **run_policy):
    def replicas(n):
        ctr = c.container(gpus, name="pytorch")
        return {"replicas": n, "restartPolicy": restart,
                "template": {"spec": {"nodeSelector": {"wlmap.test/pool": c.pool}, "containers": [ctr]}}}
    spec = {"pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(workers)}}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name}, "spec": spec}


def replica_pod(c, rtype):
    return running_pod_labelled(c, "training.kubeflow.org/replica-type", rtype)


@flow("pytorchjob/succeeded", "kubeflow", PYTORCH_DEF, "Completed")
def pytorchjob_succeeded(c):
    c.add_node("gpu-0", 8)
    c.create(pytorchjob(c, "pt"))
    c.wait(lambda o: has_cond(o, "Running"), "Running condition")
    c.wait_pods(lambda ps: len(running_pods(ps)) == 2, "master and worker running")
    c.succeed_pod(replica_pod(c, "worker"))
    c.succeed_pod(replica_pod(c, "master"))
    c.wait(lambda o: has_cond(o, "Succeeded"), "Succeeded condition")


@flow("pytorchjob/failed", "kubeflow", PYTORCH_DEF, "Failed")
def pytorchjob_failed(c):
    c.add_node("gpu-0", 8)
    c.create(pytorchjob(c, "pt"))
    c.wait(lambda o: has_cond(o, "Running"), "Running condition")
    c.fail_pod(replica_pod(c, "master"))
    c.wait(lambda o: has_cond(o, "Failed"), "Failed condition")


@flow("pytorchjob/worker-restarted", "kubeflow", PYTORCH_DEF, "Running")
def pytorchjob_worker_restarted(c):
    # restartPolicy ExitCode: a retryable exit code (128 and above, a signal) makes the
    # operator delete the pod and make it anew (common/pod.go ReconcilePods). It counts the
    # failed worker (replicaStatuses); Restarting=True is written only when UpdateJobStatus
    # sees the replica short at that moment (not in the runs recorded here), so it is not
    # waited for.
    c.add_node("gpu-0", 8)
    c.create(pytorchjob(c, "pt", restart="ExitCode"))
    c.wait(lambda o: has_cond(o, "Running"), "Running condition")
    worker = replica_pod(c, "worker")
    uid = worker["metadata"]["uid"]
    c.fail_pod(worker, sticks=False, exit_code=137)
    c.wait(lambda o: (st(o).get("replicaStatuses") or {}).get("Worker", {}).get("failed"),
           "the failed worker counted")
    c.wait_pods(lambda ps: uid not in [p["metadata"]["uid"] for p in ps] and len(running_pods(ps)) == 2,
                "the worker made anew")
    c.wait(lambda o: has_cond(o, "Running"), "Running again")


@flow("pytorchjob/suspended-resumed", "kubeflow", PYTORCH_DEF, "Running")
def pytorchjob_suspended_resumed(c):
    c.add_node("gpu-0", 8)
    c.create(pytorchjob(c, "pt"))
    c.wait(lambda o: has_cond(o, "Running"), "Running condition")
    suspend_and_resume(c, run_policy_suspend, lambda o: has_cond(o, "Suspended"),
                       lambda o: has_cond(o, "Running") and has_cond(o, "Suspended", "False"))


# TrainJob (the real Kubeflow Trainer v2.3.0 on the real JobSet controller, webhooks on),
# from the torch-distributed ClusterTrainingRuntime its install ships.

TRAINJOB_DEF = "trainer-kubeflow-org-trainjob-v1alpha1"


def trainjob(c, name, keep=True, runtime=None, **spec):
    """Two nodes of 2 GPUs on the flow's pool; `keep`: its pods stay running (a runtime patch,
    as a user writes one: the Trainer puts no label of the TrainJob's on the pods)."""
    pod = {"spec": {"nodeSelector": {"wlmap.test/pool": c.pool}}}
    if keep:
        pod["metadata"] = {"labels": dict(KEEP)}
    res = {"nvidia.com/gpu": "2", "cpu": "1", "memory": "1Gi"}
    ref = {"name": runtime, "kind": "TrainingRuntime"} if runtime else {"name": "torch-distributed"}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
            "spec": dict({"runtimeRef": ref,
                          "trainer": {"numNodes": 2, "resourcesPerNode": {"requests": res, "limits": dict(res)}},
                          "runtimePatches": [{"manager": "wlmap.test/record", "trainingRuntimeSpec": {"template": {
                              "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
                                  "template": pod}}}]}}}}]}, **spec)}


def trainjob_ready(o):
    return sum(j.get("ready") or 0 for j in st(o).get("jobsStatus") or []) == 1


@flow("trainjob/running", "trainer", TRAINJOB_DEF, "Running")
def trainjob_running(c):
    c.add_node("gpu-0", 8)
    c.create(trainjob(c, "tj"))
    c.wait(trainjob_ready, "the node Job ready")


@flow("trainjob/succeeded", "trainer", TRAINJOB_DEF, "Completed")
def trainjob_succeeded(c):
    c.add_node("gpu-0", 8)
    c.create(trainjob(c, "tj", keep=False))
    c.wait(lambda o: has_cond(o, "Complete"), "Complete condition")


@flow("trainjob/failed", "trainer", TRAINJOB_DEF, "Failed")
def trainjob_failed(c):
    # The shipped runtime's Job keeps the default backoffLimit (6): a namespaced runtime, the
    # shipped one as the cluster holds it with backoffLimit 0, fails on the first failed pod.
    shipped = kjson("get", "clustertrainingruntime", "torch-distributed")
    spec = copy.deepcopy(shipped["spec"])
    for rj in spec["template"]["spec"]["replicatedJobs"]:
        rj["template"].setdefault("spec", {})["backoffLimit"] = 0
    kubectl("create", "-f", "-", stdin=json.dumps({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
        "metadata": {"name": "torch-no-retry", "namespace": c.ns}, "spec": spec}))
    c.add_node("gpu-0", 8)
    c.create(trainjob(c, "tj", runtime="torch-no-retry"))
    c.wait(trainjob_ready, "the node Job ready")
    ps = c.wait_pods(lambda ps: len(running_pods(ps)) == 2, "2 pods running")
    c.fail_pod(running_pods(ps)[0])
    c.wait(lambda o: has_cond(o, "Failed"), "Failed condition")


@flow("trainjob/suspended-resumed", "trainer", TRAINJOB_DEF, "Running")
def trainjob_suspended_resumed(c):
    c.add_node("gpu-0", 8)
    c.create(trainjob(c, "tj"))
    c.wait(trainjob_ready, "the node Job ready")
    suspend_and_resume(c, spec_suspend, lambda o: has_cond(o, "Suspended") and not any(
        j.get("active") for j in st(o).get("jobsStatus") or []), trainjob_ready)


# MPIJob v2beta1 (the real MPI operator v0.8.0): a launcher Job (KWOK completes its pod unless
# kept running) and worker pods (run until deleted).

MPIJOB_DEF = "kubeflow-org-mpijob-v2beta1"


def mpijob(c, name, keep=False, **run_policy):
    launcher = c.container(0, name="launcher")
    worker = c.container(2, name="worker")
    ltmpl = {"spec": {"nodeSelector": {"wlmap.test/pool": c.pool}, "containers": [launcher]}}
    if keep:
        ltmpl["metadata"] = {"labels": dict(KEEP)}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name},
            "spec": {"slotsPerWorker": 1, "runPolicy": dict({"cleanPodPolicy": "Running"}, **run_policy),
                     "mpiReplicaSpecs": {
                         "Launcher": {"replicas": 1, "template": ltmpl},
                         "Worker": {"replicas": 2, "template": {"spec": {
                             "nodeSelector": {"wlmap.test/pool": c.pool}, "containers": [worker]}}}}}}


def mpi_pod(c, role):
    return running_pod_labelled(c, "training.kubeflow.org/job-role", role)


@flow("mpijob/succeeded", "mpi-operator", MPIJOB_DEF, "Completed")
def mpijob_succeeded(c):
    c.add_node("gpu-0", 8)
    c.create(mpijob(c, "mpi"))
    c.wait(lambda o: has_cond(o, "Succeeded"), "Succeeded condition")


@flow("mpijob/failed", "mpi-operator", MPIJOB_DEF, "Failed")
def mpijob_failed(c):
    c.add_node("gpu-0", 8)
    c.create(mpijob(c, "mpi", keep=True, backoffLimit=0))
    c.wait(lambda o: has_cond(o, "Running"), "Running condition")
    c.fail_pod(mpi_pod(c, "launcher"))
    c.wait(lambda o: has_cond(o, "Failed"), "Failed condition")


@flow("mpijob/worker-failed", "mpi-operator", MPIJOB_DEF, "Degraded")
def mpijob_worker_failed(c):
    c.add_node("gpu-0", 8)
    c.create(mpijob(c, "mpi", keep=True))
    c.wait(lambda o: has_cond(o, "Running"), "Running condition")
    c.fail_pod(mpi_pod(c, "worker"))
    c.wait(lambda o: (st(o).get("replicaStatuses") or {}).get("Worker", {}).get("failed"), "a worker counted failed")
    c.settle(5)


@flow("mpijob/suspended-resumed", "mpi-operator", MPIJOB_DEF, "Running")
def mpijob_suspended_resumed(c):
    c.add_node("gpu-0", 8)
    c.create(mpijob(c, "mpi", keep=True))
    c.wait(lambda o: has_cond(o, "Running"), "Running condition")
    suspend_and_resume(c, run_policy_suspend, lambda o: has_cond(o, "Suspended"),
                       lambda o: has_cond(o, "Running") and has_cond(o, "Suspended", "False"))


# --------------------------------------------------------------------------------------------
# Main


def collapse(states):
    out = []
    for s in states:
        if not out or out[-1] != s:
            out.append(s)
    return out


# The testbed operator (WLMAP_TESTBED_OPERATORS) a flow's recordings need, by the operator
# folder the recordings are written to; the built-in kinds need none.
TESTBED_OPERATOR = {"kuberay": "kuberay", "jobset": "jobset", "lws": "lws",
                    "kubeflow": "training-operator", "trainer": "trainer",
                    "mpi-operator": "mpi-operator"}


def run_flow(f, outdir, nodes):
    c = Ctx(f, f.timeout)
    kubectl("create", "namespace", c.ns)
    error = None
    try:
        f.fn(c)
        c.settle(SETTLE)
    except FlowTimeout as e:
        c.note(f"timed out after {f.timeout} s waiting for: {e}")
    except Exception as e:  # a broken flow still writes what it recorded
        error = e
        c.note(f"flow error: {e}")
    finally:
        c.close()
        nodes.extend(c.nodes)
    states = c.rec.states()
    doc = {"schemaVersion": 1, "operator": f.operator, "version": K8S_VERSION, "flow": f.name,
           "kartaName": f.definition, "want": f.want, "events": c.rec.events,
           "result": {"succeeded": bool(states) and states[-1] == f.want and not error
                      and not any(n.startswith("timed out") for n in c.notes)}}
    if c.notes:
        doc["note"] = " ".join(c.notes)
    path = os.path.join(outdir, f.operator, K8S_VERSION, f.definition, f"{f.name}.yaml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        yaml.safe_dump(doc, fh, sort_keys=True, default_flow_style=False, width=10**9)
    print(f"{path}: {len(states)} STATE events; states: {' -> '.join(collapse(states))}"
          + ("" if doc["result"]["succeeded"] else f"  [want {f.want}]")
          + (f"  NOTE: {doc['note']}" if error or "timed out" in doc.get("note", "") else ""),
          flush=True)
    return doc


def rejudge(outdir):
    """Judge every recorded object of OUTDIR again with the judge above (after a change to a
    rule): the recorded objects stay as they are, only `state` is written again."""
    for root, _, files in sorted(os.walk(outdir)):
        for name in sorted(files):
            if not name.endswith(".yaml"):
                continue
            path = os.path.join(root, name)
            with open(path) as fh:
                doc = yaml.safe_load(fh)
            changed = 0
            for ev in doc.get("events") or []:
                if ev.get("kind") == "STATE":
                    state = judge(ev["object"])
                    changed += state != ev.get("state")
                    ev["state"] = state
            with open(path, "w") as fh:
                yaml.safe_dump(doc, fh, sort_keys=True, default_flow_style=False, width=10**9)
            print(f"{path}: {changed} state(s) judged otherwise")


def main(argv):
    if argv and argv[0] == "--rejudge" and len(argv) == 2:
        rejudge(argv[1])
        return 0
    if "--list" in argv:
        for f in FLOWS:
            print(f"{f.key}\t{f.operator}/{f.definition}/{f.name}.yaml\twant {f.want}")
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    outdir, wanted = argv[0], argv[1:]
    chosen = [f for f in FLOWS if not wanted or any(w == f.key or w == f.key.split("/")[0] for w in wanted)]
    unknown = [w for w in wanted if not any(w == f.key or w == f.key.split("/")[0] for f in FLOWS)]
    if unknown:
        print(f"unknown flow(s): {' '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    ops = os.environ.get("WLMAP_TESTBED_OPERATORS", "")
    nodes = []
    for f in chosen:
        needs = TESTBED_OPERATOR.get(f.operator)
        if needs and needs not in ops.split(","):
            print(f"{f.key}: skipped (needs WLMAP_TESTBED_OPERATORS={needs})", flush=True)
            continue
        run_flow(f, outdir, nodes)
    for n in nodes:
        kubectl("delete", "node", n, "--wait=false", check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
