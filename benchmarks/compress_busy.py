"""Benchmark: a timed encode on a machine that is doing something else too.

    python benchmarks/compress_busy.py [--seconds 30] [--rates 0.25 0.5] [--trees SRC ...]
                                       [--wheels DIR]

Compresses each of the sporco wheel's four photographs (768x512) with ``ironlearn.compress``, as
a user would (``--seconds``, the whole encode's time), each in its own process, two ways: alone,
and beside a busy neighbour (another process multiplying 1500x1500 float64 matrices on NumPy's
default BLAS threads, started 2 s before the encode and stopped after it).  Given ``--trees``
(``src`` folders of ironlearn checkouts), it runs each tree's code in turn on the same picture
and rate, side by side (``PYTHONPATH``); by default, the installed ironlearn.

Prints a row per encode (PSNR, bpp, the MLP's steps, seconds) and the mean PSNR of each tree,
alone and busy.  Run it on an otherwise idle machine: the neighbour is the only load it means.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time


from common import NEIGHBOUR, add_tree_arguments, sporco_pngs, tree_environment

#: What an encode runs: the picture, the rate and the seconds from argv; one JSON line out.
ENCODE = ("import json, sys, ironlearn\n"
          "r = ironlearn.compress(sys.argv[1], bpp=float(sys.argv[2]), seconds=float(sys.argv[3]))\n"
          "print(json.dumps({'psnr': r.psnr, 'bpp': r.bpp, 'steps': r.steps, 'seconds': r.seconds}))\n")


def encode(picture: str, bpp: float, seconds: float, tree: str | None, busy: bool) -> dict:
    """One encode in its own process (with ``tree`` first on its path), beside the neighbour
    when ``busy``."""
    env = tree_environment(tree)
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if busy else None
    try:
        if busy:
            time.sleep(2.0)
        done = subprocess.run([sys.executable, "-c", ENCODE, picture, str(bpp), str(seconds)], env=env,
                              capture_output=True, text=True, check=True)
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rates", type=float, nargs="+", default=[0.25, 0.5])
    add_tree_arguments(parser)
    args = parser.parse_args()
    means = {}
    print("| tree | load | photo | bpp target | PSNR (dB) | bpp | MLP steps | encode (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as work:
        for name, picture in sporco_pngs(work, args.wheels):
            for bpp in args.rates:
                for busy in (False, True):
                    for tree in args.trees:
                        row = encode(picture, bpp, args.seconds, tree, busy)
                        load = "busy" if busy else "alone"
                        means.setdefault((tree, load, bpp), []).append(row["psnr"])
                        print(f"| {tree or 'installed'} | {load} | {name} | {bpp:g} | {row['psnr']:.2f} "
                              f"| {row['bpp']:.4f} | {row['steps']} | {row['seconds']:.1f} |", flush=True)
    print("\n| tree | load | bpp target | mean PSNR (dB) |\n| --- | --- | --- | --- |")
    for (tree, load, bpp), values in means.items():
        print(f"| {tree or 'installed'} | {load} | {bpp:g} | {statistics.mean(values):.2f} |")


if __name__ == "__main__":
    main()
