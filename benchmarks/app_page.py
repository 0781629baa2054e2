"""The page for any compressed file (``ironlearn view --app``) on real files: how long the page
takes to decode each one in Chromium, against Python's decoder, and whether it decodes to the
same latents and float buffer (to the bit) as Python.

    python benchmarks/app_page.py FILE.ilc [FILE.ilc ...]

Prints a markdown table: per file its bytes, Python's decode (``codec.read``) and the page's
(``IL.readIlc``: header, both sections through the WebAssembly range decoder; then
``IL.pictureData``: the plan's buffer and shader), each the median of three, and whether the
page's buffer is ``build_picture_plan``'s bit for bit.  Needs Playwright and Chromium (the test
extra; /usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from ironlearn import codec
from ironlearn.viewer import build_picture_plan, write_app

CHROMIUM = "/usr/bin/chromium"
TIMED = """async ([text, runs]) => {
  const codec = window.ironlearnViewer.data.codec, bytes = IL.base64Bytes(text), read = [], drawn = [];
  let data;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const picture = await IL.readIlc(bytes, codec);
    const decoded = performance.now();
    data = IL.pictureData(picture, codec, "file");
    read.push(decoded - start);
    drawn.push(performance.now() - decoded);
  }
  const buffer = Array.from(new Uint8Array(data.unpacked.buffer), (b) => String.fromCharCode(b)).join("");
  return { read, drawn, buffer };
}"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", metavar="FILE.ilc")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        app = write_app(os.path.join(folder, "viewer.html"))
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        page.goto("file://" + app)
        page.wait_for_function("window.ironlearnViewer && window.ironlearnViewer.waiting")
        print(f"page: {os.path.getsize(app):,} bytes; Chromium {browser.version}\n")
        print("| file | bytes | Python decode (s) | page decode (s) | page plan and shader (s) | buffer as Python's |")
        print("| --- | --- | --- | --- | --- | --- |")
        for path in args.files:
            data = open(path, "rb").read()
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                decoded = codec.read(data)
                times.append(time.perf_counter() - start)
            found = page.evaluate(TIMED, [base64.b64encode(data).decode(), args.runs])
            same = np.array_equal(np.frombuffer(found["buffer"].encode("latin-1"), np.uint32),
                                  build_picture_plan(decoded).weights.view(np.uint32))
            print(f"| {os.path.basename(path)} | {len(data):,} | {statistics.median(times):.2f} | "
                  f"{statistics.median(found['read']) / 1000:.2f} | {statistics.median(found['drawn']) / 1000:.2f} | "
                  f"{'yes' if same else '**no**'} |", flush=True)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
