"""``ironlearn demo``, composed once: the bundled line drawing fitted into a run folder and
rendered 4x, replacing an earlier demo there but nothing else unless forced."""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib import resources
from typing import NamedTuple

from ..errors import OptionError
from ..fitting import FitOptions
from ..fitting import fit as fit_job
from ..image.fingerprint import fingerprint
from ..image.io import load_picture
from ..train import CheckpointError
from ..train.checkpoint import read_meta
from .arguments import checked, log_of
from .drawing import render_file

#: The demo's fit: every pixel of the drawing is right within 5 s (measured: docs/any-size.md,
#: 'Drawings: a vertex per pixel, learning the spline between them'); the rest makes a longer time-lapse.
DEMO_SECONDS = 20.0
#: The demo's 4x render, beside the run's own outputs.
RENDER = "render_4x.png"


class Demo(NamedTuple):
    """What a demo wrote: the fit's ``metrics`` (as ``metrics.json``), the 4x ``render`` and the
    ``timelapse`` (paths)."""

    metrics: dict
    render: str
    timelapse: str


@checked
def demo(out: str | os.PathLike = "ironlearn-demo", *, time_budget: float = DEMO_SECONDS,
         steps: int | None = None, device: str | None = None, quiet: bool | None = None, force: bool = False,
         progress: bool | Callable = False) -> Demo:
    """Fit the bundled 200x200 line drawing (binary) into ``out`` and render it 4x there, as
    ``ironlearn demo`` does: ``time_budget`` seconds of training, or ``steps``.

    An earlier demo in ``out`` is replaced; another run there is refused unless ``force``.
    ``progress`` True prints the fit's progress on stderr, a function gets its lines instead;
    ``quiet`` (default: without progress) leaves out its notices and notes.
    """
    log = log_of(progress)
    with resources.as_file(resources.files("ironlearn") / "data" / "sample.png") as sample:
        force = force or _holds_a_demo(out, sample)
        if not force and os.path.exists(os.path.join(out, "checkpoint.npz")):
            raise OptionError(f"{out} holds a run that is not a demo; give the demo another {{out}}, or {{force}} "
                              "to replace that run", "out", force="force=True")
        options = FitOptions(input=str(sample), out=out, mode="binary", steps=steps, time_budget=time_budget,
                             device=device, quiet=progress is False if quiet is None else quiet, force=force)
        metrics = fit_job(options, log=log)
    render = os.path.join(out, RENDER)
    render_file(out, render, scale=4, device=device or "auto", force=True)  # the demo's own, an earlier one replaced
    return Demo(metrics, render, os.path.join(out, "timelapse.gif"))


def _holds_a_demo(out: str, sample) -> bool:
    """Whether ``out`` holds a run of the bundled drawing (an earlier demo, which a demo replaces)."""
    try:
        saved = read_meta(os.path.join(out, "checkpoint.npz"))
    except CheckpointError:
        return False
    settings = saved.get("settings")
    drawing = load_picture(sample, mode="binary")
    return isinstance(settings, dict) and settings.get("fingerprint") == fingerprint(drawing)
