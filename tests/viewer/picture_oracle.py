"""The Python reference of a compressed picture's page: the plan and the shader that
``static/picture.js`` builds in the page from the file's bytes.  The page is held to these,
operation for operation and bit for bit (``test_compressed.py``, ``test_app.py``); ironlearn itself
never draws a compressed picture this way, so the reference lives with the tests."""

import numpy as np

from ironlearn.codec.model.latents import COLOURS
from ironlearn.codec.model.network import FEATURE_GAIN
from ironlearn.viewer.plan import TEXEL, DrawingPlan, _ceil4, _layer_ops, _Packer, _term, _vectors
from ironlearn.viewer.shader import _fill, _float, _slot, fragment_shader


def build_picture_plan(decoded) -> DrawingPlan:
    """Turn a compressed picture (a :class:`~ironlearn.codec.Decoded`) into a :class:`DrawingPlan`: its
    latent grids read at the point (a ``latents`` op), its MLP's layers on them, if it has one,
    then a ``mix`` that sums the levels, adds the MLP's correction and turns the colours back.

    The grids are packed as upsampling reads them (times their steps, filtered) and times :data:`~ironlearn.codec.model.network.FEATURE_GAIN`,
    which is what the MLP reads; the ``mix`` divides the gain back out of the sum.

    A page builds this plan itself from the file's bytes (``static/picture.js``): this is its
    reference, which the tests hold the page's to, operation for operation and bit for bit.
    """
    pyramid, channels = decoded.pyramid, decoded.channels
    packer = _Packer()
    levels = []
    for k in range(pyramid.levels):
        if pyramid.is_empty(k):  # one zero cell: reads clamp to it, so it draws what a grid of zeros does
            cells = np.zeros((1, 1, TEXEL), np.float32)
            levels.append({"cells": [1, 1], "scale": [pyramid.width / 2 ** k, pyramid.height / 2 ** k],
                           "table": packer.add(cells)})
            continue
        integers = pyramid.latents[k]
        values = pyramid.values(k) * np.float32(FEATURE_GAIN)  # (channels, rows, columns), filtered
        cells = np.zeros((*integers.shape[1:], TEXEL), np.float32)
        cells[..., :channels] = values.transpose(1, 2, 0)
        table = packer.add(cells)
        levels.append({"cells": [integers.shape[2], integers.shape[1]],
                       "scale": [pyramid.width / 2 ** k, pyramid.height / 2 ** k], "table": table})
    features = pyramid.levels * channels
    ops = [{"type": "latents", "src": [0, 1], "channels": channels, "levels": levels, "out4": _ceil4(features),
            "cubic": float(pyramid.cubic)}]
    colours = COLOURS[channels]  # (channels, channels): decorrelated -> RGB or gray, as ``picture @ colours``
    summed = np.tile(np.eye(channels, dtype=np.float32), (pyramid.levels, 1)) @ colours / np.float32(FEATURE_GAIN)
    terms = [_term(1, summed, list(range(features)), ops[0]["out4"], packer)]
    if decoded.net is not None:
        layer_ops, slots, width4 = _layer_ops(decoded.net.layers, list(range(features)), ops[0]["out4"], packer)
        ops += layer_ops
        terms.append(_term(_vectors(ops) - 1, colours, slots, width4, packer))
    ops.append({"type": "mix", "terms": terms, "n_out": channels, "out4": _ceil4(channels)})
    return DrawingPlan(ops=ops, weights=packer.buffer(), output=list(range(channels)))


def picture_shader(plan: DrawingPlan) -> str:
    """The fragment shader of a compressed picture's plan, as ``picture.js`` writes it."""
    return fragment_shader(plan, {"latents": _latents, "mix": _mix})


def _latents(index: int, op: dict, current: int) -> str:
    x = f"vec2({_slot(current, op['src'][0])}, {_slot(current, op['src'][1])})"
    channels, blocks = op["channels"], []
    for level, spec in enumerate(op["levels"]):
        (columns, rows), (scale_x, scale_y) = spec["cells"], spec["scale"]
        lines = [f"        {_slot(current + 1, level * channels + c)} = value.{'xyzw'[c]};" for c in range(channels)]
        blocks.append(_fill("latents_level", level=level, columns=columns, rows=rows, index=index,
                            scale_x=_float(scale_x), scale_y=_float(scale_y), table=spec["table"],
                            cubic=_float(op["cubic"]), last_row=rows - 1, last_column=columns - 1,
                            channel_lines="\n".join(lines)))
    return _fill("latents", index=index, levels=len(op["levels"]), channels=channels, out4=op["out4"], x=x,
                 out=current + 1, level_blocks="\n".join(blocks))


def _mix(index: int, op: dict, current: int) -> str:
    terms = [_fill("mix_term", vector=term["vector"], weight=term["weight"], in4=term["in4"],
                   row_stride=TEXEL * term["in4"]) for term in op["terms"]]
    what = " + ".join(f"v{term['vector']} @ weight" for term in op["terms"]) + f" -> {op['n_out']} channels"
    return _fill("mix", index=index, what=what, out4=op["out4"], out=current + 1, terms="\n".join(terms))
