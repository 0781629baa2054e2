"""The Ray engine: each picture a Ray task, on this machine or on a cluster, no shared disk needed.

The driver sends the picture's bytes (and, to resume, the run folder's checkpoint) with the
task; the task fits in a temporary folder on whichever node runs it, sends the run
folder's files back through Ray's object store and removes its folder; the driver writes
them atomically into ``DIR/<name>/``.  Ray is imported only here, when this engine is asked for.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import math
import os
import signal
import tempfile
import threading
import time
from dataclasses import dataclass

from ...files import write_bytes
from .. import folder
from ..options import FitOptions, UsageError
from .local import thread_environment
from .task import FAILED, INTERRUPTED, Outcome, Task, one_line, run_task

MISSING = "the ray engine needs Ray, which is not installed; install it with pip install 'ironlearn[ray]'"
#: What a resume reads from the run folder: a finished run's checkpoint keeps its model in model.npz.
RESUME_FILES = (folder.CHECKPOINT, folder.MODEL, folder.FRAMES, folder.HISTORY)
#: Written last, in this order: a finished run's checkpoint needs the model.npz it names, and the
#: three together mark a run as done.
LAST = (folder.MODEL, folder.CHECKPOINT, folder.METRICS)
POLL_SECONDS = 0.2
_DEATHS = ("WorkerCrashedError", "OutOfMemoryError", "NodeDiedError")  # ray.exceptions that mean a lost worker


def import_ray():
    """The ``ray`` module, or a UsageError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(MISSING) from None
    return ray


# -- the task, as it travels --------------------------------------------------------------------
@dataclass(frozen=True)
class Shipment:
    """What a Ray task needs, all in memory: the picture's bytes and name, the run folder's
    files to resume from, and the options (whose ``input`` and ``out`` are the driver's paths)."""

    name: str
    picture: bytes
    options: FitOptions
    files: dict


def ship(task: Task) -> Shipment:
    """Read what ``task`` needs into memory (raises OSError when the picture cannot be read)."""
    with open(task.options.input, "rb") as file:
        picture = file.read()
    files = {}
    if task.options.resume:
        for name in RESUME_FILES:
            path = os.path.join(task.options.run_folder, name)
            if os.path.isfile(path):
                with open(path, "rb") as file:
                    files[name] = file.read()
    return Shipment(task.name, picture, task.options, files)


def unreadable(path: str, exc: OSError) -> str:
    """What a fit says of a picture it cannot open (image.io's wording), for one the driver cannot read."""
    if isinstance(exc, FileNotFoundError):
        return f"{path}: no such file"
    if isinstance(exc, IsADirectoryError):
        return f"{path} is a folder; give an image or pixel CSV file"
    if isinstance(exc, PermissionError):
        return f"{path}: permission denied; make the file readable (chmod +r) or copy it"
    return f"{path}: {exc.strerror or exc}"


def fit_shipped(shipment: Shipment) -> tuple[Outcome, dict]:
    """The Ray task: fit in a temporary folder, return the outcome and the run folder's files
    (``{file name: bytes}``), and leave nothing behind.  Paths in an error are the driver's."""
    with tempfile.TemporaryDirectory(prefix="ironlearn-fit-") as tmp:
        picture = os.path.join(tmp, os.path.basename(shipment.options.input) or "picture")
        with open(picture, "wb") as file:
            file.write(shipment.picture)
        out = os.path.join(tmp, "run")
        os.makedirs(out)
        for name, data in shipment.files.items():
            with open(os.path.join(out, name), "wb") as file:
                file.write(data)
        outcome = run_task(dataclasses.replace(shipment.options, input=picture, out=out))
        files = {}
        for name in folder.FILES:
            if os.path.isfile(os.path.join(out, name)):
                with open(os.path.join(out, name), "rb") as file:
                    files[name] = file.read()
    error = outcome.error.replace(out, shipment.options.run_folder).replace(picture, shipment.options.input)
    return dataclasses.replace(outcome, error=error), files


def check_run_folder(task: Task) -> None:
    """What fit() checks of a new run's folder, checked here, where the files will land: the task
    fits in an empty temporary folder, and DIR/<name> must be empty, or hold a run that ``--force``
    replaces (UsageError otherwise, in fit's words)."""
    if not task.options.resume:
        folder.check_new(task.options.run_folder, force=task.options.force, input=task.options.input)


def land(task: Task, files: dict) -> None:
    """Write the files a task sent back into its run folder, each atomically, model.npz,
    checkpoint.npz and metrics.json last; a new (not resumed) run's folder is left with its files only."""
    out = task.options.run_folder
    os.makedirs(out, exist_ok=True)
    if not task.options.resume:
        for name in set(folder.FILES) - set(files):
            try:
                os.unlink(os.path.join(out, name))
            except FileNotFoundError:
                pass
    for name in [n for n in files if n not in LAST] + [n for n in LAST if n in files]:
        write_bytes(os.path.join(out, name), files[name])


# -- the engine -------------------------------------------------------------------------------
@contextlib.contextmanager
def _keeping_sigterm():
    """Put back this process's SIGTERM handler after ``ray.init``, which installs its own (exit at
    once, and a stack dump), so that SIGTERM to the command stops it as Ctrl-C does."""
    handler = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if handler is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, handler)


