"""A real headless Chromium for the viewer's tests, launched once per session.

The browser is the system's (``.ci/run`` installs it with apt-get); nothing
downloads one.  WebGL2 comes from SwiftShader, Chromium's software GPU.
"""

import os

import pytest

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
