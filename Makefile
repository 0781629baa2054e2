# Two entry points that work on a fresh machine with Python 3.10+ and make:
#   make demo   install into .venv and fit the bundled line drawing
#   make test   install into .venv (with the test and ray extras) and run the whole suite
# and one for a machine with a GPU, whose Python already has NumPy, Pillow and CuPy (PyTorch,
# pytest and scikit-image if it can); it installs nothing and needs no internet:
#   make gpu-check [OUT=runs/gpu-check]   the tests on CuPy, the GPU benchmarks, OUT/report.md
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test gpu-check clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# The demo needs the runtime dependencies only.
$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# The tests add pytest, hypothesis, Playwright and NVRTC (to compile the CUDA kernels), and the ray extra for fit-many's Ray tests,
# which run a local Ray instance.
$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test,ray]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/ironlearn demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist loadgroup

OUT ?= runs/gpu-check
gpu-check:
	$(PYTHON) benchmarks/gpu --out $(OUT)

clean:
	rm -rf $(VENV) ironlearn-demo .pytest_cache
