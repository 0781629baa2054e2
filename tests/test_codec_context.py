"""The learned context model in the file (format 7, ``codec/bitstream/context.py``): a random one
codes every latent back exactly, its two walks (the encoder's, many steps at once, and the
decoder's, a wavefront at a time) give every latent the same distribution to the bit, its network's
arithmetic is exact in any order of summation, and a header whose networks take more multiply-adds
than a decoder accepts is refused in one line."""

import math

import numpy as np
import pytest

from helpers import random_context, run_cli, waves
from ironlearn import codec
from ironlearn.codec.bitstream import container, entropy
from ironlearn.codec.bitstream import context as learned
from ironlearn.codec.bitstream import sections as bitstream
from ironlearn.codec.bitstream.header import MAX_MLP_MACS, write_header
from ironlearn.codec.model.latents import Pyramid
from ironlearn.codec.shapes import FILTER_OFFSETS


@pytest.fixture(scope="module")
def pyramid():
    """A picture's latents with detail on every level (the coarsest grids 1 x 1 or 1 x 2)."""
    return codec.read(codec.encode(waves(40, 56, 3), bpp=3.0, seconds=0.5)).pyramid


def _flags(pyramid, which):
    count = pyramid.levels * pyramid.channels
    return {"all": [True] * count, "none": [False] * count, "mixed": None}[which]


@pytest.mark.parametrize("which", ["all", "mixed", "none"])
def test_a_random_context_model_codes_every_latent_back_exactly(pyramid, which):
    context = random_context(pyramid, seed=1, learned=_flags(pyramid, which))
    data = bitstream.write(pyramid, None, context)
    back = codec.read(data).pyramid
    for k in range(pyramid.levels):
        np.testing.assert_array_equal(back.latents[k], pyramid.latents[k])
    header = codec.read_header(data)
    assert data[4] == container.VERSION == 7 and header.context == context.hidden == 8
    assert [shift for shift, in header.context_shifts] == list(context.shifts)
    assert [bool(flag) for flag, in header.context_grids] == list(context.learned)
    assert header.context_sizes == [q.size for q, _ in context.tensors]
    # the weights section holds the model's tensors after the filters', each integer as it was
    fields = {name: getattr(header, name) for name in ("grids", "weights", "filters", "context", "context_shifts",
                                                       "context_weights", "context_grids")}
    zeros = [np.zeros(size, np.int32) for size in [pyramid.channels * len(FILTER_OFFSETS)] * len(header.filters)
             + header.context_sizes]
    _, values = bitstream.walk("decode", fields, Pyramid(header.height, header.width, header.channels, header.levels),
                               zeros, header.sections, header.version)
    found = bitstream.context_model(fields, values[len(header.filters):])
    assert found.shifts == context.shifts and found.learned == context.learned
    for (q, exponent), (expected, expected_exponent) in zip(found.tensors, context.tensors):
        assert exponent == expected_exponent and np.array_equal(q, expected)
    plain = bitstream.write(pyramid, None)
    if which == "none":  # every grid under its two numbers: the latents section is the same
        assert container.unpack(data)[1][0] == container.unpack(plain)[1][0]
    else:
        assert container.unpack(data)[1][0] != container.unpack(plain)[1][0]


def _recorded(grid, parent, model, context, magnitude, known):
    """Each call of the coder as ``(values, means, scales)``, walking ``grid`` one way: the encoder's
    (``known``) or the decoder's, which is given each wavefront's values as it asks for them."""
    calls, steps = [], learned.waves(*grid.shape)

    def coder(symbols, family, means, scales):
        values = symbols if known else grid[steps[len(calls)]].astype(np.int32)
        calls.append((np.array(values), np.array(means, np.float64), np.array(scales, np.float64)))
        return values

    learned.code(coder, grid.astype(np.int32) if known else np.zeros(grid.shape, np.int32), parent, model, context,
                 None, magnitude, known=known)
    return calls


def test_the_encoders_walk_and_the_decoders_give_the_same_distributions(pyramid):
    context = random_context(pyramid, seed=2, learned=_flags(pyramid, "all"))
    data = bitstream.write(pyramid, None, context)
    header = codec.read_header(data)
    compared = 0
    for k, c, grid, parent in bitstream.grids(pyramid):
        _, a, slope, magnitude = header.grids[k * pyramid.channels + c]
        if not magnitude:
            continue
        model = entropy.Model(a, slope)
        if parent is not None and not parent.any():
            parent = None  # as code_latents: an empty level says nothing
        encoded = _recorded(grid, parent, model, context, magnitude, known=True)
        decoded = _recorded(grid, parent, model, context, magnitude, known=False)
        assert len(encoded) == len(decoded) == learned.WAVE * (grid.shape[0] - 1) + grid.shape[1]
        for (values, means, scales), (values_d, means_d, scales_d) in zip(encoded, decoded):
            np.testing.assert_array_equal(values, values_d)
            assert means.tobytes() == means_d.tobytes() and scales.tobytes() == scales_d.tobytes()
        compared += grid.size
        assert np.abs(np.concatenate([means for _, means, _ in encoded])).max() > 0  # means that are not all 0
    assert compared > 1000


