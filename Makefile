# CWM: one entry point for setting up, testing, demoing and benchmarking.
#   make demo   - set up (venv, pinned deps, native core) and run the demo
#   make test   - set up and run the C++ (ctest) and Python (pytest) tests
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEPS   := $(VENV)/.deps-installed

.PHONY: venv build test test-cpp test-py demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(DEPS): requirements.txt constraints.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt -c constraints.txt
	touch $@

venv: $(DEPS)

# The native module cwm._native (setup.py reads src/sources.txt); editable install.
build: $(DEPS)
	$(BIN)/pip install -q --no-build-isolation --no-deps -e .

test-cpp:
	cmake -S . -B build/cmake -DCMAKE_BUILD_TYPE=Release > /dev/null
	cmake --build build/cmake -j2
	cd build/cmake && ctest --output-on-failure

test-py: build
	$(BIN)/python -m pytest -q tests

test: build test-cpp test-py

demo: build
	$(BIN)/python -m cwm demo

bench: build
	$(BIN)/python bench/trace_features.py
	$(BIN)/python bench/fast_tuning.py
	$(BIN)/python bench/report.py

clean:
	rm -rf build python/cwm/*.so python/*.egg-info
