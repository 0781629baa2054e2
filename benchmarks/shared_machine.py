"""Benchmark: a timed fit on a 2-core machine that is doing other work too.

    python benchmarks/shared_machine.py [--models hashgrid siren fourier] [--photos 3]
                                        [--pictures astronaut coffee ...] [--runs 1]
                                        [--ways alone neighbour pair pair-neighbour]
                                        [--trees SRC ...] [--wheels DIR]

Fits pictures (sporco's photographs, 768x512, and scikit-image's by name with ``--pictures``;
``--size 256``) with the command as a user runs it, each model several ways, one after another:

* **alone**: ``--time-budget 5`` on an otherwise idle machine;
* **neighbour**: ``--time-budget 10`` beside a process multiplying matrices on NumPy's default
  two BLAS threads (started 1 s before, stopped after);
* **pair**: ``--time-budget 10``, two identical fits started together (both are reported);
* **pair-neighbour**: the pair, beside the neighbour, with ``--time-budget 10`` (four threads on
  two cores: half a core each, for twice the time).

A shared fit gets about its share of the machine for as many times the time, so it should come
within 1 dB of the fit alone, and its learning rate should reach its floor only in the last fifth
of its steps ("floor at": the first step within 2% of the way from the floor to the peak, as a
share of the steps; from history.csv).  Given ``--trees`` (``src`` folders of checkouts), each
tree's code runs in turn, side by side.  Prints a row per fit (``--runs`` of each), then the
medians per tree, model and way.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


from PIL import Image

from common import NEIGHBOUR, add_tree_arguments, sporco_pngs, tree_environment

#: Each way's time budget, in seconds.
WAYS = {"alone": 5.0, "neighbour": 10.0, "pair": 10.0, "pair-neighbour": 10.0}


def fit_command(picture: str, out: str, model: str, budget: float) -> list[str]:
    return [sys.executable, "-m", "ironlearn", "fit", picture, "--size", "256", "--model", model, "--out", out,
            "--force", "--time-budget", str(budget), "--quiet"]


def result(out: str) -> dict:
    """PSNR, steps and where the rate first reached its floor (a share of the steps) of a run."""
    with open(os.path.join(out, "metrics.json")) as file:
        metrics = json.load(file)
    with open(os.path.join(out, "history.csv")) as file:
        rows = [(int(r["step"]), float(r["lr"])) for r in csv.DictReader(file)]
    peak_at = max(range(len(rows)), key=lambda i: rows[i][1])
    peak, floor = rows[peak_at][1], min(lr for _, lr in rows)
    near = next((step for step, lr in rows[peak_at:] if lr < floor + 0.02 * (peak - floor)), rows[-1][0])
    return {"psnr": metrics["psnr_db"], "steps": metrics["steps"], "floor_at": near / max(1, metrics["steps"]),
            "slowdown": metrics.get("slowdown")}


def run(picture: str, work: str, model: str, way: str, tree: str | None) -> list[dict]:
    env = tree_environment(tree)
    outs = [os.path.join(work, f"run{i}") for i in range(2 if way.startswith("pair") else 1)]
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if way.endswith("neighbour") else None
    try:
        if neighbour is not None:
            time.sleep(1.0)
        fits = [subprocess.Popen(fit_command(picture, out, model, WAYS[way]), env=env) for out in outs]
        if any(fit.wait() != 0 for fit in fits):
            raise SystemExit(f"a fit of {picture} failed")
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    return [result(out) for out in outs]


def pictures(work: str, args) -> list[tuple[str, str]]:
    """(name, PNG path) of the first ``--photos`` of sporco's photographs, then ``--pictures``
    from scikit-image's data."""
    chosen = sporco_pngs(work, args.wheels, args.photos) if args.photos else []
    for name in args.pictures:
        import skimage.data

        path = os.path.join(work, f"{name}.png")
        Image.fromarray(getattr(skimage.data, name)()).save(path)
        chosen.append((name, path))
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["hashgrid", "siren", "fourier"])
    parser.add_argument("--photos", type=int, default=3, help="how many of sporco's photographs")
    parser.add_argument("--pictures", nargs="*", default=[], help="scikit-image pictures (astronaut, coffee, ...)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each fit")
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=list(WAYS))
    add_tree_arguments(parser)
    args = parser.parse_args()
    rows = {}
    print("| tree | model | picture | way | run | PSNR (dB) | steps | floor at | slowdown |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as work:
        for name, picture in pictures(work, args):
            for model in args.models:
                for way in args.ways:
                    for attempt in range(1, args.runs + 1):
                        for tree in args.trees:
                            for r in run(picture, work, model, way, tree):
                                rows.setdefault((tree, model, way), []).append(r)
                                print(f"| {tree or 'installed'} | {model} | {name} | {way} | {attempt} | "
                                      f"{r['psnr']:.2f} | {r['steps']:,} | {r['floor_at']:.0%} | "
                                      f"{r['slowdown'] or '-'} |", flush=True)
    print("\n| tree | model | way | median PSNR (dB) | min-max | median steps | earliest floor |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (tree, model, way), values in rows.items():
        psnrs = [r["psnr"] for r in values]
        print(f"| {tree or 'installed'} | {model} | {way} | {statistics.median(psnrs):.2f} | "
              f"{min(psnrs):.2f}-{max(psnrs):.2f} | {statistics.median(r['steps'] for r in values):,.0f} | "
              f"{min(r['floor_at'] for r in values):.0%} |")


if __name__ == "__main__":
    main()
