# Two commands on a fresh machine (Python 3.12 or newer, found by tools/find-python):
#   make demo   creates .venv, installs attnbench, trains LRA ListOps (cpu preset, generated data)
#   make test   creates .venv, installs attnbench with test extras, runs ruff and the test suite
# Installs take the exact versions in constraints.txt; EXTRAS=cuda (or tpu) adds the accelerator
# plugin. An existing .venv on an older Python is rebuilt.
PYTHON ?= $(shell tools/find-python 2>/dev/null)
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= test,molecules,pointcloud,standins
# The ZINC stand-in's MOSES molecules: a wheel whose declared dependencies (torch, pomegranate
# 0.12) the stand-in never uses and pip cannot build here, installed without them (pyproject.toml).
NO_DEPS_STANDINS := molsets
WORKDIR ?= runs/listops-cpu
comma := ,
STAMP = $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: demo test test-slow wheel-check test-gpu gpu-check gpu-venv lint venv clean

$(VENV)/.installed-%: pyproject.toml constraints.txt
	@if [ -z "$(PYTHON)" ]; then tools/find-python; exit 1; fi
	@if ! $(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) && $(BIN)/pip install --quiet --upgrade pip; fi
	$(BIN)/pip install --quiet -c constraints.txt -e '.[$(EXTRAS)]'
	$(if $(findstring standins,$(EXTRAS)),$(BIN)/pip install --quiet --no-deps -c constraints.txt $(NO_DEPS_STANDINS))
	touch $@

venv: $(STAMP)

demo: venv
	$(BIN)/python -m scripts.train --config configs/lra/listops.py:preset=cpu --workdir $(WORKDIR)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# `make test` (what CI runs) stays under 10 minutes on 2 cores; `make test-slow` runs the
# longer tier (tests marked `slow`: the full LRA task x mechanism grid, extra fault injections).
# The tests' programs are small and compiled once each, so compiling dominates: XLA's CPU
# backend at optimisation level 0 (LLVM without its optimisation passes; the same HLO, no
# fast-math) takes about 25-40% less CPU time for the suite. Training and benchmarks keep the
# default level. The flag reaches the trainer subprocesses the tests start through the
# environment.
TEST_ENV := XLA_FLAGS="--xla_backend_optimization_level=0 $$XLA_FLAGS"

test: lint
	$(TEST_ENV) $(BIN)/python -m pytest -q -n 2 --durations=15 -m "not slow"

test-slow: venv
	$(TEST_ENV) $(BIN)/python -m pytest -q -n 2 --durations=15 -m slow

# The wheel as a user installs it: built, installed into a fresh venv without extras and run
# from an empty directory (a smoke training per domain, reproduce + tables), then with the
# molecules and pointcloud extras (tools/check-wheel; CI runs it after `make test`).
wheel-check:
	PYTHON=$(PYTHON) tools/check-wheel

# On a GPU machine. GPU_PYTHON: an interpreter with CUDA jax and attnbench's dependencies; by
# default .venv, given the cuda extra (GPU_EXTRAS) on first use. `make test-gpu` runs the fast
# suite on the GPU plus the tests marked `gpu` (fused kernels at bf16; skipped on a CPU);
# `make gpu-check` then measures every accelerator target into results/bench/gpu/.
GPU_EXTRAS ?= test,cuda,molecules,pointcloud,standins
GPU_PYTHON ?= $(BIN)/python
GPU_CHECK_ARGS ?=  # e.g. --accuracy 2: also train ListOps in f32 and bf16, 2 seeds each

gpu-venv:
	$(if $(filter $(BIN)/python,$(GPU_PYTHON)),$(MAKE) venv EXTRAS=$(GPU_EXTRAS))

test-gpu: gpu-venv
	$(GPU_PYTHON) -c 'import jax, sys; b = jax.default_backend(); sys.exit(0 if b == "gpu" else f"error: make test-gpu needs a GPU; jax sees {b!r}")'
	$(GPU_PYTHON) -m pytest -q --durations=15 -m "not slow" -p no:cacheprovider

# The targets are measured even when a GPU test fails (the test log is kept beside them, paths
# relative to the checkout); the exit status is then the tests'.
GPU_OUT := results/bench/gpu
gpu-check: gpu-venv
	@mkdir -p $(GPU_OUT)
	@{ $(MAKE) --no-print-directory test-gpu 2>&1; echo $$? > $(GPU_OUT)/.tests-status; } \
	  | sed -u 's|$(CURDIR)/||g' | tee $(GPU_OUT)/test-gpu.log
	@tests=$$(cat $(GPU_OUT)/.tests-status); rm -f $(GPU_OUT)/.tests-status; \
	  $(GPU_PYTHON) -m scripts.gpu_check --out $(GPU_OUT) $(GPU_CHECK_ARGS) || exit $$?; \
	  if [ "$$tests" != 0 ]; then echo "gpu-check: make test-gpu failed; see $(GPU_OUT)/test-gpu.log"; fi; \
	  exit $$tests

clean:
	rm -rf $(VENV) runs
