"""The fragment shader of a plan: the GLSL templates in ``glsl/`` filled in layer by layer.

Every size and offset is written into the source as a constant, so loops have
fixed bounds and activation arrays have exact lengths; the GPU compiler unrolls
what it likes.  One shader draws one model (or one compressed picture); a new
model means a new shader.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from string import Template

import numpy as np

from .plan import ROW_TEXELS, TEXEL, DrawingPlan

#: GLSL for the activations, slot by slot on a vec4 ``x`` (what layers.py computes, in the same order; the
#: sigmoid in another form of the same function).
ACTIVATIONS = {
    "relu": "max({x}, 0.0)",
    "tanh": "tanh4({x})",
    # Sigmoid.forward's 1 / (1 + exp(-x)) as (1 + tanh(x / 2)) / 2: GLSL leaves an exp that
    # overflows undefined, and tanh4 never overflows.
    "sigmoid": "0.5 * (tanh4({x} * 0.5) + 1.0)",
    "sine": "sin({x} * {w0})",
}


@lru_cache(maxsize=None)
def template(name: str) -> Template:
    """The GLSL template ``glsl/NAME.glsl``, its last newline dropped."""
    return Template((resources.files(__package__) / "glsl" / f"{name}.glsl").read_text().rstrip("\n"))


def _fill(glsl: str, /, **values) -> str:
    return template(glsl).substitute(**values)


def _float(value: float) -> str:
    """A GLSL float literal that reads back as the same float32 (``repr`` of the float32 value)."""
    text = repr(float(np.float32(value)))
    return text if any(c in text for c in ".en") else text + ".0"


def _vec2(pair) -> str:
    """A GLSL vec2 literal of two floats (see :func:`_float`)."""
    return f"vec2({_float(pair[0])}, {_float(pair[1])})"


def _slot(array: int, slot: int) -> str:
    return f"v{array}[{slot // TEXEL}].{'xyzw'[slot % TEXEL]}"


def fragment_shader(plan: DrawingPlan, blocks=None) -> str:
    """GLSL ES 3.00 source that evaluates ``plan`` at every fragment of the canvas; ``blocks``
    maps another operation's type to what writes its block, ``(index, op, current) -> GLSL``
    (a compressed picture's page builds its shader itself, ``static/picture.js``: its reference
    in Python, which the tests hold the page to, is the tests' own)."""
    body, current = [], 0
    for index, op in enumerate(plan.ops):
        kind = op["type"]
        if kind == "linear":
            body.append(_fill("linear", index=index, n_in=op["n_in"], n_out=op["n_out"],
                              out4=op["out4"], in4=op["in4"], weight=op["weight"], bias=op["bias"],
                              row_stride=TEXEL * op["in4"], **{"in": current, "out": current + 1}))
            current += 1
        elif kind in ACTIVATIONS:
            expression = ACTIVATIONS[kind].format(x=f"v{current}[k]", w0=_float(op.get("w0", 0.0)))
            body.append(_fill("activation", index=index, name=kind, out4=op["out4"], expression=expression,
                              **{"in": current}))
        elif kind == "fourier":
            terms = [f"{_slot(current, s)} * texel({op['projection']} + g * {len(op['src'])} + {i})"
                     for i, s in enumerate(op["src"])]
            body.append(_fill("fourier", index=index, frequencies=op["frequencies"], groups=op["groups"],
                              out4=op["out4"], projection=" + ".join(terms), out=current + 1))
            current += 1
        elif kind == "hashgrid":
            body.append(_hashgrid(index, op, current))
            current += 1
        elif blocks and kind in blocks:
            body.append(blocks[kind](index, op, current))
            current += 1
        else:
            raise ValueError(f"no shader for operation {kind!r}")
    values = [_slot(current, s) for s in plan.output]
    rgb = f"vec3({values[0]})" if len(values) == 1 else f"vec3({', '.join(values)})"
    prelude = _fill("prelude", row_texels=ROW_TEXELS, row_bits=ROW_TEXELS.bit_length() - 1)
    return prelude + "\n" + _fill("main", body="\n\n".join(body), rgb=rgb) + "\n"


#: Vertices a side each read mixes, and the first one's offset from the point's cell.
_TAPS = {"linear": (2, 0), "bspline": (4, -1)}


def _hashgrid(index: int, op: dict, current: int) -> str:
    x = f"vec2({_slot(current, op['src'][0])}, {_slot(current, op['src'][1])})"
    blocks, slot = [], 0
    for level, spec in enumerate(op["levels"]):
        (across, down), features = spec["side"], spec["features"]
        last, below = (across - 1, down - 1), (max(across - 2, 0), max(down - 2, 0))
        if spec["hashed"]:
            row, kind = f"hashed_row(vertex, {spec['size'] - 1}u)", f"hashed into {spec['size']} rows"
        else:
            row, kind = f"dense_row(vertex, {across})", f"dense, {across * down} vertices"
        kind += f", {features} feature{'s' if features > 1 else ''}, {spec['interpolation']} reads"
        lines = [f"                {_slot(current + 1, slot + feature)} += w * scalar(r + {feature});"
                 for feature in range(features)]
        slot += features
        taps, first = _TAPS[spec["interpolation"]]
        blocks.append(_fill("hashgrid_level", level=level, cells="x".join(map(str, spec["res"])),
                            res_f=_vec2(spec["res"]), shift=_float(spec["shift"]), last=f"ivec2({last[0]}, {last[1]})",
                            last_f=_vec2(last), below_f=_vec2(below), kind=kind, index=index,
                            table=spec["table"], features=features, offset=spec["offset"], row=row,
                            interpolation=spec["interpolation"], taps=taps, first=first,
                            feature_lines="\n".join(lines)))
    return _fill("hashgrid", index=index, levels=len(op["levels"]), features=slot, out4=op["out4"], x=x,
                 out=current + 1, level_blocks="\n".join(blocks))
