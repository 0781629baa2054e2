"""Optimizers: they own the step counter and apply gradients the layers computed.

Each update runs in place on the parameter arrays, through one scratch buffer
per parameter, so a step allocates nothing after the first and keeps the
parameters' dtype (float32 stays float32).  On a GPU, Adam's update is one
elementwise kernel (:func:`ironlearn.kernels.adam_update`).
"""

from __future__ import annotations

import math

from .. import fused, kernels
from ..backend import asarray_like, get_array_module, put_rows, take_rows
from ..nn.sparse import BlockGrad, MaskedGrad, RowGrad
from .schedules import constant


class Optimizer:
    """Base class.

    Parameters
    ----------
    params : dict[str, array]
        Named parameter arrays (``model.named_parameters()``), updated in place.
        Build the optimizer after moving the model to its device.
    lr : float or callable ``step -> lr``
        A fixed learning rate or a schedule.

    Slots (momentum, moments) are created with ``zeros_like`` on first use and
    saved by :meth:`state_dict` with the step, so a resumed run continues the
    same trajectory and the same learning-rate curve.  A state saved without its
    slots (a finished run's, to keep its folder small) starts them again from zero
    at its step: ``slots_since`` is that step, from which Adam counts its bias
    correction afresh, while the schedule goes on from the step.
    """

    slot_names: tuple = ()  # the arrays this optimizer keeps per parameter

    def __init__(self, params: dict, lr=1e-3):
        if not isinstance(params, dict):
            raise TypeError(f"{type(self).__name__} takes the model's named_parameters() (a dict of arrays), "
                            f"not {type(params).__name__}")
        self.params = params
        self.schedule = lr if callable(lr) else constant(lr)
        self.step_count = 0
        self.slots_since = 0  # the step the slots began at: 0, or where a state without them was loaded
        self.slots = {slot: {} for slot in self.slot_names}
        self._scratch = {}

    @property
    def next_lr(self) -> float:
        """The learning rate the next step will use."""
        return self.schedule(self.step_count)

    def step(self, grads: dict) -> None:
        """Apply one update from ``grads`` (same names as ``params``)."""
        lr = self.next_lr
        self.step_count += 1
        for name in self._update_together(grads, lr):
            self._apply(name, self.params[name], grads[name], lr)

    def _update_together(self, grads: dict, lr) -> list:
        """Update at once the parameters an optimizer can (none here); the names left to update."""
        return list(self.params)

    def _apply(self, name, param, grad, lr) -> None:
        if isinstance(grad, RowGrad):
            self._update_rows(name, param, grad.rows, grad.values, lr)
        elif isinstance(grad, MaskedGrad):
            self._update_masked(name, param, grad.touched, grad.values, lr)
        elif isinstance(grad, BlockGrad):
            self._update_block(name, param, grad, lr)
        else:
            self._update(name, param, grad, lr)

    def _update(self, name, param, grad, lr):
        raise NotImplementedError

    def _update_rows(self, name, param, rows, grad, lr):
        """The update of :meth:`_update` applied to ``param[rows]`` only ("lazy"): rows outside
        ``rows`` keep their values and their slots, as if this step had not happened to them."""
        raise NotImplementedError

    def _update_masked(self, name, param, touched, grad, lr):
        """:meth:`_update_rows` for the rows the bool mask ``touched`` marks (``grad`` is dense,
        zero elsewhere): how a GPU updates lazily without reading the rows' count back."""
        raise NotImplementedError

    def _update_block(self, name, param, grad, lr):
        """:meth:`_update_rows` for the rows of a :class:`BlockGrad`'s rectangle, updated in place
        through views of the parameter and its slots (no rows gathered or scattered)."""
        raise NotImplementedError

    def _slot(self, slot: str, name: str, like):
        table = self.slots[slot]
        if name not in table:
            table[name] = get_array_module(like).zeros_like(like)
        return table[name]

    def _buffer(self, name, like, shape=None):
        """A scratch array of ``shape`` (default ``like``'s), ``like``'s dtype and device: a view of
        one flat buffer a parameter, grown only when a larger shape asks.  A step on a tile's
        rectangle of a large table needs a small part of the table's size (at 100 MP the whole
        would be 192 MiB of the GPU's memory)."""
        shape = like.shape if shape is None else tuple(shape)
        size = math.prod(shape)
        buffer = self._scratch.get(name)
        if buffer is None or buffer.size < size:
            buffer = self._scratch[name] = None  # the old one goes before the new one is made
            buffer = self._scratch[name] = get_array_module(like).empty(size, dtype=like.dtype)
        return buffer[:size].reshape(shape)

    # -- state as plain data ---------------------------------------------------------
    def state_dict(self, copy: bool = True) -> dict:
        """``{"step": int, "<slot>.<param name>": array, ...}``, the arrays copied (on their device),
        or with ``copy=False`` the optimizer's own (to write out at once: for a 12.6 MP picture's
        spline level, Adam's two moments are 300 MB).  ``slots_since`` is there when it is not 0."""
        state = {"step": self.step_count}
        if self.slots_since:
            state["slots_since"] = self.slots_since
        for slot, table in self.slots.items():
            state.update({f"{slot}.{name}": value.copy() if copy else value for name, value in table.items()})
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore the step and slots from :meth:`state_dict`, copied onto the parameters' device.

        Loading is strict: ``step`` is required; every other key must be
        ``<slot>.<param name>`` for one of this optimizer's slots and parameters,
        with the parameter's shape, or ``slots_since`` (at most ``step``); and slots
        come all or nothing.  A state taken before the first step holds none (slots
        are created on first use), and so does one whose ``slots_since`` is its step
        (saved without them); any other holds every slot of every parameter, since
        one step updates them all.  Anything else raises ``ValueError`` naming the
        first offending key, and leaves the optimizer as it was.
        """
        if "step" not in state:
            raise ValueError("optimizer state has no 'step'")
        step, since = int(state["step"]), int(state.get("slots_since", 0))
        if not 0 <= since <= step:
            raise ValueError(f"optimizer state's slots_since {since} does not lie in [0, its step {step}]")
        slots = {slot: {} for slot in self.slot_names}
        for key, value in state.items():
            if key in ("step", "slots_since"):
                continue
            slot, _, name = key.partition(".")
            if slot not in slots or name not in self.params:
                raise ValueError(f"optimizer state has an unknown entry {key!r}")
            param = self.params[name]
            if tuple(value.shape) != tuple(param.shape):
                raise ValueError(f"optimizer state {key!r} has shape {tuple(value.shape)}, parameter has {tuple(param.shape)}")
            buffer = get_array_module(param).zeros_like(param)
            buffer[...] = asarray_like(param, value)
            slots[slot][name] = buffer
        missing = [f"{slot}.{name}" for slot in self.slot_names for name in self.params if name not in slots[slot]]
        fresh = step == since and not any(slots.values())
        if missing and not fresh:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise ValueError(f"optimizer state at step {step} has no {missing[0]!r}{more}; a state taken "
                             "after the first step holds every slot of every parameter")
        self.step_count, self.slots_since, self.slots = step, since, slots

    def config(self) -> dict:
        return {"type": type(self).__name__}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items() if k != "type")
        return f"{type(self).__name__}({args}, lr={self.schedule!r}, step={self.step_count})"


class SGD(Optimizer):
    """Stochastic gradient descent, with optional heavy-ball momentum:
    ``v = momentum * v + g``; ``p -= lr * v``."""

    slot_names = ("velocity",)

    def __init__(self, params: dict, lr=1e-2, momentum: float = 0.0):
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1) (got {momentum})")
        self.momentum = float(momentum)
        if not self.momentum:
            self.slot_names = ()  # plain SGD keeps nothing between steps
        super().__init__(params, lr)

    def _update_rows(self, name, param, rows, grad, lr):
        if self.momentum:
            velocity = self._slot("velocity", name, param)
            grad = take_rows(velocity, rows) * self.momentum + grad
            put_rows(velocity, rows, grad)
        put_rows(param, rows, take_rows(param, rows) - lr * grad)

    def _update_block(self, name, param, grad, lr):
        direction = grad.values
        if self.momentum:
            direction = grad.view(self._slot("velocity", name, param))
            direction *= self.momentum
            direction += grad.values
        grad.view(param)[...] -= lr * direction

    def _update_masked(self, name, param, touched, grad, lr):
        if self.momentum:  # untouched rows keep their velocity, as in _update_rows
            velocity = self._slot("velocity", name, param)
            xp = get_array_module(param)
            xp.copyto(velocity, velocity * self.momentum + grad, where=touched[:, None])
            grad = xp.where(touched[:, None], velocity, 0).astype(param.dtype, copy=False)
        param -= lr * grad

    def _update(self, name, param, grad, lr):
        direction = grad
        if self.momentum:
            direction = self._slot("velocity", name, param)
            direction *= self.momentum
            direction += grad
        scaled = self._buffer(name, param)
        get_array_module(param).multiply(direction, lr, out=scaled)
        param -= scaled

    def config(self) -> dict:
        return {"type": "SGD", "momentum": self.momentum}


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015), with the bias correction folded into the step size:
    ``p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps * sqrt(1 - b2^t))``, ``t`` the
    steps since the moments began (``slots_since``: moments that start again from zero late in a
    run, uncorrected, would take steps of up to 6x the learning rate for hundreds of steps)."""

    slot_names = ("m", "v")

    def __init__(self, params: dict, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        b1, b2 = betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"betas must lie in [0, 1) (got {betas})")
        super().__init__(params, lr)
        self.betas = (float(b1), float(b2))
        self.eps = float(eps)

    def _step_arguments(self, lr: float) -> tuple:
        """``(b1, b2, step_size, eps_hat)`` of this step for :func:`~ironlearn.kernels.adam_update`:
        the bias correction folded into the step size and epsilon."""
        b1, b2 = self.betas
        t = self.step_count - self.slots_since
        correction = math.sqrt(1.0 - b2 ** t)
        return b1, b2, lr * correction / (1.0 - b1 ** t), self.eps * correction

    def _update_together(self, grads: dict, lr) -> list:
        # On a GPU, the dense gradients in one launch (fused.adam_update_many), not one each.
        together = [name for name, param in self.params.items() if fused.adam_many_applies(param, grads[name])]
        if len(together) < 2:
            return list(self.params)
        fused.adam_update_many([(self.params[name], grads[name], self._slot("m", name, self.params[name]),
                                   self._slot("v", name, self.params[name])) for name in together],
                                 *self._step_arguments(lr))
        return [name for name in self.params if name not in together]

    def _update(self, name, param, grad, lr, touched=None):
        m, v = self._slot("m", name, param), self._slot("v", name, param)
        kernels.adam_update(param, grad, m, v, self._buffer(name, param), *self._step_arguments(lr), touched)

    def _update_masked(self, name, param, touched, grad, lr):
        self._update(name, param, grad, lr, touched)

    def _update_block(self, name, param, grad, lr):
        # Lazy like _update_rows, on the rectangle's views: the same arithmetic as a dense step.
        m, v = grad.view(self._slot("m", name, param)), grad.view(self._slot("v", name, param))
        kernels.adam_update(grad.view(param), grad.values, m, v, self._buffer(name, param, grad.values.shape),
                            *self._step_arguments(lr))

    def _update_rows(self, name, param, rows, grad, lr):
        # Lazy Adam (as tiny-cuda-nn and sparse PyTorch ports do): the moments of untouched rows do
        # not decay this step and those rows do not move, where dense Adam would keep moving them
        # on their old momentum.  Bias correction still counts every step.
        slots = (param, self._slot("m", name, param), self._slot("v", name, param))
        moved, m, v = (take_rows(array, rows) for array in slots)
        kernels.adam_update(moved, grad, m, v, self._buffer(name, param, grad.shape), *self._step_arguments(lr))
        for array, rows_of in zip(slots, (moved, m, v)):
            put_rows(array, rows, rows_of)

    def config(self) -> dict:
        return {"type": "Adam", "betas": list(self.betas), "eps": self.eps}


OPTIMIZERS = {"sgd": SGD, "adam": Adam}
