# Multi-stage build of the cairn binary.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY cypher ./cypher
COPY prompts ./prompts
RUN cargo build --release --locked && strip target/release/cairn

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /var/lib/cairn cairn
COPY --from=build /src/target/release/cairn /usr/local/bin/cairn
USER cairn
WORKDIR /var/lib/cairn
ENV CAIRN_BIND=0.0.0.0:8420 \
    CAIRN_SPOOL_DIR=/var/lib/cairn/spool
EXPOSE 8420
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=6 \
    CMD curl -fsS http://127.0.0.1:8420/readyz || exit 1
ENTRYPOINT ["cairn"]
CMD ["serve"]
