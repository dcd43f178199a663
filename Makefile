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

$(TEST_STAMP): pyproject.toml | $(PY)
	$(PIP) install -q -e '.[test]'
	touch $@ $(STAMP)

run: $(STAMP)
	$(VENV)/bin/valet chat

doctor: $(STAMP)
	$(VENV)/bin/valet doctor

test: $(TEST_STAMP)
	$(PY) -m pytest -q

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(TEST_STAMP)
	$(PY) -m tests.bench

clean:
	rm -rf $(VENV) build *.egg-info
