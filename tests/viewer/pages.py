"""Opening viewer pages in the test browser and comparing what they draw."""

import base64
import io
import json
import os
import re

import numpy as np
from PIL import Image

READY = "window.ironlearnViewer && window.ironlearnViewer.ready"
#: How close a page's drawing must come to ``ironlearn render``'s.
MIN_PSNR_DB = 40.0
#: An init script that takes WebGL2 away, as a browser without it: the page falls back to the CPU.
NO_WEBGL2 = """
const getContext = HTMLCanvasElement.prototype.getContext;
HTMLCanvasElement.prototype.getContext = function (type, ...rest) {
  return type === "webgl2" ? null : getContext.call(this, type, ...rest);
};
"""


def data_of(page_path) -> dict:
    """The JSON the page at ``page_path`` carries."""
    text = page_path.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="ironlearn-data">(.*?)</script>', text, re.S)[1])


class PageErrors(list):
    """Console errors and uncaught exceptions of a page, as text."""

    def watch(self, page):
        page.on("console", lambda message: message.type == "error" and self.append(message.text))
        page.on("pageerror", lambda error: self.append(f"uncaught: {error}"))
        return page


def bare_hash(size, view=None, cpu=False) -> str:
    text = f"#bare&size={size[0]}x{size[1]}"
    if view is not None:
        text += "&view=" + ",".join(repr(float(v)) for v in view)
    return text + ("&cpu" if cpu else "")


def photograph(browser, page_path, size, view=None, cpu=False, init_script=None):
    """Open ``page_path#bare&size=...`` and screenshot its canvas.

    Returns
    -------
    pixels : ndarray ``(h, w, 3)`` uint8
    mode : "webgl2" or "cpu"
    errors : PageErrors
    """
    errors = PageErrors()
    page = errors.watch(browser.new_page(viewport={"width": max(size[0], 100), "height": max(size[1], 100)}))
    try:
        if init_script:
            page.add_init_script(init_script)
        page.goto(f"file://{os.fspath(page_path)}{bare_hash(size, view, cpu)}")
        page.wait_for_function(READY, timeout=120_000)
        shot = page.screenshot(clip={"x": 0, "y": 0, "width": size[0], "height": size[1]})
        mode = page.evaluate("window.ironlearnViewer.mode")
    finally:
        page.close()
    return np.asarray(Image.open(io.BytesIO(shot)).convert("RGB")), mode, errors


def read_rgb(path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def psnr_db(a, b) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def unpacked(browser, page_path) -> np.ndarray:
    """The float32 buffer the page at ``page_path`` unpacked from its payload."""
    page = browser.new_page()
    try:
        page.goto(f"file://{os.fspath(page_path)}{bare_hash((16, 16))}")
        page.wait_for_function(READY, timeout=120_000)
        text = page.evaluate("""() => {
          const bytes = new Uint8Array(window.ironlearnViewer.weights.buffer);
          let binary = "";
          for (let i = 0; i < bytes.length; i += 8192) binary += String.fromCharCode(...bytes.subarray(i, i + 8192));
          return btoa(binary);
        }""")
    finally:
        page.close()
    return np.frombuffer(base64.b64decode(text), "<f4")


def refusal(browser, page_path) -> tuple[str | None, bool, str]:
    """Open the page at ``page_path`` and wait until it draws or refuses: ``(the error it gives,
    whether it drew, the text shown in its place)``."""
    page = browser.new_page()
    try:
        page.goto(f"file://{os.fspath(page_path)}")
        page.wait_for_function("window.ironlearnViewer && (window.ironlearnViewer.error || window.ironlearnViewer.ready)",
                               timeout=60_000)
        error, ready = page.evaluate("[window.ironlearnViewer.error, window.ironlearnViewer.ready]")
        shown = page.inner_text("#error") if page.is_visible("#error") else ""
    finally:
        page.close()
    return error, ready, shown
