# irqlab: one command per job.
#
#   make demo    set up, then reproduce the thesis's Tables 4.1-4.5 and Figures 4.1-4.5 (irqlab-out/report.html),
#                the IRQ-suspension cover letter's twelve cases on an EPYC (irqlab-out/cover-letter/), the ITR paper's Figures 3, 5, 7 and 8 (irqlab-out/itr/report.html), the IAPS paper's
#                Figures 2-3 (irqlab-out/iaps/), the vIC paper's Tables 2-8 (irqlab-out/vic/) and the SR-IOV
#                paper's Figures I-IV (irqlab-out/sriov/); it ends with the index over them (irqlab-out/index.html)
#   make test    set up, then run every test (cargo test, then pytest)
#   make bench   set up, then measure the simulator: against SimPy models (bench/), irqlab bench [--sweep|--scale], the speed guard, cargo bench
#   make fuzz    set up, then fuzz the scenario parser, the engine and the Python API at length
#   make debug-check  set up, then run every scenario x profile, closed and open loop, on a debug build (its assertions on)
#   make setup   build the Python package into the repo-local virtualenv .venv/
#   make clean   remove .venv/, target/ and caches
#
# Only cargo and python3 are taken from the machine; everything else is
# installed here, pinned (requirements-dev.txt, pyproject.toml, Cargo.lock);
# the system packages the tests use (Chromium, memcached, ...) are installed
# as root with apt-get, or named (tools/system-packages.sh).
# Every target is idempotent, and `make setup` does nothing when nothing changed.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_SCENARIO ?= scenarios/thesis/bare-metal.toml
PIP := $(BIN)/python -m pip --disable-pip-version-check

# What the native module is built from (tests and benches of the crates are not).
RUST_SOURCES := Cargo.toml $(wildcard Cargo.lock) $(wildcard crates/*/Cargo.toml crates/*/build.rs) \
	$(shell find crates -path '*/src/*' -type f -name '*.rs' 2>/dev/null)

.PHONY: help setup system-packages native demo test bench fuzz debug-check clean

help:
	@sed -n '3,12s/^# \{0,1\}//p' Makefile

setup: system-packages $(VENV)/.irqlab-installed

# The few Debian packages cargo and pip cannot install (tools/system-packages.sh):
# installed when missing if run as root where apt-get exists, else named in one
# line (their tests are then skipped); silent when all are there.
# SYSTEM_PACKAGES=report only names what is missing.
SYSTEM_PACKAGES ?= install
system-packages:
	@tools/system-packages.sh $(SYSTEM_PACKAGES)

$(BIN)/python: | system-packages
	$(PYTHON) -m venv $(VENV)

$(VENV)/.dev-deps: requirements-dev.txt | $(BIN)/python
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@

# `maturin develop` builds the native module in release mode, puts it beside
# the Python sources and installs the package in editable form (Python edits
# need no rebuild) with its `irqlab` command. It installs the package's
# dependencies with pip, which would print a line per dependency already
# there; PIP_QUIET (pip's --quiet) keeps only what went wrong.
$(VENV)/.irqlab-installed: $(VENV)/.dev-deps pyproject.toml $(RUST_SOURCES)
	flock $(VENV)/.build.lock env VIRTUAL_ENV=$(abspath $(VENV)) PIP_QUIET=1 $(BIN)/maturin develop --release --quiet
	test -x $(BIN)/irqlab
	$(MAKE) --no-print-directory native
	touch $@

# Native programs the Python package runs (the preload shim, the load
# generator), copied into the package so that it finds them wherever it runs.
NATIVE := python/irqlab/_native
native:
	cargo build --release -p irqlab-preload -p irqlab-loadgen
	mkdir -p $(NATIVE)
	cp -f target/release/libirqlab_preload.so $(NATIVE)/
	if [ -x target/release/irqlab-loadgen ]; then cp -f target/release/irqlab-loadgen $(NATIVE)/; fi

# The main job: the thesis's results (Tables 4.1-4.5, Figures 4.1-4.5)
# reproduced from the simulator, printed beside the paper, with a report and
# plots in irqlab-out/; then the IRQ-suspension cover letter's twelve cases
# predicted on an EPYC 7662 in irqlab-out/cover-letter/, the ITR paper's Figures 3, 5, 7 and 8 in
# irqlab-out/itr/, the IAPS paper's Figures 2 and 3 in irqlab-out/iaps/,
# the vIC paper's Tables 2-8 in irqlab-out/vic/ and the SR-IOV paper's
# Figures I-IV in irqlab-out/sriov/.
demo: setup
	$(BIN)/irqlab reproduce thesis --out irqlab-out --sensitivity
	$(BIN)/irqlab reproduce cover-letter --out irqlab-out/cover-letter
	$(BIN)/irqlab reproduce itr --out irqlab-out/itr
	$(BIN)/irqlab reproduce iaps --out irqlab-out/iaps
	$(BIN)/irqlab reproduce vic --out irqlab-out/vic
	$(BIN)/irqlab reproduce sriov --out irqlab-out/sriov
	$(BIN)/irqlab reproduce index --out irqlab-out

# Both suites run even if the first fails; the target fails if either did.
test: setup
	@status=0; \
	cargo test --workspace --release --no-fail-fast || status=1; \
	$(BIN)/pytest -q -rs tests/python || status=1; \
	exit $$status

# The speed guard is a benchmark, not a test: on a machine shared with busy
# processes it measures the neighbours as much as the engine
# (docs/performance.md, "Guard").
bench: setup
	$(BIN)/python bench/compare_simpy.py
	$(BIN)/python bench/policy_overhead.py
	$(BIN)/irqlab bench
	$(BIN)/irqlab bench --sweep
	$(BIN)/irqlab bench --scale
	cargo test --release -p irqlab-core --test speed_guard -- --ignored --nocapture
	cargo bench -p irqlab-core

# The fuzz targets also run in `make test`, with a small budget; here with a
# long one (FUZZ_CASES parser cases; a tenth as many engine runs).
FUZZ_CASES ?= 20000
fuzz: setup
	IRQLAB_FUZZ_CASES=$(FUZZ_CASES) cargo test --release -p irqlab-core --test fuzz_scenario --test fuzz_engine
	IRQLAB_FUZZ=1 $(BIN)/pytest -q tests/python/test_fuzz_api.py

# The model's debug assertions (states it calls impossible) are off in the
# release builds everything else uses; this runs a debug build on every
# scenario file x every profile it accepts, closed and open loop, 0.02 s each
# (tools/debug_check.py), and fails on any panic; then the Rust tests that
# check debug assertions (marked ignored in a release build: frozen_core).
debug-check: setup
	cargo build -p irqlab-core --example run
	$(BIN)/python tools/debug_check.py --run target/debug/examples/run --duration 0.02
	cargo test -p irqlab-core --test frozen_core

clean:
	rm -rf $(VENV) target .pytest_cache python/irqlab/_core*.so $(NATIVE)
	find python tests -type d -name __pycache__ -prune -exec rm -rf {} +
