"""The Ray engine: each picture a Ray task, on this machine or on a cluster, no shared disk needed.

The driver sends the picture's bytes (and what its job needs besides: a fit's checkpoint, to
resume) with the task; the task works in a temporary folder on whichever node runs it, sends
its files back through Ray's object store (a fit's run folder, an encode's file) and removes
its folder; the driver writes them atomically where they belong (:meth:`.task.Job.land`).  Ray is
imported only here, when this engine is asked for.
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

from ..options import UsageError
from .local import thread_environment
from .task import FAILED, INTERRUPTED, Job, Outcome, Task, one_line

MISSING = "the ray engine needs Ray, which is not installed; install it with pip install 'ironlearn[ray]'"
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
    """What a Ray task needs, all in memory: the picture's bytes and name, the files its job
    needs besides (a fit's checkpoint, to resume), the options (whose paths are the driver's)
    and the job."""

    name: str
    picture: bytes
    options: object
    files: dict
    job: Job


def ship(task: Task) -> Shipment:
    """Read what ``task`` needs into memory (raises OSError when the picture cannot be read)."""
    with open(task.picture, "rb") as file:
        picture = file.read()
    return Shipment(task.name, picture, task.options, task.job.files_to_ship(task.options), task.job)


def unreadable(path: str, exc: OSError) -> str:
    """What a fit says of a picture it cannot open (image.io's wording), for one the driver cannot read."""
    if isinstance(exc, FileNotFoundError):
        return f"{path}: no such file"
    if isinstance(exc, IsADirectoryError):
        return f"{path} is a folder; give an image or pixel CSV file"
    if isinstance(exc, PermissionError):
        return f"{path}: permission denied; make the file readable (chmod +r) or copy it"
    return f"{path}: {exc.strerror or exc}"


def run_shipped(shipment: Shipment) -> tuple[Outcome, dict]:
    """The Ray task: the job done in a temporary folder; the outcome and the files to send back
    (``{file name: bytes}``), and nothing left behind.  Paths in an error are the driver's."""
    with tempfile.TemporaryDirectory(prefix="ironlearn-") as tmp:
        picture = os.path.join(tmp, os.path.basename(shipment.options.input) or "picture")
        with open(picture, "wb") as file:
            file.write(shipment.picture)
        return shipment.job.run_shipped(shipment.options, picture, shipment.files, tmp)


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
        return f"{where}: up to {self.workers} pictures at once, {self.cpus:g} CPU{gpus} each"

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
        remote = ray.remote(run_shipped).options(
            num_cpus=self.cpus, num_gpus=self.gpus, max_retries=1, retry_exceptions=False,
            runtime_env={"env_vars": thread_environment(max(1, int(self.cpus)))})
        queue, flying, cancelled = collections.deque(tasks), {}, 0
        while flying or (queue and not stop.count):
            while queue and not stop.count and len(flying) < self.workers:
                task = queue.popleft()
                task = dataclasses.replace(task, options=task.job.on_ray(task.options, self.gpus))
                try:
                    task.job.check_destination(task.options)
                    flying[remote.remote(ship(task))] = task, time.time()
                except UsageError as exc:
                    report(task, Outcome(FAILED, error=one_line(exc)))
                except OSError as exc:
                    report(task, Outcome(FAILED, error=unreadable(task.picture, exc)))
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
                    task.job.land(task.options, files)
                if outcome.status == INTERRUPTED and not stop.count and task.attempt == 1:
                    # Stopped by a signal to its own worker: a node being preempted or drained, more
                    # often than a user. Go on elsewhere, from the checkpoint that came back.
                    self.log(f"{task.name}: its Ray task was stopped ({outcome.error}); going on once more")
                    queue.appendleft(task.retry(started))
                    continue
                report(task, outcome)

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
