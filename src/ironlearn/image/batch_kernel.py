"""A picture's training batch in one CUDA launch: a
:class:`~ironlearn.image.sampling.PictureSampler`'s positions, from the same counter-based hash,
and their targets, through the same filter.

Its NumPy twin is ``PictureSampler``'s own array code (a few dozen operations a batch), which
runs on the CPU and in the ``portable`` kernel mode; ``tests/test_kernels.py`` checks that the
two agree on a GPU.  Its source is ``cuda/sampler.cu`` (:mod:`ironlearn.cuda`), compiled on the CPU
for every filter and pixel type by ``tests/test_kernels_compile.py``.
"""

from __future__ import annotations

import numpy as np

from .. import cuda, kernels
from ..backend import get_array_module, on_device

BLOCK = 256  # threads a block: one a sample

SAMPLER_KINDS = {"bilinear": 0, "bicubic": 1, "lanczos": 2, "spline": 3, "centres": 4}
_C_TYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.float32): "float"}


def applies(sampler) -> bool:
    """Whether ``sampler`` (a PictureSampler) draws its batches by :func:`picture_batch`."""
    values, taps_read = sampler.values, sampler._taps_read
    return (on_device(values) and kernels.mode() == "kernels" and hasattr(get_array_module(values), "RawModule")
            and values.dtype in _C_TYPES and taps_read.dtype in _C_TYPES)


def picture_batch(sampler, key: int):
    """The batch ``(coordinates (n, 2), targets (n, channels))`` of a PictureSampler whose step
    has the hash key ``key`` (``sampling.step_key``), in one launch."""
    xp = get_array_module(sampler.values)
    n, channels = sampler.batch_size, sampler.channels
    coords = xp.empty((n, 2), dtype=np.float32)
    targets = xp.empty((n, channels), dtype=np.float32)
    pixels = xp.ascontiguousarray(sampler.values)
    taps_read = xp.ascontiguousarray(sampler._taps_read)
    function = cuda.functions("sampler", KIND=SAMPLER_KINDS[sampler.kind], PIXEL=_C_TYPES[pixels.dtype],
                              TAP=_C_TYPES[taps_read.dtype])["picture_batch"]
    function((-(-n // BLOCK),), (BLOCK,), (
        pixels, taps_read, coords, targets, np.int64(n), np.int32(sampler.width), np.int32(sampler.height),
        np.int32(channels), np.uint64(key), np.float64(sampler.pixels / n), np.int64(sampler.period),
        np.float32(sampler._below[0]), np.float32(sampler._below[1]), np.float32(sampler.scale),
        np.float32(sampler._taps_scale), np.float32(2 / sampler.width), np.float32(2 / sampler.height)))
    return coords, targets
