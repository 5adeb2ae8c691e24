# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint docs clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch first, pinned: an unpinned torch pulls several GB of CUDA packages.
$(STAMP): $(PY) pyproject.toml
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[all]"
	touch $@

$(DEV_STAMP): $(STAMP)
	$(PIP) install -q -e ".[all,dev]"
	touch $@

demo: $(STAMP)
	-$(VENV)/bin/numlint check examples/
	$(PY) examples/monitor_demo.py --out build/demo
	$(VENV)/bin/numlint report build/demo/events.jsonl -o build/demo/report.png

test: $(DEV_STAMP)
	$(VENV)/bin/ruff check numlint tests benchmarks
	$(VENV)/bin/numlint check --no-cache numlint tests benchmarks
	$(VENV)/bin/numlint docs --check
	$(PY) -m pytest -n 2 tests

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check numlint tests benchmarks
	$(VENV)/bin/ruff format --check numlint tests benchmarks
	$(VENV)/bin/numlint check --no-cache numlint tests benchmarks

docs: $(STAMP)
	$(VENV)/bin/numlint docs

clean:
	rm -rf $(VENV) .numlint_cache build *.egg-info
