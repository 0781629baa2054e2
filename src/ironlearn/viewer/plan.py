"""A fitted model, or a compressed picture, as a drawing plan: a list of operations and one
packed float32 buffer.

The page evaluates the network per screen pixel, on the GPU from a WebGL2 float
texture and on the CPU (its fallback) from the same numbers.  Both read one
flat float32 buffer, 4 floats per RGBA32F texel, and one list of operations
that say where each layer's arrays start in it.

Activations live in vectors of vec4 (a GPU register holds 4 floats).  A layer's
output can leave gaps in those vectors (Fourier features put ``cos z`` after
``sin z`` padded to a multiple of 4), so the plan keeps, for the current
activation, which slot holds each of the layer's logical features; the next
Linear layer's weights are packed in that slot order, with zeros in the gaps.
Activations (ReLU, Sine, ...) act slot by slot and keep the layout.

Operations (``type`` and the fields the shader and the CPU evaluator read):

* ``linear``: ``n_in``, ``n_out`` (features), ``in4``, ``out4`` (vec4s in and out), ``weight`` (texel offset of
  ``out4 * 4`` rows of ``in4`` texels: the weight transposed, one row per
  output), ``bias`` (texel offset of ``out4`` texels);
* ``relu``, ``tanh``, ``sigmoid``, ``sine`` (with ``w0``): ``out4``;
* ``fourier``: ``src`` (slots of the input features), ``frequencies``, ``groups`` (frequencies
  / 4, rounded up), ``projection`` (texel offset: for each group, one texel per
  input holding that input's row of ``B`` for 4 frequencies), ``out4``;
* ``hashgrid``: ``src`` (slots of x and y), ``levels``, ``out4``.  Each level has ``res``
  cells and ``side`` vertices per side, ``size``, ``offset`` in rows, ``hashed``,
  ``features``, ``table`` (float offset of its table, row-major ``(rows, features)``),
  ``shift`` (0.5 when the vertices sit on cell centres, else 0) and ``interpolation``
  (``linear``: the 2 x 2 vertices from the cell's first, ``bspline``: the 4 x 4 from one
  before it).  Their features follow one another: the pyramid's levels, then the detail
  level (one feature, from a table of its own), if any;
* ``latents`` (a compressed picture's pyramid, :mod:`ironlearn.codec.model.latents`): ``src`` (slots of
  x and y), ``channels``, ``levels``, ``out4`` and ``cubic`` (Keys' ``a``, the file's).  Each
  level has ``cells`` ``[columns, rows]``, ``scale`` (the picture's ``[width, height]`` in the
  level's cells) and ``table`` (texel offset: one texel a cell, row-major, holding the channels'
  values).  A point reads each level by Keys' cubic convolution as ``upsampling`` does
  (position ``(x + 1) / 2 * scale - 1/2`` in cells, the 4 x 4 cells from the one before,
  indices clamped to the grid), level ``k``'s channel ``c`` into slot ``k * channels + c``;
* ``mix``: ``n_out``, ``out4`` and ``terms``, each a ``vector`` (the index of an earlier
  activation: 0 the coordinates, then one more for each ``linear``, ``fourier``, ``hashgrid``,
  ``latents`` and ``mix``), its ``in4`` and a ``weight`` packed as a ``linear`` op's: the sum of
  the terms' products, no bias (a compressed picture's levels summed, plus the MLP's correction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..backend import to_host
from ..errors import WordedError

TEXEL = 4  # floats per RGBA32F texel
ROW_TEXELS = 2048  # texels per row of the weight texture: WebGL2's guaranteed minimum MAX_TEXTURE_SIZE
#: The most rows a page's weight texture may have: most GPUs' MAX_TEXTURE_SIZE (WebGL2 guarantees
#: only 2048).  A taller one failed only once the page had built it (4.4 GB, a 35 s freeze;
#: measured: docs/benchmark-log.md, 'reliability.md: what it held before it became documentation').
MAX_TEXTURE_ROWS = 16384
DRAWN_LAYERS = ("Linear", "ReLU", "Tanh", "Sigmoid", "Sine", "FourierFeatures", "HashGrid")
ACTIVATION_OPS = {"ReLU": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "Sine": "sine"}


class ViewerError(WordedError, ValueError):
    """A model or run folder the viewer cannot show, or a port it cannot serve on; the message says
    why (naming an option as :class:`~ironlearn.errors.WordedError` does)."""


@dataclass
class DrawingPlan:
    """What the page needs to evaluate a model.

    Attributes
    ----------
    ops : list of dict
        One operation per layer, in order (see the module docstring).
    weights : ndarray, shape ``(texels * 4,)``, float32
        Every parameter and buffer, packed.
    output : list of int
        Slots of the output channels in the last activation (1: gray, 3: rgb).
    """

    ops: list
    weights: np.ndarray
    output: list

    @property
    def texels(self) -> int:
        return len(self.weights) // TEXEL


class _Packer:
    """Appends arrays to the buffer, each starting on a texel boundary."""

    def __init__(self):
        self.parts, self.floats = [], 0

    def add(self, array) -> int:
        """Append ``array`` (flattened, zero-padded to whole texels); returns its texel offset."""
        flat = np.asarray(array, np.float32).reshape(-1)
        padded = np.zeros(_ceil4(len(flat)) * TEXEL, np.float32)
        padded[:len(flat)] = flat
        offset = self.floats // TEXEL
        self.parts.append(padded)
        self.floats += len(padded)
        return offset

    def buffer(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(TEXEL, np.float32)


def _ceil4(n: int) -> int:
    return -(-n // TEXEL)


def _host(array) -> np.ndarray:
    return np.asarray(to_host(array), np.float32)


def build_plan(model) -> DrawingPlan:
    """Turn a :class:`~ironlearn.nn.Sequential` of drawable layers into a :class:`DrawingPlan`.

    Raises
    ------
    ViewerError
        A layer the page cannot draw, or inputs and outputs other than
        2 coordinates in and 1 or 3 channels out.
    """
    packer = _Packer()
    ops, slots, _ = _layer_ops(model.layers, [0, 1], 1, packer)  # the coordinates (x, y) fill the first vec4
    if len(slots) not in (1, 3):
        raise ViewerError(f"the model has {len(slots)} outputs; the viewer draws 1 (gray) or 3 (rgb)")
    return DrawingPlan(ops=ops, weights=packer.buffer(), output=list(slots))


def _layer_ops(layers, slots, width4, packer):
    """The ops of ``layers`` reading the current activation's ``slots`` (``width4`` vec4s):
    ``(ops, output slots, output vec4s)``."""
    ops = []
    for index, layer in enumerate(layers):
        name = type(layer).__name__
        if name not in DRAWN_LAYERS:
            raise ViewerError(f"layer {index} is a {name}, which the viewer cannot draw "
                              f"(it draws {', '.join(DRAWN_LAYERS)})")
        if name == "Linear":
            op, slots = _linear(layer, slots, width4, packer, index)
        elif name == "FourierFeatures":
            op, slots = _fourier(layer, slots, packer, index)
        elif name == "HashGrid":
            op, slots = _hashgrid(layer, slots, packer, index)
        else:
            op = {"type": ACTIVATION_OPS[name], "out4": width4}
            if name == "Sine":
                op["w0"] = layer.w0
        width4 = op["out4"]
        ops.append(op)
    return ops, slots, width4


#: The ops that write a new activation vector (the others change the current one in place).
VECTOR_OPS = ("linear", "fourier", "hashgrid", "latents", "mix")


def _vectors(ops) -> int:
    """How many activation vectors there are after ``ops``, the coordinates' included."""
    return 1 + sum(op["type"] in VECTOR_OPS for op in ops)