def test_the_network_is_exact_in_any_order_of_summation():
    """Near the bounds of its exactness (weights of +-MAX_WEIGHT and of 1, the finest step beside
    the coarsest in one sum, inputs at their clip and on their finest grid), the batched forward
    equals one whose every sum is exactly rounded (math.fsum): no partial sum was rounded."""
    rng = np.random.default_rng(0)
    tensors = []
    for (fan_in, fan_out), exponent, bias_exponent in zip(learned.layer_shapes(learned.MAX_HIDDEN), (-8, -10, -14),
                                                           (-14, -14, 0)):
        choices = [-learned.MAX_WEIGHT, learned.MAX_WEIGHT, 1, -3, 200]
        tensors.append((rng.choice(choices, (fan_in, fan_out)), exponent))
        tensors.append((rng.integers(-learned.MAX_WEIGHT, learned.MAX_WEIGHT + 1, fan_out), bias_exponent))
    context = learned.ContextModel((learned.MAX_SHIFT,) * learned.INPUTS, tuple(tensors), ())
    raw = rng.integers(-(1 << 17), 1 << 17, (500, learned.INPUTS)).astype(np.float64)
    raw[::3] = np.sign(raw[::3]) * (1 << 20)  # at the clip
    x = learned.scaled(raw, context.shifts)
    layers = context.layers
    batched = learned.forward(x, layers)
    for row, out in zip(x, batched):
        value = row
        for index, (weight, bias) in enumerate(layers):
            value = np.array([math.fsum([*(value * weight[:, o]), bias[o]]) for o in range(weight.shape[1])])
            if index + 1 < len(layers):
                step = 2.0 ** -learned.ACTIVATION_BITS
                value = np.minimum(np.floor(np.maximum(value, 0) / step) * step, learned.ACTIVATION_CLIP)
        assert value.tobytes() == out.tobytes()
    assert len(np.unique(batched[:, 0])) > 100 and len(np.unique(batched[:, 1])) > 100  # no layer saturated


def _header_with_context(width: int, hidden=16, depth=2, levels=7, channels=3) -> bytes:
    """A whole header (bitstream.write's layout, format 7) of an MLP and a context model of ``width``."""
    header = container.Writer().uint(64).uint(64).uint(channels).uint(levels).uint(hidden).uint(depth)
    for _ in range(levels * channels):
        header.float32(0.01).float32(0.0).uint(0).uint(0)
    for _ in range(2 * (depth + 1)):
        header.sint(-8).float32(0.0).uint(0)
    for _ in range(min(levels, 4)):
        header.sint(0).float32(0.0).uint(0)
    header.uint(width)
    for _ in range(learned.INPUTS):
        header.uint(3)
    for _ in learned.tensor_sizes(width):
        header.sint(-8).float32(0.0).uint(0)
    for _ in range(levels * channels):
        header.uint(1)
    return header.getvalue()


def test_a_context_model_over_the_bound_of_multiply_adds_is_refused_in_one_line(tmp_path, capsys):
    """An MLP of 640 multiply-adds a pixel and a context model of width 8 take 640 + 3 x 4/3 x 328
    = 1,952, within the bound; width 9 takes 2,152, past it (its header passes every field's own
    bounds)."""
    at = container.pack(_header_with_context(8), [b"", b""])
    assert codec.read_header(at).context == 8 and codec.read(at).pyramid.is_empty(0)
    over = tmp_path / "over.ilc"
    over.write_bytes(container.pack(_header_with_context(9), [b"", b""]))
    with pytest.raises(codec.CodecError) as refused:
        codec.read_header(over.read_bytes())
    message = str(refused.value)
    assert "\n" not in message and "context model of width 9" in message
    assert f"take 2,152 multiply-adds a pixel, over the {MAX_MLP_MACS:,}" in message
    before = over.read_bytes()
    code, _, err = run_cli(capsys, "info", over)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "multiply-adds" in err and "Traceback" not in err
    assert over.read_bytes() == before
    # nor is such a header written
    with pytest.raises(codec.CodecError, match="multiply-adds"):
        write_header(dict(height=64, width=64, channels=3, levels=7, hidden=16, depth=2,
                          grids=((0.01, 0.0, 0, 0),) * 21, weights=((-8, 0.0, 0),) * 6, filters=((0, 0.0, 0),) * 4,
                          context=9, context_shifts=(), context_weights=(), context_grids=()))
