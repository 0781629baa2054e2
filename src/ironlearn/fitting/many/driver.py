"""``fit_many``: every picture its own ``ironlearn fit``, run by an engine, summarised as they end;
:func:`run_many`, the same for any :class:`~.task.Job` (``compress-many``'s too)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import sys
import time

from ...backend import cuda_module
from ...errors import OptionError
from ...signals import Terminated, handling
from .. import folder
from ..options import FitOptions, UsageError, validate
from ..run import STOP_SIGNALS
from . import summary
from .compress_job import COMPRESS, CompressOptions
from .fit_job import FIT
from .inputs import SUMMARY, expand
from .task import DONE, FAILED, INTERRUPTED, Job, Outcome, Task

ENGINES = ("local", "ray")


class ManyInterrupted(Exception):
    """Ctrl-C or SIGTERM: finished runs are kept, running ones saved their checkpoints; ``rows`` is the
    summary, ``signal`` the signal that stopped the command (``signal.SIGINT`` for Ctrl-C)."""

    def __init__(self, rows: list[dict], signum: int = signal.SIGINT,
                 saved: str = " (with their checkpoints where training had begun)"):
        self.rows, self.signal = rows, signal.Signals(signum)
        counts = {status: sum(r["status"] == status for r in rows) for status in (DONE, FAILED, INTERRUPTED)}
        waiting = len(rows) - sum(counts.values())
        what = "interrupted" if self.signal == signal.SIGINT else f"stopped by {self.signal.name}"
        if not rows:  # stopped while the pictures were still being found: nothing ran, nothing was saved
            super().__init__(f"{what} before any fit began: no checkpoint was written; run the same command "
                             "again to start")
            return
        saved = saved if counts[INTERRUPTED] else ""
        super().__init__(f"{what}: {counts[DONE]} done, {counts[FAILED]} failed, {counts[INTERRUPTED]} stopped{saved}, "
                         f"{waiting} not started; run the same command again to continue")


def fit_many(inputs, out, *, options: FitOptions | None = None, workers: int | None = None, engine: str = "local",
             address: str | None = None, cpus_per_fit: float | None = None, gpus_per_fit: float = 0.0,
             force: bool = False, log=print, progress: bool | None = None) -> list[dict]:
    """Fit every picture that ``inputs`` name, each into its own run folder ``out/<name>/``.

    Parameters
    ----------
    inputs : iterable of str
        Image files, pixel CSVs, folders (their images and ``.csv`` files) and globs.
    out : str
        The folder that receives one run folder per picture, and ``summary.csv``.
    options : FitOptions, optional
        The settings of every fit (its ``input``, ``out`` and ``resume`` are ignored).
    workers : int, optional
        Fits at once: local worker processes (default one per core), or Ray tasks in
        flight (default as many as the cluster holds).
    engine : {"local", "ray"}
    address : str, optional
        The Ray cluster to join (``auto``, ``ray://host:port``); without it Ray starts locally.
    cpus_per_fit, gpus_per_fit : float, optional
        Threads of each local worker (default: the cores shared among the workers); on Ray, the
        CPUs (default 1) and GPUs (default 0) each task declares.
    force : bool
        Fit every picture anew; otherwise pictures done before are skipped and interrupted ones
        resume from their checkpoints.
    log : callable ``str -> None``
        Where the messages go.
    progress : bool, optional
        A progress bar over the pictures (default: when stderr is a terminal and not ``options.quiet``).

    Returns
    -------
    list of dict
        The rows of ``summary.csv`` (:data:`summary.COLUMNS`) of these pictures, in the inputs'
        order.  The file keeps earlier runs' rows too, so a picture keeps its folder's name.

    Raises
    ------
    UsageError
        Bad options, no pictures, an unusable output folder (or a ``summary.csv`` there that
        fit-many did not write), Ray missing or unreachable.
    ManyInterrupted
        After Ctrl-C or SIGTERM, once the running fits saved their checkpoints (its ``rows`` is the summary).
    """
    template = _template(options, force)
    if engine == "local" and template.device == "cuda":
        cuda_module()  # BackendError before anything starts (workers are fresh processes: no CUDA shared)
    return run_many(FIT, inputs, out, template, workers=workers, engine=engine, address=address,
                    cpus_per_fit=cpus_per_fit, gpus_per_fit=gpus_per_fit, log=log, progress=progress)


def run_many(job: Job, inputs, out, template, *, workers: int | None = None, engine: str = "local",
             address: str | None = None, cpus_per_fit: float | None = None, gpus_per_fit: float = 0.0, log=print,
             progress: bool | None = None) -> list[dict]:
    """Run ``job`` for every picture that ``inputs`` name into ``out``, with the options
    ``template`` (checked), on the ``engine``, as :func:`fit_many` describes; the rows of
    ``out/summary.csv`` (``job.columns``) of these pictures come back."""
    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]  # one input, not its letters
    runner = _engine(engine, workers, address, cpus_per_fit, gpus_per_fit, log)
    with _before_fitting({}):  # a glob over a large tree takes a while
        earlier = summary.earlier(os.path.join(out, SUMMARY), job.headers, job.command)  # a user's file stops it
        sources = expand(inputs, summary.recorded_names(earlier, out), skip=[os.path.join(out, SUMMARY)])
        folder.create(out)
    show_bar = (not template.quiet and sys.stderr.isatty()) if progress is None else progress
    with folder.RunLock(out):  # one fit-many per output folder
        try:
            return _run_all(job, sources, out, earlier, template, runner, log, show_bar)
        finally:
            runner.close()


def compress_many(inputs, out, *, options: CompressOptions | None = None, workers: int | None = None,
                  engine: str = "local", address: str | None = None, cpus_per_fit: float | None = None,
                  force: bool = False, log=print, progress: bool | None = None) -> list[dict]:
    """Compress every picture that ``inputs`` name into ``out/<name>.ilc``, as :func:`fit_many`
    fits them (the same engines, summary, reruns and stops); ``options`` the request for each
    (:class:`~.compress_job.CompressOptions`).  The rows of ``out/summary.csv`` come back."""
    template = dataclasses.replace(options or CompressOptions(), force=force or (options is not None and options.force))
    template.check()
    return run_many(COMPRESS, inputs, out, template, workers=workers, engine=engine, address=address,
                    cpus_per_fit=cpus_per_fit, log=log, progress=progress)


def _template(options: FitOptions | None, force: bool) -> FitOptions:
    template = options or FitOptions(input="")
    if template.resume:
        raise OptionError("fit-many resumes interrupted pictures by itself; drop {resume}", resume="resume=True")
    template = dataclasses.replace(template, force=force or template.force)
    validate(template)
    return template


def _engine(engine, workers, address, cpus_per_fit, gpus_per_fit, log):
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}: use {' or '.join(ENGINES)}")
    if workers is not None and workers < 1:
        raise OptionError(f"{{workers}} must be at least 1 (got {workers})", "workers")
    if cpus_per_fit is not None and not cpus_per_fit > 0:
        raise OptionError(f"{{cpus_per_fit}} must be a positive number (got {cpus_per_fit})", "cpus_per_fit")
    if not gpus_per_fit >= 0:
        raise OptionError(f"{{gpus_per_fit}} must be zero or a positive number (got {gpus_per_fit})", "gpus_per_fit")
    if engine == "ray":
        from .remote import RayEngine

        return RayEngine(address, workers, cpus_per_fit or 1.0, gpus_per_fit, log)
    if address is not None:
        raise OptionError("{address} joins a Ray cluster; use it with {engine} ray", "address", "engine")
    if gpus_per_fit:
        raise OptionError("{gpus_per_fit} is for {engine} ray; local workers share this machine's GPU "
                          "({device} cuda), so use few of them ({workers})", "gpus_per_fit", "engine", "device", "workers")
    from .local import LocalEngine, cores, default_workers

    workers = workers or default_workers()
    threads = max(1, int(cpus_per_fit) if cpus_per_fit else cores() // workers)
    return LocalEngine(workers, threads, log)


def _run_all(job: Job, sources, out, earlier, template, runner, log, show_bar: bool) -> list[dict]:
    started = time.perf_counter()
    path = os.path.join(out, SUMMARY)
    # The pictures earlier runs did here stay listed, so that their names stay theirs.
    kept = {entry["picture"]: entry for entry in earlier}
    rows, tasks = {}, []

    def save() -> None:
        summary.write(path, {**kept, **rows}.values(), job.columns)

    with _before_fitting(rows):
        for source in sources:
            prepared = job.prepare(source, out, template, force=template.force, earlier=kept.get(source.name))
            if isinstance(prepared, Task):
                tasks.append(prepared)
            rows[source.name] = summary.row(source.name, summary.input_cell(source.path, out),
                                            prepared if isinstance(prepared, Outcome) else None, job.columns)
        save()
        if tasks:
            runner.start()  # only now: a Ray cluster is not joined when every picture is done
    skipped, resumed = len(sources) - len(tasks), sum(getattr(t.options, "resume", False) for t in tasks)
    log(f"{job.verb} {len(tasks)} of {len(sources)} pictures into {out}/ ({skipped} done before"
        + (f", {resumed} resuming)" if resumed else ")") + (f" with {runner.describe()}" if tasks else ""))
    bar = _bar(len(sources), skipped) if show_bar else None
    say = _beside(bar, log)
    _show_mean(bar, rows.values())

    def report(task: Task, outcome: Outcome) -> None:
        rows[task.name] = summary.row(task.name, rows[task.name]["input"], outcome, job.columns)
        save()
        say(job.message(task.name, outcome))
        if bar is not None:
            _show_mean(bar, rows.values())
            bar.update()

    try:
        with _stop_requests() as stop:
            runner.run(tasks, report, stop)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - started
    result = list(rows.values())
    finished = sum(r["status"] in (DONE, FAILED) for r in result) - skipped
    log(summary.table(result, seconds, finished))
    log(f"summary: {path}")
    if stop.count:
        raise ManyInterrupted(result, stop.signal, job.stopped)
    return result


# -- the terminal -----------------------------------------------------------------------------
def _bar(total: int, done: int):
    """A tqdm bar over the pictures, ``done`` of them done before."""
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="picture", dynamic_ncols=True, file=sys.stderr)


def _show_mean(bar, rows) -> None:
    psnr = summary.mean_psnr(rows)
    if bar is not None and psnr is not None:
        bar.set_postfix_str(f"mean PSNR {psnr:.2f} dB", refresh=False)


def _beside(bar, log):
    """``log``, clearing the bar while it writes so that the two do not interleave."""
    if bar is None:
        return log

    def say(message: str) -> None:
        with bar.external_write_mode(file=sys.stderr):
            log(message)
    return say


@contextlib.contextmanager
def _before_fitting(rows: dict):
    """Ctrl-C or SIGTERM before any fit starts (while a glob walks a large tree, or Ray starts) as
    :class:`ManyInterrupted` with the ``rows`` made so far: its words claim no checkpoint, where the
    command's for a bare Ctrl-C said the last one written was kept."""
    try:
        yield
    except KeyboardInterrupt as exc:
        raise ManyInterrupted(list(rows.values()), signal.SIGTERM if isinstance(exc, Terminated) else
                              signal.SIGINT) from None


class _Stop:
    """How many times Ctrl-C or SIGTERM came, and the first of them (engines poll ``count``: once
    stops cleanly, twice at once)."""

    def __init__(self):
        self.count, self.signal = 0, signal.SIGINT


@contextlib.contextmanager
def _stop_requests():
    """While inside: Ctrl-C (SIGINT) and SIGTERM count in the yielded object instead of raising or
    killing, so the engine can stop its workers cleanly.  Signals reach the main thread only;
    elsewhere nothing changes."""
    stop = _Stop()

    def on_signal(signum, frame):
        if not stop.count:
            stop.signal = signal.Signals(signum)
        stop.count += 1

    with handling(STOP_SIGNALS, on_signal):
        yield stop
