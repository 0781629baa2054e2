"""The fit job: picture in, a trained network and its outputs out, resumable at any point.

:func:`fit` is what ``ironlearn fit`` runs once its arguments are parsed; it is
usable from Python too.  It writes into one run folder:

``checkpoint.npz``   latest state (atomic), enough to resume
``model.npz``        the final model with its architecture
``reconstruction.png``, ``timelapse.gif``, ``loss.png``, ``history.csv``, ``metrics.json``
"""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import math
import os
import shlex
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .backend import get_backend
from .image import metrics
from .image.coords import pixel_grid
from .image.io import Picture, load_picture, save_image
from .image.render import render
from .image.timelapse import Snapshots
from .nn import mse
from .optim import Adam, constant, cosine
from .presets import DEFAULT_PRESET, PRESETS
from .train import Callback, Checkpointer, DivergenceError, History, Trainer, checkpoint
from .files import atomic_write, remove_stale_temporaries

DEFAULT_TIME_BUDGET = 40.0  # seconds, when neither --steps nor --time-budget is given
CALIBRATION_STEPS = 6
MAX_RETRIES = 3  # after divergence: roll back and retry with a smaller learning rate this often
RETRY_LR_FACTOR = 0.3
CHECKPOINT_SECONDS = 60.0  # also save after this much training time, whatever the step interval
MAX_LOSS = 1e3  # an MSE on [0, 1] pixels above this is an explosion, not training
OUTPUT_NAMES = ("checkpoint.npz", "model.npz", "reconstruction.png", "timelapse.gif", "loss.png", "history.csv",
                "metrics.json", "snapshots.npz")
# Upper bounds that catch typos (an extra zero or three) before they cost hours or all the memory.
LIMITS = {"steps": 10**9, "width": 4096, "depth": 64, "frequencies": 4096, "levels": 32, "features": 16,
          "coarsest": 65536, "finest": 65536, "checkpoint_every": 10**9, "snapshot_every": 10**9,
          "time_budget": 30 * 86400, "lr": 10.0}


class UsageError(ValueError):
    """Options that cannot work together; the message says which and what to do."""


class Interrupted(Exception):
    """Ctrl-C: the checkpoint is saved; ``resume_command`` continues the run."""

    def __init__(self, step: int, resume_command: str):
        self.step, self.resume_command = step, resume_command
        super().__init__(f"interrupted at step {step}; checkpoint saved. Resume with:\n  {resume_command}")


@dataclass
class FitOptions:
    """Everything ``ironlearn fit`` accepts; ``None`` means "the preset's choice" (or, on
    ``--resume``, "what the run used")."""

    input: str
    out: str | None = None
    mode: str | None = None
    size: object = None  # N or (W, H)
    model: str | None = None
    width: int | None = None
    depth: int | None = None
    w0: float | None = None
    steps: int | None = None
    time_budget: float | None = None
    lr: float | None = None
    lr_min: float | None = None
    schedule: str | None = None  # cosine
    batch_size: int | None = None  # 0 = full batch
    seed: int | None = None  # 0
    device: str = "auto"
    checkpoint_every: int | None = None
    snapshot_every: int | None = None
    resume: bool = False
    force: bool = False
    quiet: bool = False
    model_options: dict = field(default_factory=dict)  # preset options beyond width/depth/w0

    def preset_options(self) -> dict:
        return {"width": self.width, "depth": self.depth, "w0": self.w0, **self.model_options}


def default_out(input_path: str) -> str:
    return os.path.join("runs", os.path.splitext(os.path.basename(input_path))[0])


def fingerprint(picture: Picture) -> str:
    """A digest of the pixels actually trained on (after resizing and mode conversion)."""
    digest = hashlib.sha256(picture.pixels.tobytes())
    digest.update(f"{picture.pixels.shape}{picture.mode}".encode())
    return digest.hexdigest()[:16]


