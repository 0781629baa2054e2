"""What a fit leaves in its run folder besides the checkpoint: history, plots, pictures, metrics."""

from __future__ import annotations

import csv
import io
import json
import os
import sys

from ..files import atomic_write, is_generated_page, write_bytes
from ..image import metrics
from ..image.render import render_png
from ..train import History, checkpoint
from . import folder

HISTORY_COLUMNS = ["step", "loss", "psnr", "lr", "seconds", "psnr_of"]


class Recorder(History):
    """The history rows (step, loss, psnr, lr, seconds, psnr_of), written to ``history.csv``.

    ``psnr`` comes from the step's own loss; ``psnr_of`` says what it measures: ``picture``
    when each step sees every pixel (exact), ``batch`` when it is an estimate from a sample.
    """

    def __init__(self, every: int, exact: bool = False):
        super().__init__(max(1, every))
        self.psnr_of = "picture" if exact else "batch"

    def row(self, step: int, loss: float, lr: float, seconds: float) -> dict:
        return {"step": step, "loss": loss, "psnr": round(metrics.psnr_from_mse(loss), 4), "lr": lr,
                "seconds": round(seconds, 4), "psnr_of": self.psnr_of}

    def write(self, path, trainer=None) -> None:
        """``history.csv`` at ``path``; given the ``trainer``, the rows it has not read yet (on a
        GPU) are read first, as a checkpoint is written (which has read the device anyway)."""
        if trainer is not None:
            self.read(trainer, strict=False)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=HISTORY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows)
        write_bytes(path, buffer.getvalue().encode())

    def restore(self, path, upto_step: int) -> bool:
        """Load the rows written before, up to ``upto_step``; False when the file is there but
        unreadable (a lost history is not worth stopping for, but worth a note)."""
        if not os.path.isfile(path):
            return True
        try:
            with open(path, newline="") as file:
                reader = csv.DictReader(file)
                rows = [{k: v if k == "psnr_of" else float(v) for k, v in row.items()} for row in reader]
            if "step" not in (reader.fieldnames or ()):
                return False
            rows = [{**row, "step": int(row["step"]), "psnr_of": row.get("psnr_of") or self.psnr_of}
                    for row in rows if row["step"] <= upto_step]
        except (OSError, ValueError, TypeError, KeyError, OverflowError):
            return False
        self.rows = rows
        return True


def run_metrics(plan, trainer, score, backend, stalled_seconds: float = 0.0, slowdown: float | None = None) -> dict:
    """The numbers ``metrics.json`` holds; ``score`` compared the whole render with the picture.
    A timed run also says how much of its training time it spent stalled (``train.timed``), and
    how many times the pace its calibration measured its steps took (``slowdown``); a run on the
    CPU, the share of the time it was ready to run that it had a core (``cpu_share``, under 1 on
    a busy machine; Linux only)."""
    result = {
        "psnr_db": round(score.psnr, 3),
        "steps": trainer.step,
        "seconds": round(trainer.train_seconds, 3),
        "params": trainer.model.num_parameters,
        "pixels": plan.width * plan.height,
        "model": plan.model,
        "model_options": plan.model_options,
        "mode": plan.mode,
        "width": plan.width,
        "height": plan.height,
        "device": backend.device,
        "batch_size": plan.batch_size or 0,
        "seed": plan.seed,
        "final_loss": trainer.loss,
    }
    if plan.timed:
        result["stalled_seconds"] = round(stalled_seconds, 3)
        if slowdown is not None:
            result["slowdown"] = round(slowdown, 2)
    if backend.device == "cpu" and trainer.cpu_share is not None:
        result["cpu_share"] = round(trainer.cpu_share, 3)
    if plan.mode == "binary":
        result["accuracy"] = round(score.accuracy, 6)
    result.update(backend.memory_stats())
    return result


#: A run that spent more than this share of its training time stalled says so when it ends.
STALL_NOTICE_SHARE = 0.1
#: A run whose steps took this many times the pace measured at its start says so when it ends.
SLOWDOWN_NOTICE = 1.5
#: A run on the CPU that had a core less than this share of the time it was ready to run says so
#: when it ends: the machine was busy (alone, a fit has one nearly all of that time; fits beside a
#: neighbour had 0.5-0.65 of it: docs/benchmarks.md, 'How does a fit hold on a busy machine?').
BUSY_NOTICE = 0.8


def describe_result(result: dict) -> str:
    """One line for a finished fit: PSNR of the final model over every pixel (and accuracy), steps,
    training time, the time stalled when it was more than a tenth of it, and whether the machine
    was busy (its steps slower than measured at the start, or without a core much of their time)."""
    extra = f", accuracy {result['accuracy']:.2%}" if "accuracy" in result else ""
    stalled = result.get("stalled_seconds", 0.0)
    if stalled > STALL_NOTICE_SHARE * result["seconds"]:
        extra_time = f" ({stalled:.1f} s of it stalled: the machine paused the fit or was busy)"
    else:
        extra_time = ""
    slower, busy = result.get("slowdown", 1.0) >= SLOWDOWN_NOTICE, result.get("cpu_share", 1.0) < BUSY_NOTICE
    if slower or busy:
        said = [f"its steps took {result['slowdown']:.1f}x the time measured at its start"] if slower else []
        said.append(f"the machine was busy with other work: the fit had a core {result['cpu_share']:.0%} of the "
                    "time it was ready to run" if busy else "it got that much less of the machine, which was busy "
                    "with other work")
        extra_time += f" ({'; '.join(said)})"
    return (f"PSNR {result['psnr_db']:.2f} dB (final model, every pixel){extra} after {result['steps']:,} steps, "
            f"{result['seconds']:.1f} s of training{extra_time}")