def _rows(weight, slots, width4, packer) -> tuple[int, int]:
    """Pack ``weight`` ``(n_in, n_out)`` as a ``linear`` op reads it, input feature ``i`` in slot
    ``slots[i]`` of ``width4`` vec4s: ``(texel offset, out4)``."""
    n_out = weight.shape[1]
    out4 = _ceil4(n_out)
    rows = np.zeros((out4 * TEXEL, width4 * TEXEL), np.float32)
    rows[:n_out, slots] = weight.T  # gaps keep zero weights
    return packer.add(rows), out4


def _term(vector, weight, slots, width4, packer) -> dict:
    """A ``mix`` term: activation ``vector`` (its features in ``slots``) times ``weight``."""
    return {"vector": vector, "in4": width4, "weight": _rows(np.asarray(weight, np.float32), slots, width4, packer)[0]}


def _expect_inputs(layer, index, slots, wanted):
    if len(slots) != wanted:
        raise ViewerError(f"layer {index} ({type(layer).__name__}) takes {wanted} inputs but gets {len(slots)}")


def _linear(layer, slots, width4, packer, index):
    weight, bias = _host(layer.params["weight"]), _host(layer.params["bias"])
    n_in, n_out = weight.shape
    _expect_inputs(layer, index, slots, n_in)
    offset, out4 = _rows(weight, slots, width4, packer)
    op = {"type": "linear", "n_in": n_in, "n_out": n_out, "in4": width4, "out4": out4, "weight": offset,
          "bias": packer.add(bias)}
    return op, list(range(n_out))


