# The berth-agent image, for builders with Docker (or `podman build`):
#
#   docker build --build-arg BERTH_GIT_COMMIT=$(git rev-parse HEAD) -t berth-agent:dev .
#
# The same layout as assets/image/build.sh (buildah, no daemon; what CI builds
# and runs): a statically linked glibc binary (crt-static on
# x86_64-unknown-linux-gnu), /etc/passwd and /etc/group naming uid 65532, no
# shell, no libraries, user 65532:65532, the OCI labels.

# Stage 1: a statically linked release build, stripped.
FROM docker.io/library/rust:1.95-bookworm AS build
ARG BERTH_GIT_COMMIT=unknown
ENV BERTH_GIT_COMMIT=${BERTH_GIT_COMMIT}
WORKDIR /src
COPY . .
RUN RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release --locked -p berth-agent --target x86_64-unknown-linux-gnu \
 && strip --strip-all -o /berth-agent target/x86_64-unknown-linux-gnu/release/berth-agent

# Stage 2: nothing but the binary and the user database.
FROM scratch
ARG BERTH_GIT_COMMIT=unknown
COPY --from=build --chown=0:0 --chmod=0555 /berth-agent /usr/local/bin/berth-agent
COPY --chown=0:0 --chmod=0444 assets/image/passwd /etc/passwd
COPY --chown=0:0 --chmod=0444 assets/image/group /etc/group
USER 65532:65532
WORKDIR /
LABEL org.opencontainers.image.title="berth-agent" \
      org.opencontainers.image.description="berth's in-cluster agent: RuntimeClass grants, reconcile, admission" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.revision="${BERTH_GIT_COMMIT}" \
      org.opencontainers.image.source="https://example.invalid/berth" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["/usr/local/bin/berth-agent"]
CMD ["run", "--grants-file", "/etc/berth/grants/grants.toml"]
