# Novelsite: `make demo` and `make test` work on a fresh machine (they create the venv themselves).
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# The suite runs on every core (pytest-xdist), a test file per process at a time so that a module's
# shared fixtures are built once; `make test PYTEST_WORKERS=0` runs it in one process.
PYTEST_WORKERS ?= auto

# Django 6 needs Python >= 3.12. Take the first interpreter that is new enough, including pyenv
# installs whose shims are not on the global version.
PYTHON_FOR_VENV ?= $(shell for c in python3.13 python3.12 $$HOME/.pyenv/versions/3.13*/bin/python3 \
	$$HOME/.pyenv/versions/3.12*/bin/python3 /usr/local/bin/python3.13 /usr/local/bin/python3.12 python3; do \
	if "$$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then echo "$$c"; break; fi; done)

.PHONY: demo test venv migrate run worker beat check clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@if [ -z "$(PYTHON_FOR_VENV)" ]; then echo "Python >= 3.12 is required (python3.13 or python3.12 not found)."; exit 1; fi
	@echo "Creating $(VENV) with $(PYTHON_FOR_VENV)"
	@[ -x $(PY) ] || $(PYTHON_FOR_VENV) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

migrate: venv
	@$(PY) manage.py migrate --noinput -v0

# The demo: embedded defaults (SQLite file, eager Celery, offline LLM): load the demo novel (afresh,
# so that a second run writes the same chapters again), write its first 3 chapters, export the book
# as a canonical tree, show its status.
demo: migrate
	@$(PY) manage.py novel demo --reset
	@$(PY) manage.py novel write demo --chapters 3
	@rm -rf demo-export && $(PY) manage.py novel export demo demo-export
	@$(PY) manage.py novel status demo

# The whole suite. Exit code 5 means pytest collected no test: fine for a narrowed local run,
# a failure on CI, where it would mean the suite silently vanished.
test: venv
	@$(PY) -m pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; if [ -n "$$CI" ]; then exit 1; else exit 0; fi; fi; \
	exit $$rc

check: venv
	@$(PY) -m ruff check .
	@$(PY) manage.py check
	@$(PY) manage.py makemigrations --check --dry-run

run: migrate
	@$(PY) manage.py runserver

worker: venv
	@$(VENV)/bin/celery -A novelsite worker -l info --concurrency 4 -O fair

beat: venv
	@$(VENV)/bin/celery -A novelsite beat -l info

clean:
	rm -rf $(VENV) db.sqlite3 .pytest_cache .hypothesis
