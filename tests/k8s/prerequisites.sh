# Sourced by ./demo and .ci/run: what this machine lacks, checked in a
# second, before anything is built (a build that stops after minutes on a
# missing library is the failure this prevents).
#
# prereq_check fills two arrays, one entry per missing thing, each
# "DEBIAN-PACKAGE|what is missing and how to get it" (the package is empty
# where Debian has none to offer):
#   prereq_build: what building berth and the control plane needs;
#   prereq_real:  what a real node (a kubelet and containerd on this
#                 machine, build.sh --real-node) needs beyond that;
#   prereq_tests: what the integration tests use beyond both (the
#                 console's smoke test in tmux, the agent's image run
#                 daemonless by podman and runc, readelf on the static agent).
# prereq_report ARRAY-NAME prints one array's entries, with the apt-get
# line that installs every package among them.

prereq_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# The oldest toolchains that build the tree: Cargo.toml's rust-version, and
# the newest `go` directive of the Go modules build.sh builds (it builds
# with GOTOOLCHAIN=local, so an older go refuses them).
prereq_rust_version() {
  sed -n 's/^rust-version = "\(.*\)"/\1/p' "$prereq_root/Cargo.toml" | head -1
}
prereq_go_version() {
  sed -n 's/^go \([0-9.]*\)$/\1/p' "$prereq_root"/tests/k8s/*/go.mod | sort -V | tail -1
}

# version_at_least HAVE WANT
prereq_at_least() {
  [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]
}

prereq_have() { command -v "$1" >/dev/null 2>&1; }

prereq_check() {
  prereq_build=()
  prereq_real=()
  prereq_tests=()
  local want have

  want="$(prereq_rust_version)"
  if ! prereq_have cargo || ! prereq_have rustc; then
    prereq_build+=("|Rust $want or newer (cargo, rustc): install it with rustup, https://rustup.rs")
  else
    have="$(rustc --version | awk '{print $2}')"
    prereq_at_least "$have" "$want" ||
      prereq_build+=("|Rust $want or newer (this is rustc $have): rustup update stable")
  fi
  want="$(prereq_go_version)"
  if ! prereq_have go; then
    prereq_build+=("|Go $want or newer, to build the local control plane: https://go.dev/dl (Debian's golang-go is older)")
  else
    have="$(go env GOVERSION 2>/dev/null)"; have="${have#go}"
    prereq_at_least "$have" "$want" ||
      prereq_build+=("|Go $want or newer (this is go $have; the Go modules of tests/k8s/ ask for it): https://go.dev/dl")
  fi
  # The agent links jemalloc and the console mimalloc, both built from C
  # source by their -sys crates.
  prereq_have make || prereq_build+=("make|make (jemalloc is built from source)")
  prereq_have cc || prereq_have gcc || prereq_build+=("gcc|a C compiler, gcc (jemalloc and mimalloc are built from source)")
  prereq_have curl || prereq_build+=("curl|curl (the demo asks the agent whether it is ready)")

  # The real node: the same conditions berth-localcluster checks
  # (tests/localcluster/src/realnode/mod.rs, unsupported_reason), and what
  # build.sh --real-node needs: runc is built with cgo against libseccomp
  # (found through pkg-config), and the test app's image with buildah.
  if [[ "$(id -u)" != 0 ]]; then
    prereq_real+=("|root (a kubelet and containerd run as root): run ./demo as root")
  fi
  if [[ ! -e /sys/fs/cgroup/memory/memory.limit_in_bytes && ! -e /sys/fs/cgroup/cgroup.controllers ]]; then
    prereq_real+=("|a cgroup filesystem under /sys/fs/cgroup (none is mounted here)")
  fi
  grep -qw overlay /proc/filesystems 2>/dev/null ||
    prereq_real+=("|the kernel's overlay filesystem (containerd's snapshotter): modprobe overlay")
  [[ -d /sys/class/net ]] || prereq_real+=("|/sys/class/net (the node's bridge cannot be created)")
  prereq_have ip || prereq_real+=("iproute2|ip, for the node's bridge (iproute2)")
  prereq_have umount || prereq_real+=("mount|umount, for the node's teardown (mount)")
  prereq_have buildah || prereq_real+=("buildah|buildah, to build the test app's and the agent's images")
  # The agent's image (canaries): its binary stripped, its libraries by ldd.
  prereq_have strip || prereq_real+=("binutils|strip, for the agent's image (binutils)")
  prereq_have ldd || prereq_real+=("libc-bin|ldd, for the agent's image (libc-bin)")
  prereq_have gcc || prereq_real+=("gcc|gcc, for runc (built with cgo)")
  prereq_have pkg-config || prereq_real+=("pkg-config|pkg-config, for runc's libseccomp (built with cgo)")
  if { prereq_have pkg-config && ! pkg-config --exists libseccomp; } ||
    { ! prereq_have pkg-config && [[ ! -f /usr/include/seccomp.h ]]; }; then
    prereq_real+=("libseccomp-dev|libseccomp's headers, for runc's seccomp filters (libseccomp-dev)")
  fi

  # runc because crun refuses this machine's hybrid cgroup layout.
  prereq_have tmux || prereq_tests+=("tmux|tmux, for the console's smoke test")
  prereq_have podman || prereq_tests+=("podman|podman, to run the agent's image (tests/it/image.rs)")
  prereq_have runc || prereq_tests+=("runc|runc, podman's runtime for the agent's image")
  prereq_have readelf || prereq_tests+=("binutils|readelf, to check that the agent's image binary is static (binutils)")
}

prereq_report() {
  local -n entries="$1"
  local e pkgs=()
  for e in "${entries[@]}"; do
    printf '  - %s\n' "${e#*|}" >&2
    [[ -n "${e%%|*}" ]] && pkgs+=("${e%%|*}")
  done
  if (( ${#pkgs[@]} )); then
    printf '  Debian/Ubuntu: apt-get install %s\n' "$(printf '%s\n' "${pkgs[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//')" >&2
  fi
}

# The Debian packages among the missing entries of ARRAY-NAME, one per line.
prereq_packages() {
  local -n entries="$1"
  local e
  for e in "${entries[@]}"; do
    [[ -n "${e%%|*}" ]] && echo "${e%%|*}"
  done | sort -u
}

# Run directly (`bash tests/k8s/prerequisites.sh`): everything this machine
# lacks for the demo and the tests, named in a second; exits 1 if anything
# is missing.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  prereq_check
  prereq_status=0
  for prereq_part in prereq_build:"to build berth and the local control plane" \
    prereq_real:"for the real node (./demo falls back to simulated nodes; the real-node tests need it)" \
    prereq_tests:"for the integration tests"; do
    prereq_name="${prereq_part%%:*}"
    declare -n prereq_list="$prereq_name"
    if (( ${#prereq_list[@]} )); then
      echo "missing ${prereq_part#*:}:" >&2
      prereq_report "$prereq_name"
      prereq_status=1
    fi
    unset -n prereq_list
  done
  (( prereq_status )) || echo "nothing missing: ./demo and cargo test --workspace have what they need" >&2
  exit "$prereq_status"
fi
