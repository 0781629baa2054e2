"""What a file's model is made of, in the numbers that the model and the format both read: how
many levels, each level's grid, the largest integer, a filter's taps.  The model's parts
(:mod:`.model`) build on them and the bitstream's header (:mod:`.bitstream.header`) bounds a file
by them, so the format does not hang off the model, nor the model off the format."""

from __future__ import annotations

#: Largest latent or weight magnitude a file may hold.
MAX_SYMBOL = 1 << 15

#: The pictures a file holds, by their channels.
MODES = {1: "gray", 3: "rgb"}
#: Levels of the pyramid at most: the native resolution down to 1/64.
MAX_LEVELS = 7
#: The finest levels whose grids may pass through a filter, and the filter's reach in cells.
FILTER_LEVELS, FILTER_RADIUS = 4, 3
#: The filter's taps: the cell itself, then one offset of each pair ``(d, -d)`` within
#: :data:`FILTER_RADIUS` steps (a symmetric filter: it sharpens or smooths, and never shifts).
FILTER_OFFSETS = tuple([(0, 0)] + [(dy, dx) for dy in range(FILTER_RADIUS + 1)
                                   for dx in range(-FILTER_RADIUS, FILTER_RADIUS + 1)
                                   if abs(dy) + abs(dx) <= FILTER_RADIUS and (dy, dx) > (0, 0)])


def level_shape(height: int, width: int, level: int) -> tuple[int, int]:
    """The grid of level ``level`` for a ``height x width`` picture: one value per block of
    ``2**level`` pixels a side, rounded up."""
    return -(-height // (1 << level)), -(-width // (1 << level))
