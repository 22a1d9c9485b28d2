# SPDX-License-Identifier: Apache-2.0
# The README's commands. Each installs what is missing, builds, then runs.
BUILD ?= build
# One clang build with ASan + UBSan serves both the sanitized test suite and the fuzzers
# (coverage instrumentation costs the tests little; a second sanitized build of the
# libraries would cost CI as much as the release build).
SAN_BUILD ?= build-san
# The sanitized suite: what reads outside bytes, owns memory or runs threads (tests/CMakeLists.txt).
SAN_TESTS ?= core;autodiff;graph;function;data;io;tf;serving;onnx
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

FUZZ_TIME ?= 20
FUZZ_TARGETS = graph_text_fuzz graph_def_fuzz idx_fuzz tfrecord_fuzz example_fuzz bundle_fuzz saved_model_fuzz \
  npy_fuzz rest_request_fuzz grpc_request_fuzz onnx_import_fuzz tf_checkpoint_fuzz tf_import_fuzz tfjs_model_fuzz \
  keras_file_fuzz lite_model_fuzz

# What `make demo` builds: the libraries, the `deepflow` command and the demo, not the tests.
DEMO_TARGETS = demo deepflow_cli
PREFIX ?= /usr/local

.PHONY: all deps deps-build deps-fuzz peers tf-models tf-models-apps python build build-demo demo test test-asan bench fuzz install clean

all: build

# Debian packages to configure and build, and MNIST (the demo's data).
deps-build:
	@scripts/install-deps.sh build
	@scripts/fetch-data.sh

# Everything the tests use as well: test packages, npm material, the torchvision ONNX models.
deps: deps-build
	@scripts/install-deps.sh build test
	@scripts/fetch-test-deps.sh npm onnx lite

# .venv-peers: TensorFlow 2.21 and the other oracles, pinned (bench/peers/requirements.txt).
peers:
	@scripts/install-peers.sh

# data/tf_models: the TensorFlow-written corpus (docs/tf_corpus.md), made by .venv-peers'
# TensorFlow, hence after peers (which needs deps' python3-venv). Cached: a second run skips
# every model without importing TensorFlow. tf-models-apps adds the five keras.applications
# models (~7 min cold, ~850 MB), for the benchmarks and the tests that need them.
tf-models: peers
	@scripts/fetch-test-deps.sh tf

tf-models-apps: peers
	@scripts/fetch-test-deps.sh tf-apps

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps peers tf-models $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

build-demo: deps-build $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS)

demo: build-demo
	$(BUILD)/examples/demo $(BUILD)/mnist_cnn.weights 10 $(BUILD)/mnist_cnn
	@echo "The saved model, run by the deepflow command in a separate process:"
	$(BUILD)/tools/cli/deepflow saved_model run --dir $(BUILD)/mnist_cnn --tag_set serve \
	  --signature_def serving_default --input_exprs "$$($(BUILD)/tools/cli/deepflow saved_model show --dir $(BUILD)/mnist_cnn --tag_set serve --signature_def serving_default | sed -n "s/.*inputs\['\(.*\)'\].*/\1/p" | head -1)=np.zeros((1,28,28,1))"

# The Python package in place: .venv (python/requirements.txt) imports python/deepflow,
# into which this build writes the extension module (an editable install that reuses the
# CMake build; `pip install .` is the other way, see the README).
PY_CMAKE_FLAGS = -DDEEPFLOW_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(CURDIR)/.venv/bin/python -DDEEPFLOW_PYTHON_INPLACE=ON
python: deps-build $(BUILD)/build.ninja
	@scripts/install-venv.sh python
	@cmake -S . -B $(BUILD) $(PY_CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target deepflow_python
	@echo "$(CURDIR)/python" > "$$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/deepflow-inplace.pth"

test: build python
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	DEEPFLOW_BUILD_DIR=$(CURDIR)/$(BUILD) .venv/bin/python -m pytest -q python/tests

# The sanitized build (clang++, ASan + UBSan, libFuzzer coverage): -O1 with line tables
# keeps reports readable and the suite quick. CI runs test-asan after `make test`, then fuzz.
$(SAN_BUILD)/build.ninja:
	cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DDEEPFLOW_BUILD_FUZZ=ON \
	  -DDEEPFLOW_BUILD_BENCH=OFF -DDEEPFLOW_BUILD_EXAMPLES=OFF "-DDEEPFLOW_TEST_COMPONENTS=$(SAN_TESTS)" \
	  -DDEEPFLOW_TEST_SHARDS=4 $(CMAKE_FLAGS)

deps-fuzz: deps
	@scripts/install-deps.sh fuzz

test-asan: deps-fuzz $(SAN_BUILD)/build.ninja
	cmake --build $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

bench: build
	scripts/install-deps.sh peers
	scripts/run-bench.sh $(BUILD)

# libFuzzer targets, in the sanitized build: each parser runs FUZZ_TIME seconds from the seed
# corpus in fuzz/corpus/<target>; new inputs go to $(FUZZ_BUILD)/corpus, crashes to $(FUZZ_BUILD).
FUZZ_BUILD = $(SAN_BUILD)
fuzz: deps-fuzz $(SAN_BUILD)/build.ninja
	cmake --build $(SAN_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  ASAN_OPTIONS=detect_leaks=1 $(FUZZ_BUILD)/fuzz/$$t -max_total_time=$(FUZZ_TIME) -timeout=10 \
	    -rss_limit_mb=4096 -print_final_stats=1 -print_funcs=0 -dict=fuzz/$$t.dict -artifact_prefix=$(FUZZ_BUILD)/ \
	    $(FUZZ_BUILD)/corpus/$$t fuzz/corpus/$$t; \
	done

# Headers, shared libraries, deepflowConfig.cmake and deepflow.pc under $(PREFIX).
install: build-demo
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
