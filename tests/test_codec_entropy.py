"""The latents' entropy model: what the encoder predicts, the decoder predicts too, and it pays."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironlearn.codec.bitstream import entropy
from ironlearn.codec.bitstream import sections as bitstream
from ironlearn.codec.bitstream.entropy import best_log_scale
from ironlearn.codec.bitstream.entropy import Model, activity, classes, fit, golden_section, laplace_bits


def _clustered(rng, shape, busy: float = 0.15):
    """Latents as a picture makes them: zeros, and large values together in a few patches."""
    h, w = shape
    q = np.zeros(shape, np.int32)
    for _ in range(max(1, int(busy * h * w / 16))):
        i, j = rng.integers(0, h), rng.integers(0, w)
        patch = q[i:i + 4, j:j + 4]
        patch[...] = np.round(rng.laplace(0, 6, patch.shape))
    return q


def _coded_bits(q, parent, model) -> int:
    encoder = bitstream._constriction().stream.queue.RangeEncoder()
    entropy.encode_grid(encoder, q, parent, model, bitstream.laplace(int(np.abs(q).max())))
    return 32 * len(encoder.get_compressed())


def _decoded(q, parent, model):
    encoder = bitstream._constriction().stream.queue.RangeEncoder()
    family = bitstream.laplace(int(np.abs(q).max()))
    entropy.encode_grid(encoder, q, parent, model, family)
    decoder = bitstream._constriction().stream.queue.RangeDecoder(encoder.get_compressed())
    return entropy.decode_grid(decoder, q.shape, parent, model, family)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.booleans(), st.integers(0, 2**32 - 1))
def test_the_decoder_reads_back_any_grid(h, w, with_parent, seed):
    """Row by row, the decoder computes the activity the encoder computed for the whole grid."""
    rng = np.random.default_rng(seed)
    q = rng.integers(-20, 21, (h, w)).astype(np.int32) * (rng.random((h, w)) < 0.5)
    q[0, 0] = 1  # a grid of zeros is not coded at all
    parent = rng.integers(-50, 51, (-(-h // 2), -(-w // 2))).astype(np.int32) if with_parent else None
    model = Model(float(np.float32(rng.uniform(-3, 3))), int(rng.integers(0, entropy.SLOPES)))
    np.testing.assert_array_equal(_decoded(q, parent, model), q)


def test_the_estimate_is_what_the_range_coder_spends():
    """Rate control steers by :func:`fit`'s bits: they must be the coder's real cost."""
    rng = np.random.default_rng(3)
    q, parent = _clustered(rng, (64, 96)), _clustered(rng, (32, 48))
    model, bits = fit(q, parent)
    assert _coded_bits(q, parent, model) == pytest.approx(bits, rel=0.01, abs=64)


def test_neighbours_save_bits_where_values_cluster():
    """One Laplace a grid spends bits on every zero around a patch; the context model does not."""
    rng = np.random.default_rng(4)
    q = _clustered(rng, (96, 128), busy=0.1)
    one_scale = laplace_bits(q, best_log_scale(q)).sum()
    _, bits = fit(q, None)
    assert bits < 0.8 * one_scale


def test_without_structure_the_model_is_no_worse_than_one_laplace():
    """Slope 0 is one Laplace a grid, so the search can always fall back to it."""
    q = np.round(np.random.default_rng(5).laplace(0, 2, (64, 64))).astype(np.int32)
    _, bits = fit(q, None)
    assert bits <= laplace_bits(q, best_log_scale(q)).sum() * 1.002


def test_activity_reads_only_what_the_decoder_has():
    """Changing a latent changes the activity of those below it and to their sides, never of
    itself, its row, or rows above."""
    q = np.zeros((6, 7), np.int32)
    q[2, 3] = 5
    changed = np.argwhere(activity(q, None) != 0)
    assert {tuple(x) for x in changed} == {(3, 2), (3, 3), (3, 4), (4, 3)}


def test_classes_are_quarter_octaves_and_never_decrease():
    values = np.arange(0, 5000)
    found = classes(values)
    assert found[0] == 0 and np.all(np.diff(found) >= 0) and np.all(found[1:] >= 1)
    assert classes(np.array([1, 2, 4, 8, 2**39])).tolist() == [1, 5, 9, 13, 1 + 4 * 39]
    assert classes(np.array([2**40 - 1])).max() < entropy.CLASSES


def test_the_scales_are_clipped_and_finite():
    for model in (Model(-12.0, entropy.SLOPES - 1), Model(12.0, entropy.SLOPES - 1), Model(0.0, 0)):
        table = model.scale_table()
        assert table.shape == (entropy.CLASSES,) and np.all(np.isfinite(table)) and np.all(table > 0)


def test_golden_section_solves_many_problems_at_once():
    centres = np.array([-3.0, 0.5, 2.0])
    found = golden_section(lambda x: (x - centres) ** 2, np.full(3, -5.0), np.full(3, 5.0), iterations=40)
    np.testing.assert_allclose(found, centres, atol=1e-6)


@pytest.mark.parametrize("height, width", [(5, 7), (300, 101)])
@pytest.mark.parametrize("with_parent", [False, True])
def test_the_pair_counts_in_bands_are_the_whole_grids(height, width, with_parent):
    """fit counts (class, magnitude) pairs a band of rows at a time (the whole grid's activity took
    1.3 GB at 16.8 MP): the same counts as over the grid at once, each band reading the rows above it."""
    from ironlearn.codec.bitstream.entropy import _pair_counts, activity, classes

    rng = np.random.default_rng(0)
    q = (rng.laplace(size=(height, width)) * 3).astype(np.int32)
    parent = (rng.laplace(size=(-(-height // 2), -(-width // 2))) * 5).astype(np.int32) if with_parent else None
    base = int(np.abs(q).max()) + 1
    keys, counts = np.unique(classes(activity(q, parent)) * base + np.abs(q), return_counts=True)
    pair_class, magnitude, banded = _pair_counts(q, parent, band_cells=3 * width)
    np.testing.assert_array_equal(pair_class * base + magnitude, keys)
    np.testing.assert_array_equal(banded, counts)
