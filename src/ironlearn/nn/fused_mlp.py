"""A small MLP's passes, one kernel each way: the head of a hash grid, the codec's synthesis.

On a GPU every layer of a small MLP is two or three launches each way (a product, the bias, the
activation), and at the widths ironlearn's heads use (16 to 64) each launch costs the host more
than the GPU spends on it.  :class:`FusedMLP` runs a chain of layers as one forward kernel, every
layer of a point in one thread's registers (``cuda/mlp.cu``), and one backward kernel for the
chain of derivatives, whose outputs the weights' gradients take as a few wide products.

The chain is the tail of a :class:`~ironlearn.nn.Sequential` that :func:`chain_start` finds: a
``Linear``, up to :data:`MOST_HIDDEN` pairs of ``ReLU`` and ``Linear`` of one width of at most
:data:`MOST_WIDTH`, and an optional ``Sigmoid``.  ``Sequential`` runs it so on CuPy float32 arrays
in the ``kernels`` mode (:func:`applies`); everywhere else the layers run one by one, and that
code is this one's reference: ``tests/nn/test_fused_mlp.py`` runs the kernels on the CPU (their
source compiled as C++, a thread at a time) against it, and on a GPU as they are.
"""

from __future__ import annotations

import numpy as np

from .. import cuda, fused
from ..backend import get_array_module
from .layers import Linear, ReLU, Sigmoid

#: Hidden layers the kernels take at most, and the widest layer (a thread holds two of them).
MOST_HIDDEN, MOST_WIDTH = 4, 64
#: Threads a block (the kernels' shared memory is sized by it when they compile; the registry's
#: variants name it too).
BLOCK = 128


def chain_start(layers) -> int | None:
    """The index in ``layers`` where the longest chain the kernels take ends them, or None."""
    end = len(layers) - (1 if layers and type(layers[-1]) is Sigmoid else 0)
    if end < 1 or type(layers[end - 1]) is not Linear:
        return None
    last = layers[end - 1]
    start, width = end - 1, last.in_features
    if max(width, last.out_features) > MOST_WIDTH:
        return None
    hidden = 0
    while (hidden < MOST_HIDDEN and start >= 2 and type(layers[start - 1]) is ReLU
           and type(layers[start - 2]) is Linear and layers[start - 2].out_features == width
           and layers[start - 2].in_features <= MOST_WIDTH):
        start, hidden = start - 2, hidden + 1
        if layers[start].in_features != width:
            break  # the chain's first layer: it takes the inputs, of another width
    return start


def applies(x, layers) -> bool:
    """Whether the chain ``layers`` runs fused on input ``x``: CuPy float32 in the ``kernels`` mode."""
    return fused.applies(x, layers[0].params["weight"])


class FusedMLP:
    """The chain ``layers`` (as :func:`chain_start` finds it) run by the kernels; the layers keep
    their parameters and gradients, which :meth:`backward` fills."""

    def __init__(self, layers):
        self.linears = [layer for layer in layers if type(layer) is Linear]
        self.hidden = len(self.linears) - 1
        first, last = self.linears[0], self.linears[-1]
        self.width = last.in_features if self.hidden else 1
        self.shape = {"IN": first.in_features, "WIDTH": self.width, "OUT": last.out_features,
                      "HIDDEN": self.hidden, "SIGMOID": int(type(layers[-1]) is Sigmoid)}
        self._x = self._kept = self._y = self._ones = None

    def _parameters(self) -> list:
        """Each layer's weight and bias in the kernels' five slots (a slot past the last repeats it)."""
        pairs = [(layer.params["weight"], layer.params["bias"]) for layer in self.linears]
        pairs += pairs[-1:] * (MOST_HIDDEN + 1 - len(pairs))
        return [array for pair in pairs for array in pair]

    def _launch(self, name: str, n: int, arguments: tuple) -> None:
        if n:
            cuda.functions("mlp", BLOCK=BLOCK, **self.shape)[name]((-(-n // BLOCK),), (BLOCK,), arguments)

    def forward(self, x):
        """``(n, IN)`` -> ``(n, OUT)``, keeping what :meth:`backward` reads."""
        xp = get_array_module(x)
        x = xp.ascontiguousarray(x)
        n = len(x)
        kept = xp.empty((self.hidden * self.width, n), dtype=np.float32)
        y = xp.empty((n, self.shape["OUT"]), dtype=np.float32)
        self._launch("mlp_forward", n, (x, *self._parameters(), kept, y, np.int64(n)))
        self._x, self._kept, self._y = x, kept, y
        return y

    def backward(self, grad_out, need_grad_in: bool = True):
        """Fill every layer's gradients from d(loss)/d(output); d(loss)/d(input) when asked."""
        xp = get_array_module(grad_out)
        grad_out = xp.ascontiguousarray(grad_out, dtype=np.float32)
        n, width = len(grad_out), self.width
        deltas = xp.empty((self.hidden * width + self.shape["OUT"], n), dtype=np.float32)
        grad_in = xp.empty((n, self.shape["IN"]), dtype=np.float32) if need_grad_in else None
        self._launch("mlp_backward", n, (grad_out, self._y, self._kept, *self._parameters(), deltas,
                                         np.uint64(0) if grad_in is None else grad_in, np.int64(n)))
        if self._ones is None or len(self._ones) != n:
            self._ones = xp.ones(n, dtype=np.float32)
        for index, layer in enumerate(self.linears):
            delta = deltas[index * width:index * width + layer.out_features]  # (out, n)
            inputs = self._x.T if index == 0 else self._kept[(index - 1) * width:index * width]  # (in, n)
            xp.matmul(inputs, delta.T, out=layer.grads["weight"])
            xp.matmul(delta, self._ones, out=layer.grads["bias"])
        self._x = self._kept = self._y = None
        return grad_in
