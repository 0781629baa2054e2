"""``ironlearn compare``: coordinate networks compared the way papers compare them.

Pictures x models x parameter budgets: each model sized to each budget (:mod:`.budget`) and
trained for the same time (or steps) on each picture, at ``size`` pixels on its longest side, by
:func:`~.many.fit_many` (one call a model and budget, into ``DIR/runs/<model>-<budget>/``, so
the engines, reruns that skip what is done, and Ctrl-C are fit-many's).  Then each fit is
scored: PSNR and SSIM against the picture it learned, and, where the file holds twice that size,
its 2x redraw's PSNR against the picture at 2x beside bicubic upscaling's.  ``DIR/results.csv``
holds a row a fit, with the seed and versions that make it again; ``DIR/report.html``
(:mod:`.compare_report`) shows the curves and the redraws side by side.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..drawable import load as load_run
from ..errors import OptionError
from ..files import write_bytes
from ..image.io import load_picture
from ..image.metrics import psnr, ssim
from ..version import __version__
from .budget import KNOBS
from .compare_report import TITLE, report
from .many import fit_many, summary
from .options import FitOptions
from .presets import PRESETS

#: The models ``compare`` knows: the presets a budget sizes, and ``grid``, a plain interpolated
#: grid (one dense level read by a B-spline through a linear head: the pixel spline's layout).
MODELS = {**{name: (name, {}) for name in KNOBS},
          "grid": ("hashgrid", {"levels": 1, "interpolation": "bspline", "depth": 0, "vertices": "centres",
                                "features": 3})}
COLUMNS = ("picture", "model", "params_asked", "parameters", "steps", "seconds", "ms_per_step", "psnr_db", "ssim",
           "redraw_psnr_db", "bicubic_psnr_db", "size", "seed", "ironlearn", "numpy", "status", "error")
RESULTS, REPORT = "results.csv", "report.html"


@dataclass(frozen=True)
class Comparison:
    """What ``compare`` runs: ``models`` x ``params`` on every picture, each fit for
    ``time_budget`` seconds (or ``steps``), at ``size`` px on the longest side, in ``mode``."""

    models: tuple
    params: tuple
    time_budget: float | None = 10.0
    steps: int | None = None
    size: int = 256
    mode: str | None = None
    seed: int = 0

    def check(self) -> None:
        unknown = [model for model in self.models if model not in MODELS]
        if unknown or not self.models:
            raise OptionError(f"{{models}} takes {', '.join(MODELS)} (got {', '.join(unknown) or 'none'})", "models")
        if not self.params or any(not (isinstance(n, int) and n >= 1) for n in self.params):
            raise OptionError(f"{{params}} takes parameter counts from 1 (got {list(self.params)})", "params")

    def options(self, model: str, params: int) -> FitOptions:
        preset, extra = MODELS[model]
        return FitOptions(input="", model=preset, model_options=dict(extra), params=params, size=self.size,
                          mode=self.mode, steps=self.steps, time_budget=None if self.steps else self.time_budget,
                          seed=self.seed, device="cpu", quiet=True)


def run_name(model: str, params: int) -> str:
    return f"{model}-{params}"


def compare(inputs, out, comparison: Comparison, *, workers=None, engine="local", address=None,
            cpus_per_fit=None, force=False, log=print) -> list[dict]:
    """Fit and score every picture ``inputs`` name with every model and budget of ``comparison``
    into ``out``; write ``out/results.csv`` and ``out/report.html``; return the results' rows."""
    comparison.check()
    _check_outputs(out)
    results, redraws = [], {}
    for model in comparison.models:
        for params in comparison.params:
            rows = fit_many(inputs, os.path.join(out, "runs", run_name(model, params)),
                            options=comparison.options(model, params), workers=workers, engine=engine,
                            address=address, cpus_per_fit=cpus_per_fit, force=force, log=lambda line: None,
                            progress=False)
            for row in rows:
                scored, redraw = _scored(row, model, params, out, comparison)
                results.append(scored)
                redraws[(row["picture"], model, params)] = redraw
            done = [r for r in results[-len(rows):] if r["status"] == "done"]
            log(f"{model} at {params:,} parameters: {len(done)} of {len(rows)} pictures"
                + (f", mean PSNR {np.mean([r['psnr_db'] for r in done]):.2f} dB" if done else ""))
    summary.write(os.path.join(out, RESULTS), results, COLUMNS)  # fit-many's writer, compare's columns
    write_bytes(os.path.join(out, REPORT), report(results, redraws, comparison).encode("utf-8"))
    log(f"results: {os.path.join(out, RESULTS)}; report: {os.path.join(out, REPORT)}")
    return results


def _check_outputs(out) -> None:
    """Refuse ``out`` when its results.csv or report.html is a file compare did not write: compare
    replaces its own, never another's (``force`` or not)."""
    marks = {RESULTS: ",".join(COLUMNS), REPORT: TITLE}
    for name, mark in marks.items():
        path = os.path.join(out, name)
        if not os.path.lexists(path):
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                ours = mark in file.read(4096)
        except OSError:
            ours = False
        if not ours:
            raise OptionError(f"{path} is not a file compare wrote, and compare does not replace it; move it away or "
                              "choose another {out}", "out")


def _scored(row: dict, model: str, params: int, out: str, comparison: Comparison):
    """The results' row of a fit (fit-many's ``row``), scored when it is done; and its 2x redraw
    beside the picture at 2x and bicubic's, for the report (None when there is none)."""
    result = dict.fromkeys(COLUMNS)
    result.update(picture=row["picture"], model=model, params_asked=params, size=comparison.size,
                  seed=comparison.seed, ironlearn=__version__, numpy=np.__version__, status=row["status"],
                  error=row["error"])
    if row["status"] != "done":
        return result, None
    run = load_run(os.path.join(out, "runs", run_name(model, params), row["picture"]))
    steps, seconds = int(row["steps"]), float(row["seconds"])
    result.update(parameters=run.model.num_parameters, steps=steps, seconds=seconds,
                  ms_per_step=1000 * seconds / max(steps, 1), psnr_db=float(row["psnr_db"]))
    path, mode = os.path.join(out, "runs", run_name(model, params), row["input"]), run.mode
    learned = load_picture(path, mode=mode, size=comparison.size).pixels
    result["ssim"] = ssim(run.redraw(), learned) if min(learned.shape[:2]) >= 11 else None
    original = load_picture(path, mode=mode)
    if max(original.width, original.height) < 2 * comparison.size:
        return result, None  # the file holds no picture at 2x to score a redraw against
    height, width = learned.shape[:2]
    truth = load_picture(path, mode=mode, size=(2 * width, 2 * height)).pixels
    redraw = run.redraw(size=(2 * width, 2 * height))
    bicubic = _bicubic(learned, 2 * width, 2 * height)
    result.update(redraw_psnr_db=psnr(redraw, truth), bicubic_psnr_db=psnr(bicubic, truth))
    return result, (truth, bicubic, redraw)


def _bicubic(pixels: np.ndarray, width: int, height: int) -> np.ndarray:
    """``pixels`` (float in [0, 1]) upscaled to ``width x height`` by Pillow's bicubic filter."""
    channels = [Image.fromarray(pixels[:, :, c].astype(np.float32), mode="F").resize((width, height), Image.BICUBIC)
                for c in range(pixels.shape[2])]
    return np.clip(np.stack([np.asarray(c) for c in channels], axis=2), 0, 1)
