#!/usr/bin/env bash
# Builds the local control plane's components from their Go modules and
# caches them outside the checkout, keyed by component and version:
#
#   ${BERTH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}/k8s/<component>-<version>/<binary>
#
# A second run finds every binary in place and builds nothing. Prints the
# directory that holds every binary (one per line: NAME=PATH) on stdout.
#
# With --test-tools it also builds the tools the integration tests check
# berth's packaging with (the demo needs none of them): helm (the chart
# tests) and kube-score (the independent checker run on every golden
# render), from their Go modules in the same way, and promtool (the alerting
# rules' and the dashboard's checker), from Prometheus's Go module without
# its service discovery plugins (build tag remove_all_sd: promtool's rule
# checks and rule unit tests need none of them, and they are most of the
# build), and the prometheus server from the same module and version, built
# the same way (tests/it/prometheus.rs: its scrapes are static). Without it,
# those already built are named all the same.
#
# With --real-node it also builds what a real node runs (node-build.sh):
# kubelet, containerd, the CNI plugins, runc, gVisor and the test
# application's image; the kwok-only tests never need them.
#
# With --peers it also builds the peer consoles that `berth-bench --peers`
# measures beside berth's console: k9s, from its Go module in the same way,
# and kdash, from crates.io (cargo install --locked; about 6 minutes on two
# cores with the registry warm).
# CI does not pass it (the build costs minutes CI does not spend).
#
# BERTH_K8S_BIN_DIR=/some/dir skips building altogether: that directory must
# hold etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and
# kubectl (the harness checks each and names the missing one), and may hold
# helm (without it the chart tests fail, naming it).
set -euo pipefail

real_node=0
peers=0
test_tools=0
for arg in "$@"; do
  case "$arg" in
    --real-node) real_node=1 ;;
    --peers) peers=1 ;;
    --test-tools) test_tools=1 ;;
    *) echo "build.sh: unknown option $arg (known: --real-node, --test-tools, --peers)" >&2; exit 2 ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

if [[ -n "${BERTH_K8S_BIN_DIR:-}" ]]; then
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl; do
    [[ -x "$BERTH_K8S_BIN_DIR/$b" ]] || { echo "BERTH_K8S_BIN_DIR=$BERTH_K8S_BIN_DIR has no executable $b" >&2; exit 1; }
    echo "$b=$BERTH_K8S_BIN_DIR/$b"
  done
  [[ -f "$BERTH_K8S_BIN_DIR/kwok-stages.yaml" ]] || { echo "BERTH_K8S_BIN_DIR=$BERTH_K8S_BIN_DIR has no kwok-stages.yaml (kwok's default node and pod Stages)" >&2; exit 1; }
  echo "kwok-stages=$BERTH_K8S_BIN_DIR/kwok-stages.yaml"
  # --test-tools and --peers take what the directory holds: the tests that
  # need a missing one name it.
  [[ -x "$BERTH_K8S_BIN_DIR/helm" ]] && echo "helm=$BERTH_K8S_BIN_DIR/helm"
  [[ -x "$BERTH_K8S_BIN_DIR/kube-score" ]] && echo "kube-score=$BERTH_K8S_BIN_DIR/kube-score"
  [[ -x "$BERTH_K8S_BIN_DIR/promtool" ]] && echo "promtool=$BERTH_K8S_BIN_DIR/promtool"
  [[ -x "$BERTH_K8S_BIN_DIR/prometheus" ]] && echo "prometheus=$BERTH_K8S_BIN_DIR/prometheus"
  [[ -x "$BERTH_K8S_BIN_DIR/k9s" ]] && echo "k9s=$BERTH_K8S_BIN_DIR/k9s"
  [[ -x "$BERTH_K8S_BIN_DIR/kdash" ]] && echo "kdash=$BERTH_K8S_BIN_DIR/kdash"
  # The real node's components are not taken from here (--real-node then
  # reports its kubelet missing): they are always built.
  (( real_node )) && echo "BERTH_K8S_BIN_DIR covers the control plane only; unset it for a real node" >&2
  exit 0
fi

command -v go >/dev/null || { echo "build.sh: the Go toolchain (go) is needed to build the local control plane" >&2; exit 1; }
cache="${BERTH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}/k8s"
mkdir -p "$cache"
export GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=0

