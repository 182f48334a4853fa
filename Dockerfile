# Multi-stage build of the cairn binary, with the default embedded embedding model's files
# (all-MiniLM-L6-v2; for e5-small-v2, fetch it here as well and set CAIRN_EMBED_LOCAL_MODEL).
FROM python:3.12-slim-bookworm AS model
COPY scripts/embed-model /usr/local/bin/embed-model
RUN CAIRN_EMBED_MODEL_DIR=/model/all-MiniLM-L6-v2 embed-model fetch all-MiniLM-L6-v2

FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY cypher ./cypher
COPY prompts ./prompts
# The workspace's other crates (test kit, benchmarks) are named by Cargo.toml; only `cairn` is built.
COPY crates ./crates
RUN cargo build --release --locked --bin cairn && strip target/release/cairn

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home --home-dir /var/lib/cairn cairn
COPY --from=build /src/target/release/cairn /usr/local/bin/cairn
COPY --from=model /model/all-MiniLM-L6-v2 /usr/local/share/cairn/models/all-MiniLM-L6-v2
USER cairn
WORKDIR /var/lib/cairn
ENV CAIRN_BIND=0.0.0.0:8420 \
    CAIRN_SPOOL_DIR=/var/lib/cairn/spool \
    CAIRN_EMBED_MODEL_DIR=/usr/local/share/cairn/models/all-MiniLM-L6-v2
EXPOSE 8420
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=6 \
    CMD curl -fsS http://127.0.0.1:8420/readyz || exit 1
ENTRYPOINT ["cairn"]
CMD ["serve"]
