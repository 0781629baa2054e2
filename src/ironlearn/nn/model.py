"""The Sequential container: layers applied in order, their arrays named by walking them.

The ready-made networks built from it live in :mod:`ironlearn.nn.presets`.
"""

from __future__ import annotations

import inspect
import reprlib

import numpy as np

from ..backend import asarray_like
from . import fused_mlp
from .layers import LAYERS


class Sequential:
    """Layers applied in order; parameters are named by walking them (``layers.0.weight``).

    Parameters
    ----------
    *layers : Layer
    """

    def __init__(self, *layers):
        self.layers = list(layers)

    # -- the maths ---------------------------------------------------------------
    def forward(self, x):
        """``(batch, in)`` -> ``(batch, out)``, caching what backward needs.  On a GPU the small
        MLP that ends the model runs as one kernel (:mod:`.fused_mlp`)."""
        start, head = self._head()
        for layer in self.layers[:start]:
            x = layer.forward(x)
        self._fused = head is not None and fused_mlp.applies(x, self.layers[start:])
        if self._fused:
            return head.forward(x)
        for layer in self.layers[start:]:
            x = layer.forward(x)
        return x

    __call__ = forward

    def backward(self, grad_out) -> None:
        """Fill every layer's ``grads`` from d(loss)/d(output); the input's gradient is not computed."""
        last = len(self.layers) - 1
        if getattr(self, "_fused", False):
            start, head = self._head()
            grad_out = head.backward(grad_out, need_grad_in=start > 0)
            last = start - 1
        for index in range(last, -1, -1):
            grad_out = self.layers[index].backward(grad_out, need_grad_in=index > 0)

    def _head(self) -> tuple:
        """``(start, FusedMLP)`` of the chain of layers that ends the model, or ``(len, None)``;
        found again when the layers change."""
        key = tuple(map(id, self.layers))
        if getattr(self, "_head_key", None) != key:
            start = fused_mlp.chain_start(self.layers)
            self._head_key = key
            self._head_found = (len(self.layers), None) if start is None else (
                start, fused_mlp.FusedMLP(self.layers[start:]))
        return self._head_found

    # -- names, state, devices ---------------------------------------------------------
    def named_parameters(self) -> dict:
        """``{"layers.<i>.<name>": array}`` in layer order (the arrays themselves, not copies)."""
        return {f"layers.{i}.{k}": v for i, layer in enumerate(self.layers) for k, v in layer.params.items()}

    def named_gradients(self) -> dict:
        """Gradients under the same names as :meth:`named_parameters`."""
        return {f"layers.{i}.{k}": v for i, layer in enumerate(self.layers) for k, v in layer.grads.items()}

    def named_buffers(self) -> dict:
        """Untrained arrays that belong to the model (a Fourier projection), by dotted name."""
        return {f"layers.{i}.{k}": v for i, layer in enumerate(self.layers) for k, v in layer.buffers.items()}

    def named_arrays(self) -> dict:
        """Parameters and buffers: everything :meth:`state_dict` saves."""
        return {**self.named_parameters(), **self.named_buffers()}

    @property
    def num_parameters(self) -> int:
        return int(sum(p.size for p in self.named_parameters().values()))

    def state_dict(self) -> dict:
        """A copy of every parameter and buffer, by dotted name."""
        return {name: value.copy() for name, value in self.named_arrays().items()}

    def load_state_dict(self, state: dict, strict: bool = True) -> None:
        """Copy arrays into the parameters in place (converting to their device and dtype).

        With ``strict`` a missing, unexpected or mis-shaped array raises ``ValueError``
        naming it; without, only the arrays present are loaded (shapes still checked).
        """
        own = self.named_arrays()
        missing = sorted(set(own) - set(state))
        extra = sorted(set(state) - set(own))
        if strict and (missing or extra):
            raise ValueError(f"state does not match the model: missing {missing or 'none'}, unexpected {extra or 'none'}")
        for name, target in own.items():
            if name not in state:
                continue
            value = state[name]
            if tuple(value.shape) != tuple(target.shape):
                raise ValueError(f"{name}: saved shape {tuple(value.shape)} does not match the model's {tuple(target.shape)}")
            target[...] = asarray_like(target, value)

    def to(self, backend) -> "Sequential":
        """Move every parameter onto ``backend`` (device and dtype), in place; returns self."""
        for layer in self.layers:
            layer.to(backend)
        self._head_key = None  # the fused head's arrays were the old device's
        return self

    # -- architecture as data ---------------------------------------------------------
    def config(self) -> dict:
        """A JSON-ready description that :meth:`from_config` rebuilds."""
        return {"type": "Sequential", "layers": [{"type": type(l).__name__, **l.config()} for l in self.layers]}

    @staticmethod
    def shapes(config: dict) -> dict:
        """The arrays a model built from ``config`` would hold, by dotted name, without building it.

        Parameters
        ----------
        config : dict
            An architecture, as :meth:`config` writes it.

        Returns
        -------
        dict
            ``{"layers.<i>.<name>": shape}`` of every parameter and buffer.

        Raises
        ------
        ValueError
            ``config`` is not a list of known layers with sane arguments; the message names the layer.
        """
        return {f"layers.{index}.{name}": tuple(shape)
                for index, (arrays, _, _) in enumerate(_layer_shapes(config)) for name, shape in arrays.items()}

    @staticmethod
    def out_features(config: dict, in_features: int | None = None) -> int | None:
        """Width of the output of a model built from ``config`` and given ``in_features`` (None: what
        its first layer takes), without building it.

        Returns None only for activations alone given no ``in_features``.

        Raises
        ------
        ValueError
            As :meth:`shapes`, or a layer does not take the width the one before it gives.
        """
        width = in_features
        for index, (_, takes, gives) in enumerate(_layer_shapes(config)):
            if takes is not None and width is not None and takes != width:
                raise ValueError(f"layer {index} takes {takes} inputs but gets {width}")
            width = takes if width is None else width
            width = width if gives is None else gives
        return width

    @classmethod
    def from_config(cls, config: dict) -> "Sequential":
        """Rebuild the layers of :meth:`config` (with throwaway initial values; load a state next).

        Raises
        ------
        ValueError
            ``config`` is not an architecture :meth:`out_features` accepts (checked before anything is built).
        """
        cls.out_features(config)
        rng = np.random.default_rng(0)
        layers = []
        for index, spec in enumerate(config["layers"]):
            layer_cls, arguments = _layer_class(spec, index)
            if "rng" in inspect.signature(layer_cls).parameters:
                arguments["rng"] = rng
            layers.append(layer_cls(**arguments))
        return cls(*layers)

    def __repr__(self) -> str:
        body = "".join(f"\n  ({i}): {layer!r}" for i, layer in enumerate(self.layers))
        return f"Sequential({body}\n)  # {self.num_parameters:,} parameters"


def _layer_class(spec, index: int) -> tuple[type, dict]:
    """The class a saved layer ``{"type": name, **arguments}`` names, and a copy of its arguments."""
    name = spec.get("type") if isinstance(spec, dict) else None
    if not isinstance(name, str) or name not in LAYERS:
        raise ValueError(f"layer {index} is of unknown type {reprlib.repr(name)} (known: {', '.join(LAYERS)})")
    arguments = dict(spec)
    del arguments["type"]
    return LAYERS[name], arguments


def _layer_shapes(config) -> list:
    """:meth:`Layer.shapes` of each layer of the architecture ``config``: ``(shapes, in, out)``."""
    if not isinstance(config, dict) or config.get("type") != "Sequential":
        raise ValueError("not a Sequential architecture")
    specs = config.get("layers")
    if not isinstance(specs, list) or not specs:
        raise ValueError("the architecture lists no layers")
    described = []
    for index, spec in enumerate(specs):
        layer_cls, arguments = _layer_class(spec, index)
        try:
            described.append(layer_cls.shapes(arguments))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"layer {index} ({layer_cls.__name__}): {exc}") from None
    return described
