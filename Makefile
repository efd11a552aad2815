# Graph Lab. README's two commands: `make lab` (run the course) and `make test` (pass the tests).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.labkit-installed
PORT ?= 8888
PROFILE ?= standard
# Jupyter refuses to run as root unless told (containers, CI)
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
# MindSpore 2.8 + TensorFlow in one process need protobuf's pure-Python implementation.
export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION := python

.PHONY: install lab test test-standard lint lint-fix bench doctor app browser book clean

# Re-installs only when pyproject.toml changed since the last install (idempotent, fast otherwise).
# uv installs the same pins from pip's own sources in well under pip's time (tools/install.py);
# where uv is missing or fails, pip installs.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip uv
	$(PY) tools/install.py -e '.[lab,test]' || $(PY) -m pip install --quiet -e '.[lab,test]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (Graph Lab)" \
	    --env PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION python >/dev/null
	@touch $(STAMP)

install: $(STAMP)

# JupyterLab opens the learner's own copy, my-notebooks/ (tools/working_copy.py): runs save their
# outputs there, so the tracked notebooks/ stay as git has them and `git pull` updates the course.
lab: install
	$(PY) tools/working_copy.py --to my-notebooks
	LABKIT_PROFILE=$(PROFILE) $(VENV)/bin/jupyter lab --port=$(PORT) $(ROOT_FLAG) $(LAB_ARGS) my-notebooks/00_welcome_and_setup.ipynb

# Chromium for the browser tests (Debian's package). Where it cannot be installed the browser
# tests are skipped, except under CI=true on a machine with apt, where that fails the run.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || { if [ "$(CI)" = true ] && command -v apt-get >/dev/null; then \
	           echo "error: CI=true and chromium could not be installed with apt-get" >&2; exit 1; \
	         else echo "note: chromium is not installed; the browser tests will be skipped"; fi; }; }

# ruff: the linter and the formatter (settings in pyproject.toml), over code and notebooks alike
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

lint-fix: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The unit tests, then every notebook once, under nbval, under the smoke profile, on two
# pytest-xdist workers (--dist loadfile: a file's tests, or a notebook's cells, stay on one
# worker, in their order); the executed copies are saved for the course site (make book reuses
# them).
test: install browser lint
	LABKIT_PROFILE=smoke $(PY) -m pytest tests notebooks -m "not book" --nbval-lax --nbval-current-env \
	    --nbval-cell-timeout=900 -p no:cacheprovider --save-executed build/executed/smoke \
	    -n 2 --dist loadfile

# The course site (Jupyter Book 2, on Node.js): every notebook with its outputs, executed under
# smoke unless PROFILE is given (make book PROFILE=standard for a release). Notebooks that make test already
# executed under that profile are reused; the others run now (with their time and memory
# recorded in build/notebook-costs-PROFILE.json). Launch links: BOOK_REPO (the public
# repository), BOOK_BRANCH, BOOK_HUB (a JupyterHub with nbgitpuller). Site: build/book/_build/html.
BOOK_PROFILE := $(if $(filter command line environment,$(origin PROFILE)),$(PROFILE),smoke)
BOOK_EXECUTE ?= auto
BOOK_LINKS = $(if $(BOOK_REPO),--repo $(BOOK_REPO)) $(if $(BOOK_BRANCH),--branch $(BOOK_BRANCH)) \
    $(if $(BOOK_HUB),--hub $(BOOK_HUB))
book: install
	$(PY) book/build.py --profile $(BOOK_PROFILE) --execute $(BOOK_EXECUTE) $(BOOK_LINKS)

# The release check: the course site built from make test's executed copies and its tests in
# Chromium (-m book); then, under the standard profile, what `make test` (smoke) leaves out: the tests
# marked costly (torch.compile training and inference graphs, the export cross-checks, a real
# ONNX export) and the notebooks whose cells skip work under smoke (06: every training mode,
# torch.compile and XLA included; 07: the isolated inference cells; 07b: LoadGen at six rates;
# 09: the quick benchmark); and every notebook twice in one kernel (make test runs 09 only).
STANDARD_NOTEBOOKS := notebooks/06_resnet50_training_benchmark.ipynb \
    notebooks/07_inference_and_deployment.ipynb notebooks/07b_serving_under_load.ipynb \
    notebooks/09_selection_guide.ipynb
test-standard: install browser
	$(MAKE) book
	LABKIT_PROFILE=smoke $(PY) -m pytest tests -m book -p no:cacheprovider
	LABKIT_PROFILE=standard $(PY) -m pytest tests -m costly -p no:cacheprovider
	LABKIT_PROFILE=standard $(PY) -m pytest $(STANDARD_NOTEBOOKS) --nbval-lax --nbval-current-env \
	    --nbval-cell-timeout=3600 -p no:cacheprovider
	LABKIT_PROFILE=smoke LABKIT_TWICE=all $(PY) -m pytest tests/test_notebooks_twice.py -p no:cacheprovider

APP_PORT ?= 8866
# The selection guide as a standalone web page (Voila): http://localhost:$(APP_PORT)/, with the
# template in app/jupyter that fetches nothing from a CDN
app: install
	LABKIT_PROFILE=$(PROFILE) JUPYTER_PATH=$(CURDIR)/app/jupyter $(VENV)/bin/voila app/selection_guide.ipynb --template=graphlab --port=$(APP_PORT) --no-browser $(VOILA_ARGS)

# The headless benchmark in every precision: fp32, and the bf16 and int8 paths where a framework
# has them (the others are recorded unsupported, saying why); PRECISION=fp32 for fp32 alone.
PRECISION ?= fp32,bf16,int8
bench: install
	$(PY) -m labkit bench --profile $(PROFILE) --precision $(PRECISION)

doctor: install
	$(PY) -m labkit doctor

clean:
	rm -rf $(VENV) .pytest_cache results build
