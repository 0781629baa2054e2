"""One command for a GPU machine: the tests on CuPy, the step and quality benchmarks, a report.

    python benchmarks/gpu --out DIR                    # on the GPU, within a 9-minute budget (--budget 540)
    python benchmarks/gpu --out DIR --device cpu       # the same parts, tiny, on the CPU (about a minute)
    make gpu-check OUT=DIR                             # the first, through make

It writes ``DIR/report.md`` and ``DIR/report.json`` after every part, so a run cut short keeps
what it measured.  Each part runs in a process of its own, under a time limit of its own and
within the run's ``--budget``, the most important first (:data:`PARTS`; ``--help`` lists them):
a kernel that crashes, or a part that hangs, costs that part only.  Every part that trains
builds its job with the fit job's own build function (benchmarks/common.py), so that its
figures are those of ``ironlearn fit``.

This module is the harness: the sizes, a part's context, the table of parts, the budget.  The
parts live beside it in checks.py (env, tests, syncs, kernels), fused.py (fused, graph),
speed.py (step, torch, siren), quality.py (parity, photographs, camera), codec.py (compress)
and profiling.py (profile, render); the report in report.py.  ``--device cpu`` runs every part at tiny sizes
(the test suite runs it so, so that the check cannot rot); its figures measure nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

from ironlearn.backend import Backend

from . import checks, codec, fused, profiling, quality, speed
from .report import write_json, write_report

#: The folder ``python`` runs (its __main__.py), and the repository around it.
PACKAGE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(PACKAGE))
SRC = os.path.join(ROOT, "src")


def environment() -> dict:
    """The environment of the processes this starts: ironlearn importable from src/."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": SRC + (os.pathsep + path if path else "")}


# -- sizes -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sizes:
    """How large each part runs: ``full`` on a GPU, ``tiny`` for the CPU's check of the script."""

    warmup: int  # steps before timing
    steps: int  # steps timed
    batches: tuple  # the step benchmark's batch sizes
    photo: tuple  # (width, height) of the 12-megapixel picture
    photo_marks: tuple  # training seconds at which its PSNR is read (the last is its time budget)
    big_photo: tuple
    big_marks: tuple
    thumb: int  # side of the gray thumbnail (trained whole)
    camera: int  # camera's side
    camera_target: float  # dB
    camera_seconds: float  # the schedule's length, and the most it may take
    probe_seconds: float  # training time between PSNR reads while waiting for the target
    parity_side: int
    parity_steps: int
    siren_width: int
    siren_side: int  # points = side**2
    kernel_reps: int
    render_side: int  # the render part's square
    compress_seconds: float  # the compress part's encodes, each
    pytest: tuple  # what pytest runs for the tests part


FULL = Sizes(warmup=50, steps=500, batches=(1 << 16, 1 << 18), photo=(4096, 3072), photo_marks=(10,),
             big_photo=(10000, 10000), big_marks=(60,), thumb=256, camera=512, camera_target=40.0,
             camera_seconds=30.0, probe_seconds=0.25, parity_side=256, parity_steps=1000, siren_width=256,
             siren_side=512, kernel_reps=50, render_side=16384, compress_seconds=60.0,
             pytest=("tests", "-k", "cuda or kernels or hidden_syncs"))
TINY = Sizes(warmup=2, steps=5, batches=(1 << 10, 1 << 12), photo=(320, 240), photo_marks=(0.25, 0.5),
             big_photo=(480, 360), big_marks=(0.5,), thumb=32, camera=64, camera_target=30.0, camera_seconds=1.0,
             probe_seconds=0.25, parity_side=32, parity_steps=20, siren_width=32, siren_side=64,
             kernel_reps=3, render_side=256, compress_seconds=2.0, pytest=("tests/test_backend.py",))
SIZES = {"full": FULL, "tiny": TINY}


# -- the parts -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Part:
    """A part of the check: ``run(ctx)``, its time limit in seconds at full size (before the
    budget; tiny: :data:`TINY_LIMIT`), and what it measures."""

    run: Callable
    limit: float
    measures: str


