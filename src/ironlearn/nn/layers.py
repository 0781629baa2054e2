"""Layers with an explicit forward and backward pass.

Every layer follows one contract:

* ``forward(x)`` takes a ``(batch, in)`` array and returns ``(batch, out)``,
  caching what its backward pass needs;
* ``backward(grad_out)`` takes d(loss)/d(output), stores d(loss)/d(parameter)
  in ``self.grads`` (same keys as ``self.params``) and returns d(loss)/d(input);
  it never sees a learning rate (that is the optimizer's job) and reuses what
  forward cached instead of recomputing it.

Arrays follow the input's array module (NumPy or CuPy) and dtype, so the same
code runs on either backend and in float64 for gradient checks.
"""

from __future__ import annotations

import inspect
import math
import reprlib

import numpy as np

from .. import kernels
from ..arrays import broadcast_rows, outer
from ..backend import get_array_module, on_device
from ..checks import is_finite, is_whole
from . import init as initializers


#: The largest count a saved layer argument may hold: array dimensions here fit an int32, and
#: keeping every count below it keeps the arithmetic on them exact and cheap.
MAX_COUNT = 2**31 - 1


def bound_arguments(cls, config: dict) -> dict:
    """``config`` bound to the constructor of ``cls`` (its ``rng`` aside), defaults filled in.

    Raises
    ------
    TypeError
        An argument the constructor does not take, or one it needs and ``config`` lacks.
    """
    signature = inspect.signature(cls)
    bound = signature.bind(**config, **({"rng": None} if "rng" in signature.parameters else {}))
    bound.apply_defaults()
    return bound.arguments


def check_count(value, name: str, low: int = 1, high: int = MAX_COUNT) -> int:
    """``value`` if it is a whole number in ``low..high`` (a bool is not); else ValueError naming ``name``."""
    if not is_whole(value) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number in {low}..{high} (got {reprlib.repr(value)})")
    return value


