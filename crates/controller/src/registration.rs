//! The webhooks' TLS and their registration with the API server: the serving certificate
//! (self-managed: a CA kept in a Secret shared by the replicas; or files from cert-manager),
//! and the Mutating- and ValidatingWebhookConfiguration carrying the CA's bundle.

use crate::error::Error;
use crate::options::{Certificates, Endpoint, FIELD_MANAGER};
use crate::state::Shared;
use crate::tls::Authority;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use wlmap_engine::SchedulerFormat;

/// The webhook's TLS configuration; with self-managed certificates, also the CA Secret and
/// the webhook configuration carrying its bundle.
pub(crate) async fn serving_tls(
    shared: &Shared,
) -> Result<Arc<tokio_rustls::rustls::ServerConfig>, Error> {
    match &shared.opts.certificates {
        Certificates::Files { cert, key } => {
            let read = |p: &PathBuf| {
                std::fs::read_to_string(p).map_err(|source| Error::File {
                    path: p.clone(),
                    source,
                })
            };
            Ok(crate::tls::server_config(&read(cert)?, &read(key)?)?)
        }
        Certificates::SelfManaged { names } => {
            let ca = authority(shared).await?;
            let serving = ca.serving(names)?;
            keep_webhook_config(shared, &ca).await?;
            Ok(crate::tls::server_config(
                &serving.cert_pem,
                &serving.key_pem,
            )?)
        }
    }
}

const CA_SECRET: &str = "wlmap-webhook-ca";

/// The CA every replica signs with: read from its Secret, or made and stored (a replica that
/// loses the race to create it reads the winner's).
async fn authority(shared: &Shared) -> Result<Authority, Error> {
    use base64::Engine;
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(shared.client.clone(), &shared.opts.namespace);
    for _ in 0..3 {
        let got = api.get_opt(CA_SECRET).await;
        if let Some(s) = got.map_err(Error::api(format!("get Secret {CA_SECRET}")))? {
            let data = s.data.unwrap_or_default();
            let field = |k: &str| {
                data.get(k)
                    .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                    .ok_or_else(|| Error::Missing(format!("Secret {CA_SECRET} has no {k}")))
            };
            return Ok(Authority {
                cert_pem: field("ca.crt")?,
                key_pem: field("ca.key")?,
            });
        }
        let ca = Authority::generate()?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
            "metadata": {"name": CA_SECRET, "labels": {"app.kubernetes.io/managed-by": "wlmap"}},
            "type": "Opaque",
            "data": {"ca.crt": b64(&ca.cert_pem), "ca.key": b64(&ca.key_pem)}}))
        .map_err(|e| Error::api(format!("write Secret {CA_SECRET}"))(kube::Error::SerdeError(e)))?;
        match api.create(&PostParams::default(), &secret).await {
            Ok(_) => return Ok(ca),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(Error::api(format!("create Secret {CA_SECRET}"))(e)),
        }
    }
    Err(Error::Missing(format!(
        "Secret {CA_SECRET}: neither read nor created"
    )))
}

/// Where the API server reaches one of the webhook's paths.
fn client_config(endpoint: &Endpoint, path: &str, ca_pem: &str) -> Value {
    use base64::Engine;
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    match endpoint {
        Endpoint::Url(base) => {
            json!({"url": format!("{}{path}", base.trim_end_matches('/')), "caBundle": bundle})
        }
        Endpoint::Service {
            namespace,
            name,
            port,
        } => json!({"service": {"namespace": namespace, "name": name, "path": path, "port": port},
            "caBundle": bundle}),
    }
}

/// The name of the pod webhooks' first match condition ([`POD_CONDITION`]).
pub const POD_CONDITION_NAME: &str = "has-an-owner";

/// The pod webhooks' match condition (CEL, evaluated by the API server): only pods that name
/// an owner are sent to them. The webhook places a pod by walking its controller owners (or
/// its only owner) up to a workload, so a pod without any (made by hand, or by a tool that
/// sets no owner reference) is always let through unchanged; the condition spares such pods
/// the call, and the chance of the webhook's failing open with them.
pub const POD_CONDITION: &str =
    "has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) > 0";

/// The name of the second pod webhook's own match condition: the pod does not name its group
/// yet, in the scheduler's format.
pub const NOT_GROUPED_CONDITION_NAME: &str = "not-yet-grouped";

/// The name of the pod webhook ([`webhook_config`]).
pub const POD_WEBHOOK: &str = "pods.wlmap.run.ai";

/// The name of the pod webhook's second call ([`webhook_config`]).
pub const POD_WEBHOOK_AGAIN: &str = "again.pods.wlmap.run.ai";

