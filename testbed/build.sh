#!/usr/bin/env bash
# Build (or reuse) the testbed binaries: kube-apiserver, kubectl,
# kube-controller-manager, kube-scheduler and etcd at the versions pinned in
# testbed/go.mod, plus KWOK, the KubeRay, JobSet, LeaderWorkerSet, Kubeflow training
# operator, Kubeflow Trainer and MPI operators, helm, promtool and kube-state-metrics at the
# versions pinned below (each from its own published module).
#
#   testbed/build.sh            # prints the bin directory on stdout
#
# Output: ${WLMAP_TESTBED_CACHE:-$HOME/.cache/wlmap-testbed}/<k8s-version>/bin/
# Idempotent: a stamp (hash of go.mod, go.sum, the Go sources, the package
# list, the ldflags and the Go version) is written next to the binaries; when
# it matches, nothing is rebuilt. Only the first run pays (module download + compile).
#
# Environment:
#   WLMAP_TESTBED_CACHE   cache root (default $HOME/.cache/wlmap-testbed)
#   WLMAP_TESTBED_NICE    nice level for the compile (default 19; "" disables)
#   WLMAP_TESTBED_REBUILD=1  ignore the stamp and rebuild
# Go's own caches (GOMODCACHE, GOCACHE) are used as usual.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '[testbed/build] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not installed (need Go >= 1.24)"

K8S_VERSION="$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$HERE/go.mod")"
[ -n "$K8S_VERSION" ] || die "cannot find k8s.io/kubernetes version in $HERE/go.mod"
K8S_MAJOR="${K8S_VERSION#v}"; K8S_MAJOR="${K8S_MAJOR%%.*}"
K8S_MINOR="${K8S_VERSION#v*.}"; K8S_MINOR="${K8S_MINOR%%.*}"

CACHE="${WLMAP_TESTBED_CACHE:-$HOME/.cache/wlmap-testbed}"
OUT="$CACHE/$K8S_VERSION"
BIN="$OUT/bin"
BINARIES=(kube-apiserver kubectl kube-controller-manager kube-scheduler etcd)
PACKAGES=(
  k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kubectl
  k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kube-scheduler
  ./cmd/etcd
)

VERSION_PKGS=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
LDFLAGS="-s -w"
for p in "${VERSION_PKGS[@]}"; do
  LDFLAGS+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$K8S_MAJOR -X $p.gitMinor=$K8S_MINOR"
  LDFLAGS+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

GO_VERSION="$(GOTOOLCHAIN=local go env GOVERSION)"
# The stamp covers everything that determines the binaries' content.
STAMP_WANT="$(
  {
    echo "$GO_VERSION $(go env GOOS GOARCH | tr '\n' ' ')"
    echo "${PACKAGES[*]}"
    echo "$LDFLAGS"
    cat "$HERE/go.mod" "$HERE/go.sum"
    find "$HERE/cmd" -name '*.go' -type f | LC_ALL=C sort | xargs cat
  } | sha256sum | cut -d' ' -f1
)"

up_to_date() {
  [ -f "$OUT/stamp" ] && [ "$(cat "$OUT/stamp")" = "$STAMP_WANT" ] || return 1
  local b
  for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || return 1; done
}

mkdir -p "$OUT"
# One build per cache directory at a time (parallel test jobs wait here).
exec 9>"$OUT/.build.lock"
flock 9

NICE=()
if [ -n "${WLMAP_TESTBED_NICE-19}" ] && command -v nice >/dev/null 2>&1; then
  NICE=(nice -n "${WLMAP_TESTBED_NICE-19}")
fi
# GOTOOLCHAIN=local: never try to download a toolchain. CGO off: static,
# portable binaries (the upstream release binaries are built the same way).
export GOTOOLCHAIN=local CGO_ENABLED=0