def check_positive(value, name: str) -> float:
    """``value`` as a float if it is a finite number above 0; else ValueError naming ``name``."""
    if not (is_finite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number above 0 (got {reprlib.repr(value)})")
    return float(value)


class Layer:
    """Base class: a layer without parameters unless it fills ``self.params``."""

    # Attributes that forward fills for backward (inputs, outputs, scratch vectors).  ``to()``
    # drops them: they hold arrays of the old device and dtype.
    _cached: tuple = ()

    def __init__(self):
        self.params: dict = {}
        self.grads: dict = {}
        self.buffers: dict = {}  # arrays saved with the model but never trained

    def forward(self, x):
        raise NotImplementedError

    def backward(self, grad_out, need_grad_in: bool = True):
        raise NotImplementedError

    def config(self) -> dict:
        """Constructor arguments that rebuild this layer (without its values)."""
        return {}

    @classmethod
    def shapes(cls, config: dict) -> tuple[dict, int | None, int | None]:
        """What a layer built from ``config`` would hold and take, worked out without building it.

        A saved architecture is checked with this against the arrays its file stores before
        anything is allocated: a crafted file could ask for a 10^6 x 10^6 ``Linear``.

        Parameters
        ----------
        config : dict
            Constructor arguments, as :meth:`config` gives them.

        Returns
        -------
        shapes : dict
            ``{name: shape}`` of every parameter and buffer: none here, so a layer that holds
            arrays overrides this.
        in_features : int or None
            Width of the input it takes (None: any).
        out_features : int or None
            Width of its output (None: the input's).

        Raises
        ------
        ValueError
            An argument out of its range.
        TypeError
            An argument the constructor does not take, or one it needs and ``config`` lacks.
        """
        bound_arguments(cls, config)
        return {}, None, None

    def to(self, backend) -> "Layer":
        """Move parameters onto ``backend`` (and its dtype); gradients follow, caches are dropped."""
        for name in self._cached:
            setattr(self, name, None)
        for name, value in self.params.items():
            self.params[name] = backend.asarray(value)
            self.grads[name] = backend.xp.zeros_like(self.params[name])
        for name, value in self.buffers.items():
            self.buffers[name] = backend.asarray(value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({args})"


class Linear(Layer):
    """Affine map ``y = x @ weight + bias``.

    Parameters
    ----------
    in_features, out_features : int
    rng : numpy.random.Generator
        Source of the initial values (keyword-only, explicit).
    init : {"xavier", "he", "siren", "siren_first"}
        Weight initialiser; see :mod:`ironlearn.nn.init`.
    w0 : float
        Sine frequency the ``siren`` initialisers scale by.

    Shapes: weight ``(in_features, out_features)``, bias ``(out_features,)``.
    """

    _cached = ("_x", "_ones_cache")

    def __init__(self, in_features: int, out_features: int, *, rng, init: str = "xavier", w0: float = 30.0):
        super().__init__()
        rng = initializers.generator(rng)
        check_count(in_features, "in_features")
        check_count(out_features, "out_features")
        if init not in initializers.INITS:
            raise ValueError(f"unknown init {init!r}: use one of {', '.join(initializers.INITS)}")
        self.in_features, self.out_features, self.init, self.w0 = in_features, out_features, init, w0
        if init.startswith("siren"):
            weight = initializers.INITS[init](rng, in_features, out_features, w0)
            bias = initializers.uniform(rng, (out_features,), 1.0 / math.sqrt(in_features))
        else:
            weight = initializers.INITS[init](rng, in_features, out_features)
            bias = np.zeros(out_features, np.float32)
        self.params = {"weight": weight, "bias": bias}
        self.grads = {"weight": np.zeros_like(weight), "bias": np.zeros_like(bias)}
        self._x = self._ones_cache = None

    def config(self) -> dict:
        cfg = {"in_features": self.in_features, "out_features": self.out_features, "init": self.init}
        if self.init.startswith("siren"):
            cfg["w0"] = self.w0
        return cfg

    @classmethod
    def shapes(cls, config: dict) -> tuple[dict, int, int]:
        arguments = bound_arguments(cls, config)
        n_in = check_count(arguments["in_features"], "in_features")
        n_out = check_count(arguments["out_features"], "out_features")
        init = arguments["init"]
        if not isinstance(init, str) or init not in initializers.INITS:
            raise ValueError(f"unknown init {reprlib.repr(init)}: use one of {', '.join(initializers.INITS)}")
        check_positive(arguments["w0"], "w0")  # the siren initialisers divide by it
        return {"weight": (n_in, n_out), "bias": (n_out,)}, n_in, n_out

    def forward(self, x):
        self._x = x
        weight = self.params["weight"]
        out = outer(x, weight) if self.in_features == 1 else x @ weight
        return broadcast_rows(get_array_module(out).add, out, self.params["bias"], out=out)

    def backward(self, grad_out, need_grad_in: bool = True):
        xp = get_array_module(grad_out)
        # OpenBLAS is faster with the narrower operand first, and a ones-vector product sums the
        # batch faster than g.sum(axis=0) (measured: docs/benchmarks.md, 'How fast is a SIREN step
        # against PyTorch on the CPU?', and docs/benchmark-log.md, 'Measurements the code's comments quoted').
        if on_device(grad_out):  # straight into the gradient: one launch, not a product and a copy
            xp.matmul(self._x.T, grad_out, out=self.grads["weight"])
        elif self.in_features <= self.out_features:
            self.grads["weight"][...] = self._x.T @ grad_out
        else:
            self.grads["weight"][...] = (grad_out.T @ self._x).T
        xp.matmul(self._ones(xp, len(grad_out), grad_out.dtype), grad_out, out=self.grads["bias"])
        if not need_grad_in:
            return None
        if self.out_features == 1:
            return outer(grad_out, self.params["weight"].T)
        return grad_out @ self.params["weight"].T

    def _ones(self, xp, n, dtype):
        ones = self._ones_cache
        if ones is None or len(ones) != n or ones.dtype != dtype:
            ones = self._ones_cache = xp.ones(n, dtype=dtype)
        return ones


class Tanh(Layer):
    """``y = tanh(x)``; backward uses the cached output: ``1 - y**2``."""

    _cached = ("_y",)

    def forward(self, x):
        self._y = get_array_module(x).tanh(x)
        return self._y

    def backward(self, grad_out, need_grad_in: bool = True):
        y = self._y
        return grad_out * (1 - y * y)


class Sigmoid(Layer):
    """``y = 1 / (1 + exp(-x))``.

    ``exp`` is cheaper than ``tanh`` in NumPy (than ``(1 + tanh(x/2)) / 2``; measured:
    docs/benchmark-log.md, '(f) How far is a step from its floor?'), and keeps the lower tail:
    ``tanh`` rounds to -1 below x = -18 and
    the sigmoid to 0, where this form gives ``exp(x)``.  Below x = -88, ``exp(-x)`` overflows to
    inf and ``y`` is 0, the limit, without a warning.
    """

    _cached = ("_y",)

    def forward(self, x):
        xp = get_array_module(x)
        y = xp.negative(x)
        with np.errstate(over="ignore"):
            xp.exp(y, out=y)
        y += 1
        self._y = xp.reciprocal(y, out=y)
        return y

    def backward(self, grad_out, need_grad_in: bool = True):
        y = self._y
        return grad_out * y * (1 - y)


class ReLU(Layer):
    """``y = max(x, 0)``; backward passes gradient where the output is positive."""

    _cached = ("_y",)

    def forward(self, x):
        xp = get_array_module(x)
        self._y = broadcast_rows(xp.maximum, x, xp.zeros(x.shape[-1], x.dtype), out=xp.empty_like(x))
        return self._y

    def backward(self, grad_out, need_grad_in: bool = True):
        xp = get_array_module(grad_out)
        return xp.multiply(grad_out, self._y > 0, dtype=grad_out.dtype)


class Sine(Layer):
    """``y = sin(w0 * x)``, the SIREN activation.

    Parameters
    ----------
    w0 : float
        Frequency; 30 is SIREN's default.
    """

    _cached = ("_arg",)

    def __init__(self, w0: float = 30.0):
        super().__init__()
        self.w0 = float(w0)

    def config(self) -> dict:
        return {"w0": self.w0}

    @classmethod
    def shapes(cls, config: dict) -> tuple[dict, None, None]:
        check_positive(bound_arguments(cls, config)["w0"], "w0")
        return {}, None, None

    def forward(self, x):
        y, self._arg = kernels.sine(x, self.w0)
        return y

    def backward(self, grad_out, need_grad_in: bool = True):
        # d/dx sin(w0 x) = w0 cos(w0 x)
        grad = kernels.sine_backward(self._arg, grad_out, self.w0)
        self._arg = None
        return grad


LAYERS = {cls.__name__: cls for cls in (Linear, Tanh, Sigmoid, ReLU, Sine)}
ACTIVATIONS = {"tanh": Tanh, "sigmoid": Sigmoid, "relu": ReLU, "sine": Sine}


def register(cls):
    """Make a layer class rebuildable from a saved architecture (``LAYERS[name]``).

    A layer that holds parameters or buffers must override :meth:`Layer.shapes` so that a saved
    architecture can be checked against its file's arrays before it is built.
    """
    LAYERS[cls.__name__] = cls
    return cls