#: The parts, in the order they run: what the GPU is and whether ironlearn is right on it, then
#: its speed against the issue's targets, then the rest.
PARTS = {
    "env": Part(checks.env, 60, "the GPU, its driver, CUDA, the CuPy wheel there, PyTorch; nvcc; scikit-image"),
    "tests": Part(checks.tests, 150, "pytest on the cuda backend (tests naming cuda, the kernels', the no-hidden-"
                                         "syncs ones; --tests all: the suite), each test's outcome"),
    "syncs": Part(checks.syncs, 90, "copies (the backend's counter) and syncs (cupyx.allow_synchronize(False), "
                                        "and whether a step returns while the GPU is busy) in steps of the pixel "
                                        "spline, the pyramid and a gray thumbnail, each kernel mode"),
    "fused": Part(fused.fused_part, 120, "the fused kernels (sampler, the grid's read, its backward, the MLP) against "
                                              "the launched code they replace, and the pyramid's step with and "
                                              "without them, side by side"),
    "graph": Part(fused.graph_part, 60, "the pyramid's fused step captured as a CUDA graph: whether it "
                                            "captures, and a replay's ms against the launched step's"),
    "step": Part(speed.step, 120, "the photograph's default model (pixel spline, a tile a step) and the pyramid "
                                      "at both batches: cold, warm (CUDA events), the fit loop's ms a step, peak "
                                      "pool bytes, each kernel mode"),
    "parity": Part(quality.parity, 120, "the same seed on NumPy and CuPy, 1,000 steps: each PSNR and the "
                                            "difference"),
    "photo12": Part(quality.photo12, 90, "the default model on a 12.6 MP photograph: PSNR after 10 s, peak pool"),
    "torch": Part(speed.torch_peer_part, 150, "the pyramid in PyTorch (benchmarks/torch_peer.py), eager and "
                                                  "torch.compile"),
    "siren": Part(speed.siren, 150, "SIREN 3x256 on 262,144 points, ironlearn against PyTorch eager and compiled, "
                                    "each in float32 and with TF32 tensor cores; ironlearn's PSNR both ways"),
    "compress": Part(codec.compress_part, 150, "kodim23 (sporco's wheel in runs/wheels) at 0.25 and 0.5 bpp, "
                                                "60 s each, the MLP trained on the device: PSNR against Cool-chic's"),
    "photo100": Part(quality.photo100, 150, "the default model on 100 MP (a spline level of 2^24 vertices): "
                                                "PSNR after 60 s, peak pool"),
    "kernels": Part(checks.kernel_timings, 60, "the hash grid's read and scatter and Adam's update: CUDA kernels "
                                                   "against CuPy's portable path, time and largest difference"),
    "camera": Part(quality.camera_part, 60, "camera at 512x512 from a random start: the time to 40 dB"),
    "profile": Part(profiling.profile, 90, "each phase of a step (the batch, each layer each way, the loss, the "
                                             "optimizer): host ms to issue it, GPU ms between events around it"),
    "render": Part(profiling.render_part, 90, "the default model drawn at 16384x16384 in bands: seconds, pool peak"),
}
TINY_LIMIT = 60
BUDGET = {"cuda": 540.0, "cpu": 120.0}  # the whole run: about 9 minutes on the GPU


class Context:
    """What a part gets: the device, the sizes, and a result it saves as it goes (``parts/NAME.json``)."""

    def __init__(self, name: str, args):
        self.name, self.device, self.sizes = name, args.device, SIZES[args.size]
        self.args, self.out = args, args.out
        self.environment = environment()
        self.result = {}
        self._backend = None

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = Backend(self.device)
        return self._backend

    def save(self, **items) -> None:
        self.result.update(items)
        write_json(os.path.join(self.out, "parts", f"{self.name}.json"), self.result)

    def note(self, text: str) -> None:
        self.save(notes=self.result.get("notes", []) + [text])

    def add_row(self, row: dict, table: str = "rows") -> None:
        self.save(**{table: self.result.get(table, []) + [row]})


