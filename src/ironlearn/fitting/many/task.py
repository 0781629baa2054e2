"""One picture's fit as a worker runs it: a :class:`Task` in, an :class:`Outcome` out.

The driver decides what each run folder needs (:func:`prepare`): nothing (it is done),
a resume from its checkpoint, or a new fit.  A worker, in whatever process or on
whatever machine, runs :func:`run_task`, which turns every way a fit can end into an
:class:`Outcome` with a one-line error, so that one bad picture never stops the others.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from dataclasses import dataclass

from ...backend import BackendError
from ...errors import WordedError
from ...image.io import InputError, load_picture
from ...signals import terminate_cleanly
from ...train import CheckpointError, DivergenceError
from ...train.checkpoint import read_meta
from .. import folder
from ..options import FitOptions, UsageError, flag
from ..plan import make_plan, resume_options
from ..run import Interrupted, fit
from .inputs import Source

DONE, FAILED, INTERRUPTED = "done", "failed", "interrupted"
LOCK_WAIT = 30.0  # seconds to wait for a run folder still locked by a worker of a killed driver, saving


@dataclass(frozen=True)
class Task:
    """Fit one picture: ``options`` has its input, run folder, ``resume`` and ``force`` set."""

    name: str
    options: FitOptions
    attempt: int = 1

    def retry(self, since: float) -> "Task":
        """This task once more, after its worker died: resumed from the checkpoint the dead attempt
        wrote (at ``since``, a ``time.time()``, or later), else as first planned."""
        options = self.options
        checkpoint = os.path.join(options.run_folder, folder.CHECKPOINT)
        if os.path.isfile(checkpoint) and (options.resume or os.path.getmtime(checkpoint) >= since):
            options = dataclasses.replace(options, resume=True, force=False)
        return dataclasses.replace(self, options=options, attempt=self.attempt + 1)


@dataclass(frozen=True)
class Outcome:
    """How a picture's fit ended: ``status`` done (with ``metrics``, as in metrics.json), failed or
    interrupted (with a one-line ``error``)."""

    status: str
    metrics: dict | None = None
    error: str = ""


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def failure(exc: BaseException) -> str:
    """The one line a summary keeps for a fit that raised ``exc``."""
    if isinstance(exc, DivergenceError):
        # summary.csv's row: a file in the command's language, as the worded errors below, so the flag
        return (f"training diverged at step {exc.step}: loss {exc.loss:.4g} at learning rate {exc.lr:.3g}; "
                f"try a lower one, e.g. {flag('lr')} {exc.lr / 10:.2g}")
    if isinstance(exc, OSError):
        return one_line((f"{exc.filename}: " if exc.filename else "") + f"{exc.strerror or exc}")
    if isinstance(exc, WordedError):  # fit-many's summary speaks the command's language, as its flags do
        return one_line(exc.worded(flag))
    if isinstance(exc, (UsageError, InputError, CheckpointError, BackendError)):
        return one_line(exc)
    return one_line(f"{type(exc).__name__}: {exc}")  # a bug, but still one picture's


def run_task(options: FitOptions, *, log=None) -> Outcome:
    """Run ``fit(options)`` and say how it ended; never raises for the fit's own errors.

    Ctrl-C (SIGINT) or SIGTERM during training saves the checkpoint, as in ``ironlearn fit``,
    and gives an ``interrupted`` outcome; outside training either one gives that outcome too,
    with the last checkpoint written kept.
    """
    try:
        with terminate_cleanly():
            _wait_for_lock(options.run_folder)
            return Outcome(DONE, metrics=fit(options, log=log or (lambda message: None)))
    except Interrupted as exc:
        by = "" if exc.signal == signal.SIGINT else f" by {exc.signal.name}"
        return Outcome(INTERRUPTED, error=f"stopped{by} at step {exc.step:,}; checkpoint saved")
    except KeyboardInterrupt:
        return Outcome(INTERRUPTED, error="stopped; the last checkpoint written is kept")
    except Exception as exc:  # noqa: BLE001  (every failure is this picture's alone)
        return Outcome(FAILED, error=failure(exc))


def _wait_for_lock(out: str) -> None:
    """Wait (up to LOCK_WAIT) while another process holds ``out``'s lock: a worker of a driver that
    was killed may still be saving its checkpoint there.  fit() then takes the lock itself."""
    deadline = time.monotonic() + LOCK_WAIT
    while folder.holder(out) is not None and time.monotonic() < deadline:
        time.sleep(0.2)  # then fit() reports who holds it, if anyone still does


# -- what a run folder needs -------------------------------------------------------------------
def prepare(source: Source, out: str, template: FitOptions, *, force: bool) -> Task | Outcome:
    """The task that fits ``source`` into ``out/<name>``, or the Outcome of the run already done there.

    A folder holding a checkpoint is resumed (unless ``force``): fit() itself then refuses a
    different picture or different settings, with a message that says to use --force.
    """
    options = dataclasses.replace(template, input=source.path, out=os.path.join(out, source.name),
                                  resume=False, force=force, quiet=True, progress="none")
    if force or not os.path.isfile(os.path.join(options.out, folder.CHECKPOINT)):
        return Task(source.name, options)
    metrics = finished(options)
    if metrics is not None:
        return Outcome(DONE, metrics=metrics)
    return Task(source.name, dataclasses.replace(options, resume=True))


def finished(options: FitOptions) -> dict | None:
    """The metrics of the run in ``options.out`` when it is complete and is what ``options`` ask for:
    model.npz and metrics.json come from its last checkpoint, the picture is the one it was trained
    on, and a resume with ``options`` would have nothing left to train.  None otherwise."""
    out = options.run_folder
    try:
        with open(os.path.join(out, folder.METRICS)) as file:
            metrics = json.load(file)
        saved = read_meta(os.path.join(out, folder.CHECKPOINT))
        step = int(saved.get("step", 0))
        if read_meta(os.path.join(out, folder.MODEL)).get("step") != step or metrics.get("steps") != step:
            return None  # trained further (and stopped) since the outputs were written
        merged = resume_options(dataclasses.replace(options, resume=True), saved["settings"])
        picture = load_picture(merged.input, mode=merged.mode, size=merged.size,
                               max_pixels=merged.max_pixels)
        plan = make_plan(merged, picture, saved["settings"], start_step=step)
    except (OSError, ValueError, KeyError, TypeError):  # incl. UsageError, InputError, CheckpointError
        return None  # fit() says what is wrong when it resumes
    return metrics if plan.nothing_left else None
