#!/usr/bin/env python3
"""Turn an operator's own install manifests (`kubectl kustomize` of the module's overlay) into
what the testbed runs, changing only what running outside a cluster forces:

  operator.py NAME RENDERED.yaml OUT_DIR URL CA_FILE DEPLOYMENT GROUP[,GROUP...]

writes
  OUT_DIR/NAME-manifests.json  a List: the operator's Namespace, its CRDs (of the API groups
                               GROUP..., but those named in $EXCLUDE_CRDS, comma-separated)
                               and its webhook configurations, each webhook (and CRD
                               conversion webhook) reached at URL + its own path with the CA of
                               CA_FILE as caBundle, everything else as upstream wrote it
                               (failure policies, rules, object selectors)
  OUT_DIR/NAME-config.yaml     the manager's configuration (operators that read one from a
                               ConfigMap: JobSet, LWS, Kubeflow Trainer), with leader election
                               off, their own certificate management off (the testbed makes the
                               serving certificate), the webhook server on 127.0.0.1 with
                               the port of URL (JobSet, LWS: OUT_DIR as its certificate
                               directory), the health probe on 127.0.0.1:$PROBE_PORT
                               (environment), Trainer's status server on $STATUS_PORT, no
                               metrics listener, and the keys of $CONFIG_PATCH (a JSON
                               object, when set: Kueue's integrations) put over the top level;
                               not written for an operator without one
  OUT_DIR/NAME-args            the container's arguments, one a line, without those this
                               replaces (--config, --leader-elect)
  OUT_DIR/NAME-env             its literal environment and the namespace and name of the
                               Deployment DEPLOYMENT (what the downward API would give it),
                               one KEY=VALUE a line
  OUT_DIR/NAME-secret          namespace/name of the webhook certificate Secret the install
                               creates, for an operator that rotates its own certificates
                               into it (empty when none)

Standard library and PyYAML only (Debian's python3-yaml).
"""
import base64
import json
import os
import sys
from urllib.parse import urlparse

import yaml


def webhook_client(client, url, ca):
    """A clientConfig that names a Service becomes one that names URL + the service's path."""
    service = client.get("service")
    if service is None:
        return client
    return {"url": url + service.get("path", "/"), "caBundle": ca}


def drop_ca_injection(obj):
    # cert-manager's CA injection is not in the testbed: the caBundle is set here.
    obj["metadata"].get("annotations", {}).pop("cert-manager.io/inject-ca-from", None)


def manager_config(config, url, out):
    """The manager's configuration with what running outside a cluster forces. Each schema is
    decoded strictly by its operator, so only its own keys are set."""
    port = urlparse(url).port
    config.setdefault("leaderElection", {})["leaderElect"] = False
    config["health"] = {**config.get("health", {}),
                        "healthProbeBindAddress": "127.0.0.1:" + os.environ["PROBE_PORT"]}
    config["metrics"] = {**config.get("metrics", {}), "bindAddress": "0"}
    if "certManagement" in config:
        # Kubeflow Trainer (config.trainer.kubeflow.org): no certificate directory of its own
        # (the Deployment mounts the Secret at controller-runtime's default path), so the
        # testbed puts its certificate there; its status server on a free port.
        config["certManagement"] = {**config["certManagement"], "enable": False}
        config["webhook"] = {**config.get("webhook", {}), "host": "127.0.0.1", "port": port}
        if "statusServer" in config:
            config["statusServer"] = {**config["statusServer"],
                                      "port": int(os.environ["STATUS_PORT"])}
    else:
        # JobSet, LWS, Kueue (controller-runtime's ControllerManagerConfiguration layout).
        config.setdefault("internalCertManagement", {})["enable"] = False
        config["webhook"] = {**config.get("webhook", {}), "host": "127.0.0.1", "port": port,
                             "certDir": out}
    config.update(json.loads(os.environ.get("CONFIG_PATCH") or "{}"))
    return config


def container_env(container, deployment):
    meta = deployment["metadata"]
    downward = {"metadata.namespace": meta.get("namespace", "default"),
                "metadata.name": meta["name"] + "-testbed"}
    for e in container.get("env", []):
        if "value" in e:
            yield e["name"], e["value"]
        field = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if field in downward:
            yield e["name"], downward[field]


def main():
    name, rendered, out, url, ca_file, deployment_name, groups = sys.argv[1:8]
    groups = groups.split(",")
    excluded = set(filter(None, os.environ.get("EXCLUDE_CRDS", "").split(",")))
    with open(ca_file, "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    with open(rendered) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]

    deployment = next((d for d in docs if d.get("kind") == "Deployment"
                       and d["metadata"]["name"] == deployment_name), None)
    if deployment is None:
        sys.exit(f"{name}: no Deployment {deployment_name} in {rendered}")
    namespace = deployment["metadata"].get("namespace")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    container = next((c for c in containers if c.get("name") == "manager"), containers[0])

    items, config, secret = [], None, ""
    for d in docs:
        kind, meta = d.get("kind"), d["metadata"]
        if kind == "Namespace" and meta["name"] == namespace:
            items.append(d)
        elif kind == "CustomResourceDefinition" and meta["name"] in excluded:
            continue  # another operator's (start.sh: MPIJob has two)
        elif kind == "CustomResourceDefinition" and d["spec"]["group"] in groups:
            conv = d["spec"].get("conversion", {})
            if conv.get("strategy") == "Webhook":
                hook = conv.setdefault("webhook", {})
                hook["clientConfig"] = webhook_client(hook.get("clientConfig", {}), url, ca)
            drop_ca_injection(d)
            items.append(d)
        elif kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            hooks = d.get("webhooks", [])
            if not any(g in groups for h in hooks for r in h.get("rules", [])
                       for g in r.get("apiGroups", [])):
                continue  # another component's (Trainer's install bundles JobSet's)
            for hook in hooks:
                hook["clientConfig"] = webhook_client(hook.get("clientConfig", {}), url, ca)
            drop_ca_injection(d)
            items.append(d)
        elif (kind == "ConfigMap" and meta.get("namespace") == namespace
              and "controller_manager_config.yaml" in d.get("data", {})):
            config = yaml.safe_load(d["data"]["controller_manager_config.yaml"])
        elif (kind == "Secret" and meta.get("namespace") == namespace
              and "cert" in meta["name"]):
            secret = f"{namespace}/{meta['name']}"
    if not any(i["kind"] == "CustomResourceDefinition" for i in items):
        sys.exit(f"{name}: no CRD of {groups} in {rendered}")

    with open(f"{out}/{name}-manifests.json", "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    if config is not None:
        with open(f"{out}/{name}-config.yaml", "w") as f:
            yaml.safe_dump(manager_config(config, url, out), f)
    with open(f"{out}/{name}-args", "w") as f:
        for a in container.get("args", []):
            if not (a.startswith("--config") or a.startswith("--leader-elect")):
                f.write(a + "\n")
    with open(f"{out}/{name}-env", "w") as f:
        for k, v in container_env(container, deployment):
            f.write(f"{k}={v}\n")
    with open(f"{out}/{name}-secret", "w") as f:
        f.write(secret + "\n" if secret else "")


if __name__ == "__main__":
    main()