# -- running them ----------------------------------------------------------------------------------
def run_part(name: str, args, limit: float) -> dict:
    """Run part ``name`` in its own process under ``limit`` seconds; its status and result."""
    command = [sys.executable, PACKAGE, "--run-part", name, "--device", args.device,
               "--size", args.size, "--out", args.out, "--tests", args.tests, "--limit", str(int(limit))]
    log = os.path.join(args.out, "logs", f"{name}.log")
    result_path = os.path.join(args.out, "parts", f"{name}.json")
    if os.path.exists(result_path):
        os.remove(result_path)
    t0 = time.perf_counter()
    status, error = "ok", None
    with open(log, "w") as file:
        try:
            done = subprocess.run(command, cwd=ROOT, stdout=file, stderr=subprocess.STDOUT, timeout=limit,
                                  env=environment())
            if done.returncode != 0:
                status = "error"
        except subprocess.TimeoutExpired:
            status = "timeout"
            error = f"stopped after its limit of {limit:.0f} s"
    seconds = round(time.perf_counter() - t0, 1)
    with open(log, errors="replace") as file:
        tail = file.read()[-4000:]
    if status == "error":
        error = tail
    result = {}
    if os.path.exists(result_path):
        with open(result_path) as file:
            result = json.load(file)
    if status == "ok" and result.get("skipped"):
        status = "skipped"
    return {"status": status, "seconds": seconds, "limit": limit, "result": result, "error": error,
            "log": os.path.relpath(log, args.out)}


def _parser() -> argparse.ArgumentParser:
    parts = "\n".join(f"  {name:<9} {part.measures}" for name, part in PARTS.items())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=f"parts, in the order they run:\n{parts}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for report.md, report.json, parts/ and logs/")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--size", choices=tuple(SIZES), help="full (the GPU's default) or tiny (the CPU's)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), metavar="PART",
                        help=f"the parts to run, of: {' '.join(PARTS)}")
    parser.add_argument("--budget", type=float, help="seconds for the whole run (default 540 on cuda, 120 on cpu)")
    parser.add_argument("--tests", choices=("cuda", "all"), default="cuda",
                        help="the tests part runs the tests that use the cuda backend, or the whole suite")
    parser.add_argument("--run-part", choices=PARTS, help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=float, default=0, help=argparse.SUPPRESS)
    return parser


def run_all(args) -> dict:
    """Run ``args.parts`` in the table's order within the budget, rewriting the report after each."""
    budget = args.budget or BUDGET[args.device]
    names = [name for name in PARTS if name in args.parts]
    started = time.perf_counter()
    report = {"meta": {"started": datetime.datetime.now().isoformat(timespec="seconds"),
                       "command": " ".join(shlex.quote(a) for a in ["python", "benchmarks/gpu", *sys.argv[1:]]),
                       "device": args.device, "size": args.size, "budget_seconds": budget, "parts": names,
                       "finished_parts": 0, "seconds": 0.0, "sizes": SIZES[args.size].__dict__},
              "parts": {}}
    for name in names:
        left = budget - (time.perf_counter() - started)
        limit = min(PARTS[name].limit if args.size == "full" else TINY_LIMIT, left)
        if limit < 10:
            report["parts"][name] = {"status": "skipped", "seconds": 0, "result": {},
                                     "error": f"out of budget ({budget:.0f} s): run it with --parts {name}"}
        else:
            print(f"[gpu-check] {name} (limit {limit:.0f} s)", flush=True)
            part = report["parts"][name] = run_part(name, args, limit)
            report["meta"]["finished_parts"] += 1
            print(f"[gpu-check] {name}: {part['status']} in {part['seconds']} s", flush=True)
        report["meta"]["seconds"] = round(time.perf_counter() - started, 1)
        write_report(args.out, report)
    return report


def main(argv=None):
    args = _parser().parse_args(argv)
    args.size = args.size or ("full" if args.device == "cuda" else "tiny")
    args.out = os.path.abspath(args.out)
    if args.run_part:
        PARTS[args.run_part].run(Context(args.run_part, args))
        return 0
    for folder in ("parts", "logs"):
        os.makedirs(os.path.join(args.out, folder), exist_ok=True)
    run_all(args)
    print(f"[gpu-check] report: {os.path.join(args.out, 'report.md')}")
    return 0

