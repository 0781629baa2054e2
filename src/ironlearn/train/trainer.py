"""The training loop: forward, loss, backward, update; everything else is a callback."""

from __future__ import annotations

import math
import time

import numpy as np

from ..backend import Backend, get_array_module, on_device, to_host
from ..nn.sparse import add_gradients, copy_gradients
from .threads import ThreadPolicy

#: On a GPU, the loop reads the device (the loss) at most once in this many seconds: a read makes
#: the host wait for every step it has queued, where otherwise it runs ahead of the GPU.
READ_SECONDS = 1.0


class DivergenceError(FloatingPointError):
    """The loss became NaN or infinite, or exploded past the trainer's ``max_loss``.

    ``step``, ``loss`` and ``lr`` (the rate of the step that diverged) are kept, so
    that a command can word its own advice (its flag for the learning rate).
    """

    def __init__(self, step: int, loss: float, lr: float):
        self.step, self.loss, self.lr = step, loss, lr
        super().__init__(f"training diverged at step {step}: loss {loss:.4g} at learning rate {lr:.3g}; "
                         f"give the optimizer a lower learning rate (e.g. {lr / 10:.2g})")


class Trainer:
    """Fits ``model`` so that ``model(inputs)`` approaches ``targets``.

    Parameters
    ----------
    model : Sequential
    optimizer : Optimizer
        Built on ``model.named_parameters()``; it owns the step counter.
    loss : callable ``(pred, target) -> (value, grad)``
    inputs : array ``(n, in)``; targets : array ``(n, out)``
        On the model's device already (the inputs may be a :class:`~ironlearn.nn.lattice.Lattice`
        of ``n`` points, for a model whose first layer reads one; it cannot be split into
        mini-batches).  Or, instead of both:
    batches : callable ``step -> (inputs, targets)``, keyword-only
        A source that draws each step's batch itself (a picture sampler, say); it
        must be a pure function of the step for resumes to be exact.  It may return
        a list of weighted terms ``[(inputs, targets, weight), ...]`` instead: the
        step then minimises ``sum(weight * loss(model(inputs), targets))``, one
        forward and backward pass per term, and :attr:`loss` is the first term's
        (unweighted), the others acting as regularisers.
    batch_size : int, optional
        Points per step; default (None) is the full batch.  Mini-batches walk a
        permutation of the points that is a pure function of ``(seed, epoch)``,
        so the seed and the step count are the whole random state: a resumed
        run draws exactly the batches an uninterrupted one would.  It is drawn
        on the host, like the initial weights, so a run draws the same batches
        on either device.
    seed : int
    callbacks : iterable of Callback
        Each runs every ``callback.every`` steps and once at the end.
    check_every : int
        How often the loss is read back to look for NaN/inf even when no
        callback asks for it; 0 never.  On a GPU, where each read is a sync, the loop and its
        callbacks read at most once every :data:`READ_SECONDS` instead (:attr:`read_due`).
    max_loss : float
        A finite loss above this also counts as divergence (an explosion).
    count_callbacks : bool
        Whether :attr:`train_seconds` (and so a ``time_budget``) counts the callbacks' time
        (checkpoints, snapshots) as well as the steps'.  Default False: steps only, which
        measures the engine; ``ironlearn fit`` counts both, so that a budget is the wall time
        of its training.
    held : iterable of str
        Names of parameters (as ``model.named_parameters()`` names them) held where they are:
        their gradients are zeroed before each update, so Adam's moments stay zero and the
        parameters do not move (SGD's likewise).  Their slots stay in the optimizer's state, so
        a checkpoint looks the same held or not.
    blas_threads : "auto", int, None or ThreadPolicy
        BLAS threads for the steps on the CPU.  ``"auto"`` (default) times real steps on one
        thread and on the library's own count, keeps the faster and measures again now and then
        (:class:`~ironlearn.train.threads.ThreadPolicy`: on a shared 2-core machine a second
        thread can make every step several times slower); an int pins the count; None leaves
        the library alone.  A policy already measured (a calibration's) goes on from its choice.
    clock : callable, optional
        Seconds, as :func:`time.perf_counter` counts them (default): what ``train_seconds`` and
        a run's ``time_budget`` are read from (a test gives a clock that does not wait).
    backend : Backend, optional
        The backend ``inputs`` live on; it copies each epoch's permutation to
        the device (the only copy a training step makes, once an epoch, and
        counted).  Default: a new one on the inputs' device.
    """

    def __init__(self, model, optimizer, loss, inputs=None, targets=None, *, batches=None, batch_size=None,
                 seed: int = 0, callbacks=(), check_every: int = 100, max_loss: float = math.inf, backend=None,
                 count_callbacks: bool = False, held=(), blas_threads="auto", clock=None):
        if (batches is None) == (inputs is None or targets is None):
            raise ValueError("give inputs and targets, or batches (one of the two)")
        if batches is None and len(inputs) != len(targets):
            raise ValueError(f"inputs and targets differ in length ({len(inputs)} vs {len(targets)})")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1 (got {batch_size})")
        params = model.named_parameters()
        if set(optimizer.params) != set(params) or any(optimizer.params[n] is not params[n] for n in params):
            raise ValueError("the optimizer updates other arrays than this model's parameters: build it from "
                             "model.named_parameters(), after model.to(...)")
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss
        self.inputs, self.targets = inputs, targets
        self.batches = batches or self._array_batch
        if backend is None and batches is None:
            # From the targets: the inputs may be a Lattice (two axes on the host).
            backend = Backend("cpu" if get_array_module(targets) is np else "cuda", targets.dtype)
        self.backend = backend
        self.batch_size = None if batch_size is None or batches is not None or batch_size >= len(inputs) \
            else int(batch_size)
        self.seed = int(seed)
        self.callbacks = list(callbacks)
        self.check_every = int(check_every)
        self.max_loss = max_loss
        self.train_seconds = 0.0  # time spent in steps (and in callbacks, with count_callbacks)
        self.last_step_seconds = 0.0  # the last step's own time, its callbacks' left out
        #: This session's training, as the system's scheduler saw the calling thread (``cpu_share``).
        self.core = CoreShare()
        self.count_callbacks = bool(count_callbacks)
        self.clock = clock  # None: time.perf_counter, looked up at each read
        self.held = tuple(held)
        unknown = set(self.held) - set(model.named_parameters())
        if unknown:
            raise ValueError(f"no parameter {sorted(unknown)[0]!r} to hold: the model's are "
                             f"{', '.join(model.named_parameters())}")
        self._loss = None  # device scalar of the last step
        self._loss_host = None
        self.on_device = any(on_device(p) for p in params.values())
        #: Whether the loop and its callbacks may read the device at this step: always on the
        #: CPU; on a GPU, once :data:`READ_SECONDS` have passed since the last read (a callback
        #: that had to wait does its reading in ``due``, called at such a step).
        self.read_due = True
        self._last_read = -math.inf
        self._epoch_perm = (None, None)
        self._stop_requested = False
        self._summed = {}  # the gradient sums of a batch of several terms, reused step to step
        self.threads = None  # on the CPU only: the GPU's steps make no BLAS call
        if blas_threads is not None and all(get_array_module(p) is np for p in params.values()):
            self.threads = blas_threads if isinstance(blas_threads, ThreadPolicy) else \
                ThreadPolicy() if blas_threads == "auto" else ThreadPolicy(int(blas_threads))

    # -- what callbacks read ------------------------------------------------------------
    @property
    def step(self) -> int:
        return self.optimizer.step_count

    @property
    def last_lr(self) -> float:
        """The learning rate the last step used (the optimizer's ``next_lr`` is the next one's)."""
        return self.optimizer.schedule(max(self.step - 1, 0))

    @property
    def loss(self) -> float:
        """The last step's loss as a Python float (reads it back once per step; raises on NaN/inf)."""
        if self._loss_host is None and self._loss is not None:
            value = self.read(self._loss)[0]
            self.check(value, self.step, self.last_lr)
            self._loss_host = value
        return self._loss_host

    @property
    def unread_loss(self):
        """The last step's loss as it is, unread: a device scalar on a GPU (no sync), or a float."""
        return self._loss if self._loss_host is None else self._loss_host

    def read(self, *values) -> list:
        """Loss values of some steps (device scalars or floats) as floats, in one copy (one sync
        on a GPU, which :attr:`read_due` counts from)."""
        read = [float(value) if not on_device(value) else None for value in values]
        unread = [index for index, value in enumerate(read) if value is None]
        if unread:
            xp = get_array_module(values[unread[0]])
            for index, value in zip(unread, to_host(xp.stack([values[index] for index in unread]))):
                read[index] = float(value)
            self._last_read = (self.clock or time.perf_counter)()
        return read

    def check(self, value: float, step: int, lr: float) -> None:
        """DivergenceError when ``value``, the loss of ``step``, is not finite or past ``max_loss``."""
        if not math.isfinite(value) or value > self.max_loss:
            raise DivergenceError(step, value, lr)

    # -- the loop ---------------------------------------------------------------------
    def _array_batch(self, step: int):
        if self.batch_size is None:
            return self.inputs, self.targets
        n = len(self.inputs)
        per_epoch = -(-n // self.batch_size)
        epoch, index = divmod(step, per_epoch)
        if self._epoch_perm[0] != epoch:
            perm = np.random.default_rng([self.seed, epoch]).permutation(n)
            # One index copy per epoch, not per step.
            self._epoch_perm = (epoch, self.backend.asarray(perm, dtype=np.int64))
        idx = self._epoch_perm[1][index * self.batch_size:(index + 1) * self.batch_size]
        return self.inputs[idx], self.targets[idx]

    def train_step(self) -> None:
        """One forward/backward/update; the loss stays on the device."""
        batch = self.batches(self.step)
        if not isinstance(batch, list):
            self._loss = self._backward(*batch)
            grads = self.model.named_gradients()
        else:
            (x, y, weight), *others = batch
            self._loss = self._backward(x, y, weight)
            grads = copy_gradients(self.model.named_gradients(), into=self._summed)
            for x, y, weight in others:
                self._backward(x, y, weight)
                add_gradients(grads, self.model.named_gradients())
        self._loss_host = None
        for name in self.held:
            grads[name][...] = 0
        self.optimizer.step(grads)

    def _backward(self, x, y, weight=None):
        """Forward and backward through the model for one batch; returns its (unweighted) loss."""
        loss, grad = self.loss_fn(self.model.forward(x), y)
        if weight is not None:
            grad *= weight
        self.model.backward(grad)
        return loss

    def run(self, steps: int | None = None, time_budget: float | None = None) -> "Trainer":
        """Train until the optimizer's step count reaches ``steps`` or the training time
        reaches ``time_budget`` seconds, whichever comes first (at least one must be given).

        ``steps`` is a total, not an increment: a trainer resumed at step 700 with
        ``steps=1000`` takes 300 more.
        """
        if steps is None and time_budget is None:
            raise ValueError("give steps, time_budget or both")
        started_at = self.train_seconds
        self._stop_requested = False
        error = None
        # Overflow shows up as a non-finite loss, which is checked and reported below;
        # NumPy's own warnings would only repeat it less clearly.
        clock = self.clock or time.perf_counter
        with np.errstate(over="ignore", invalid="ignore"), self.core:
            try:
                while (steps is None or self.step < steps) and not self._stop_requested and (
                        time_budget is None or self.train_seconds - started_at < time_budget):
                    if self.threads is not None:
                        self.threads.threads()
                    t0 = clock()
                    self.train_step()
                    t1 = clock()
                    self.last_step_seconds = t1 - t0
                    if self.threads is not None:
                        self.threads.record(t1 - t0)
                    self.train_seconds += t1 - t0
                    step = self.step
                    self.read_due = not self.on_device or t1 - self._last_read >= READ_SECONDS
                    if self.check_every and (self.read_due if self.on_device else step % self.check_every == 0):
                        self.loss  # noqa: B018  (reading it checks for NaN/inf)
                    for callback in self.callbacks:
                        if callback.every and step % callback.every == 0:
                            callback.step(self)
                        elif self.read_due and self.on_device:  # what a callback put off until a read
                            callback.due(self)
                    if self.count_callbacks:
                        self.train_seconds += clock() - t1
                self.loss  # noqa: B018  never finish "successfully" on NaN
            except BaseException as exc:
                error = exc
                raise
            finally:
                if self.threads is not None:
                    self.threads.restore()
                for callback in self.callbacks:
                    callback.end(self, error)
        return self

    @property
    def cpu_share(self) -> float | None:
        """Of the time this session's training was ready to run, the share it had a core (None
        before a step, or off Linux): about 1 alone, under 1 when other work held the cores.
        Waiting for a disk or a GPU is not counted: it is not ready to run."""
        return self.core.share

    def request_stop(self) -> None:
        """Finish the current step, run the end callbacks and return from :meth:`run`
        (safe to call from a signal handler: the step in flight completes first)."""
        self._stop_requested = True


class CoreShare:
    """Of the time the calling thread was ready to run within ``with`` blocks, the share it had a
    core (:attr:`share`), as Linux's scheduler counts: about 1 alone, under 1 when other work held
    the cores.  Waiting for a disk or a GPU is not counted: it is not ready to run."""

    def __init__(self):
        self.ran_ns, self.waited_ns, self._at = 0, 0, None

    def __enter__(self) -> "CoreShare":
        self._at = _scheduled()
        return self

    def __exit__(self, *error) -> None:
        now = _scheduled()
        if self._at is not None and now is not None:
            self.ran_ns += now[0] - self._at[0]
            self.waited_ns += now[1] - self._at[1]

    @property
    def share(self) -> float | None:
        """None before a block, or off Linux."""
        total = self.ran_ns + self.waited_ns
        return self.ran_ns / total if total > 0 else None


def _scheduled() -> tuple[int, int] | None:
    """The calling thread's nanoseconds on a core and waiting for one, as Linux's scheduler counts
    them (``/proc/thread-self/schedstat``); None where there is no such file.  A step's own CPU
    time cannot tell: a thread that waits for a core mostly waits between short steps."""
    try:
        with open("/proc/thread-self/schedstat") as file:
            ran, waited = file.read().split()[:2]
        return int(ran), int(waited)
    except (OSError, ValueError):
        return None
