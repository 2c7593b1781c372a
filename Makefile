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

# Everything (tests, benchmarks, the Python package), or only what the CLI
# and the demo load.
FULL_FLAGS := -DTRAINSCOPE_BUILD_TESTS=ON -DTRAINSCOPE_BUILD_BENCH=ON -DTRAINSCOPE_PYTHON=ON
DEMO_FLAGS := -DTRAINSCOPE_BUILD_TESTS=OFF -DTRAINSCOPE_BUILD_BENCH=OFF -DTRAINSCOPE_PYTHON=OFF

.PHONY: all deps deps-build configure build demo-build demo test test-asan bench clean format tidy

all: build

deps:
	@./scripts/install-deps.sh --all

deps-build:
	@./scripts/install-deps.sh --build

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(FULL_FLAGS) $(CMAKE_FLAGS) > $(BUILD_DIR).configure.log 2>&1 \
	  || (cat $(BUILD_DIR).configure.log; exit 1)

build: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS)

# The CLI and its libtorch half (which the demo's `train` loads) only.
demo-build: deps-build
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(DEMO_FLAGS) $(CMAKE_FLAGS) > $(BUILD_DIR).configure.log 2>&1 \
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
test-asan: deps
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSCOPE_SANITIZE=ON -DTRAINSCOPE_UNITY=OFF \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
	  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DTRAINSCOPE_WITH_TORCH=OFF -DTRAINSCOPE_BUILD_BENCH=OFF -DTRAINSCOPE_WEB=OFF \
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
