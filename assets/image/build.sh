#!/usr/bin/env bash
# Builds the berth-agent image without a Docker daemon, with buildah:
#
#   assets/image/build.sh [IMAGE]        (default localhost/berth-agent:dev)
#
# The image holds nothing but a statically linked berth-agent (glibc,
# `-C target-feature=+crt-static` on x86_64-unknown-linux-gnu) and
# /etc/passwd + /etc/group naming uid/gid 65532 "nonroot": no shell, no
# package manager, no libraries. It runs as 65532:65532 (the Deployment's
# runAsUser/fsGroup), entrypoint /usr/local/bin/berth-agent, and carries the
# OCI image-spec labels (title, description, version, revision, source,
# licenses, created). The Dockerfile builds the same layout with Docker.
#
# BERTH_AGENT_STATIC_BIN=PATH uses that binary instead of building one (it
# must be statically linked). Prints the image ID on stdout; with
# BERTH_IMAGE_ARCHIVE=PATH also writes the image there as an OCI archive
# (`podman load -i PATH`, `skopeo copy oci-archive:PATH docker://…`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
image="${1:-localhost/berth-agent:dev}"
target=x86_64-unknown-linux-gnu
command -v buildah >/dev/null || { echo "build.sh: buildah is needed (apt-get install buildah)" >&2; exit 1; }

bin="${BERTH_AGENT_STATIC_BIN:-}"
if [[ -z "$bin" ]]; then
  # RUSTFLAGS with --target applies to the agent and its dependencies only,
  # not to build scripts and proc macros (which must stay dynamic).
  unset CARGO_ENCODED_RUSTFLAGS
  (cd "$root" && RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    cargo build --release --locked -p berth-agent --features otlp --target "$target" >&2)
  bin="${CARGO_TARGET_DIR:-$root/target}/$target/release/berth-agent"
fi
[[ -x "$bin" ]] || { echo "build.sh: $bin is not an executable" >&2; exit 1; }
# A dynamically linked binary has a program interpreter (ld-linux): it
# would not start in an image without libraries.
if LC_ALL=C readelf -lW "$bin" | grep -q 'Requesting program interpreter'; then
  echo "build.sh: $bin is dynamically linked; the image needs a static binary" >&2
  exit 1
fi

# Symbols are of no use in the image (backtraces keep function names only
# with them; the agent logs its errors with context instead): 32 → 24 MB.
stripped="$(mktemp)"
trap 'rm -f "$stripped"' EXIT
strip --strip-all -o "$stripped" "$bin"

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)"
source_url="$(sed -n 's/^repository = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)"
revision="${BERTH_GIT_COMMIT:-$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)}"
# The commit's time, not the build's: the same commit gives the same labels.
epoch="$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"

ctr="$(buildah from --quiet scratch)"
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true; rm -f "$stripped"' EXIT
buildah copy --quiet --chown 0:0 --chmod 0555 "$ctr" "$stripped" /usr/local/bin/berth-agent >/dev/null
buildah copy --quiet --chown 0:0 --chmod 0444 "$ctr" "$root/assets/image/passwd" /etc/passwd >/dev/null
buildah copy --quiet --chown 0:0 --chmod 0444 "$ctr" "$root/assets/image/group" /etc/group >/dev/null
buildah config \
  --user 65532:65532 \
  --workingdir / \
  --entrypoint '["/usr/local/bin/berth-agent"]' \
  --cmd '["run", "--grants-file", "/etc/berth/grants/grants.toml"]' \
  --label org.opencontainers.image.title=berth-agent \
  --label "org.opencontainers.image.description=berth's in-cluster agent: RuntimeClass grants, reconcile, admission" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.source=$source_url" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label "org.opencontainers.image.created=$created" \
  "$ctr"
id="$(buildah commit --quiet --format oci --timestamp "$epoch" "$ctr" "$image")"
if [[ -n "${BERTH_IMAGE_ARCHIVE:-}" ]]; then
  rm -f "$BERTH_IMAGE_ARCHIVE"
  buildah push --quiet "$id" "oci-archive:$BERTH_IMAGE_ARCHIVE:$image" >&2
fi
echo "$id"
