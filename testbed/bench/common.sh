# Shared by the benchmark scripts (sourced): the framework CRDs (the operators' own, from
# their modules), then a `bench` namespace. Needs the KC array (kubectl with the admin
# kubeconfig) and WLMAP_TESTBED_BIN.
load_crds_and_namespace() {
  local f
  # testbed/build.sh copies each operator's manifests next to bin/.
  for f in "$WLMAP_TESTBED_BIN"/../jobset/components/crd/bases/*.yaml \
      "$WLMAP_TESTBED_BIN"/../lws/crd/bases/*.yaml "$WLMAP_TESTBED_BIN"/../kuberay/ray.io_*.yaml \
      "$WLMAP_TESTBED_BIN"/../training-operator/base/crds/kubeflow.org_*.yaml; do
    "${KC[@]}" apply --server-side --force-conflicts -f "$f" >/dev/null
  done
  # Poll: `kubectl wait` fails if it reads a CRD before the server wrote any condition.
  for _ in $(seq 1 100); do
    "${KC[@]}" wait --for=condition=Established crd --all --timeout=10s >/dev/null 2>&1 && break
    sleep 0.3
  done
  "${KC[@]}" create namespace bench >/dev/null
}

# The N workloads of objects.py and their children (Jobs, ReplicaSets), created in two waves
# so that ownerReferences carry the uids the server assigned; the created objects are kept in
# $TMP for create_pods. Needs KC, HERE and TMP.
create_workloads() { # N
  python3 "$HERE/objects.py" roots "$1" > "$TMP/roots.json"
  "${KC[@]}" create -f "$TMP/roots.json" -o json > "$TMP/roots.created.json"
  python3 "$HERE/objects.py" children "$TMP/roots.created.json" > "$TMP/children.json"
  "${KC[@]}" create -f "$TMP/children.json" -o json > "$TMP/children.created.json"
}

# The 10 pods of each workload create_workloads made, written to $TMP/pods.json; create_pods
# creates them, a request each, and prints how many.
write_pods() {
  python3 "$HERE/objects.py" pods "$TMP/roots.created.json" "$TMP/children.created.json" > "$TMP/pods.json"
}
create_pods() {
  "${KC[@]}" create -f "$TMP/pods.json" -o name | wc -l
}