/// The MutatingWebhookConfiguration for pods, with this CA's bundle (server-side apply: the
/// same content from every replica, so they never fight).
///
/// It holds the pod webhook twice. Both fail open, so a call that breaks (the replica that
/// took it killed, its connection reset) would let a gang's pod be created outside its group,
/// for good: the group a pod names cannot change after its creation. The API server calls a
/// configuration's webhooks in order, each on the pod as the ones before left it, and never
/// retries a call; the second webhook is that retry: its match condition sends it only the
/// pods that do not name their group in `format` after the first (the first call failed, or
/// found no gang for the pod), and its call goes out anew, to a replica that is up. A pod the
/// first call grouped is not sent again; a pod of a workload without gangs is reviewed twice.
///
/// ```
/// use wlmap_engine::SchedulerFormat;
/// let endpoint = wlmap_controller::Endpoint::Url("https://127.0.0.1:9443".into());
/// let c = wlmap_controller::registration::webhook_config(
///     "wlmap", &endpoint, "wlmap-system", "PEM", SchedulerFormat::Native);
/// let [first, again] = [&c["webhooks"][0], &c["webhooks"][1]];
/// assert_eq!(first["failurePolicy"], "Ignore");
/// assert_eq!(first["rules"][0]["operations"][0], "CREATE");
/// assert_eq!(first["clientConfig"]["url"], "https://127.0.0.1:9443/mutate-pods");
/// assert_eq!(first["matchConditions"][0]["name"], "has-an-owner");
/// assert_eq!(again["clientConfig"], first["clientConfig"]);
/// assert_eq!(again["matchConditions"][1]["expression"], "!(has(object.spec.schedulingGroup))");
/// ```
pub fn webhook_config(
    name: &str,
    endpoint: &Endpoint,
    own_namespace: &str,
    ca_pem: &str,
    format: SchedulerFormat,
) -> Value {
    let owned = json!({"name": POD_CONDITION_NAME, "expression": POD_CONDITION});
    let hook = |name: &str, conditions: Value| {
        json!({
            "name": name,
            "reinvocationPolicy": "Never",
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["pods"], "scope": "Namespaced"}],
            // The control plane's pods and the controller's own are never held up by it.
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                "operator": "NotIn", "values": ["kube-system", own_namespace]}]},
            "matchConditions": conditions
        })
    };
    let not_grouped = json!({"name": NOT_GROUPED_CONDITION_NAME,
        "expression": format!("!({})", format.format().grouped_condition())});
    let hooks = [
        hook(POD_WEBHOOK, json!([owned])),
        hook(POD_WEBHOOK_AGAIN, json!([owned, not_grouped])),
    ];
    let client = client_config(endpoint, crate::serve::MUTATE_PODS, ca_pem);
    configuration("MutatingWebhookConfiguration", name, client, hooks)
}

/// The ValidatingWebhookConfiguration for Kartas (same name, same CA): a Karta that would not
/// load, a second gang Karta for one kind, or a changed root kind is refused. It fails open
/// like the pod webhook: with the controller away a Karta is accepted, and its `Valid`
/// condition says what is wrong once the controller is back.
///
/// ```
/// let endpoint = wlmap_controller::Endpoint::Url("https://127.0.0.1:9443".into());
/// let c = wlmap_controller::registration::karta_webhook_config("wlmap", &endpoint, "PEM");
/// assert_eq!(c["webhooks"][0]["rules"][0]["resources"][0], "kartas");
/// assert_eq!(c["webhooks"][0]["clientConfig"]["url"], "https://127.0.0.1:9443/validate-kartas");
/// ```
pub fn karta_webhook_config(name: &str, endpoint: &Endpoint, ca_pem: &str) -> Value {
    let hook = json!({
        "name": "kartas.wlmap.run.ai",
        "rules": [{"apiGroups": ["run.ai"], "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["kartas"], "scope": "Cluster"}]
    });
    let client = client_config(endpoint, crate::serve::VALIDATE_KARTAS, ca_pem);
    configuration("ValidatingWebhookConfiguration", name, client, [hook])
}

/// A webhook configuration of `kind` holding `hooks`: each one's own fields (name, rules,
/// ...) and those all of wlmap's share. All fail open: with the controller away, a pod is
/// created without a group and a Karta is accepted (its `Valid` condition catches up).
fn configuration<const N: usize>(
    kind: &str,
    name: &str,
    client: Value,
    hooks: [Value; N],
) -> Value {
    let shared = json!({
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
        "timeoutSeconds": 2,
        "matchPolicy": "Equivalent",
        "clientConfig": client,
    });
    let webhooks: Vec<Value> = hooks
        .into_iter()
        .map(|mut hook| {
            if let (Some(h), Some(common)) = (hook.as_object_mut(), shared.as_object()) {
                h.extend(common.clone());
            }
            hook
        })
        .collect();
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "wlmap"}},
        "webhooks": webhooks
    })
}

async fn keep_webhook_config(shared: &Shared, ca: &Authority) -> Result<(), Error> {
    let o = &shared.opts;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let configs = [
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            webhook_config(
                &o.webhook_config,
                &o.endpoint,
                &o.namespace,
                &ca.cert_pem,
                o.format,
            ),
        ),
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            karta_webhook_config(&o.webhook_config, &o.endpoint, &ca.cert_pem),
        ),
    ];
    for (kind, plural, config) in configs {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
            plural,
        );
        let api: kube::Api<DynamicObject> = kube::Api::all_with(shared.client.clone(), &ar);
        api.patch(&o.webhook_config, &params, &Patch::Apply(&config))
            .await
            .map_err(Error::api(format!("apply {kind} {}", o.webhook_config)))?;
    }
    Ok(())
}