build_kubernetes() {
  log "building Kubernetes $K8S_VERSION binaries with $GO_VERSION into $BIN (first run downloads modules and compiles; expect ~25 min on 2 cores)"
  local tmp start b
  tmp="$(mktemp -d "$OUT/.bin.XXXXXX")"
  start=$(date +%s)
  (
    cd "$HERE"
    GOFLAGS="${GOFLAGS:-} -mod=readonly" "${NICE[@]}" \
      go build -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o "$tmp/" "${PACKAGES[@]}"
  ) || { rm -rf "$tmp"; die "go build failed"; }
  for b in "${BINARIES[@]}"; do
    [ -x "$tmp/$b" ] || { rm -rf "$tmp"; die "go build did not produce $b"; }
  done
  mkdir -p "$BIN"
  for b in "${BINARIES[@]}"; do mv -f "$tmp/$b" "$BIN/$b"; done
  rm -rf "$tmp"
  echo "$STAMP_WANT" > "$OUT/stamp"
  log "built in $(( $(date +%s) - start ))s: ${BINARIES[*]}"
}

# Components with a Go module of their own, each built from its published module at a
# pinned version: `go mod download` fetches the module (checked against the checksum
# database), and the package is built inside it (GOWORK=off: a go.work the module ships is not
# used), so the module's own go.mod and go.sum decide every dependency, as `go install
# PKG@VERSION` would. (`go install PKG@VERSION` itself asks the proxy for the module's version
# list to look for a deprecation notice, which the proxy refuses for JobSet and LWS.) The
# manifests the testbed applies are copied from the module.
#   name | module@version | package inside the module | binary | manifests directory inside the
#   module (copied to $OUT/NAME/; empty: none) | build tags | modules to take at another
#   version (MODULE@VERSION, space-separated; built in a copy of the module)
# promtool is built without Prometheus's service-discovery plugins (`remove_all_sd`): the
# tests only check rules and metrics text, and the plugins are most of its dependencies.
# The operators keep their whole kustomize tree (JobSet's and LWS's `config/`, the Kubeflow
# operators' `manifests/`): start.sh renders their own install from it (CRDs, webhook
# configurations, the manager's arguments and configuration).
# scheduler-plugins v0.34.7 pins every k8s.io staging module at v0.34.7; the module proxy
# refuses these nine at that version (403) and serves the next or an earlier v0.34 patch
# release, which they are built with (API and scheduling code stay v0.34.7's).
SCHEDULER_PLUGINS_REPLACES="k8s.io/cluster-bootstrap@v0.34.8 k8s.io/cri-client@v0.34.8 k8s.io/csi-translation-lib@v0.34.8 k8s.io/endpointslice@v0.34.8 k8s.io/externaljwt@v0.34.5 k8s.io/kube-aggregator@v0.34.8 k8s.io/kube-controller-manager@v0.34.8 k8s.io/kube-proxy@v0.34.5 k8s.io/sample-apiserver@v0.34.4"
ADDONS=(
  "kwok|sigs.k8s.io/kwok@v0.8.0|./cmd/kwok|kwok|kustomize/stage|"
  "kuberay|github.com/ray-project/kuberay/ray-operator@v1.5.0|.|ray-operator|config/crd/bases|"
  "helm|helm.sh/helm/v4@v4.3.1|./cmd/helm|helm||"
  "promtool|github.com/prometheus/prometheus@v0.316.0|./cmd/promtool|promtool||remove_all_sd"
  "jobset|sigs.k8s.io/jobset@v0.12.0|.|jobset-manager|config|"
  "lws|sigs.k8s.io/lws@v0.9.0|./cmd|lws-manager|config|"
  "training-operator|github.com/kubeflow/training-operator@v1.8.1|./cmd/training-operator.v1|training-operator|manifests|"
  "trainer|github.com/kubeflow/trainer/v2@v2.3.0|./cmd/trainer-controller-manager|trainer-manager|manifests|"
  "mpi-operator|github.com/kubeflow/mpi-operator@v0.8.0|./cmd/mpi-operator|mpi-operator|manifests|"
  "scheduler-plugins|sigs.k8s.io/scheduler-plugins@v0.34.7|./cmd/scheduler|scheduler-plugins-scheduler|config/crd/bases||$SCHEDULER_PLUGINS_REPLACES"
  "scheduler-plugins-controller|sigs.k8s.io/scheduler-plugins@v0.34.7|./cmd/controller|scheduler-plugins-controller|||$SCHEDULER_PLUGINS_REPLACES"
  "kueue|sigs.k8s.io/kueue@v0.17.0|./cmd/kueue|kueue-manager|config|"
  "kube-state-metrics|k8s.io/kube-state-metrics/v2@v2.16.0|.|kube-state-metrics||"
  "crane|github.com/google/go-containerregistry@v0.20.6|./cmd/crane|crane||"
  "krew|sigs.k8s.io/krew@v0.4.3|./cmd/krew|kubectl-krew||"
  "validate-krew-manifest|sigs.k8s.io/krew@v0.4.3|./cmd/validate-krew-manifest|validate-krew-manifest||"
)

