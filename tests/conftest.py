"""Shared fixtures: every backend test runs on NumPy, and on CuPy where a GPU is present; a real
headless Chromium (the system's: ``.ci/run`` installs it with apt-get; nothing downloads one;
WebGL2 comes from SwiftShader, Chromium's software GPU), launched once per session, for the
viewer's pages and compare's report."""

import os
import sys

# make test runs two pytest-xdist workers on two cores. Each worker's BLAS gets one thread, as do
# the commands the tests start: two workers each spinning two BLAS threads made some tests 30 times
# slower. Set before NumPy loads, which reads these once.
if os.environ.get("PYTEST_XDIST_WORKER"):
    assert "numpy" not in sys.modules, "NumPy was imported before tests/conftest.py could set its threads"
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ironlearn.backend import Backend, cuda_available  # noqa: E402

BACKENDS = ["cpu"] + (["cuda"] if cuda_available() else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    """A float32 Backend on each available device."""
    return Backend(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def run_folder(tmp_path, capsys):
    """A short fit's run folder, made by the command (its checkpoint, model and time-lapse)."""
    from helpers import FAST, make_picture, run_cli

    picture = make_picture(tmp_path / "disc.png")
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--steps", 20, *FAST)
    assert code == 0, err
    return tmp_path / "run"


@pytest.fixture
def one_thread_count(monkeypatch):
    """Every fit of fixed steps measures its BLAS thread count once and keeps it, and two counts
    give other last bits: a test that compares two fresh fits bit for bit makes both find one
    thread faster (a resume reads the count its run saved, and needs no help)."""
    from ironlearn.train import threads

    monkeypatch.setattr(threads, "MORE_THREADS_GAIN", 0.0)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",  # WebGL2 without a GPU
    # No internet here: without these Chromium fills the log with refused connections.
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (.ci/run installs it with apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (it is in the test extra: pip install -e '.[test]')")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
