# Shared by the benchmark scripts (sourced): the framework CRDs in the testbed, then a
# `bench` namespace. Needs ROOT and the KC array (kubectl with the admin kubeconfig).
load_crds_and_namespace() {
  local f
  for f in "$ROOT"/testbed/crds/*.yaml; do "${KC[@]}" apply -f "$f" >/dev/null; done
  # Poll: `kubectl wait` fails if it reads a CRD before the server wrote any condition.
  for _ in $(seq 1 100); do
    "${KC[@]}" wait --for=condition=Established crd --all --timeout=10s >/dev/null 2>&1 && break
    sleep 0.3
  done
  "${KC[@]}" create namespace bench >/dev/null
}
