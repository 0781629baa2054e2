"""What a fit tells its user: the progress line, and the lines that open and close a run."""

from __future__ import annotations

import math
import shlex
import sys

from ..errors import Note
from ..image import metrics
from .outputs import BUSY_NOTICE
from .plan import RunPlan


def progress_style(plan: RunPlan) -> str:
    """How training shows its progress: as asked, else none when quiet, a bar on a terminal and
    plain lines elsewhere (a bar's redraws would fill a log with carriage returns)."""
    if plan.progress is not None:
        return plan.progress
    return "none" if plan.quiet else ("bar" if sys.stderr.isatty() else "plain")


def describe_progress(plan: RunPlan):
    """What the progress bar adds to the loss: the PSNR (an estimate from the batch, unless the
    batch is every pixel), samples per second and passes over the picture so far."""
    pixels = plan.width * plan.height
    batch = plan.batch_size or pixels
    estimate = "" if plan.every_pixel else "~"

    def describe(trainer) -> str:
        seen = trainer.step * batch
        rate = seen / trainer.train_seconds if trainer.train_seconds else 0.0
        return (f"PSNR {estimate}{metrics.psnr_from_mse(trainer.loss):.2f} dB, {rate / 1e6:.2f}M samples/s, "
                f"{seen / pixels:.1f} epochs")
    return describe


def start_message(job: Job) -> str:
    plan = job.plan
    if plan.timed:
        busy = job.calibrated_share is not None and job.calibrated_share < BUSY_NOTICE
        length = f"{plan.time_budget:g} s (about {plan.steps:,} steps" + (
            f", a rough guess: the machine is busy, and the fit had a core {job.calibrated_share:.0%} of the "
            "time it measured its pace in)" if busy else ")")
    else:
        length = f"{plan.steps:,} steps" + (f" or {plan.time_budget:g} s" if plan.time_budget else "")
    return (f"fitting {plan.input} ({plan.width}x{plan.height} {plan.mode}) with {plan.model}, "
            f"{job.trainer.model.num_parameters:,} parameters, on {job.backend.device}; {length} -> {plan.out}")


def kept_start_message(plan: RunPlan) -> Note:
    return Note(f"fitting {plan.input} ({plan.width}x{plan.height} {plan.mode}) with {plan.model}: the model starts "
                "as the picture, a vertex at each pixel, and redraws every pixel as the picture holds it, so there "
                "is nothing left to learn and it does not train (nor keep a time-lapse); give {steps} or "
                "{time_budget} to train it anyway, {start} random to watch a network learn it",
                "steps", "time_budget", "start")


def nothing_left_message(plan: RunPlan) -> Note:
    more = f"{{steps}} above {plan.start_step:,}"
    if plan.remaining_seconds == 0.0:
        where = f"it has trained {plan.prior_seconds:.1f} s of its {plan.time_budget:g} s budget"
        trained = math.ceil(plan.prior_seconds * 10) / 10  # rounded up: a budget above it trains further
        more = f"{{time_budget}} above {trained:.1f} (a total, counting the seconds trained) or {more}"
    else:
        where = f"it is at step {plan.start_step:,} and was asked for {plan.steps:,}"
    return Note(f"nothing left to train in {plan.out}: {where}; outputs written again (give {more} to train further)",
                "steps", "time_budget")


class ResumeNote(Note):
    """How to go on with the run in ``out`` of the picture ``picture``, in its reader's words: as a
    ``str``, the Python call (``ironlearn.fit('photo.png', out='runs/photo', resume=True)``);
    :meth:`worded`, the command line, to paste (``ironlearn fit photo.png --out runs/photo --resume``)."""

    def __new__(cls, picture: str, out: str):
        note = super().__new__(cls, f"ironlearn.fit({str(picture)!r}, out={str(out)!r}, resume=True)")
        note.picture, note.out = str(picture), str(out)
        return note

    def worded(self, name_of) -> str:
        return f"ironlearn fit {shlex.quote(self.picture)} {name_of('out')} {shlex.quote(self.out)} {name_of('resume')}"


def moments_restart_message(step: int, timelapse: bool) -> str:
    """The line of a resume of a finished run, whose checkpoint kept no optimizer state (nor the
    frames of its ``timelapse``, when it had one)."""
    frames = f"; its timelapse.gif stays that of the first {step:,} steps" if timelapse else ""
    return (f"note: the run had finished, and a finished run keeps no optimizer state: Adam's moments start again "
            f"from zero at step {step:,} (the learning-rate schedule goes on), so the curve is not quite that of "
            f"one longer run{frames}")
