"""``fit-many``'s job: each picture an ``ironlearn fit`` into its run folder ``DIR/<name>/``.

The run folder decides what a picture needs (:func:`prepare`): nothing (it is done), a resume
from its checkpoint, or a new fit (:func:`run_task`).  On Ray the checkpoint travels both ways,
so a fit stopped on one node goes on on another.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time

from ...files import write_bytes
from ...image.io import load_picture
from ...train.checkpoint import read_meta
from .. import folder
from ..options import FitOptions
from ..outputs import describe_result
from ..plan import make_plan, resume_options
from ..run import Interrupted, fit
from .inputs import Source
from .summary import COLUMNS, HEADERS
from .task import DONE, INTERRUPTED, Job, Outcome, Task, guarded

LOCK_WAIT = 30.0  # seconds to wait for a run folder still locked by a worker of a killed driver, saving
#: What a resume reads from the run folder: a finished run's checkpoint keeps its model in model.npz.
RESUME_FILES = (folder.CHECKPOINT, folder.MODEL, folder.FRAMES, folder.HISTORY)
#: Written last, in this order: a finished run's checkpoint needs the model.npz it names, and the
#: three together mark a run as done.
LAST = (folder.MODEL, folder.CHECKPOINT, folder.METRICS)


def run_task(options: FitOptions, *, log=None) -> Outcome:
    """Run ``fit(options)`` and say how it ended; never raises for the fit's own errors.

    Ctrl-C (SIGINT) or SIGTERM during training saves the checkpoint, as in ``ironlearn fit``,
    and gives an ``interrupted`` outcome; outside training either one gives that outcome too,
    with the last checkpoint written kept.
    """
    def work() -> Outcome:
        _wait_for_lock(options.run_folder)
        try:
            return Outcome(DONE, metrics=fit(options, log=log or (lambda message: None)))
        except Interrupted as exc:
            by = "" if exc.signal == signal.SIGINT else f" by {exc.signal.name}"
            return Outcome(INTERRUPTED, error=f"stopped{by} at step {exc.step:,}; checkpoint saved")
    return guarded(work)


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
        return Task(source.name, options, FIT)
    metrics = finished(options)
    if metrics is not None:
        return Outcome(DONE, metrics=metrics)
    return Task(source.name, dataclasses.replace(options, resume=True), FIT)


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


# -- the job ------------------------------------------------------------------------------------
class FitJob(Job):
    """Each picture fitted into its run folder ``DIR/<name>/``, as ``ironlearn fit`` writes it."""

    command, verb = "fit-many", "fitting"
    columns, headers = COLUMNS, HEADERS
    stopped = " (with their checkpoints where training had begun)"

    def prepare(self, source, out, template, *, force, earlier=None):
        return prepare(source, out, template, force=force)

    def run(self, options) -> Outcome:
        return run_task(options)

    def again(self, options, since):
        """Resumed from the checkpoint the dead attempt wrote (at ``since`` or later), else as first planned."""
        checkpoint = os.path.join(options.run_folder, folder.CHECKPOINT)
        if os.path.isfile(checkpoint) and (options.resume or os.path.getmtime(checkpoint) >= since):
            options = dataclasses.replace(options, resume=True, force=False)
        return options

    def message(self, name, outcome):
        if outcome.status == DONE:
            return f"{name}: {describe_result(outcome.metrics)}"
        return super().message(name, outcome)

    def on_ray(self, options, gpus):
        """``device`` auto means the GPU exactly when the task asked for one: Ray leaves GPUs
        visible to tasks that did not, and they would share them unaccounted."""
        if options.device not in (None, "auto"):
            return options
        return dataclasses.replace(options, device="cuda" if gpus else "cpu")

    def files_to_ship(self, options):
        """To resume: the run folder's checkpoint and what goes with it."""
        return {name: _read(os.path.join(options.run_folder, name)) for name in RESUME_FILES
                if options.resume and os.path.isfile(os.path.join(options.run_folder, name))}

    def run_shipped(self, options, picture, files, tmp):
        out = os.path.join(tmp, "run")
        os.makedirs(out)
        for name, data in files.items():
            with open(os.path.join(out, name), "wb") as file:
                file.write(data)
        outcome = run_task(dataclasses.replace(options, input=picture, out=out))
        back = {name: _read(os.path.join(out, name)) for name in folder.FILES if os.path.isfile(os.path.join(out, name))}
        error = outcome.error.replace(out, options.run_folder).replace(picture, options.input)
        return dataclasses.replace(outcome, error=error), back

    def check_destination(self, options):
        """What fit() checks of a new run's folder: empty, or a run that ``force`` replaces."""
        if not options.resume:
            folder.check_new(options.run_folder, force=options.force, input=options.input)

    def land(self, options, files):
        """Each file atomically, model.npz, checkpoint.npz and metrics.json last; a new (not
        resumed) run's folder is left with its files only."""
        out = options.run_folder
        os.makedirs(out, exist_ok=True)
        if not options.resume:
            for name in set(folder.FILES) - set(files):
                try:
                    os.unlink(os.path.join(out, name))
                except FileNotFoundError:
                    pass
        for name in [n for n in files if n not in LAST] + [n for n in LAST if n in files]:
            write_bytes(os.path.join(out, name), files[name])


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


#: The fit's job, which ``fit-many`` runs.
FIT = FitJob()
