"""The drawing plan, checked without a browser: a NumPy reading of the packed buffer, op by op
(what the shader and the page's CPU path do), must reproduce the model's own forward pass, or
the compressed picture's own render."""

import numpy as np
import pytest

from helpers import waves, with_mlp
from ironlearn import codec
from ironlearn.image.coords import pixel_grid
from ironlearn.nn import Linear, ReLU, Sequential, Sigmoid, Tanh
from ironlearn.viewer.plan import TEXEL, VECTOR_OPS, ViewerError, build_plan, texture_shape
from ironlearn.viewer.shader import fragment_shader
from models import PRESETS, make_model
from picture_oracle import build_picture_plan, picture_shader


def evaluate(plan, points):
    """Follow ``plan.ops`` on ``(n, 2)`` points in float64, reading only ``plan.weights``."""
    texels = plan.weights.astype(np.float64).reshape(-1, TEXEL)
    flat = plan.weights.astype(np.float64)
    v = np.zeros((len(points), TEXEL))
    v[:, :2] = points
    vectors = [v]  # what a mix reads: every activation that an op wrote anew
    for op in plan.ops:
        kind = op["type"]
        if kind == "linear":
            rows = texels[op["weight"]:op["weight"] + op["out4"] * TEXEL * op["in4"]]
            v = v @ rows.reshape(op["out4"] * TEXEL, op["in4"] * TEXEL).T
            v += texels[op["bias"]:op["bias"] + op["out4"]].reshape(-1)
        elif kind == "relu":
            v = np.maximum(v, 0)
        elif kind == "tanh":
            v = np.tanh(v)
        elif kind == "sigmoid":
            v = 0.5 * (np.tanh(0.5 * v) + 1)
        elif kind == "sine":
            v = np.sin(v * op["w0"])
        elif kind == "fourier":
            n_in, groups = len(op["src"]), op["groups"]
            packed = texels[op["projection"]:op["projection"] + groups * n_in].reshape(groups, n_in, TEXEL)
            z = np.einsum("ni,gic->ngc", v[:, op["src"]], packed).reshape(len(v), -1)
            v = np.concatenate([np.sin(z), np.cos(z)], axis=1)
        elif kind == "hashgrid":
            v = _hashgrid(op, flat, v)
        elif kind == "latents":
            v = _latents(op, texels, v)
        elif kind == "mix":
            v = sum(vectors[term["vector"]] @ texels[term["weight"]:term["weight"] + op["out4"] * TEXEL * term["in4"]]
                    .reshape(op["out4"] * TEXEL, term["in4"] * TEXEL).T for term in op["terms"])
        else:
            raise AssertionError(kind)
        assert v.shape[1] == op["out4"] * TEXEL
        if kind in VECTOR_OPS:
            vectors.append(v)
    return v[:, plan.output]


def _weights(interpolation, t):
    """The 1-D weights of the taps, from the first (linear: the cell's first vertex, bspline: one before)."""
    if interpolation == "linear":
        return [1 - t, t], 0
    s = 1 - t
    return [s ** 3 / 6, (3 * t ** 3 - 6 * t ** 2 + 4) / 6, (-3 * t ** 3 + 3 * t ** 2 + 3 * t + 1) / 6, t ** 3 / 6], -1


def _hashgrid(op, flat, v):
    unit = (v[:, op["src"]] + 1) * 0.5
    out = np.zeros((len(v), op["out4"] * TEXEL))
    slot = 0
    for spec in op["levels"]:
        features, last = spec["features"], np.array(spec["side"]) - 1  # along x and y
        pos = np.clip(unit * np.array(spec["res"]) - spec["shift"], 0, last)
        corner = np.minimum(np.floor(pos), np.maximum(last - 1, 0))
        (wx, first), (wy, _) = _weights(spec["interpolation"], pos[:, 0] - corner[:, 0]), \
            _weights(spec["interpolation"], pos[:, 1] - corner[:, 1])
        c = corner.astype(np.int64)
        total = 0
        for j, weight_y in enumerate(wy):
            for i, weight_x in enumerate(wx):
                ix = np.clip(c[:, 0] + first + i, 0, last[0]).astype(np.uint32)
                iy = np.clip(c[:, 1] + first + j, 0, last[1]).astype(np.uint32)
                if spec["hashed"]:  # uint32 arithmetic, as on the GPU
                    row = (ix ^ (iy * np.uint32(2654435761))) & np.uint32(spec["size"] - 1)
                else:
                    row = iy * spec["side"][0] + ix
                start = spec["table"] + features * (spec["offset"] + row.astype(np.int64))
                total = total + (weight_x * weight_y)[:, None] * flat[start[:, None] + np.arange(features)]
        out[:, slot:slot + features] = total
        slot += features
    return out