def _fourier(layer, slots, packer, index):
    projection = _host(layer.buffers["projection"])  # (in, m), 2 pi already folded in
    n_in, m = projection.shape
    _expect_inputs(layer, index, slots, n_in)
    groups = _ceil4(m)
    padded = np.zeros((n_in, groups * TEXEL), np.float32)
    padded[:, :m] = projection
    # Texel (group g, input i) holds B[i, 4g:4g+4], so z for 4 frequencies is sum_i x_i * texel.
    packed = padded.reshape(n_in, groups, TEXEL).transpose(1, 0, 2)
    op = {"type": "fourier", "src": list(slots), "frequencies": m, "groups": groups, "projection": packer.add(packed),
          "out4": 2 * groups}
    cos_start = groups * TEXEL
    return op, list(range(m)) + [cos_start + k for k in range(m)]


def _hashgrid(layer, slots, packer, index):
    _expect_inputs(layer, index, slots, 2)
    levels = _grid_levels(layer, packer, index)
    if layer.detail:
        levels += _grid_levels(layer.detail_grid, packer, index)
    n_out = layer.out_features
    return {"type": "hashgrid", "src": list(slots), "levels": levels, "out4": _ceil4(n_out)}, list(range(n_out))


def _grid_levels(grid, packer, index):
    """The level specs of a HashGrid's pyramid, its table packed."""
    table = packer.add(_host(grid.params["table"])) * TEXEL  # (rows, features), row-major
    # Cells and vertices across (x) and down (y) each level.
    levels = [{"res": [int(res), int(res_y)], "side": [int(side), int(side_y)], "size": int(size),
               "offset": int(offset), "hashed": bool(hashed), "features": grid.features, "table": table,
               "shift": 0.5 if grid.centred else 0.0, "interpolation": grid.interpolation}
              for res, res_y, side, side_y, size, offset, hashed in zip(
                  grid.resolutions, grid.resolutions_y, grid.sides, grid.sides_y, grid.sizes, grid.offsets,
                  grid.hashed)]
    for level in levels:
        # The hash is computed in uint64 in NumPy but masked to size - 1; a power of two up to 2**24
        # keeps only low bits, which uint32 arithmetic on the GPU gives exactly.
        if level["hashed"] and (level["size"] & (level["size"] - 1) or level["size"] > 1 << 31):
            raise ViewerError(f"layer {index} (HashGrid) has a table of {level['size']} rows; "
                              "the viewer needs a power of two")
    return levels


def check_texture(texels: int, what: str) -> None:
    """Refuse (:class:`ViewerError`) a page whose weight texture would hold ``texels``, more
    rows than :data:`MAX_TEXTURE_ROWS`; ``what`` names what needs them."""
    rows = math.ceil(texels / ROW_TEXELS)
    if rows > MAX_TEXTURE_ROWS:
        raise ViewerError(f"{what} would need a {ROW_TEXELS}x{rows} texture on the page, more than the "
                          f"{MAX_TEXTURE_ROWS} rows most GPUs hold; draw it to a PNG with `ironlearn render` instead")


def texture_shape(plan: DrawingPlan) -> tuple[int, int]:
    """``(width, height)`` in texels of the weight texture holding ``plan.weights``."""
    return ROW_TEXELS, max(1, math.ceil(plan.texels / ROW_TEXELS))
