"""Benchmark: a stall costs a timed fit its own duration and nothing more.

    python benchmarks/stall.py [--budget 12] [--stall 4] [--after 3] [--pairs 3] [--wheels DIR]

Each pair fits one of the sporco wheel's photographs, resized to 256x256 in colour, with the
command as a user runs it (``ironlearn fit PICTURE --time-budget B``) three ways, one after
another:

* **stalled**: budget B, stopped with SIGSTOP ``--after`` seconds after it started, for ``--stall``
  seconds (what a sleeping laptop, a busy machine or a preempted VM does to a process);
* **shorter**: budget B - S, left alone: what the stalled run must come within 0.5 dB of;
* **clean**: budget B, left alone, for reference.

Prints each pair's PSNR and the stalled run's ``stalled_seconds`` (metrics.json), then the
median over pairs of stalled - shorter.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from PIL import Image

from common import sporco_photos


def fit(picture: str, out: str, budget: float, stall_after: float | None = None, stall: float = 0.0) -> dict:
    """``ironlearn fit`` in its own process; returns its metrics.json."""
    proc = subprocess.Popen([sys.executable, "-m", "ironlearn", "fit", picture, "--out", out, "--force",
                             "--time-budget", str(budget), "--quiet"])
    if stall_after is not None:
        time.sleep(stall_after)
        proc.send_signal(signal.SIGSTOP)
        time.sleep(stall)
        proc.send_signal(signal.SIGCONT)
    if proc.wait() != 0:
        raise SystemExit(f"the fit of {picture} failed")
    with open(os.path.join(out, "metrics.json")) as file:
        return json.load(file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=12.0)
    parser.add_argument("--stall", type=float, default=4.0)
    parser.add_argument("--after", type=float, default=3.0)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--wheels", default=os.path.join(tempfile.gettempdir(), "ironlearn-wheels"))
    args = parser.parse_args()
    photos = sporco_photos(args.wheels)[:args.pairs]
    gaps = []
    with tempfile.TemporaryDirectory() as work:
        print(f"| photo | stalled {args.budget:g} s | stalled s measured | {args.budget - args.stall:g} s left alone "
              f"| stalled - shorter | {args.budget:g} s left alone |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, pixels in photos:
            picture = os.path.join(work, f"{name}.png")
            Image.fromarray(pixels).resize((256, 256), Image.LANCZOS).save(picture)
            run = os.path.join(work, "run")
            stalled = fit(picture, run, args.budget, args.after, args.stall)
            shorter = fit(picture, run, args.budget - args.stall)
            clean = fit(picture, run, args.budget)
            gap = stalled["psnr_db"] - shorter["psnr_db"]
            gaps.append(gap)
            print(f"| {name} | {stalled['psnr_db']:.2f} dB | {stalled.get('stalled_seconds', 0):.2f} "
                  f"| {shorter['psnr_db']:.2f} dB | {gap:+.2f} dB | {clean['psnr_db']:.2f} dB |", flush=True)
    print(f"\nmedian stalled - shorter: {statistics.median(gaps):+.2f} dB over {len(gaps)} pairs")


if __name__ == "__main__":
    main()
