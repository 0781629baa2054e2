"""Ready-made coordinate networks, each a plain function returning a :class:`Sequential`.

``in_size`` is the coordinate dimension (2 for images), ``out_size`` the channels
(1 for gray or binary, 3 for RGB).  ``depth`` counts hidden layers.
"""

from __future__ import annotations

from .encodings import HashGrid
from .fourier import FourierFeatures
from .init import generator
from .layers import ACTIVATIONS, Linear, Sine
from .model import Sequential

_INIT_FOR = {"relu": "he", "tanh": "xavier", "sigmoid": "xavier"}


def _final(final_activation):
    if final_activation is None:
        return []
    if final_activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {final_activation!r}: use one of {', '.join(ACTIVATIONS)}")
    return [ACTIVATIONS[final_activation]()]


def mlp(in_size: int, out_size: int, width: int = 128, depth: int = 3, activation: str = "relu",
        final_activation: str | None = None, *, rng) -> Sequential:
    """``depth`` hidden layers of ``width`` units with ``activation`` (0: none), then a linear
    output (followed by ``final_activation`` when given)."""
    rng = generator(rng)
    if activation not in _INIT_FOR:
        raise ValueError(f"unknown activation {activation!r}: use one of {', '.join(_INIT_FOR)}")
    if width < 1 or depth < 0:
        raise ValueError(f"need width >= 1 and depth >= 0 (got width={width}, depth={depth})")
    init, act = _INIT_FOR[activation], ACTIVATIONS[activation]
    sizes = [in_size] + [width] * depth
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [Linear(fan_in, fan_out, rng=rng, init=init), act()]
    layers.append(Linear(sizes[-1], out_size, rng=rng, init="xavier"))
    return Sequential(*layers, *_final(final_activation))


def siren(in_size: int, out_size: int, width: int = 256, depth: int = 3, w0: float = 30.0,
          final_activation: str | None = None, *, rng) -> Sequential:
    """SIREN: ``depth`` sine layers of ``width`` units (frequency ``w0``), then a linear output."""
    rng = generator(rng)
    if width < 1 or depth < 1:
        raise ValueError(f"width and depth must be at least 1 (got width={width}, depth={depth})")
    layers = [Linear(in_size, width, rng=rng, init="siren_first", w0=w0), Sine(w0)]
    for _ in range(depth - 1):
        layers += [Linear(width, width, rng=rng, init="siren", w0=w0), Sine(w0)]
    layers.append(Linear(width, out_size, rng=rng, init="siren", w0=w0))
    return Sequential(*layers, *_final(final_activation))


def classic(in_size: int = 2, out_size: int = 1, *, rng) -> Sequential:
    """The original Iron Learn image network, kept for comparison:
    2 -> 128 -> 128 -> 256 -> 128 -> 64 -> 64 -> 64 -> 1, tanh hidden, sigmoid out
    (99,457 parameters)."""
    rng = generator(rng)
    sizes = [in_size, 128, 128, 256, 128, 64, 64, 64]
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [Linear(fan_in, fan_out, rng=rng, init="xavier"), ACTIVATIONS["tanh"]()]
    layers += [Linear(sizes[-1], out_size, rng=rng, init="xavier"), ACTIVATIONS["sigmoid"]()]
    return Sequential(*layers)


def fourier(in_size: int, out_size: int, frequencies: int = 128, sigma: float = 10.0, width: int = 128,
            depth: int = 2, *, rng) -> Sequential:
    """Random Fourier features (``frequencies`` sin/cos pairs, scale ``sigma``), then a ReLU MLP."""
    rng = generator(rng)
    encoding = FourierFeatures(in_size, frequencies, sigma, rng=rng)
    head = mlp(2 * frequencies, out_size, width=width, depth=depth, activation="relu", rng=rng)
    return Sequential(encoding, *head.layers)


def hashgrid(in_size: int, out_size: int, levels: int = 16, features: int = 2, log2_table_size: int = 14,
             coarsest: int = 16, finest: int = 512, width: int = 64, depth: int = 2, centred: bool = False,
             interpolation: str = "linear", detail: int = 0, finest_y: int = 0, *, rng) -> Sequential:
    """A multiresolution hash grid (2-D), then a small ReLU MLP (two 64-wide layers by default).
    ``centred`` puts the grid's vertices on cell centres, ``interpolation`` says how its levels
    are read between them, ``detail`` adds a dense B-spline level, ``finest_y`` sets the cells
    down the finest level (see :class:`HashGrid`).

    ``depth=0`` makes the head one linear layer and a sigmoid: the pixel is then the sigmoid of a
    mix of the grid's features.  On a level of a vertex per pixel read by a B-spline, that is a
    spline of the picture in logit space, which redraws without the folds a ReLU head draws
    between pixels (see ``pixel_spline`` in ``fitting/presets.py``)."""
    rng = generator(rng)
    if in_size != 2:
        raise ValueError(f"the hash grid encodes 2-D coordinates (got in_size={in_size})")
    encoding = HashGrid(levels, features, log2_table_size, coarsest, finest, centred, interpolation, detail, finest_y,
                        rng=rng)
    head = mlp(encoding.out_features, out_size, width=width, depth=depth, activation="relu",
               final_activation=None if depth else "sigmoid", rng=rng)
    return Sequential(encoding, *head.layers)