build_addon() { # NAME MODULE@VERSION PKG BINARY MANIFESTS TAGS REPLACES
  local name=$1 module=$2 pkg=$3 binary=$4 manifests=$5 tags=$6 replaces=$7 want start tmp dir src r
  want="$GO_VERSION $module $pkg $manifests${tags:+ tags=$tags}${replaces:+ replace=$replaces}"
  if [ "${WLMAP_TESTBED_REBUILD:-0}" != 1 ] && [ -x "$BIN/$binary" ] && [ -d "$OUT/$name" ] \
    && [ "$(cat "$OUT/$name.stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  log "building $name ($module, $pkg)"
  start=$(date +%s)
  dir="$(GOFLAGS="" go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -n "$dir" ] && [ -f "$dir/go.mod" ] || die "go mod download $module failed"
  tmp="$(mktemp -d "$OUT/.$name.XXXXXX")"
  src="$dir" mode="-mod=readonly"
  if [ -n "$replaces" ]; then
    # Versions the module proxy refuses (403), swapped for a neighbouring release of the same
    # module in a writable copy of the module; Go then completes go.mod and go.sum (sums
    # checked against the checksum database).
    src="$tmp/src" mode="-mod=mod"
    cp -r "$dir" "$src" && chmod -R u+w "$src"
    for r in $replaces; do
      (cd "$src" && go mod edit -replace "${r%@*}=$r") || { rm -rf "$tmp"; die "go mod edit -replace $r failed"; }
    done
  fi
  (cd "$src" && GOWORK=off GOFLAGS="$mode" "${NICE[@]}" go build -trimpath -ldflags "-s -w" \
      ${tags:+-tags "$tags"} -o "$tmp/$binary" "$pkg") \
    || { rm -rf "$tmp"; die "go build $module $pkg failed"; }
  [ -x "$tmp/$binary" ] || { rm -rf "$tmp"; die "go build $module $pkg did not produce $binary"; }
  mkdir -p "$BIN"
  rm -rf "$OUT/$name"
  mkdir -p "$OUT/$name"
  if [ -n "$manifests" ]; then
    [ -d "$dir/$manifests" ] || { rm -rf "$tmp"; die "$name: no $manifests in $dir"; }
    cp -r "$dir/$manifests"/. "$OUT/$name/"
    chmod -R u+w "$OUT/$name"
  fi
  mv -f "$tmp/$binary" "$BIN/$binary"
  rm -rf "$tmp"
  echo "$want" > "$OUT/$name.stamp"
  log "built $name in $(( $(date +%s) - start ))s"
}

if [ "${WLMAP_TESTBED_REBUILD:-0}" = 1 ] || ! up_to_date; then
  build_kubernetes
else
  log "up to date: $BIN"
fi
for addon in "${ADDONS[@]}"; do
  IFS='|' read -r name module pkg binary manifests tags replaces <<<"$addon"
  build_addon "$name" "$module" "$pkg" "$binary" "$manifests" "$tags" "$replaces"
done
echo "$BIN"
