# trainscope — the two commands a newcomer runs are `make demo` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), build in
# Release mode with ccache when present, and run. `make demo` installs and
# builds only what the CLI and the demo need (docs/first-run.md has the
# timings); `make test` installs and builds everything else in the same
# build folder.

BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
JOBS      ?= $(shell nproc)
CMAKE_FLAGS ?=

# Torch comes from a Python environment (docs/torch.md). By default .venv,
# made here by `python3 -m venv` with the pins of requirements/torch.txt
# (PyPI's wheel; pip's cache keeps a second machine from downloading it
# twice). PYTHON=/path/to/bin/python builds against your own environment's
# torch instead (a supported 2.x; configure says which), and leaves it as it is.
PYTHON ?=
VENV   ?= .venv
ifeq ($(strip $(PYTHON)),)
TORCH_PYTHON := $(abspath $(VENV))/bin/python
PY_CORE      := $(VENV)/.trainscope-torch-core
PY_ENV       := $(VENV)/.trainscope-torch
PY_TEST_ENV  := $(VENV)/.trainscope-test
else
TORCH_PYTHON := $(PYTHON)
PY_CORE      :=
PY_ENV       :=
PY_TEST_ENV  := python-test-check
endif
# What the C++ build and the CLI load of torch: the wheel itself and the two
# CUDA runtime libraries libtorch_cpu links (1.3 GB, 37 s to install here);
# the rest of requirements/torch.txt (cuDNN, cuBLAS, NCCL, triton, ...: 4 GB
# more) only `import torch` needs. make demo installs these, make test all.
TORCH_CORE := torch nvidia-cuda-runtime nvidia-cuda-cupti
# The build backend's pinned wheels, for the offline `pip install .` test.
ifeq ($(strip $(PYTHON)),)
WHEELHOUSE := $(abspath $(VENV))/wheelhouse
else
WHEELHOUSE := $(abspath $(BUILD_DIR))/wheelhouse
endif
CMAKE_TORCH := -DTRAINSCOPE_TORCH_PYTHON=$(TORCH_PYTHON)

# ccache (when installed) keyed by paths relative to each build folder, the
# precompiled torch header included: the packaging test's `pip install .`
# builds in BUILD_DIR-wheel and takes what this build compiled (260 s of the
# torch half in 23 s here) instead of compiling it all again.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_NOHASHDIR := 1

# Everything (tests, benchmarks, the Python package), or only what the CLI
# and the demo load.
FULL_FLAGS := -DTRAINSCOPE_BUILD_TESTS=ON -DTRAINSCOPE_BUILD_BENCH=ON -DTRAINSCOPE_PYTHON=ON
DEMO_FLAGS := -DTRAINSCOPE_BUILD_TESTS=OFF -DTRAINSCOPE_BUILD_BENCH=OFF -DTRAINSCOPE_PYTHON=OFF

.PHONY: all deps deps-build venv venv-full configure build demo-build demo test test-asan bench clean format tidy python-test-check

all: build

deps:
	@./scripts/install-deps.sh --all

deps-build:
	@./scripts/install-deps.sh --build

venv: $(PY_CORE)
venv-full: $(PY_ENV)

# $(call need_gb,N): stops with one line when VENV's disk has under N GB
# free, rather than pip's OSError halfway through an install.
need_gb = avail=$$(df -Pk $(dir $(abspath $(VENV))) | awk 'NR == 2 { print int($$4 / 1048576) }'); \
  test "$$avail" -ge $(1) || { echo "venv: installing torch into $(VENV) needs about $(1) GB free and its disk has $$avail GB: free some space, or build against an environment of your own (PYTHON=/path/to/bin/python, docs/torch.md)" >&2; exit 1; }

# The pins of TORCH_CORE, as requirements/torch.txt has them.
$(VENV)/.trainscope-torch-core: requirements/torch.txt
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	@echo "venv: installing torch's C++ libraries into $(VENV) (PyPI's wheel, 1.3 GB the first time)"
	@$(call need_gb,3)
	@$(VENV)/bin/python -m pip install -q --no-deps \
	  $$(grep -E '^($(shell echo $(TORCH_CORE) | tr ' ' '|'))==' requirements/torch.txt)
	@touch $@

# torch and everything it pulls, exactly as pinned (--no-deps: nothing
# unpinned comes in; pip check: the pins agree with each other). A few pins
# at a time: pip holds every wheel of one call unpacked beside what it
# installs, and the largest (cuDNN, cuBLAS, NCCL) are each over 500 MB.
$(VENV)/.trainscope-torch: requirements/torch.txt $(VENV)/.trainscope-torch-core
	@echo "venv: installing the rest of requirements/torch.txt into $(VENV) (4 GB the first time)"
	@$(call need_gb,6)
	@grep -E '^[A-Za-z]' requirements/torch.txt | xargs -n 4 $(VENV)/bin/python -m pip install -q --no-deps
	@$(VENV)/bin/python -m pip check -q > /dev/null || $(VENV)/bin/python -m pip check
	@touch $@

