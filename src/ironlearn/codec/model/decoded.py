"""A compressed file read back: the picture it holds, drawn at any size, a band of rows at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import OptionError
from ...image.render import render_size
from ..shapes import MODES
from .latents import COLOURS, Pyramid
from .network import FEATURE_GAIN

#: Output pixels a render computes at once (bounds its memory at any size).
BAND_PIXELS = 1 << 18


@dataclass
class Decoded:
    """A compressed file read back: the picture's size and mode, its latents and its MLP (None
    when the file holds none)."""

    height: int
    width: int
    channels: int
    pyramid: Pyramid
    net: object = None

    @property
    def mode(self) -> str:
        return MODES[self.channels]

    @property
    def num_parameters(self) -> int:
        """The numbers the file holds: latents, filter taps and MLP weights."""
        latents = sum(g.size for g in self.pyramid.latents)
        taps = sum(found[0].size for found in self.pyramid.filters if found is not None)
        return latents + taps + (0 if self.net is None else sum(p.size for p in self.net.named_parameters().values()))

    @property
    def size(self) -> tuple[int, int]:
        """The picture's ``(width, height)``, as :attr:`ironlearn.Run.size` gives a model's."""
        return self.width, self.height

    def region(self, view=None) -> tuple[float, float, float, float] | None:
        """The picture's pixels ``(left, top, right, bottom)`` that ``view`` ``(x0, y0, x1, y1)``
        spans: the region of the [-1, 1] square (y down) that a model's render reads, the picture
        filling the square.  None for no view; an :class:`~ironlearn.errors.OptionError` (a
        ``ValueError``) for one that leaves the square (the file holds nothing there)."""
        if view is None:
            return None
        x0, y0, x1, y1 = (float(v) for v in view)
        if not (-1 <= x0 < x1 <= 1 and -1 <= y0 < y1 <= 1):
            raise OptionError(f"{{view}} {x0:g},{y0:g},{x1:g},{y1:g} leaves the picture: a compressed picture "
                              "spans [-1, 1] on each axis, so a view needs -1 <= x0 < x1 <= 1 and -1 <= y0 < y1 <= 1",
                              "view")
        return ((x0 + 1) / 2 * self.width, (y0 + 1) / 2 * self.height,
                (x1 + 1) / 2 * self.width, (y1 + 1) / 2 * self.height)

    def bands(self, height: int, width: int, view=None):
        """The picture (or the region ``view`` of the [-1, 1] square, checked here, before the
        first band) at ``height x width``, a band of rows at a time: an iterator of
        ``(first_row, pixels)``, pixels float32 in [0, 1], ``(rows, width, channels)``; a band
        holds about :data:`BAND_PIXELS` pixels."""
        region = self.region(view)
        band = max(1, BAND_PIXELS // width)

        def drawn():
            # Once, not a band; but level 0 read at its own size, a band's rows at a time (whole,
            # with its filter, it took over a gigabyte at 16.8 MP).
            native = (height, width) == (self.height, self.width) and region is None
            values = [None if k == 0 and native else self.pyramid.values(k) for k in range(self.pyramid.levels)]
            for top in range(0, height, band):
                rows = slice(top, min(top + band, height))
                features = self.pyramid.features(height, width, rows, region, values)
                picture = self.pyramid.summed(features)
                if self.net is not None:
                    picture += self.net.forward(features * np.float32(FEATURE_GAIN))
                picture = (picture @ COLOURS[self.channels]).reshape(-1, width, self.channels)
                yield top, np.clip(picture, 0, 1)

        return drawn()

    def render(self, height: int | None = None, width: int | None = None, view=None) -> np.ndarray:
        """The picture (or the region ``view`` ``(x0, y0, x1, y1)`` of the [-1, 1] square, y
        down) at ``height x width`` (its own size by default): float32 in [0, 1],
        ``(height, width, channels)``, computed in bands of rows (see :meth:`bands`)."""
        height, width = height or self.height, width or self.width
        out = np.empty((height, width, self.channels), np.float32)
        for top, pixels in self.bands(height, width, view):
            out[top:top + len(pixels)] = pixels
        return out

    def draw_size(self, size=None, scale: float | None = None, view=None) -> tuple[int, int]:
        """The ``(width, height)`` that :meth:`redraw` draws for these arguments."""
        self.region(view)  # a bad view is reported as such, not as a size
        return render_size(self.size, size, scale, view)

    def redraw(self, size=None, scale: float | None = None, view=None) -> np.ndarray:
        """:meth:`render` at ``size`` (N for the longest side, or ``(W, H)``), at ``scale`` times
        the picture's size, or (neither given) at its own pixel pitch; ``view`` ``(x0, y0, x1,
        y1)`` draws that region of the [-1, 1] square, sized as a model's render sizes it
        (:func:`~ironlearn.image.render.render_size`).  ``ValueError`` for a size beyond what
        renders, or a view that leaves the square."""
        return self.render(*self.draw_size(size, scale, view)[::-1], view)
