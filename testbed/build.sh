#!/usr/bin/env bash
# Build (or reuse) the testbed binaries: kube-apiserver, kubectl,
# kube-controller-manager, kube-scheduler and etcd at the versions pinned in
# testbed/go.mod, plus the KWOK controller and the KubeRay operator at the
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
# pinned version (`go install MODULE/PKG@VERSION` uses that module's go.mod and go.sum,
# checked against the checksum database), plus the manifests the testbed applies from it.
#   name | package@version | binary | manifests directory inside the module (copied to $OUT/NAME/;
#   empty: none) | build tags
# promtool is built without Prometheus's service-discovery plugins (`remove_all_sd`): the
# tests only check rules and metrics text, and the plugins are most of its dependencies.
ADDONS=(
  "kwok|sigs.k8s.io/kwok/cmd/kwok@v0.8.0|kwok|kustomize/stage|"
  "kuberay|github.com/ray-project/kuberay/ray-operator@v1.5.0|ray-operator|config/crd/bases|"
  "helm|helm.sh/helm/v4/cmd/helm@v4.3.1|helm||"
  "promtool|github.com/prometheus/prometheus/cmd/promtool@v0.316.0|promtool||remove_all_sd"
)

build_addon() { # NAME PKG@VERSION BINARY MANIFESTS TAGS
  local name=$1 pkg=$2 binary=$3 manifests=$4 tags=$5 want start tmp mod dir
  want="$GO_VERSION $pkg $manifests${tags:+ tags=$tags}"
  if [ "${WLMAP_TESTBED_REBUILD:-0}" != 1 ] && [ -x "$BIN/$binary" ] && [ -d "$OUT/$name" ] \
    && [ "$(cat "$OUT/$name.stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  log "building $name ($pkg)"
  start=$(date +%s)
  tmp="$(mktemp -d "$OUT/.$name.XXXXXX")"
  GOBIN="$tmp" GOFLAGS="" "${NICE[@]}" go install -trimpath -ldflags "-s -w" ${tags:+-tags "$tags"} "$pkg" \
    || { rm -rf "$tmp"; die "go install $pkg failed"; }
  [ -x "$tmp/$binary" ] || { rm -rf "$tmp"; die "go install $pkg did not produce $binary"; }
  mkdir -p "$BIN"
  rm -rf "$OUT/$name"
  mkdir -p "$OUT/$name"
  if [ -n "$manifests" ]; then
    mod="${pkg%@*}"; mod="${mod%/cmd/*}"
    dir="$(GOFLAGS="" go list -m -f '{{.Dir}}' "$mod@${pkg##*@}" 2>/dev/null || true)"
    [ -n "$dir" ] || dir="$(go env GOMODCACHE)/$mod@${pkg##*@}"
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
  IFS='|' read -r name pkg binary manifests tags <<<"$addon"
  build_addon "$name" "$pkg" "$binary" "$manifests" "$tags"
done
echo "$BIN"
