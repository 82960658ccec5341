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
