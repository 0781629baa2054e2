"""Starting from the picture: the pixel spline's level set to the picture before it trains, and
the parameters a run then holds where they start.

Past :data:`~ironlearn.fitting.regimes.THUMBNAIL` px a photograph's default model
(:data:`~ironlearn.fitting.regimes.PIXEL_SPLINE`) is a level of a vertex per pixel read by a
B-spline, a linear layer and a sigmoid.  Such a model can be the picture before any training:
the vertices at the B-spline coefficients of the pixels' logits, the layer the identity.  It then
passes through every pixel and draws a spline of the picture between them.  With a vertex at every
pixel there is nothing left for training to learn (:func:`keeps_the_start`); ``--start random``
leaves it as built, to watch it learn.
"""

from __future__ import annotations

import numpy as np

from ..backend import to_host
from ..image.io import resized_channels
from ..nn import HashGrid, Linear, Sigmoid
from ..nn.splines import bspline_coefficients
from .regimes import spline_sides

#: A vertex-per-pixel level starts as the picture's logits, the pixels clipped to [START_CLIP,
#: 1 - START_CLIP]: a quarter of a level from 0 and 1, so that black and white round to their 8-bit
#: pixel with room for float32's rounding (at 0.02, they were off by up to 5 levels; at half a
#: level, black came back as 1; measured: docs/benchmark-log.md, 'Measurements the code's comments
#: quoted' and 'The first photograph').
START_CLIP = 0.25 / 255


def pixel_spline_layout(model, width: int, height: int, channels: int) -> bool:
    """Whether ``model`` is a dense level of a vertex per pixel of a ``width x height`` picture (past
    2^24 pixels, of :func:`~ironlearn.fitting.regimes.spline_sides`), a feature per channel, read
    through one linear layer and a sigmoid: what :func:`start_from_picture` starts as the picture."""
    layers = model.layers
    if len(layers) != 3 or not isinstance(layers[0], HashGrid) or not isinstance(layers[1], Linear) \
            or not isinstance(layers[2], Sigmoid):
        return False
    grid = layers[0]
    return (grid.levels == 1 and grid.centred and not grid.detail and not grid.hashed[0]
            and (grid.sides[0], grid.sides_y[0]) == spline_sides(width, height) and grid.features == channels)


def start_from_picture(model, picture) -> bool:
    """Start a grid of a vertex per pixel, read through one linear layer and a sigmoid (the layout
    of the pixel spline regime), as the picture: the vertices at the B-spline coefficients of the
    pixels' logits (:func:`~ironlearn.nn.splines.bspline_coefficients`), the layer the
    identity.  Returns whether the model has that layout (other models are left as built).

    The untrained model then passes through every pixel (the clipped ones at the clip, which
    rounds to the pixel), and between pixels draws a cubic spline of the picture in logit space.
    It beats a blurred start (each vertex at its own pixel's logit) and a random one in fit and
    redraw alike (docs/benchmark-log.md, "Why the defaults").
    """
    if not pixel_spline_layout(model, picture.width, picture.height, picture.channels):
        return False
    grid, head, channels = model.layers[0], model.layers[1], picture.channels
    across, down = spline_sides(picture.width, picture.height)
    if (across, down) == (picture.width, picture.height):
        pixels = to_host(picture.band()).reshape(picture.height, picture.width, channels).astype(np.float32)
    else:  # fewer vertices than pixels: the picture resized to them, a channel at a time
        pixels = resized_channels(to_host(picture.values), across, down, in_8_bits=True)
    logits = np.clip(pixels, START_CLIP, 1 - START_CLIP, out=pixels)
    logits /= 1 - logits
    np.log(logits, out=logits)
    grid.params["table"][...] = bspline_coefficients(logits).reshape(-1, channels)
    head.params["weight"][...] = np.eye(channels, dtype=np.float32)
    head.params["bias"][...] = 0
    return True


def held_parameters(plan, model) -> tuple:
    """The parameters a run holds where they start: the head's, when a step trains one tile of a
    level started as the picture (:func:`start_from_picture`: the head is the identity).

    A head that every pixel shares, trained a tile at a time, drifts: each tile pulls it its own
    way, and the vertices of the other tiles, trained against an older head, no longer match it.
    The level has a vertex per pixel and a feature per channel, so the head has nothing to add
    that the vertices cannot hold: trained, it ends under its start; held, it stays above.  From a
    random start the head trains: it grows, which speeds the vertices' way from zero to their
    logits (docs/benchmark-log.md, "Why the defaults").
    """
    if not (plan.trains_tiles and plan.starts_as_picture):
        return ()
    return tuple(name for name in model.named_parameters() if not name.startswith("layers.0."))


def keeps_the_start(plan, asked_length: bool) -> bool:
    """Whether a new fit under ``plan`` keeps its start instead of training: a model started as the
    picture with a vertex at every pixel, unless a length was asked for (``asked_length``).

    Such a start already redraws every pixel as the 8-bit picture holds it (the clip rounds to the
    pixel), and training on pixel centres moves nothing between them: the 2x redraw stays where it
    started.  A 40 s fit of a 2560x1600 photograph gained 0.03 dB at its own size and nothing a
    picture shows (docs/benchmark-log.md, 'The first photograph').  Past 2^24 pixels the level has
    fewer vertices than pixels, its start is the picture resized, and training has work to do.
    """
    return (not plan.resume and not asked_length and plan.starts_as_picture
            and spline_sides(plan.width, plan.height) == (plan.width, plan.height))


def kept_start(plan) -> bool:
    """Whether the run keeps its start, untrained (:func:`keeps_the_start`):
    a new run of no steps."""
    return plan.steps == 0 and plan.start_step == 0 and not plan.resume
