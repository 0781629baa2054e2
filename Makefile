# Two entry points that work on a fresh machine with Python 3.10+ and make:
#   make demo   install into .venv and fit the bundled line drawing
#   make test   install into .venv (with the test and ray extras) and run the whole suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# The ray extra for fit-many's Ray tests, which run a local Ray instance; the demo does without it.
$(VENV)/.installed-ray: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test,ray]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/ironlearn demo

test: $(VENV)/.installed-ray
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) ironlearn-demo .pytest_cache
