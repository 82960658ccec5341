//! Which word of wlmap's status vocabulary a condition type or phase value most likely means,
//! by its name: the names frameworks use (Kubernetes' own, Kubeflow's, KubeRay's, JobSet's,
//! LeaderWorkerSet's, KServe's), matched whole and case-insensitively.

const NAMES: &[(&str, &[&str])] = &[
    (
        "initializing",
        &[
            "pending",
            "initializing",
            "initialized",
            "creating",
            "created",
            "starting",
            "provisioning",
            "queued",
            "scheduling",
            "waiting",
        ],
    ),
    (
        "running",
        &[
            "running",
            "ready",
            "available",
            "active",
            "healthy",
            "serving",
            "started",
            "headpodready",
            "provisioned",
            "upandrunning",
        ],
    ),
    (
        "completed",
        &[
            "completed",
            "complete",
            "succeeded",
            "success",
            "finished",
            "done",
        ],
    ),
    (
        "failed",
        &["failed", "failure", "error", "errored", "crashed"],
    ),
    (
        "suspended",
        &["suspended", "paused", "stopped", "hibernated"],
    ),
    (
        "degraded",
        &[
            "degraded",
            "unhealthy",
            "restarting",
            "replicafailure",
            "notready",
        ],
    ),
    ("suspending", &["suspending", "stopping", "pausing"]),
    ("resuming", &["resuming", "restarting"]),
];

/// The vocabulary word a name means, if it is a known one; a name may carry the kind's name
/// first (`RayClusterProvisioned`, `PyTorchJobRunning`).
pub fn word_for(name: &str, kind: &str) -> Option<&'static str> {
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase()
    };
    let n = norm(name);
    let k = norm(kind);
    let bare = n
        .strip_prefix(k.as_str())
        .filter(|b| !b.is_empty())
        .unwrap_or(&n);
    [n.as_str(), bare].into_iter().find_map(|x| {
        NAMES
            .iter()
            .find(|(_, names)| names.contains(&x))
            .map(|(w, _)| *w)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_words_whole_and_case_insensitively() {
        assert_eq!(word_for("Succeeded", "Job"), Some("completed"));
        assert_eq!(word_for("HeadPodReady", "RayCluster"), Some("running"));
        assert_eq!(word_for("Up_And_Running", "X"), Some("running"));
        assert_eq!(word_for("ReadyForever", "X"), None);
        assert_eq!(
            word_for("RayClusterProvisioned", "RayCluster"),
            Some("running")
        );
        assert_eq!(word_for("RayCluster", "RayCluster"), None);
    }
}
