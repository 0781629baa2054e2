"""Benchmark: more quality for more seconds, and a timed encode on a machine doing something else too.

    python benchmarks/compress_busy.py [--seconds 10 30 120 300] [--rates 0.25 0.5]
                                       [--loads alone busy] [--trees SRC ...] [--wheels DIR]

Compresses each of the sporco wheel's four photographs (768x512) with ``ironlearn.compress``, as
a user would (``--seconds``, the whole encode's time: each of those given), each in its own
process, ``--loads`` ways: alone, and beside a busy neighbour (another process multiplying
1500x1500 float64 matrices on NumPy's default BLAS threads, started 2 s before the encode and
stopped after it).  Given ``--trees`` (``src`` folders of ironlearn checkouts), it runs each
tree's code in turn on the same picture and rate, side by side (``PYTHONPATH``); by default, the
installed ironlearn.

Prints a row per encode (PSNR, bpp, the MLP's steps, seconds), then the rate-distortion curve:
for each tree, load, time and rate, the PSNR's mean, min, median and max, the mean share of the
rate reached, and the longest encode against its time.  Run it on an otherwise idle machine: the
neighbour is the only load it means.
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
    parser.add_argument("--seconds", type=float, nargs="+", default=[30.0])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.25, 0.5])
    parser.add_argument("--loads", nargs="+", choices=("alone", "busy"), default=["alone", "busy"])
    add_tree_arguments(parser)
    args = parser.parse_args()
    rows = {}
    print("| tree | load | photo | seconds | bpp target | PSNR (dB) | bpp | MLP steps | encode (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as work:
        for name, picture in sporco_pngs(work, args.wheels):
            for seconds in args.seconds:
                for bpp in args.rates:
                    for load in args.loads:
                        for tree in args.trees:
                            row = encode(picture, bpp, seconds, tree, load == "busy")
                            rows.setdefault((tree or "installed", load, seconds, bpp), []).append(row)
                            print(f"| {tree or 'installed'} | {load} | {name} | {seconds:g} | {bpp:g} "
                                  f"| {row['psnr']:.2f} | {row['bpp']:.4f} | {row['steps']} | {row['seconds']:.1f} |",
                                  flush=True)
    print()
    print("\n".join(curve(rows)))


def curve(rows: dict) -> list[str]:
    """The rate-distortion curve: a Markdown row per (tree, load, seconds, rate) of ``rows``."""
    lines = ["| tree | load | seconds | bpp target | mean PSNR (dB) | min / median / max | rate reached "
             "(mean share) | longest encode / its time |", "| --- " * 8 + "|"]
    for (tree, load, seconds, bpp), found in rows.items():
        psnr = [row["psnr"] for row in found]
        share = statistics.mean(row["bpp"] / bpp for row in found)
        longest = max(row["seconds"] for row in found) / seconds
        lines.append(f"| {tree} | {load} | {seconds:g} | {bpp:g} | {statistics.mean(psnr):.2f} | {min(psnr):.2f} / "
                     f"{statistics.median(psnr):.2f} / {max(psnr):.2f} | {share:.3f} | {longest:.2f} |")
    return lines


if __name__ == "__main__":
    main()
