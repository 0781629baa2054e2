"""Page faults and time per step, with freed memory kept in the process (the CPU backend's
default) and with glibc's own behaviour.

    python benchmarks/page_faults.py [--rounds 6]

`camera` at 256x256 with the default hash grid, trained whole (pixels only, and pixels plus
samples between them).  Each round runs one short process per setting, alternately, so that
the machine's drift hits both alike; each process measures three blocks of five steps after
three warm-up steps.  Medians over every block.  Linux with glibc only.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from common import job_for, machine, skimage_picture

import ironlearn.backend

TRAININGS = {"pixels only": "centres", "pixels + between": None}


def five_steps(trainer) -> tuple[float, float]:
    """Milliseconds and minor page faults per step, over five steps."""
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    trainer.run(trainer.step + 5)
    return (time.perf_counter() - start) / 5 * 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / 5


def child(kept: bool) -> dict:
    if not kept:
        ironlearn.backend.keep_freed_memory = lambda: False  # before any Backend exists
    backend = ironlearn.backend.Backend("cpu")
    picture = skimage_picture("camera", 256, "gray")
    blocks = {}
    for name, filter_ in TRAININGS.items():
        with tempfile.TemporaryDirectory(prefix="ironlearn-benchmark-") as folder:
            trainer = job_for(picture, backend, folder, steps=10_000, filter=filter_).trainer.run(3)
            blocks[name] = [five_steps(trainer) for _ in range(3)]
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--child", choices=["kept", "returned"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child == "kept")))
        return
    results = {}
    for _ in range(args.rounds):
        for setting in ("returned", "kept"):
            out = subprocess.run([sys.executable, __file__, "--child", setting], capture_output=True, text=True,
                                 check=True).stdout
            for name, blocks in json.loads(out).items():
                results.setdefault((name, setting), []).extend(blocks)
    print(f"# {machine()}")
    print("| training | freed memory | ms per step | page faults per step |")
    print("| --- | --- | --- | --- |")
    for (name, setting), rows in sorted(results.items()):
        label = "kept (default)" if setting == "kept" else "returned (glibc's own)"
        print(f"| {name} | {label} | {statistics.median(r[0] for r in rows):.1f} | "
              f"{statistics.median(r[1] for r in rows):,.0f} |")


if __name__ == "__main__":
    main()
