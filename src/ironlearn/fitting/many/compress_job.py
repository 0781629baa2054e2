"""``compress-many``'s job: each picture an ``ironlearn compress`` into ``DIR/<name>.ilc``.

An encode keeps nothing to resume from: a picture stopped is compressed again from the start.
A file is done when the summary records it done with the same request (rate or ``lmbda``,
``seconds``, ``mode``) and it is still there at the size recorded; a rerun skips it.  A file at
``DIR/<name>.ilc`` that compress-many did not write is not replaced, unless ``force``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

from ...codec.bitstream import read_header
from ...codec.search.encoder import DEFAULT_BPP
from ...codec.search.job import check_request, compress_path
from ...errors import OptionError
from ...files import write_bytes
from .inputs import Source
from .task import DONE, FAILED, Job, Outcome, Task, failure, guarded

#: A compressed file's suffix.
SUFFIX = ".ilc"
#: The request, as the summary records it (a rerun with another redoes the picture).
ASKED = ("bpp_asked", "lmbda", "seconds_asked")
COLUMNS = ("picture", "input", "file", "width", "height", "mode", *ASKED, "bytes", "bpp", "psnr_db", "seconds",
           "mlp_steps", "status", "error")
_NUMBERS = ("width", "height", *ASKED, "bytes", "bpp", "psnr_db", "seconds", "mlp_steps")


@dataclass(frozen=True)
class CompressOptions:
    """What ``compress-many`` asks of every picture, as ``ironlearn compress`` takes it: a target
    ``bpp`` (default 0.5) or ``lmbda``, the ``seconds`` of each encode, the ``mode``; ``input``
    and ``out`` are one picture's (set for each)."""

    bpp: float | None = None
    lmbda: float | None = None
    seconds: float = 30.0
    mode: str | None = None
    force: bool = False
    quiet: bool = False
    input: str = ""
    out: str = ""

    def check(self) -> None:
        """OptionError for a request that cannot work, before any picture starts."""
        if self.bpp is not None and self.lmbda is not None:
            raise OptionError("give {bpp} or {lmbda}, not both", "bpp", "lmbda")
        check_request(self.bpp, self.seconds)

    @property
    def asked(self) -> dict:
        """The request as the summary records it."""
        return {"bpp_asked": None if self.lmbda is not None else self.bpp or DEFAULT_BPP, "lmbda": self.lmbda,
                "seconds_asked": self.seconds}


def compress_one(options: CompressOptions) -> Outcome:
    """The picture ``options.input`` compressed into ``options.out``; never raises for the
    picture's own errors (a picture stopped writes nothing)."""
    def work() -> Outcome:
        started = time.perf_counter()
        result = compress_path(options.input, options.out, bpp=options.bpp, lmbda=options.lmbda,
                               seconds=options.seconds, mode=options.mode, started=started)
        header = read_header(result.data)
        return Outcome(DONE, metrics={
            "file": os.path.basename(options.out), "width": header.width, "height": header.height,
            "mode": header.mode, **options.asked, "bytes": len(result.data), "bpp": result.bpp,
            "psnr_db": result.psnr, "seconds": time.perf_counter() - started, "mlp_steps": result.steps})
    return guarded(work, stopped="stopped; nothing written (an encode starts again)")


class CompressJob(Job):
    """Each picture compressed into ``DIR/<name>.ilc``, as ``ironlearn compress`` writes it."""

    command, verb = "compress-many", "compressing"
    columns = COLUMNS
    stopped = " (an encode cut short wrote nothing, and starts again)"

    def prepare(self, source: Source, out: str, template: CompressOptions, *, force: bool,
                earlier: dict | None = None) -> Task | Outcome:
        options = dataclasses.replace(template, input=source.path, out=os.path.join(out, source.name + SUFFIX))
        if not force and os.path.lexists(options.out):
            if earlier is None:
                return Outcome(FAILED, error=failure(OptionError(  # in the summary's words: the command's
                    f"{options.out} exists and compress-many did not write it; move it away, or give {{force}} to "
                    "replace it", force="force=True")))
            done = _done(earlier, options)
            if done is not None:
                return Outcome(DONE, metrics=done)
        return Task(source.name, options, COMPRESS)

    def run(self, options) -> Outcome:
        return compress_one(options)

    def message(self, name, outcome):
        if outcome.status != DONE:
            return super().message(name, outcome)
        m = outcome.metrics
        return (f"{name}: {m['bytes']:,} bytes, {m['bpp']:.4f} bpp, {m['psnr_db']:.2f} dB, {m['seconds']:.1f} s"
                + (f", MLP {m['mlp_steps']} steps" if m.get("mlp_steps") else ""))

    def run_shipped(self, options, picture, files, tmp):
        out = os.path.join(tmp, os.path.basename(options.out))
        outcome = compress_one(dataclasses.replace(options, input=picture, out=out))
        back = {}
        if os.path.isfile(out):
            with open(out, "rb") as file:
                back[SUFFIX] = file.read()
        error = outcome.error.replace(out, options.out).replace(picture, options.input)
        return dataclasses.replace(outcome, error=error), back

    def land(self, options, files):
        write_bytes(options.out, files[SUFFIX])


def _done(row: dict, options: CompressOptions) -> dict | None:
    """The summary's ``row`` as metrics when it records the file at ``options.out`` done, with the
    same request, at the size the file still has; None otherwise."""
    try:
        metrics = {key: (float(row[key]) if row.get(key) not in (None, "") else None) for key in _NUMBERS}
        same = all(metrics[key] == (None if value is None else float(value)) for key, value in options.asked.items())
        asked_mode = options.mode is None or row.get("mode") == options.mode
        kept = os.path.getsize(options.out) == metrics["bytes"]
    except (KeyError, ValueError, OSError):
        return None
    if row.get("status") != DONE or not (same and asked_mode and kept):
        return None
    for key in ("width", "height", "bytes", "mlp_steps"):
        metrics[key] = int(metrics[key]) if metrics[key] is not None else None
    return {**metrics, "file": row.get("file"), "mode": row.get("mode")}


#: The encode's job, which ``compress-many`` runs.
COMPRESS = CompressJob()
