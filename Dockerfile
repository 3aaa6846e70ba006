# A static berth-agent image. It cannot be built on the development machines
# (no container engine there); CI for images runs elsewhere.
#
#   docker build -t berth-agent:dev .
#
# Stage 1: a fully static (musl) release build. ring needs a C compiler for
# the musl target, hence musl-tools.
FROM docker.io/library/rust:1.89-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p berth-agent --target x86_64-unknown-linux-musl \
 && cp target/x86_64-unknown-linux-musl/release/berth-agent /berth-agent

# Stage 2: no shell, no package manager, nothing but the binary. The
# distroless "nonroot" user is uid/gid 65532, which the Deployment's
# runAsUser/fsGroup match so the grants-file owner and mode rules pass.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /berth-agent /usr/local/bin/berth-agent
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/berth-agent"]
CMD ["run", "--grants-file", "/etc/berth/grants/grants.toml"]