# The tests' Python packages (requirements/interop.txt: Lightning and
# transformers, whose callbacks tests/python checks with their real
# trainers), and the build backend's wheels for the packaging test's
# offline `pip install .` (tests/package/wheel_test.sh).
# mlflow's requirements for its server and models, which its client and
# tracking stores never import (requirements/interop.txt): left out, and the
# only lines of `pip check` that may stay.
MLFLOW_LEFT_OUT := docker|flask|flask-cors|graphene|gunicorn|huey|matplotlib|pandas|pyarrow|scikit-learn|scipy|skops
$(VENV)/.trainscope-test: requirements/test.txt requirements/interop.txt $(VENV)/.trainscope-torch
	@$(VENV)/bin/python -m pip install -q --no-deps -r requirements/test.txt
	@$(VENV)/bin/python -m pip install -q --no-deps -r requirements/interop.txt
	@out=$$($(VENV)/bin/python -m pip check 2>&1) || ! echo "$$out" | grep -vE \
	  '^mlflow [0-9.]+ requires ($(MLFLOW_LEFT_OUT)), which is not installed\.$$'
	@$(VENV)/bin/python -m pip download -q --no-deps -d $(WHEELHOUSE) -r requirements/build.txt
	@touch $@

# With PYTHON=, the environment is the user's: it is checked, not changed.
python-test-check:
	@$(TORCH_PYTHON) -c "import pytest" 2>/dev/null || { echo "make test: $(TORCH_PYTHON) has no pytest: pip install -r requirements/test.txt there" >&2; exit 2; }
	@$(TORCH_PYTHON) -m pip download -q --no-deps -d $(WHEELHOUSE) -r requirements/build.txt

configure: deps $(PY_ENV) $(PY_TEST_ENV)
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(FULL_FLAGS) $(CMAKE_TORCH) \
	  -DTRAINSCOPE_WHEELHOUSE=$(WHEELHOUSE) $(CMAKE_FLAGS) > $(BUILD_DIR).configure.log 2>&1 \
	  || (cat $(BUILD_DIR).configure.log; exit 1)

build: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS)

# The CLI and its libtorch half (which the demo's `train` loads) only.
demo-build: deps-build $(PY_CORE)
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(DEMO_FLAGS) $(CMAKE_TORCH) $(CMAKE_FLAGS) > $(BUILD_DIR).configure.log 2>&1 \
	  || (cat $(BUILD_DIR).configure.log; exit 1)
	@cmake --build $(BUILD_DIR) -j$(JOBS) --target trainscope_cli trainscope_torch_commands

demo: demo-build
	@./scripts/demo.sh $(BUILD_DIR)/bin/trainscope

# The whole suite: the Release build's tests, then the sanitizer build's
# tests and fuzzers (test-asan).
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)
	@$(MAKE) --no-print-directory test-asan

# AddressSanitizer + UBSan build (clang) of everything that does not need
# libtorch, with the libFuzzer targets of tests/fuzz run for a bounded time.
# At -O1 with line tables only (all a sanitizer's report needs); the CLI and
# the test programs at -O0 (CMakeLists.txt): optimising them was most of
# this build's time.
test-asan: deps $(PY_ENV) $(PY_TEST_ENV)
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSCOPE_SANITIZE=ON -DTRAINSCOPE_UNITY=OFF \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
	  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DTRAINSCOPE_WITH_TORCH=OFF -DTRAINSCOPE_BUILD_BENCH=OFF -DTRAINSCOPE_WEB=OFF \
	  -DTRAINSCOPE_TEST_PYTHON=$(TORCH_PYTHON) \
	  > $(ASAN_DIR).configure.log 2>&1 \
	  || (cat $(ASAN_DIR).configure.log; exit 1)
	@cmake --build $(ASAN_DIR) -j$(JOBS)
	@cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)

bench: build
	@for b in $(BUILD_DIR)/bench/*_bench; do echo "== $$b"; $$b; done
	@echo "== C++ vs Python training step"; ./bench/train_vs_python.sh $(BUILD_DIR)
	@echo "== trainer vs a bare libtorch loop"; ./bench/trainer_vs_bare.sh $(BUILD_DIR)
	@echo "== demo: default threads vs 1"; ./bench/demo_threads.sh $(BUILD_DIR)
	@echo "== CLI startup"; $(BUILD_DIR)/bench/cli_startup

format:
	@clang-format -i $$(git ls-files '*.cc' '*.h')

tidy: configure
	@clang-tidy -p $(BUILD_DIR) --quiet $$(git ls-files 'src/*.cc')

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(BUILD_DIR).configure.log $(ASAN_DIR).configure.log
