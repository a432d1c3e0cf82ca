# syntax=docker/dockerfile:1
#
# One image for the three Pushline services and the admin CLI. It has no ENTRYPOINT: the command
# names the binary, so compose picks it per service (compose/docker-compose.yml sets `entrypoint`):
#
#   docker build -t pushline .
#   docker run --rm pushline pushline-ingest --help
#   docker run --rm pushline pushline-processor rebuild --help
#   docker run --rm pushline pushline-sender --help
#   docker run --rm pushline pushline --help
#
# Tests/DeploymentTests checks this file (stages, release build, binaries, user, healthcheck tool).

ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# --- librdkafka >= 2.8 ------------------------------------------------------------------------
# Debian bookworm ships librdkafka 2.0.2, which cannot talk to the Tansu broker used on
# development machines, and bookworm-backports carries no librdkafka at all. So, like
# scripts/setup on a development machine, this builds Debian's next release (trixie) source
# package, 2.8.0: apt verifies it against the signed trixie Sources index, which a tarball
# downloaded by URL would not give us. It goes to /usr/local, where pkg-config (build) and the
# dynamic linker (runtime) look first.
FROM ${SWIFT_IMAGE} AS librdkafka
RUN set -eu; \
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources); \
    printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" \
      > /etc/apt/sources.list.d/trixie-src.sources; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get -q update; \
    apt-get -q install -y --no-install-recommends build-essential dpkg-dev pkg-config \
      libssl-dev libsasl2-dev libzstd-dev liblz4-dev zlib1g-dev libcurl4-openssl-dev; \
    mkdir /tmp/librdkafka; cd /tmp/librdkafka; \
    apt-get -q source librdkafka; \
    cd librdkafka-*/; \
    ./configure --prefix=/usr/local; \
    make -j"$(nproc)" libs; \
    make install; \
    ldconfig; \
    pkg-config --atleast-version=2.8.0 rdkafka || { echo "librdkafka $(pkg-config --modversion rdkafka) < 2.8.0" >&2; exit 1; }; \
    cd /; rm -rf /tmp/librdkafka /var/lib/apt/lists/*

# --- build ------------------------------------------------------------------------------------
FROM librdkafka AS build
WORKDIR /src
COPY . .
# The Swift standard library and Foundation are linked in statically; what stays dynamic is
# glibc, libstdc++, SQLite and librdkafka (with its TLS/SASL/compression libraries), all
# provided by the runtime stage. The cache mount keeps .build between image builds.
RUN --mount=type=cache,target=/src/.build \
    set -eu; \
    swift build -c release --static-swift-stdlib --product pushline-ingest; \
    swift build -c release --static-swift-stdlib --product pushline-processor; \
    swift build -c release --static-swift-stdlib --product pushline-sender; \
    swift build -c release --static-swift-stdlib --product pushline; \
    bin=$(swift build -c release --static-swift-stdlib --show-bin-path); \
    mkdir -p /out; \
    cp "$bin/pushline-ingest" "$bin/pushline-processor" "$bin/pushline-sender" "$bin/pushline" /out/

# --- runtime ----------------------------------------------------------------------------------
FROM ${RUNTIME_IMAGE} AS runtime
# curl is for the compose healthchecks (GET /health); ca-certificates for TLS to Kafka
# (PUSHLINE_KAFKA_PROPERTIES), to webhook receivers and to APNs and FCM.
RUN set -eu; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get -q update; \
    apt-get -q install -y --no-install-recommends ca-certificates curl tzdata \
      libstdc++6 libsqlite3-0 libssl3 libsasl2-2 libzstd1 liblz4-1 zlib1g libcurl4; \
    rm -rf /var/lib/apt/lists/*
COPY --from=librdkafka /usr/local/lib/librdkafka.so.1 /usr/local/lib/
RUN ldconfig \
    && groupadd --system --gid 10001 pushline \
    && useradd --system --uid 10001 --gid pushline --create-home --home-dir /var/lib/pushline \
      --shell /usr/sbin/nologin pushline
COPY --from=build /out/pushline-ingest /out/pushline-processor /usr/local/bin/
COPY --from=build /out/pushline-sender /usr/local/bin/
# The admin CLI, for `docker compose run --rm --entrypoint pushline processor lag` and the like.
COPY --from=build /out/pushline /usr/local/bin/
# The default store (sqlite:./var/pushline.sqlite) lands in the user's home; compose uses PostgreSQL.
WORKDIR /var/lib/pushline
USER 10001:10001
# Inside a container the loopback-only defaults (127.0.0.1) would make the services unreachable.
ENV PUSHLINE_INGEST_HOST=0.0.0.0 \
    PUSHLINE_PROCESSOR_HOST=0.0.0.0 \
    PUSHLINE_SENDER_HOST=0.0.0.0
# ingest (PUSHLINE_INGEST_PORT), processor and sender health/metrics (PUSHLINE_PROCESSOR_PORT,
# PUSHLINE_SENDER_PORT) defaults.
EXPOSE 8080 8081 8082
CMD ["pushline-ingest"]
