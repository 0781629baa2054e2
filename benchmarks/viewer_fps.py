"""Frames per second of the viewer page: a 1280x800 canvas in headless Chromium.

    python benchmarks/viewer_fps.py [--run DIR] [--frames 2] [--size 1280x800]

Measures two networks: the default hashgrid preset fitted to the bundled drawing
(``--run`` gives a folder of ``ironlearn demo --steps 200``; without it the demo
runs into a temporary folder) and a SIREN 3x128 (the siren preset, untrained:
the cost per pixel does not depend on the weights).  Each full frame is drawn in
128-pixel tiles, each waited for, through ``ironlearnViewer.benchmark``; the
page also reports how long its own first full paint took.  Needs Chromium at
/usr/bin/chromium and Playwright (the test extra).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

from ironlearn.cli import main as ironlearn
from ironlearn.fitting import PRESETS
from ironlearn.train import save_checkpoint

CHROMIUM_ARGS = ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run"]


def siren_page(folder: str) -> str:
    preset = PRESETS["siren"]
    model = preset.build(1, preset.resolve({}, 200, 200, "binary"), np.random.default_rng(0))
    path = os.path.join(folder, "siren.npz")
    save_checkpoint(path, model, settings={"size": [200, 200], "model": "siren"})
    page = os.path.join(folder, "siren.html")
    assert ironlearn(["view", path, "-o", page, "--force"]) == 0
    return page


def measure(browser, page_path: str, width: int, height: int, frames: int) -> dict:
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"file://{page_path}#bare&size={width}x{height}")
    page.wait_for_function("window.ironlearnViewer && window.ironlearnViewer.ready", timeout=0)
    first = page.evaluate("window.ironlearnViewer.timing")
    result = page.evaluate(f"window.ironlearnViewer.benchmark({frames})")
    renderer = page.evaluate("""() => {
        const gl = document.createElement("canvas").getContext("webgl2");
        const info = gl.getExtension("WEBGL_debug_renderer_info");
        return info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
    }""")
    page.close()
    return {**result, "first_paint_ms": first["drawMs"], "renderer": renderer}


def main():
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="a run folder of 'ironlearn demo --steps 200' (default: run the demo)")
    parser.add_argument("--frames", type=int, default=2)
    parser.add_argument("--size", default="1280x800")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    with tempfile.TemporaryDirectory() as folder:
        run = args.run or os.path.join(folder, "demo")
        if not args.run:
            subprocess.run([sys.executable, "-m", "ironlearn", "demo", "--steps", "200", "--out", run, "--quiet",
                            "--device", "cpu"], check=True)
        demo_page = os.path.join(folder, "demo.html")
        assert ironlearn(["view", run, "-o", demo_page]) == 0
        pages = {"hashgrid (demo drawing, default preset)": demo_page, "siren 3x128": siren_page(folder)}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            results = {name: measure(browser, page, width, height, args.frames) for name, page in pages.items()}
            browser.close()
    renderer = next(iter(results.values()))["renderer"]
    print(f"# {datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, {renderer}")
    print(f"| network | {width}x{height} frame (ms) | frames per second | us per pixel | first paint (ms) |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in results.items():
        print(f"| {name} | {r['msPerFrame']:.0f} | {r['fps']:.3g} | {1000 * r['msPerFrame'] / (width * height):.2f} "
              f"| {r['first_paint_ms']:.0f} |")


if __name__ == "__main__":
    main()