def _latents(op, texels, v):
    """Each level's grid read by Keys' cubic convolution (a = -0.5), cells clamped to the grid."""
    unit = (v[:, op["src"]] + 1) * 0.5
    channels = op["channels"]
    out = np.zeros((len(v), op["out4"] * TEXEL))
    for k, spec in enumerate(op["levels"]):
        (columns, rows), pos = spec["cells"], unit * np.array(spec["scale"]) - 0.5
        corner = np.floor(pos)
        t, a = pos - corner, op["cubic"]  # Keys' cubic convolution with parameter a
        weights = np.stack([a * (t ** 3 - 2 * t ** 2 + t), (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1,
                            -(a + 2) * t ** 3 + (2 * a + 3) * t ** 2 - a * t, a * (t ** 2 - t ** 3)])  # (4, n, 2)
        c = corner.astype(np.int64)
        for j in range(4):
            for i in range(4):
                cell = (np.clip(c[:, 1] + j - 1, 0, rows - 1) * columns + np.clip(c[:, 0] + i - 1, 0, columns - 1))
                read = texels[spec["table"] + cell, :channels]
                out[:, k * channels:(k + 1) * channels] += (weights[i, :, 0] * weights[j, :, 1])[:, None] * read
    return out


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_packed_plan_is_the_model(name):
    model = make_model(name)
    plan = build_plan(model)
    points = np.concatenate([pixel_grid(37, 29), np.array([[-1, -1], [1, 1], [1, -1], [0.999, 1]], np.float32)])
    expected = model.forward(points.copy())
    np.testing.assert_allclose(evaluate(plan, points), expected, atol=2e-4)
    assert plan.weights.dtype == np.float32 and len(plan.weights) % TEXEL == 0
    assert texture_shape(plan)[0] * texture_shape(plan)[1] >= plan.texels


@pytest.mark.parametrize("channels", [3, 1], ids=["rgb", "gray"])
@pytest.mark.parametrize("mlp", [False, True], ids=["pyramid", "mlp"])
def test_the_packed_plan_is_the_compressed_picture(channels, mlp):
    decoded = codec.read(codec.encode(waves(30, 40, channels), bpp=2.0, seconds=0.2))
    if mlp:
        with_mlp(decoded)
    plan = build_picture_plan(decoded)
    for size, view in [((40, 30), None), ((53, 71), None), ((31, 17), (-0.3, 0.1, 0.2, 0.45))]:
        drawn = np.clip(evaluate(plan, pixel_grid(*size, view=view)), 0, 1).reshape(size[1], size[0], channels)
        np.testing.assert_allclose(drawn, decoded.render(size[1], size[0], view), atol=1e-4)
    assert picture_shader(plan).count("keys_weights(pos.x") == decoded.pyramid.levels


def test_the_uint32_hash_is_numpys_uint64_hash():
    rng = np.random.default_rng(0)
    ix, iy = rng.integers(0, 1 << 20, 10_000), rng.integers(0, 1 << 20, 10_000)
    for size in (1 << 8, 1 << 14, 1 << 24):
        wide = (ix.astype(np.uint64) * np.uint64(1)) ^ (iy.astype(np.uint64) * np.uint64(2654435761))
        narrow = ix.astype(np.uint32) ^ (iy.astype(np.uint32) * np.uint32(2654435761))
        np.testing.assert_array_equal(wide & np.uint64(size - 1), (narrow & np.uint32(size - 1)).astype(np.uint64))


def test_gaps_in_the_layout_meet_zero_weights():
    model = make_model("fourier")  # 10 frequencies: sin in slots 0-9, cos in 12-21, gaps at 10, 11, 22, 23
    plan = build_plan(model)
    first = plan.ops[1]
    rows = plan.weights.reshape(-1, TEXEL)[first["weight"]:first["weight"] + first["out4"] * TEXEL * first["in4"]]
    rows = rows.reshape(first["out4"] * TEXEL, -1)
    assert not rows[:, [10, 11, 22, 23]].any()
    assert not rows[first["n_out"]:].any()  # padded outputs are zero too


def test_layers_the_page_cannot_draw_are_named():
    class Square(ReLU):
        pass

    rng = np.random.default_rng(0)
    with pytest.raises(ViewerError, match="layer 1 is a Square"):
        build_plan(Sequential(Linear(2, 4, rng=rng), Square(), Linear(4, 1, rng=rng)))
    with pytest.raises(ViewerError, match="2 outputs"):
        build_plan(Sequential(Linear(2, 2, rng=rng), Tanh()))
    with pytest.raises(ViewerError, match="takes 3 inputs"):
        build_plan(Sequential(Linear(3, 1, rng=rng), Sigmoid()))


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_shader_names_every_layer(name):
    model = make_model(name)
    source = fragment_shader(build_plan(model))
    assert source.startswith("#version 300 es\n") and "$" not in source
    for index in range(len(model.layers)):
        assert f"// layer {index}, " in source