# -- the run folder ---------------------------------------------------------------------------
def prepare_out(out: str, *, resume: bool, force: bool, create: bool = True) -> None:
    """Check that ``out`` can take this run (and, with ``create``, make the folder)."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out} is a file; give a folder for the run's outputs")
    ckpt = os.path.join(out, "checkpoint.npz")
    if resume:
        if not os.path.isfile(ckpt):
            raise UsageError(f"nothing to resume: {ckpt} does not exist (drop --resume to start a new run)")
        return
    if os.path.exists(ckpt) and not force:
        raise UsageError(f"{out} already holds a run; use --resume to continue it, --force to start over, "
                         "or --out for another folder")
    parent = os.path.abspath(out)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageError(f"cannot create the output folder {out}: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot create the output folder {out}: {parent} is not writable; "
                         "choose another with --out")
    if not create:
        return
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the output folder {out}: {exc.strerror}") from None


# -- callbacks specific to fitting an image ----------------------------------------------------
class Recorder(History):
    """The history rows (step, loss, psnr, lr, seconds), written to ``history.csv``.

    ``psnr`` comes from the step's own loss: exact for full-batch training, an
    estimate from the batch with mini-batches.
    """

    def __init__(self, every: int):
        super().__init__(max(1, every))

    def row(self, trainer) -> dict:
        loss = trainer.loss
        return {"step": trainer.step, "loss": loss, "psnr": round(metrics.psnr_from_mse(loss), 4),
                "lr": trainer.lr, "seconds": round(trainer.train_seconds, 4)}

    def write(self, path) -> None:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=["step", "loss", "psnr", "lr", "seconds"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows)
        atomic_write(path, lambda file: file.write(buffer.getvalue().encode()))

    def restore(self, path, upto_step: int) -> None:
        if not os.path.isfile(path):
            return
        try:
            with open(path, newline="") as file:
                rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(file)]
        except (OSError, ValueError, TypeError):
            return
        self.rows = [{**row, "step": int(row["step"])} for row in rows if row["step"] <= upto_step]


class SaveRun(Callback):
    """Saves the run every ``interval`` steps or ``seconds`` of training, whichever comes first,
    and at the end: the checkpoint first, then the history and time-lapse frames beside it (so a
    failed write changes nothing), and an in-memory copy of that state, where a diverged run rolls
    back to."""

    def __init__(self, out: str, interval: int, seconds: float, settings, recorder: Recorder,
                 snapshots: Snapshots):
        super().__init__(1)  # decides itself when to save; the check costs no device sync
        self.out, self.interval, self.seconds = out, interval, seconds
        self.checkpointer = Checkpointer(os.path.join(out, "checkpoint.npz"), 0, settings=settings)
        self.recorder, self.snapshots = recorder, snapshots
        self.saved_at = 0.0

    def step(self, trainer) -> None:
        if trainer.step % self.interval and trainer.train_seconds - self.saved_at < self.seconds:
            return
        self.save(trainer)

    def save(self, trainer) -> None:
        self.checkpointer.step(trainer)  # raises DivergenceError rather than save a bad state
        self.saved_at = trainer.train_seconds
        self.remember(trainer)
        self.recorder.write(os.path.join(self.out, "history.csv"))
        if self.snapshots.frames:
            self.snapshots.save(os.path.join(self.out, "snapshots.npz"))

    def end(self, trainer, error) -> None:
        if trainer.step > 0 and (error is None or isinstance(error, KeyboardInterrupt)):
            try:
                self.save(trainer)
            except DivergenceError:
                pass

    # -- the last good state, in memory -----------------------------------------------------
    def remember(self, trainer) -> None:
        self.model_state = trainer.model.state_dict()
        self.optimizer_state = {k: (v.copy() if hasattr(v, "copy") else v)
                                for k, v in trainer.optimizer.state_dict().items()}

    def roll_back(self, trainer) -> None:
        trainer.model.load_state_dict(self.model_state)
        trainer.optimizer.load_state_dict(self.optimizer_state)


class Progress(Callback):
    """A tqdm bar on a terminal; plain lines (about ten per run) otherwise or with ``quiet``."""

    def __init__(self, total: int, start: int, *, plain: bool, stream=None):
        self.total, self.plain, self.stream = total, plain, stream or sys.stderr
        super().__init__(max(1, total // 10) if plain else max(1, total // 200))
        self.bar = None
        if not plain:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=start, unit="step", dynamic_ncols=True, file=self.stream,
                            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")

    def step(self, trainer) -> None:
        loss = trainer.loss
        psnr = metrics.psnr_from_mse(loss)
        if self.bar is not None:
            self.bar.update(trainer.step - self.bar.n)
            self.bar.set_postfix_str(f"loss {loss:.3g}, PSNR {psnr:.2f} dB, lr {trainer.lr:.2g}", refresh=False)
        else:
            rate = trainer.step / trainer.train_seconds if trainer.train_seconds else 0.0
            print(f"step {trainer.step}/{self.total}  loss {loss:.4g}  PSNR {psnr:.2f} dB  lr {trainer.lr:.2g}  "
                  f"{rate:.1f} steps/s  {trainer.train_seconds:.1f} s", file=self.stream, flush=True)

    def end(self, trainer, error) -> None:
        if isinstance(error, DivergenceError):
            return  # the run may roll back and go on; fit closes the bar if it gives up
        if self.bar is not None and error is None:
            self.bar.update(trainer.step - self.bar.n)
        self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# -- the job ------------------------------------------------------------------------------------
def _calibrate(model, loss, x, y, batch_size, seed) -> float:
    """Seconds per step, measured on a throwaway copy (the real run starts untouched)."""
    probe = copy.deepcopy(model)
    trainer = Trainer(probe, Adam(probe.named_parameters(), lr=1e-9), loss, x, y, batch_size=batch_size,
                      seed=seed, check_every=0)
    trainer.run(2)
    trainer.loss  # noqa: B018  (a sync, so the timing below is real on a GPU)
    t0 = time.perf_counter()
    trainer.run(CALIBRATION_STEPS)
    trainer.loss  # noqa: B018
    return max((time.perf_counter() - t0) / (CALIBRATION_STEPS - 2), 1e-6)


def _schedule(kind: str, lr: float, lr_min: float, total: int):
    if kind == "constant":
        return constant(lr)
    # At least 50 warm-up steps (a quarter of very short runs): Adam's first steps at the full rate
    # cost a 5 s hash-grid fit of the drawing 7 dB (40.3 against 47.8 dB, measured).
    warmup = min(total // 4, max(50, min(total // 50, 100)))
    return cosine(lr, min(lr_min, lr), total, warmup_steps=warmup)


def _check_options(opt: FitOptions) -> None:
    for name in ("steps", "checkpoint_every", "snapshot_every", "width", "depth"):
        value = getattr(opt, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1 (got {value})")
    given = {**vars(opt), **opt.model_options}
    for name, limit in LIMITS.items():
        if given.get(name) is not None and given[name] > limit:
            raise UsageError(f"--{name.replace('_', '-')} {given[name]:g} is beyond what makes sense "
                             f"(at most {limit:g}); check the value")
    table = opt.model_options.get("log2_table_size")
    if table is not None and not 6 <= table <= 24:
        raise UsageError(f"--table-log2 must lie in 6..24 (got {table})")
    for name in ("time_budget", "lr", "w0"):
        value = getattr(opt, name)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise UsageError(f"--{name.replace('_', '-')} must be a positive number (got {value})")
    if opt.lr_min is not None and not (opt.lr_min >= 0 and math.isfinite(opt.lr_min)):
        raise UsageError(f"--lr-min must be zero or a positive number (got {opt.lr_min})")
    if opt.batch_size is not None and opt.batch_size < 0:
        raise UsageError(f"--batch-size must be positive, or 0 for the full batch (got {opt.batch_size})")
    if opt.model is not None and opt.model not in PRESETS:
        raise UsageError(f"unknown model {opt.model!r}: use one of {', '.join(PRESETS)}")
    if opt.schedule not in (None, "cosine", "constant"):
        raise UsageError(f"unknown schedule {opt.schedule!r}: use cosine or constant")
    if opt.resume and opt.force:
        raise UsageError("--resume and --force contradict each other: --resume continues the run, "
                         "--force starts it over")


def _settings_from_checkpoint(opt: FitOptions, saved: dict) -> None:
    """On --resume: fill unset options from the run, refuse ones that differ."""
    mismatches = []
    for name in ("model", "mode", "batch_size", "seed", "schedule"):
        given, was = getattr(opt, name), saved.get(name)
        if given is None:
            setattr(opt, name, was)
        elif given != was:
            mismatches.append(f"--{name.replace('_', '-')} {given} (the run used {was})")
    if opt.size is None:
        opt.size = tuple(saved["size"])
    saved_options = saved.get("model_options", {})
    for name, value in opt.preset_options().items():
        if value is not None and saved_options.get(name) != value:
            mismatches.append(f"--{name.replace('_', '-')} {value} (the run used {saved_options.get(name)})")
    opt.width, opt.depth, opt.w0 = (saved_options.get(k) for k in ("width", "depth", "w0"))
    opt.model_options = {k: v for k, v in saved_options.items() if k not in ("width", "depth", "w0")}
    for name in ("lr", "lr_min", "checkpoint_every", "snapshot_every"):
        if getattr(opt, name) is None:
            setattr(opt, name, saved.get(name))
    if opt.time_budget is None and opt.steps is None:  # new --steps: run to them, not to the old budget
        opt.time_budget = saved.get("time_budget")
    if mismatches:
        raise UsageError(f"cannot resume with different settings: {'; '.join(mismatches)}; "
                         "drop them, or use --force to start a new run")


def fit(opt: FitOptions, *, log=print) -> dict:
    """Run the fit described by ``opt``; returns the metrics written to ``metrics.json``.

    Raises
    ------
    UsageError, InputError, CheckpointError, BackendError
        Bad options or files (the CLI turns them into exit code 2).
    Interrupted
        After Ctrl-C, once the checkpoint is saved.
    DivergenceError
        When the loss stays non-finite after the retries (the last good checkpoint is kept).
    """
    _check_options(opt)
    opt.out = opt.out or default_out(opt.input)
    ckpt_path = os.path.join(opt.out, "checkpoint.npz")
    saved = None
    if opt.resume:
        prepare_out(opt.out, resume=True, force=False)
        saved = checkpoint.load(ckpt_path)
        _settings_from_checkpoint(opt, saved.settings)
    opt.seed = 0 if opt.seed is None else opt.seed
    opt.schedule = opt.schedule or "cosine"
    picture = load_picture(opt.input, mode=opt.mode, size=opt.size)
    if saved is not None and saved.settings.get("fingerprint") != fingerprint(picture):
        raise UsageError(f"{opt.input} is not the image the run in {opt.out} was trained on "
                         f"({saved.settings.get('input')}); use --force to start a new run")
    if not opt.resume:
        prepare_out(opt.out, resume=False, force=opt.force, create=False)
    preset = PRESETS[opt.model or DEFAULT_PRESET]
    try:
        model_options = preset.resolve(opt.preset_options())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    backend = get_backend(opt.device, notify=None if opt.quiet else log)
    if not opt.resume:  # only now, when nothing above can fail, touch the folder
        prepare_out(opt.out, resume=False, force=opt.force)
    remove_stale_temporaries(opt.out, OUTPUT_NAMES)
    lr = opt.lr if opt.lr is not None else preset.lr
    lr_min = opt.lr_min if opt.lr_min is not None else preset.lr_min
    points = picture.width * picture.height
    batch_size = preset.batch_size if opt.batch_size is None else (opt.batch_size or None)
    if batch_size is not None and batch_size >= points:
        batch_size = None

    if saved is not None:
        model = saved.model
    else:
        try:
            model = preset.build(picture.channels, picture.width, picture.height, model_options,
                                 np.random.default_rng(opt.seed))
        except ValueError as exc:
            raise UsageError(f"cannot build --model {preset.name}: {exc}") from None
    model.to(backend)
    x = backend.asarray(pixel_grid(picture.width, picture.height))
    y = backend.asarray(picture.pixels.reshape(points, picture.channels))

    # How many steps in all: given, the run's own, or estimated from the measured speed and the
    # time budget (both are totals for the run, across resumes).
    time_budget = opt.time_budget
    if opt.steps is not None:
        total = opt.steps
    elif saved is not None:
        total = int(saved.settings["steps"])
    else:
        time_budget = time_budget or DEFAULT_TIME_BUDGET
        seconds_per_step = _calibrate(model, mse, x, y, batch_size, opt.seed)
        total = max(10, int(time_budget / seconds_per_step))
    start_step = saved.step if saved is not None else 0
    if start_step >= total:
        raise UsageError(f"the run in {opt.out} is already at step {start_step}; "
                         f"give --steps above {start_step} to continue it")

    schedule = _schedule(opt.schedule, lr, lr_min, total)
    if saved is not None:
        optimizer = saved.optimizer(model.named_parameters())
        optimizer.schedule = schedule
    else:
        optimizer = Adam(model.named_parameters(), lr=schedule)

    settings = {
        "input": os.path.abspath(opt.input), "fingerprint": fingerprint(picture), "mode": picture.mode,
        "size": [picture.width, picture.height], "model": preset.name, "model_options": model_options,
        "lr": lr, "lr_min": lr_min, "schedule": opt.schedule, "batch_size": batch_size or 0, "seed": opt.seed,
        "steps": total, "time_budget": opt.time_budget, "device": backend.device,
        "checkpoint_every": opt.checkpoint_every, "snapshot_every": opt.snapshot_every,
    }
    prior_seconds = float(saved.settings.get("train_seconds", 0.0)) if saved is not None else 0.0

    checkpoint_every = opt.checkpoint_every or max(50, total // 20)
    snapshot_every = opt.snapshot_every or max(1, total // 99)
    recorder = Recorder(max(1, total // 500))
    snapshots = Snapshots(snapshot_every, picture.width, picture.height, backend)
    if saved is not None:
        recorder.restore(os.path.join(opt.out, "history.csv"), start_step)
        snapshots.restore(os.path.join(opt.out, "snapshots.npz"), start_step)
    else:
        snapshots.capture(model, 0)

    plain = opt.quiet or not sys.stderr.isatty()
    progress = Progress(total, start_step, plain=plain)
    saver = SaveRun(opt.out, checkpoint_every, CHECKPOINT_SECONDS, recorder=recorder, snapshots=snapshots,
                    settings=lambda trainer: {**settings, "train_seconds": trainer.train_seconds})
    callbacks = [recorder, snapshots, progress, saver]
    trainer = Trainer(model, optimizer, mse, x, y, batch_size=batch_size, seed=opt.seed, callbacks=callbacks,
                      check_every=max(1, min(100, total // 20)), max_loss=MAX_LOSS)
    trainer.train_seconds = prior_seconds
    saver.remember(trainer)
    saver.saved_at = prior_seconds

    if not opt.quiet:
        log(f"fitting {opt.input} ({picture.width}x{picture.height} {picture.mode}) with {preset.name}, "
            f"{model.num_parameters:,} parameters, on {backend.device}; {total:,} steps"
            + (f" or {time_budget:g} s" if time_budget else "") + f" -> {opt.out}")

    interrupted = []

    def on_sigint(signum, frame):
        if interrupted:  # a second Ctrl-C: stop at once (the last checkpoint stays)
            raise KeyboardInterrupt
        interrupted.append(signum)
        trainer.request_stop()

    previous = signal.signal(signal.SIGINT, on_sigint) if _main_thread() else None
    try:
        for attempt in range(MAX_RETRIES + 1):
            remaining = None if time_budget is None else max(0.0, time_budget - prior_seconds)
            try:
                trainer.run(total, time_budget=remaining)
                break
            except DivergenceError as exc:
                if attempt == MAX_RETRIES:
                    progress.close()
                    raise DivergenceError(exc.step, exc.loss, exc.lr) from None
                # Roll back to the state last written and retry more gently; the smaller rate is
                # saved with the run, so a resume keeps it.
                saver.roll_back(trainer)
                settings["lr"] *= RETRY_LR_FACTOR
                settings["lr_min"] *= RETRY_LR_FACTOR
                trainer.optimizer.schedule = _schedule(opt.schedule, settings["lr"], settings["lr_min"], total)
                recorder.rows = [r for r in recorder.rows if r["step"] <= trainer.step]
                snapshots.forget_after(trainer.step)
                log(f"loss became {exc.loss:.3g} at step {exc.step}; rolled back to step {trainer.step}, "
                    f"retrying with learning rate {settings['lr']:.3g} ({attempt + 1} of {MAX_RETRIES})")
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted:
        raise Interrupted(trainer.step, resume_command(opt))

    result = write_outputs(opt.out, trainer, picture, backend, settings, recorder, snapshots)
    remove_stale_temporaries(opt.out, OUTPUT_NAMES)
    return result


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def resume_command(opt: FitOptions) -> str:
    return f"ironlearn fit {shlex.quote(opt.input)} --out {shlex.quote(opt.out)} --resume"


def write_outputs(out, trainer, picture, backend, settings, recorder, snapshots) -> dict:
    """model.npz, reconstruction.png, timelapse.gif, loss.png, history.csv, metrics.json."""
    model = trainer.model
    pixels = render(model, picture.width, picture.height, backend)
    result = {
        "psnr_db": round(metrics.psnr(pixels, picture.pixels), 3),
        "steps": trainer.step,
        "seconds": round(trainer.train_seconds, 3),
        "params": model.num_parameters,
        "pixels": picture.width * picture.height,
        "model": settings["model"],
        "model_options": settings["model_options"],
        "mode": picture.mode,
        "width": picture.width,
        "height": picture.height,
        "device": backend.device,
        "batch_size": settings["batch_size"],
        "seed": settings["seed"],
        "final_loss": trainer.loss,
    }
    if picture.mode == "binary":
        result["accuracy"] = round(metrics.binary_accuracy(pixels, picture.pixels), 6)
    result.update(backend.memory_stats())
    checkpoint.save(os.path.join(out, "model.npz"), model, step=trainer.step, seed=trainer.seed,
                    settings={**settings, "train_seconds": trainer.train_seconds, "metrics": result})
    save_image(os.path.join(out, "reconstruction.png"), pixels)
    snapshots.write_gif(os.path.join(out, "timelapse.gif"))
    recorder.write(os.path.join(out, "history.csv"))
    plot_history(os.path.join(out, "loss.png"), recorder.rows)
    text = json.dumps(result, indent=2) + "\n"
    atomic_write(os.path.join(out, "metrics.json"), lambda file: file.write(text.encode()))
    return result


def plot_history(path, rows) -> None:
    """Loss (log scale) and PSNR against step, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    steps = [r["step"] for r in rows]
    figure = Figure(figsize=(9, 3.4), dpi=100, layout="constrained")
    loss_ax, psnr_ax = figure.subplots(1, 2)
    loss_ax.semilogy(steps, [r["loss"] for r in rows], color="tab:blue")
    loss_ax.set(xlabel="step", ylabel="loss (MSE)", title="loss")
    psnr_ax.plot(steps, [r["psnr"] for r in rows], color="tab:orange")
    psnr_ax.set(xlabel="step", ylabel="PSNR (dB)", title="PSNR")
    for ax in (loss_ax, psnr_ax):
        ax.grid(True, alpha=0.3)
    atomic_write(path, lambda file: figure.savefig(file, format="png"))
