# Sourced by build.sh --real-node: builds what a real node of the local
# cluster runs, cached like the control plane (see build.sh for `build`,
# `$cache`, `$here` and the pinned versions). Each build reports its time
# on stderr. gVisor is optional: when it does not build here, the failure is
# recorded once (runsc.failed, with the log) and the node runs without the
# runsc handler.

# kubelet: the same k8s.io/kubernetes module (and version) as the control plane.
build kubernetes "$KUBERNETES_VERSION" "$k8s_module" kubelet k8s.io/kubernetes/cmd/kubelet "$k8s_ldflags"

cv="github.com/containerd/containerd/v2/version"
c_ldflags="-X $cv.Version=$CONTAINERD_VERSION -X $cv.Revision=berth -X $cv.Package=github.com/containerd/containerd/v2"
# no_btrfs etc.: this node's snapshotter is overlayfs; the others need cgo.
c_tags="no_btrfs no_devmapper no_zfs no_aufs"
for b in containerd containerd-shim-runc-v2 ctr; do
  build containerd "$CONTAINERD_VERSION" containerd "$b" "github.com/containerd/containerd/v2/cmd/$b" "$c_ldflags" "$c_tags"
done

for p in main/bridge ipam/host-local main/loopback meta/portmap; do
  build cni-plugins "$CNI_PLUGINS_VERSION" cni-plugins "${p#*/}" "github.com/containernetworking/plugins/plugins/$p" \
    "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS_VERSION"
done

# runc needs cgo and libseccomp (libseccomp-dev) for its seccomp filters.
CGO_ENABLED=1 build runc "$RUNC_VERSION" runc runc github.com/opencontainers/runc \
  "-X main.version=${RUNC_VERSION#v} -X main.gitCommit=berth" "seccomp urfave_cli_no_docs"

# gVisor. Its containerd shim sets oom_score_adj -999 on itself and gives up
# when that is refused, which it is wherever the shim lacks CAP_SYS_RESOURCE
# (as in this machine's sandbox). `go build -overlay` cannot patch a file in
# the module cache, so the build uses a patched copy of the module through a
# `replace` in a copy of the wrapper module, both under the cache directory.
# gvisor_build DIR: every step checked by hand, since `set -e` does not
# apply inside a function called as an `if` condition.
gvisor_build() {
  local gdir="$1" src manager
  src="$(cd "$here/gvisor" && go mod download -json gvisor.dev/gvisor | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" || return 1
  [[ -d "$src" ]] || { echo "gvisor.dev/gvisor@$GVISOR_VERSION: no module directory" >&2; return 1; }
  rm -rf "$gdir/src" "$gdir/wrapper"
  cp -r "$src" "$gdir/src" && chmod -R u+w "$gdir/src" || return 1
  manager="$gdir/src/pkg/shim/v1/manager.go"
  grep -q 'sys.SetOOMScore(cmd.Process.Pid, oomScoreMax); err != nil {' "$manager" \
    || { echo "$manager: the oom_score_adj call to patch is not there" >&2; return 1; }
  sed -i 's/sys.SetOOMScore(cmd.Process.Pid, oomScoreMax); err != nil {/sys.SetOOMScore(cmd.Process.Pid, oomScoreMax); err != nil \&\& !os.IsPermission(err) {/' "$manager" || return 1
  mkdir -p "$gdir/wrapper"
  cp "$here/gvisor/go.mod" "$here/gvisor/go.sum" "$here/gvisor/tools.go" "$gdir/wrapper/" || return 1
  (cd "$gdir/wrapper" && go mod edit -replace "gvisor.dev/gvisor=$gdir/src") || return 1
  (build gvisor "$GVISOR_VERSION" "$gdir/wrapper" runsc gvisor.dev/gvisor/runsc) >/dev/null || return 1
  (build gvisor "$GVISOR_VERSION" "$gdir/wrapper" containerd-shim-runsc-v1 gvisor.dev/gvisor/shim) >/dev/null || return 1
}
gdir="$cache/gvisor-$GVISOR_VERSION"
if [[ ! -x "$gdir/runsc" || ! -x "$gdir/containerd-shim-runsc-v1" ]] && [[ ! -f "$gdir/runsc.failed" ]]; then
  mkdir -p "$gdir"
  if gvisor_build "$gdir" 2> "$gdir/build.log"; then
    cat "$gdir/build.log" >&2
  else
    cat "$gdir/build.log" >&2
    echo "gVisor did not build; the real node runs without runsc (see $gdir/runsc.failed)" >&2
    cp "$gdir/build.log" "$gdir/runsc.failed"
  fi
fi
if [[ -x "$gdir/runsc" && -x "$gdir/containerd-shim-runsc-v1" ]]; then
  echo "runsc=$gdir/runsc"
  echo "containerd-shim-runsc-v1=$gdir/containerd-shim-runsc-v1"
elif [[ -f "$gdir/runsc.failed" ]]; then
  # Remove this file to try building gVisor again.
  echo "runsc-failed=$gdir/runsc.failed"
fi

# The test application and a pause binary, static (CGO_ENABLED=0), each
# in its own OCI archive built with buildah (no daemon, no registry). The
# cache key is a digest of the sources, so an edit rebuilds them.
app_key="$(cat "$here/testapp/go.mod" "$here/testapp"/*.go "$here/testapp/pause"/*.go | sha256sum | cut -c1-12)"
adir="$cache/testapp-$app_key"
build testapp "$app_key" testapp testapp . >/dev/null
build testapp "$app_key" testapp pause ./pause >/dev/null
# image NAME BINARY ARCHIVE USER: a scratch image holding only BINARY, run as USER.
image() {
  local name="$1" bin="$2" archive="$3" user="$4"
  if [[ ! -f "$archive" ]]; then
    command -v buildah >/dev/null || { echo "build.sh: buildah is needed for the real node's images (apt-get install buildah)" >&2; exit 1; }
    local t0=$SECONDS ctr
    ctr="$(buildah from --quiet scratch)"
    buildah copy --quiet --chown 0:0 --chmod 0555 "$ctr" "$bin" "/$(basename "$bin")" >/dev/null
    buildah config --entrypoint "[\"/$(basename "$bin")\"]" --cmd '' --user "$user" --port 9000 "$ctr"
    local id
    id="$(buildah commit --quiet --format oci --timestamp 0 "$ctr" "$name")"
    buildah rm "$ctr" >/dev/null
    rm -f "$archive.tmp"
    buildah push --quiet "$id" "oci-archive:$archive.tmp:$name" >&2
    buildah rmi "$id" >/dev/null 2>&1 || true
    mv "$archive.tmp" "$archive"
    echo "built image $name in $(( SECONDS - t0 ))s" >&2
  fi
}
image "localhost/berth-testapp:$app_key" "$adir/testapp" "$adir/testapp.oci.tar" 10001:10001
image "localhost/berth-pause:$app_key" "$adir/pause" "$adir/pause.oci.tar" 65535:65535
echo "testapp-image=$adir/testapp.oci.tar"
echo "testapp-image-name=localhost/berth-testapp:$app_key"
echo "pause-image=$adir/pause.oci.tar"
echo "pause-image-name=localhost/berth-pause:$app_key"
