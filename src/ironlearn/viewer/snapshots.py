"""The live page's snapshots (:mod:`.live`), taken in a callback of the training loop.

Every step the callback reads the clock only; when a snapshot is due it copies what it needs from
the device (the weights, or a rendered frame: a sync on a GPU), between two steps and never inside
one.  Neither writes to the model, so the fit goes on exactly as it would have.  Its time counts
towards the fit's budget (the fit's trainer counts its callbacks), which is why a snapshot that
takes long comes less often: at most :data:`LIVE_SHARE` of the training time goes to them.
"""

from __future__ import annotations

import io
import math
import time

from PIL import Image

from ..image.picture import scaled_size, to_uint8
from ..image.render import render
from ..train import Callback
from .plan import build_plan

SNAPSHOT_SECONDS = 0.5  # between two snapshots of the weights: the page redraws twice a second
FRAME_SECONDS = 1.0  # between two frames (a render of the region in view)
LIVE_SHARE = 0.2  # the most of the training time that snapshots may take
#: A frame is rendered at the page's canvas size, scaled down to at most this many pixels (the page
#: stretches it): a render of 1 MP of the default model takes a fraction of a second on a CPU
#: (measured: docs/viewer.md, 'Watching a fit learn: `ironlearn fit --live`').
MAX_FRAME_PIXELS = 1 << 20
FIRST_FRAME_SIDE = 512  # the whole picture, this many pixels on its longest side, until the page asks
MAX_ROWS = 1000  # history rows sent to the page, thinned evenly past this


def history(rows: list) -> list:
    """``[[step, loss, psnr], ...]`` from a fit's history rows (dicts), at most :data:`MAX_ROWS`
    of them (the last always), non-finite numbers as None (JSON has no Infinity)."""
    keep = rows[::math.ceil(len(rows) / MAX_ROWS)] if len(rows) > MAX_ROWS else list(rows)
    if rows and keep[-1] is not rows[-1]:
        keep.append(rows[-1])

    def finite(value):
        return value if value is not None and math.isfinite(value) else None

    return [[row["step"], finite(row["loss"]), finite(row["psnr"])] for row in keep]


def weights_snapshot(model) -> tuple:
    """The drawing plan's buffer of ``model``, as the page's texture holds it (little-endian float32)."""
    return build_plan(model).weights.astype("<f4", copy=False).tobytes(), "application/octet-stream", {}


def frame_region(asked, size) -> tuple | None:
    """The region of the [-1, 1] square to render and its size in pixels, for the page's request
    ``asked`` ``(view, width, height)`` (None: the whole picture, ``size`` its ``(width, height)``);
    None when the view holds none of the picture."""
    if asked is None:
        return (-1.0, -1.0, 1.0, 1.0), scaled_size(*size, FIRST_FRAME_SIDE, enlarge=False)
    view, width, height = asked
    inside = (max(view[0], -1.0), max(view[1], -1.0), min(view[2], 1.0), min(view[3], 1.0))
    if inside[0] >= inside[2] or inside[1] >= inside[3]:
        return None
    w = width * (inside[2] - inside[0]) / (view[2] - view[0])
    h = height * (inside[3] - inside[1]) / (view[3] - view[1])
    shrink = min(1.0, math.sqrt(MAX_FRAME_PIXELS / max(w * h, 1.0)))
    return inside, (max(1, round(w * shrink)), max(1, round(h * shrink)))


def frame_snapshot(model, backend, view, width: int, height: int) -> tuple:
    """``model`` rendered over ``view`` at ``width`` x ``height``, as a PNG."""
    image = Image.fromarray(to_uint8(render(model, width, height, backend, view=view)))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)  # loopback is fast; the fit's time is not
    return buffer.getvalue(), "image/png", {"X-View": ",".join(repr(float(v)) for v in view)}


class LiveFeed(Callback):
    """Publishes the model to ``server`` (a :class:`~.live.LiveServer`) every
    :data:`SNAPSHOT_SECONDS` (its weights) or :data:`FRAME_SECONDS` (``frames``: the region the page
    asks for), with the history ``rows()`` so far, while a page is watching; ``size`` is the
    picture's ``(width, height)``."""

    def __init__(self, server, rows, backend, *, frames: bool, size):
        super().__init__(1)  # reads the clock every step, and nothing else unless a snapshot is due
        self.server, self.rows, self.backend, self.frames, self.size = server, rows, backend, frames, size
        self.period = FRAME_SECONDS if frames else SNAPSHOT_SECONDS
        self.due = 0.0  # the first step publishes at once

    def step(self, trainer) -> None:
        began = time.perf_counter()
        if began < self.due or not self.server.watching():
            return
        snapshot = self.snapshot(trainer.model)
        self.due = began + max(self.period, (time.perf_counter() - began) / LIVE_SHARE)
        if snapshot is not None:
            self.server.publish(trainer.step, trainer.train_seconds, history(self.rows()), snapshot)

    def snapshot(self, model):
        if not self.frames:
            return weights_snapshot(model)
        region = frame_region(self.server.asked(), self.size)
        return None if region is None else frame_snapshot(model, self.backend, region[0], *region[1])