def write_outputs(job, picture) -> dict:
    """model.npz, reconstruction.png, timelapse.gif, loss.png, history.csv and metrics.json of
    ``job`` (a :class:`~ironlearn.fitting.run.Job`); returns the metrics.

    The reconstruction is rendered at full size in bands, streamed into its PNG and scored
    against the picture on the way (the PSNR in metrics.json is exact, over every pixel).
    """
    plan, trainer, backend, recorder, snapshots = job.plan, job.trainer, job.backend, job.recorder, job.snapshots
    out, model = plan.out, trainer.model
    score = metrics.BandScore(picture)
    render_png(model, os.path.join(out, folder.RECONSTRUCTION), plan.width, plan.height, backend, plan.channels,
               each=score.add, progress=not plan.quiet and sys.stderr.isatty())
    result = run_metrics(plan, trainer, score, backend, job.stalled_seconds, job.slowdown)
    settings = {**job.settings(trainer), "metrics": result}
    checkpoint.save(os.path.join(out, folder.MODEL), model, step=trainer.step, seed=trainer.seed, settings=settings)
    snapshots.write_gif(os.path.join(out, folder.TIMELAPSE))
    recorder.write(os.path.join(out, folder.HISTORY))
    # A tile a step: each row is one tile's loss, and an epoch's mean is the picture's.  A run that
    # did not train (fitting.start.keeps_the_start) has no curve to plot.
    if recorder.rows:
        plot_history(os.path.join(out, folder.LOSS_PLOT), recorder.rows, final_psnr=result["psnr_db"],
                     epoch=getattr(trainer.batches, "tiles", 1))
    write_bytes(os.path.join(out, folder.METRICS), (json.dumps(result, indent=2) + "\n").encode())
    page = os.path.join(out, folder.VIEWER)
    if is_generated_page(page):  # a page made for this run earlier (after a resume): show the run as it is now
        from ..viewer import write_viewer

        write_viewer(out, page)
    return result


def epoch_means(rows, epoch: int) -> list:
    """Each row's mean loss over the last ``epoch`` rows up to it (fewer at the start): as many
    tiles as the picture has, each row one tile drawn in an order that visits them all."""
    means, total = [], 0.0
    for i, row in enumerate(rows):
        total += row["loss"]
        if i >= epoch:
            total -= rows[i - epoch]["loss"]
        means.append(total / min(i + 1, epoch))
    return means


def plot_history(path, rows, final_psnr: float | None = None, epoch: int = 1) -> None:
    """Loss (log scale) and PSNR against step, side by side, with the final model's PSNR over
    every pixel marked beside the curve: the curve is each step's training loss (a batch, or the
    pixels with samples between them), measured before that step's update, so it ends below the
    figure that ``metrics.json`` and the headline give.

    ``epoch``: steps that see every pixel once (a tile a step).  Past 1, each step's loss is one
    tile's, as different as the tiles are, and the plot draws it faint under its mean over the
    last ``epoch`` rows, an estimate of the whole picture's.

    Draws on a bare :class:`~matplotlib.figure.Figure`, so the global backend (a notebook's,
    say) is never touched.
    """
    from matplotlib.figure import Figure

    steps = [r["step"] for r in rows]
    # Margins set by hand: the constrained layout cost much of a plot's time (measured:
    # docs/benchmark-log.md, 'Measurements the code's comments quoted').
    figure = Figure(figsize=(9, 3.4), dpi=100)
    figure.subplots_adjust(left=0.075, right=0.985, bottom=0.15, top=0.9, wspace=0.22)
    loss_ax, psnr_ax = figure.subplots(1, 2)
    tiles = epoch > 1 and len(rows) > 1
    faint = {"alpha": 0.25, "linewidth": 0.6} if tiles else {}
    loss_ax.semilogy(steps, [r["loss"] for r in rows], color="tab:blue", **faint)
    loss_ax.set(xlabel="step", ylabel="loss (MSE)", title="training loss")
    psnr_ax.plot(steps, [r["psnr"] for r in rows], color="tab:orange",
                 label="each step's training loss" + (" (one tile)" if tiles else ""), **faint)
    if tiles:
        means = epoch_means(rows, epoch)
        loss_ax.semilogy(steps, means, color="tab:blue")
        psnr_ax.plot(steps, [metrics.psnr_from_mse(m) for m in means], color="tab:orange",
                     label=f"mean of the last {epoch} (the picture)")
    psnr_ax.set(xlabel="step", ylabel="PSNR (dB)", title="PSNR")
    if final_psnr is not None and steps:
        psnr_ax.plot([steps[-1]], [final_psnr], "o", color="black",
                     label=f"final model, every pixel: {final_psnr:.2f} dB")
        psnr_ax.legend(loc="lower right", fontsize="small")
    for ax in (loss_ax, psnr_ax):
        ax.grid(True, alpha=0.3)
    atomic_write(path, lambda file: figure.savefig(file, format="png"))
