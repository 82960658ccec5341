//! The pod admission webhook: place each pod being created in its workload's group and
//! answer with the patch that tags it. It lets every pod through: one it cannot place goes
//! unchanged, counted in a metric, with an event on its workload and a warning to the client.

use crate::admission::{answer, patch, pod_of};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::report::{event, log};
use crate::state::Shared;
use crate::state::reading;
use kube::Resource as _;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wlmap_engine::{MAX_OWNER_DEPTH, Object};
use wlmap_inventory::{OwnerRef, Placement};
use wlmap_schema::GroupKind;

/// How long the webhook waits for an owner it has not seen (the API server gives the whole
/// review a couple of seconds).
const FETCH_TIMEOUT: Duration = Duration::from_millis(800);

/// Answer one AdmissionReview of a Karta.
pub fn review_karta(shared: &Arc<Shared>, review: &Value) -> Value {
    let verdict = {
        let kartas = reading(&shared.kartas);
        crate::admission::judge_karta(review, &kartas)
    };
    match verdict {
        Ok(warning) => {
            Metrics::count(&shared.metrics.karta_reviews, "result", "allowed");
            answer(review, None, warning.as_deref())
        }
        Err(why) => {
            Metrics::count(&shared.metrics.karta_reviews, "result", "denied");
            crate::admission::refusal(review, &why.0)
        }
    }
}

/// Answer one AdmissionReview of a pod.
pub async fn review(shared: &Arc<Shared>, review: &Value) -> Value {
    let start = Instant::now();
    let (result, answer) = decide(shared, review).await;
    Metrics::count(&shared.metrics.admissions, "result", result);
    shared
        .metrics
        .admission_duration
        .observe(start.elapsed().as_secs_f64());
    answer
}

async fn decide(shared: &Arc<Shared>, review: &Value) -> (&'static str, Value) {
    let format = shared.opts.format;
    let Some(pod) = pod_of(review) else {
        return ("not_a_pod", answer(review, None, None));
    };
    if format.format().already_grouped(pod.json()) {
        return ("already_grouped", answer(review, None, None));
    }
    // Each missing owner fetched brings the walk one step up; the chain is at most this long.
    for _ in 0..=MAX_OWNER_DEPTH {
        let placement = shared.read_feed().inventory.index().place_pod(&pod, format);
        match placement {
            Placement::Group { tags, workload, .. } => {
                if kueue_runs(shared, &workload) {
                    return ("no_gang", answer(review, None, None));
                }
                let p = patch(pod.json(), &tags);
                return ("grouped", answer(review, Some(&p), None));
            }
            Placement::NoWorkload | Placement::NoGangs { .. } | Placement::OutsideGangs { .. } => {
                return ("no_gang", answer(review, None, None));
            }
            Placement::Unplaced { workload, why } => {
                let root = shared
                    .read_feed()
                    .inventory
                    .index()
                    .object(&workload)
                    .cloned();
                return unplaced(shared, review, "not_placed", &why, root);
            }
            Placement::MissingOwner(r) => match fetch(shared, &r).await {
                Ok(owner) => {
                    let changes = shared.write_feed().inventory.apply(owner);
                    shared.enqueue(changes.into_iter().map(|c| c.key));
                }
                Err(why) => {
                    return unplaced(shared, review, "owner_not_found", &why.to_string(), None);
                }
            },
        }
    }
    unplaced(
        shared,
        review,
        "owner_not_found",
        "the owner chain is too long",
        None,
    )
}

/// True when the pod's workload is Kueue's own (`--scheduler kueue`, its integration on):
/// its pods are left as they are ([`crate::gangs::kueue_runs_itself`]).
fn kueue_runs(shared: &Shared, workload: &wlmap_inventory::ObjectKey) -> bool {
    shared.opts.format == wlmap_engine::SchedulerFormat::Kueue
        && shared
            .read_feed()
            .inventory
            .index()
            .object(workload)
            .is_some_and(|o| {
                crate::gangs::kueue_runs_itself(o, &shared.opts.kueue_frameworks).is_some()
            })
}

/// Let the pod through without a group: count it, log it, and say so on its workload.
fn unplaced(
    shared: &Arc<Shared>,
    review: &Value,
    reason: &'static str,
    why: &str,
    workload: Option<Object>,
) -> (&'static str, Value) {
    Metrics::count(&shared.metrics.pods_unplaced, "reason", reason);
    let pod = &review["request"]["object"]["metadata"];
    let name = pod["name"]
        .as_str()
        .or(pod["generateName"].as_str())
        .unwrap_or("");
    let ns = review["request"]["namespace"].as_str().unwrap_or("");
    let note = format!("pod {ns}/{name} admitted without a scheduling group: {why}");
    log("warning", &note, json!({"reason": reason}));
    if let Some(root) = workload {
        let (shared, note) = (shared.clone(), note.clone());
        // The review is answered now; the event follows.
        tokio::spawn(async move {
            event(
                &shared.recorder,
                &root,
                "Warning",
                "PodNotGrouped",
                "Admit",
                &note,
            )
            .await;
        });
    }
    (
        "unplaced",
        answer(review, None, Some(&format!("wlmap: {note}"))),
    )
}

/// Get an owner the inventory does not hold yet (created a moment ago; its watch event is
/// on its way), if it is the object the reference names.
async fn fetch(shared: &Shared, r: &OwnerRef) -> Result<Object, Error> {
    let gk = GroupKind::from_api_version(&r.api_version, &r.kind);
    let kind = reading(&shared.kinds)
        .iter()
        .find(|k| k.group_kind() == gk)
        .cloned()
        .ok_or_else(|| Error::Setup(format!("{} is not watched", r.kind)))?;
    let api: kube::Api<wlmap_kube::Watched> = if kind.namespaced {
        kube::Api::namespaced_with(shared.client.clone(), &r.namespace, &kind.api_resource())
    } else {
        kube::Api::all_with(shared.client.clone(), &kind.api_resource())
    };
    shared.metrics.owner_fetches.inc();
    let what = format!("get {} {}", r.kind, r.name);
    let got = tokio::time::timeout(FETCH_TIMEOUT, api.get_opt(&r.name))
        .await
        .map_err(|_| Error::Timeout {
            what: what.clone(),
            after: FETCH_TIMEOUT,
        })?
        .map_err(Error::api(what))?
        .ok_or_else(|| Error::Missing(format!("{} {} does not exist", r.kind, r.name)))?;
    if got.meta().uid.as_deref() != Some(r.uid.as_str()) {
        return Err(Error::Missing(format!(
            "{} {} is another object than the pod's owner",
            r.kind, r.name
        )));
    }
    let mut v = got.into_typed(&kind);
    shared.read_feed().inventory.index().trim(&mut v);
    Ok(Object::new(v))
}
