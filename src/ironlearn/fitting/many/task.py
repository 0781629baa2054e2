"""One picture's job as a worker runs it: a :class:`Task` in, an :class:`Outcome` out.

A :class:`Job` says what the engines do for each picture.  The driver asks it what each picture
needs (:meth:`Job.prepare`: nothing, it is done; or a task); a worker, in whatever process or on
whatever machine, runs :meth:`Job.run`, which turns every way the work can end into an
:class:`Outcome` with a one-line error (:func:`failure`), so that one bad picture never stops
the others.  The jobs: a fit (:mod:`.fit_job`, ``fit-many``) and an encode (:mod:`.compress_job`,
``compress-many``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...backend import BackendError
from ...errors import WordedError
from ...image.io import InputError
from ...signals import terminate_cleanly
from ...train import CheckpointError, DivergenceError
from ..options import UsageError, flag
from .inputs import Source

DONE, FAILED, INTERRUPTED = "done", "failed", "interrupted"


@dataclass(frozen=True)
class Task:
    """One picture's ``job``: ``options`` says what to do with the picture and where its output
    goes (a fit's run folder, ``resume`` and ``force``; an encode's file)."""

    name: str
    options: object
    job: Job
    attempt: int = 1

    @property
    def picture(self) -> str:
        """The picture's path, as the driver sees it."""
        return self.options.input

    def retry(self, since: float) -> Task:
        """This task once more, after its worker died (at ``since``, a ``time.time()``), as its
        job goes on (:meth:`Job.again`)."""
        return dataclasses.replace(self, options=self.job.again(self.options, since), attempt=self.attempt + 1)


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


def guarded(work, stopped: str = "stopped; the last checkpoint written is kept") -> Outcome:
    """``work()``'s outcome, with SIGTERM as Ctrl-C: a KeyboardInterrupt is ``interrupted`` (its
    error ``stopped``), any other exception this picture's failure; never raises for the
    picture's own errors."""
    try:
        with terminate_cleanly():
            return work()
    except KeyboardInterrupt:
        return Outcome(INTERRUPTED, error=stopped)
    except Exception as exc:  # noqa: BLE001  (every failure is this picture's alone)
        return Outcome(FAILED, error=failure(exc))


class Job:
    """What the engines do for each picture, and what its summary keeps: ``command`` names it in
    messages, ``columns`` are its summary.csv's; ``Source``, ``Task`` and ``Outcome`` travel
    between them.  Subclasses say the rest."""

    command = ""
    verb = ""
    columns: tuple = ()
    #: What a stopped picture keeps, as the closing line of a stopped command says it.
    stopped = ""

    @property
    def headers(self) -> tuple:
        """The header rows of the summaries this job writes (or wrote)."""
        return (",".join(self.columns),)

    def prepare(self, source: Source, out: str, template, *, force: bool, earlier: dict | None) -> Task | Outcome:
        """The task for ``source`` into ``out``, or the outcome of the work done before
        (``earlier``: the picture's row in the summary, if any)."""
        raise NotImplementedError

    def run(self, options) -> Outcome:
        """The work, in a worker; never raises for the picture's own errors."""
        raise NotImplementedError

    def again(self, options, since: float):
        """The options of a retry after the worker died at ``since``: the same."""
        return options

    def message(self, name: str, outcome: Outcome) -> str:
        """The line said when a picture's work ends."""
        return f"{name}: {outcome.status}: {outcome.error}"

    def on_ray(self, options, gpus: float):
        """The options as a Ray task that declares ``gpus`` runs them: the same."""
        return options

    def files_to_ship(self, options) -> dict:
        """What a Ray task needs besides the picture (``{file name: bytes}``): nothing."""
        return {}

    def run_shipped(self, options, picture: str, files: dict, tmp: str) -> tuple[Outcome, dict]:
        """A Ray task's work in the folder ``tmp``, on the copy ``picture`` of the picture and
        ``files``: the outcome (paths in its error the driver's) and the files to send back."""
        raise NotImplementedError

    def check_destination(self, options) -> None:
        """What the work checks of where its output goes, checked where it lands (a Ray task
        works elsewhere); UsageError to refuse."""

    def land(self, options, files: dict) -> None:
        """Write what a Ray task sent back where it belongs, atomically."""
        raise NotImplementedError
