# Sourced by the CI scripts (.ci/run, .ci/oldest-minor): the environment
# both build in, so that they share the caches and a clean clone finds them.
# `step` prints a heading with the seconds since the script started.
start=$(date +%s)
step() { echo; echo "=== $* ($(( $(date +%s) - start ))s)"; }

# CI may start without HOME; the caches below live in the user's home.
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
# Rust (rustup) and Go come with the machine image; neither can be
# downloaded here, so a missing toolchain is a clear failure, not a hang.
[[ -f "$HOME/.cargo/env" ]] && source "$HOME/.cargo/env"
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
command -v go >/dev/null || { echo "go not found: the local control plane is built with the Go toolchain" >&2; exit 1; }

# Rust build output is cached outside the checkout too (like the Go builds):
# a clean clone on a machine that already built berth rebuilds only what
# changed. Set CARGO_TARGET_DIR yourself to override.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${BERTH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}/ci-target}"
# The commit --version prints (build/git_commit.rs). Set here, not only
# found by the build script: cargo's fingerprints do not depend on the
# checkout's path, so with the shared target dir above the build script's
# watched files are those of whichever clone built it first; an env var it
# watches reruns it whenever the commit differs.
BERTH_GIT_COMMIT="$(git rev-parse HEAD)"
export BERTH_GIT_COMMIT
