# ctxtool: every target creates its own virtual environment and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.ctxtool-installed
PI_HARNESS := tests/pi_harness
PI_STAMP   := $(PI_HARNESS)/node_modules/.ctxtool-installed
CLAUDE_HARNESS := tests/claude_harness
CLAUDE_STAMP   := $(CLAUDE_HARNESS)/node_modules/.ctxtool-installed
OPENCLAW_HARNESS := tests/openclaw_harness
OPENCLAW_STAMP   := $(OPENCLAW_HARNESS)/node_modules/.ctxtool-installed
CODEX_HARNESS := tests/codex_harness
CODEX_STAMP   := $(CODEX_HARNESS)/node_modules/.ctxtool-installed
DEMO_DIR   := bench-out/demo

.DEFAULT_GOAL := help
.PHONY: help install pi-harness claude-harness codex-harness openclaw-harness browser test test-fast demo bench lint clean

help:
	@echo "make demo    repair, validate, estimate and profile the bundled broken sessions"
	@echo "make test    run the whole test suite (installs the venv and the pi agent harness)"
	@echo "make bench   run the benchmarks (500 MB generated sessions; takes a few minutes)"

# editable_mode=compat: the source folder on sys.path by a .pth line. The default editable mode imports a finder
# (pathlib, re, fnmatch, urllib) at every Python start: ~19M instructions, ~6% of `ctxtool estimate --help`.
# setuptools calls compat transitional: where it is gone, the default mode.
$(STAMP): pyproject.toml setup.py $(wildcard ctxtool/_scan*.c)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,fast]' --config-settings editable_mode=compat \
	  || $(PY) -m pip install --quiet -e '.[test,fast]'
	@touch $(STAMP)

install: $(STAMP)

# The real pi coding agent (npm), used by the tests as the judge of what ctxtool writes.
$(PI_STAMP): $(PI_HARNESS)/package.json $(PI_HARNESS)/package-lock.json
	npm ci --prefix $(PI_HARNESS) --no-audit --no-fund --loglevel=error
	@touch $(PI_STAMP)

pi-harness: $(PI_STAMP)

# The real Claude Code client (npm; its native binary ships inside a registry package, so no
# install script is run), resumed offline against a recording server: the judge of Claude Code files.
$(CLAUDE_STAMP): $(CLAUDE_HARNESS)/package.json $(CLAUDE_HARNESS)/package-lock.json
	npm ci --prefix $(CLAUDE_HARNESS) --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $(CLAUDE_STAMP)

claude-harness: $(CLAUDE_STAMP)

# The real OpenAI Codex CLI (npm; its native binary ships inside the registry package
# @openai/codex-linux-x64, so no install script is run), resumed offline against a recording
# Responses API server: the judge of Codex rollouts.
$(CODEX_STAMP): $(CODEX_HARNESS)/package.json $(CODEX_HARNESS)/package-lock.json
	npm ci --prefix $(CODEX_HARNESS) --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $(CODEX_STAMP)

codex-harness: $(CODEX_STAMP)

# The `openclaw` npm package (no install script run): its buildBootstrapContextFiles is the judge
# of `ctxtool budget`'s trimmed bootstrap files.
$(OPENCLAW_STAMP): $(OPENCLAW_HARNESS)/package.json $(OPENCLAW_HARNESS)/package-lock.json
	npm ci --prefix $(OPENCLAW_HARNESS) --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $(OPENCLAW_STAMP)

openclaw-harness: $(OPENCLAW_STAMP)

# Headless Chromium (Debian's package) for the HTML report test; best effort: without it that
# test skips and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium not installed: the HTML report browser test will skip"

test: $(STAMP) $(PI_STAMP) $(CLAUDE_STAMP) $(CODEX_STAMP) $(OPENCLAW_STAMP) browser
	CTXTOOL_REQUIRE_NATIVE=1 CTXTOOL_REQUIRE_PI=1 CTXTOOL_REQUIRE_CLAUDE=1 CTXTOOL_REQUIRE_CODEX=1 CTXTOOL_REQUIRE_OPENCLAW=1 $(PY) tests/run_suite.py

test-fast: $(STAMP)
	$(PY) tests/run_suite.py -m "not pi and not claude and not codex and not openclaw"

demo: $(STAMP)
	@rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
	@cp fixtures/demo/*.jsonl $(DEMO_DIR)/
	@echo "== ctxtool validate (before)"; $(VENV)/bin/ctxtool validate $(DEMO_DIR) || true
	@echo; echo "== ctxtool repair"; $(VENV)/bin/ctxtool repair $(DEMO_DIR) || true
	@echo; echo "== ctxtool validate (after)"; $(VENV)/bin/ctxtool validate $(DEMO_DIR)
	@if $(VENV)/bin/ctxtool estimate -h >/dev/null 2>&1; then echo; echo "== ctxtool estimate"; $(VENV)/bin/ctxtool estimate $(DEMO_DIR); fi
	@if $(VENV)/bin/ctxtool profile -h >/dev/null 2>&1; then echo; echo "== ctxtool profile"; $(VENV)/bin/ctxtool profile $(DEMO_DIR)/openclaw-tool-heavy.jsonl; fi
	@if $(VENV)/bin/ctxtool prune -h >/dev/null 2>&1; then echo; echo "== ctxtool prune --compare"; $(VENV)/bin/ctxtool prune --compare --ignore-ttl $(DEMO_DIR)/openclaw-tool-heavy.jsonl; fi
	@if $(VENV)/bin/ctxtool compact -h >/dev/null 2>&1; then echo; echo "== ctxtool compact --dry-run"; $(VENV)/bin/ctxtool compact --dry-run $(DEMO_DIR); fi
	@echo; echo "Originals are kept beside the repaired files as *.bak-<pid>-<ms> in $(DEMO_DIR)/"

bench: $(STAMP)
	@mkdir -p bench-out
	$(PY) tests/bench/run_all.py --out bench-out

clean:
	rm -rf $(VENV) bench-out .pytest_cache $(PI_HARNESS)/node_modules $(CLAUDE_HARNESS)/node_modules $(CODEX_HARNESS)/node_modules $(OPENCLAW_HARNESS)/node_modules
