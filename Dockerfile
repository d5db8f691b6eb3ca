# syntax=docker/dockerfile:1
# capscore HTTP service. Multi-stage: build on Debian bookworm, run on bookworm-slim (same glibc:
# the metrics' bit parity relies on glibc's libm, spec COCO §7).
#
#   docker build -t capscore .
#   docker run -p 8080:8080 -v capscore-data:/data capscore

FROM rust:1-bookworm AS build
WORKDIR /src
# Dependencies first, so source edits do not rebuild them.
COPY Cargo.toml Cargo.lock ./
COPY crates/capscore-core/Cargo.toml crates/capscore-core/Cargo.toml
COPY python/Cargo.toml python/Cargo.toml
RUN mkdir -p src crates/capscore-core/src python/src && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs crates/capscore-core/src/lib.rs python/src/lib.rs \
    && cargo build --release --locked -p capscore || true
COPY crates ./crates
COPY src ./src
RUN touch src/main.rs src/lib.rs crates/capscore-core/src/lib.rs \
    && cargo build --release --locked -p capscore \
    && install -m 0755 target/release/capscore /usr/local/bin/capscore
# Metric resources (METEOR's data files), fetched with pip and sha256-verified at build time by
# `capscore fetch`. Nothing is downloaded at run time (CAPSCORE_OFFLINE below).
RUN apt-get update && apt-get install -y --no-install-recommends python3-pip \
    && rm -rf /var/lib/apt/lists/* \
    && capscore fetch --cache-dir /opt/capscore/resources

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin capscore \
    && mkdir -p /data && chown capscore:capscore /data
COPY --from=build /usr/local/bin/capscore /usr/local/bin/capscore
COPY --from=build /opt/capscore/resources /opt/capscore/resources
USER capscore
WORKDIR /data
ENV CAPSCORE_ADDR=0.0.0.0:8080 \
    CAPSCORE_DATA_DIR=/data \
    CAPSCORE_CACHE_DIR=/opt/capscore/resources \
    CAPSCORE_OFFLINE=true \
    CAPSCORE_LOG_JSON=true
EXPOSE 8080
VOLUME ["/data"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/capscore", "serve"]