class RayEngine:
    """Fits pictures as Ray tasks of ``cpus_per_fit`` CPUs and ``gpus_per_fit`` GPUs each.

    ``address`` joins a running cluster (``auto``, or ``ray://host:port``); without it a
    local Ray instance starts (and stops at the end).  If Ray is already initialised in this
    process, that connection is used as it is.  At most ``workers`` tasks are in flight
    (default: as many as the cluster's CPUs and GPUs hold), so a large data set is not
    loaded into the object store all at once.
    """

    def __init__(self, address: str | None, workers: int | None, cpus_per_fit: float, gpus_per_fit: float,
                 log=print):
        self.ray = import_ray()  # now: a missing Ray is a usage error before any work
        self.address, self.workers, self.cpus, self.gpus = address, workers, cpus_per_fit, gpus_per_fit
        self.log = log
        self.started = False

    def start(self) -> None:
        if not self.ray.is_initialized():
            self._connect()
        self.workers = self.workers or self._slots()

    def _connect(self) -> None:
        extra = {} if self.address else {"include_dashboard": False}
        try:
            with _keeping_sigterm():
                self.ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING, **extra)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray instance"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UsageError(f"cannot start or join {where}: {first}") from None
        self.started = True

    def _slots(self) -> int:
        resources = self.ray.cluster_resources()
        slots = resources.get("CPU", 0) / self.cpus if self.cpus else math.inf
        if self.gpus:
            slots = min(slots, resources.get("GPU", 0) / self.gpus)
        return max(1, int(slots)) if math.isfinite(slots) else 1

    def describe(self) -> str:
        where = f"the Ray cluster at {self.address}" if self.address else "Ray"
        gpus = f", {self.gpus:g} GPU" if self.gpus else ""
        return f"{where}: up to {self.workers} fits at once, {self.cpus:g} CPU{gpus} each"

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False

    def run(self, tasks, report, stop) -> None:
        """Fit ``tasks``, calling ``report(task, outcome)`` as each ends.

        Ray retries a task once when its worker dies.  A task whose own process gets SIGTERM
        saves its checkpoint, which comes back like any file, and is sent once more to resume
        from it.  Once ``stop.count`` is above zero (Ctrl-C or SIGTERM to the driver), no task
        starts and each running one is cancelled: Ray raises SIGINT's handler in it, and the fit
        saves its checkpoint, which comes back the same way.  A second stop cancels again (stop
        at once); a third kills the workers.
        """
        ray = self.ray
        remote = ray.remote(fit_shipped).options(
            num_cpus=self.cpus, num_gpus=self.gpus, max_retries=1, retry_exceptions=False,
            runtime_env={"env_vars": thread_environment(max(1, int(self.cpus)))})
        queue, flying, cancelled = collections.deque(tasks), {}, 0
        while flying or (queue and not stop.count):
            while queue and not stop.count and len(flying) < self.workers:
                task = self._on_device(queue.popleft())
                try:
                    check_run_folder(task)
                    flying[remote.remote(ship(task))] = task, time.time()
                except UsageError as exc:
                    report(task, Outcome(FAILED, error=one_line(exc)))
                except OSError as exc:
                    report(task, Outcome(FAILED, error=unreadable(task.options.input, exc)))
            if stop.count > cancelled:
                cancelled = stop.count
                for ref in flying:
                    ray.cancel(ref, force=cancelled >= 3)
            if not flying:
                continue  # every picture left failed to load
            ready, _ = ray.wait(list(flying), num_returns=1, timeout=POLL_SECONDS)
            for ref in ready:
                task, started = flying.pop(ref)
                outcome, files = self._result(ref, stopping=bool(stop.count))
                if files:
                    land(task, files)
                if outcome.status == INTERRUPTED and not stop.count and task.attempt == 1:
                    # Stopped by a signal to its own worker: a node being preempted or drained, more
                    # often than a user. Go on elsewhere, from the checkpoint that came back.
                    self.log(f"{task.name}: its Ray task was stopped ({outcome.error}); going on once more")
                    queue.appendleft(task.retry(started))
                    continue
                report(task, outcome)

    def _on_device(self, task: Task) -> Task:
        """On Ray, ``--device auto`` means the GPU exactly when the task asked for one: Ray leaves
        GPUs visible to tasks that did not, and they would share them unaccounted."""
        if task.options.device not in (None, "auto"):
            return task
        options = dataclasses.replace(task.options, device="cuda" if self.gpus else "cpu")
        return dataclasses.replace(task, options=options)

    def _result(self, ref, stopping: bool) -> tuple[Outcome, dict]:
        ray = self.ray
        try:
            return ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return Outcome(INTERRUPTED, error="cancelled; no checkpoint came back"), {}
        except ray.exceptions.RayError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if stopping:
                return Outcome(INTERRUPTED, error=f"its Ray worker stopped ({first})"), {}
            died = tuple(getattr(ray.exceptions, name) for name in _DEATHS if hasattr(ray.exceptions, name))
            what = "its Ray worker died twice" if isinstance(exc, died) else "Ray could not run it"
            return Outcome(FAILED, error=f"{what} ({type(exc).__name__}: {first})"), {}