# build COMPONENT VERSION MODULE_DIR BINARY PACKAGE [LDFLAGS [TAGS]]
# MODULE_DIR is relative to this directory, or absolute.
build() {
  local comp="$1" ver="$2" dir="$3" bin="$4" pkg="$5" ldflags="${6:-}" tags="${7:-}"
  local out="$cache/$comp-$ver/$bin"
  [[ "$dir" == /* ]] || dir="$here/$dir"
  if [[ ! -x "$out" ]]; then
    echo "building $bin $ver (cached in $cache/$comp-$ver) ..." >&2
    local t0=$SECONDS
    mkdir -p "$cache/$comp-$ver"
    # Build to a temporary name of this process and rename: an interrupted
    # build never leaves a half-written binary that a later run would
    # trust, and two runs building at once (CI and a test harness) do not
    # move each other's file (the rename is atomic; the last one wins).
    # Checked by hand: node-build.sh calls this where `set -e` is off.
    (cd "$dir" && nice -n 10 go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$out.tmp.$$" "$pkg") || return 1
    mv -f "$out.tmp.$$" "$out" || return 1
    echo "built $bin $ver in $(( SECONDS - t0 ))s" >&2
  fi
  echo "$bin=$out"
}

# BERTH_KUBERNETES_VERSION=v1.34.4 builds (and names) another supported
# minor's control plane and kubelet instead of the pinned KUBERNETES_VERSION:
# each version has its own Go wrapper module, kubernetes/ for the pinned one
# and kubernetes-1.<minor>/ for the others (README "Supported Kubernetes"),
# and its own cache directory (kubernetes-<version>). kwok's KubeVersion
# follows it.
if [[ -n "${BERTH_KUBERNETES_VERSION:-}" && "$BERTH_KUBERNETES_VERSION" != "$KUBERNETES_VERSION" ]]; then
  k8s_module="kubernetes-$(echo "$BERTH_KUBERNETES_VERSION" | sed -E 's/^v([0-9]+\.[0-9]+)\..*/\1/')"
  grep -qx "require k8s.io/kubernetes $BERTH_KUBERNETES_VERSION" "$here/$k8s_module/go.mod" 2>/dev/null || {
    echo "build.sh: BERTH_KUBERNETES_VERSION=$BERTH_KUBERNETES_VERSION has no wrapper module tests/k8s/$k8s_module requiring k8s.io/kubernetes $BERTH_KUBERNETES_VERSION" >&2
    exit 1
  }
  KUBERNETES_VERSION="$BERTH_KUBERNETES_VERSION"
else
  k8s_module=kubernetes
fi
k8s_minor="${KUBERNETES_VERSION#v1.}"; k8s_minor="${k8s_minor%%.*}"
kv="k8s.io/component-base/version"
k8s_ldflags="-X $kv.gitVersion=$KUBERNETES_VERSION -X $kv.gitMajor=1 -X $kv.gitMinor=$k8s_minor -X $kv.gitTreeState=clean -X $kv.buildDate=1970-01-01T00:00:00Z"
k8s_ldflags="$k8s_ldflags -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$k8s_minor"

build etcd "$ETCD_VERSION" etcd etcd . "-X go.etcd.io/etcd/api/v3/version.GitSHA=${ETCD_VERSION}"
for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  build kubernetes "$KUBERNETES_VERSION" "$k8s_module" "$c" "k8s.io/kubernetes/cmd/$c" "$k8s_ldflags"
done
# kwok reports the Kubernetes version as its nodes' kubelet version: another
# minor's kwok is cached apart (kwok-<kwok version>-k8s-<version>).
kwok_key="$KWOK_VERSION"
[[ "$k8s_module" == kubernetes ]] || kwok_key="$KWOK_VERSION-k8s-$KUBERNETES_VERSION"
build kwok "$kwok_key" kwok kwok sigs.k8s.io/kwok/cmd/kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$KUBERNETES_VERSION"

# kwok itself ships no stages when run bare (kwokctl normally passes them):
# collect the default node and pod Stages from the pinned kwok module. The
# file name carries a digest of the list, so changing the list rebuilds it.
stage_files="node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
pod/general/pod-create.yaml pod/general/pod-init-container-running.yaml
pod/general/pod-init-container-completed.yaml pod/general/pod-ready.yaml
pod/general/pod-complete.yaml pod/general/pod-delete.yaml"
stages="$cache/kwok-$KWOK_VERSION/kwok-stages-$(echo "$stage_files" | sha256sum | cut -c1-12).yaml"
if [[ ! -f "$stages" ]]; then
  kwok_src="$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  for f in $stage_files; do
    echo "---"
    cat "$kwok_src/kustomize/stage/$f"
  done > "$stages.tmp.$$"
  mv -f "$stages.tmp.$$" "$stages"
fi
echo "kwok-stages=$stages"

# built COMPONENT VERSION BINARY: names a binary an earlier run built.
built() {
  if [[ -x "$cache/$1-$2/$3" ]]; then echo "$3=$cache/$1-$2/$3"; fi
}
if (( test_tools )); then
  # helm (tests/it/chart.rs).
  build helm "$HELM_VERSION" helm helm helm.sh/helm/v4/cmd/helm "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
  # kube-score, the independent checker (tests/it/kube_score.rs).
  build kube-score "$KUBE_SCORE_VERSION" kube-score kube-score github.com/zegl/kube-score/cmd/kube-score "-X main.version=$KUBE_SCORE_VERSION"
  # promtool (tests/it/alerts.rs, dashboard.rs); kept last. Cold: about 20
  # minutes on two busy cores (1197 s measured with an empty GOCACHE).
  build promtool "$PROMETHEUS_VERSION" promtool promtool github.com/prometheus/prometheus/cmd/promtool "-X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" remove_all_sd
  # The Prometheus server of the same module and version
  # (tests/it/prometheus.rs), after promtool so that it finds the packages
  # they share compiled: the same build tag (its scrapes are static_configs,
  # no service discovery) and no web UI assets (the test reads the HTTP API).
  # 894 s after promtool, niced at load 8-11 (2026-12-06).
  build promtool "$PROMETHEUS_VERSION" promtool prometheus github.com/prometheus/prometheus/cmd/prometheus "-X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" remove_all_sd
else
  built helm "$HELM_VERSION" helm
  built kube-score "$KUBE_SCORE_VERSION" kube-score
  built promtool "$PROMETHEUS_VERSION" promtool
  built promtool "$PROMETHEUS_VERSION" prometheus
fi
if (( peers )); then
  # k9s, the peer console (tests/bench/src/peers.rs). Its main package is
  # the module's root.
  build k9s "$K9S_VERSION" k9s k9s github.com/derailed/k9s "-X github.com/derailed/k9s/cmd.version=$K9S_VERSION -X github.com/derailed/k9s/cmd.commit=$K9S_VERSION -X github.com/derailed/k9s/cmd.date=1970-01-01T00:00:00Z"
  # kdash, the second peer, a Rust crate: its own target directory,
  # removed once the binary is in place.
  kdash_dir="$cache/kdash-$KDASH_VERSION"
  if [[ ! -x "$kdash_dir/bin/kdash" ]]; then
    command -v cargo >/dev/null || { echo "build.sh: cargo is needed to build kdash (--peers)" >&2; exit 1; }
    echo "building kdash $KDASH_VERSION (cached in $kdash_dir) ..." >&2
    t0=$SECONDS
    rm -rf "$kdash_dir.tmp" "$cache/kdash-target"
    cargo install --locked --quiet kdash --version "=$KDASH_VERSION" \
      --root "$kdash_dir.tmp" --target-dir "$cache/kdash-target" >&2
    rm -rf "$cache/kdash-target"
    mv "$kdash_dir.tmp" "$kdash_dir"
    echo "built kdash $KDASH_VERSION in $(( SECONDS - t0 ))s" >&2
  fi
  echo "kdash=$kdash_dir/bin/kdash"
else
  # Built by an earlier `--peers`: named, so that berth-bench finds them.
  built k9s "$K9S_VERSION" k9s
  if [[ -x "$cache/kdash-$KDASH_VERSION/bin/kdash" ]]; then echo "kdash=$cache/kdash-$KDASH_VERSION/bin/kdash"; fi
fi
if (( real_node )); then
  # shellcheck source=node-build.sh
  source "$here/node-build.sh"
fi
