"""The synthesis MLP as a decoder builds it: its shape, the gain on what it reads, and the network
itself (:func:`build`).  The encoder trains it (:mod:`..search.synthesis`); a file's reader
builds it and loads the file's weights, so decoding imports nothing of training."""

from __future__ import annotations

import numpy as np

from ...nn import mlp

#: The synthesis MLP's hidden width and its layers.
WIDTH, DEPTH = 16, 2
#: The MLP reads the upsampled latents times this: they are small (a fraction of the picture's
#: range), and the MLP's initialisation expects inputs of about 1.
FEATURE_GAIN = 10.0


def build(inputs: int, channels: int, width: int = WIDTH, depth: int = DEPTH, seed: int = 0):
    """The MLP that reads a pixel's ``inputs`` upsampled grids and corrects its ``channels``;
    its last layer starts at zero, so a new MLP changes nothing."""
    net = mlp(inputs, channels, width=width, depth=depth, rng=np.random.default_rng(seed))
    net.layers[-1].params["weight"][...] = 0
    return net
