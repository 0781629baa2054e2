"""A network sized to a parameter budget: ``fit --params N``, and ``compare``'s budgets.

Each preset has one knob that sizes it (:data:`KNOBS`): the hidden width of the coordinate
networks, the finest level's cells of the hash grid.  :func:`sized` finds the knob's value
whose network holds the count nearest the budget by building candidates and counting their
parameters (doubling, then halving the gap), so that the count is the network's own, never a
formula kept beside it.  The other options keep their defaults, or what the user gave.
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionError
from .presets import OPTIONS, Preset

#: The option that sizes each preset, and its smallest value.
KNOBS = {"hashgrid": ("finest", 2), "siren": ("width", 1), "fourier": ("width", 1), "mlp": ("width", 1)}


def count(preset: Preset, options: dict, width_px: int, height_px: int, mode: str, channels: int) -> int:
    """The parameters of ``preset``'s network with ``options`` for a picture of that size and mode."""
    resolved = preset.resolve(options, width_px, height_px, mode)
    return preset.build(channels, resolved, np.random.default_rng(0)).num_parameters


def sized(preset: Preset, options: dict, params: int, width_px: int, height_px: int, mode: str,
          channels: int) -> dict:
    """``options`` with ``preset``'s knob set so that its network holds about ``params``
    parameters (the nearest count the knob reaches).

    Raises OptionError for a preset of fixed size, a knob the user set too, or a budget under
    the smallest network's count or over the largest's (the knob at its limit)."""
    if preset.name not in KNOBS:
        raise OptionError(f"{{model}} {preset.name} has a fixed size; drop {{params}}, or choose another {{model}}",
                          "model", "params")
    knob, least = KNOBS[preset.name]
    if options.get(knob) is not None:
        raise OptionError(f"{{params}} sizes {{{knob}}} of {{model}} {preset.name}; give one of the two",
                          "params", knob, "model")

    counted = {}

    def of(value: int) -> int:
        if value not in counted:
            counted[value] = count(preset, {**options, knob: value}, width_px, height_px, mode, channels)
        return counted[value]

    smallest = of(least)
    if params < smallest:
        raise OptionError(f"{{params}} {params:,} is under the smallest {{model}} {preset.name} for this picture "
                          f"({smallest:,} parameters); give at least that", "params", "model")
    limit = int(OPTIONS[knob].limit)
    low, high = least, least
    while high < limit and of(high) <= params:  # doubling: the count grows with the knob
        low, high = high, min(limit, 2 * high)
    if of(high) < params:
        raise OptionError(f"{{params}} {params:,} is over the largest {{model}} {preset.name} with these options "
                          f"({of(high):,} parameters at {{{knob}}} {high}); give fewer, or other options",
                          "params", "model", knob)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if of(middle) <= params else (low, middle)
    nearest = min((low, high), key=lambda value: abs(of(value) - params))
    return {**options, knob: nearest}
