"""The synthesis MLP as a decoder builds it: its shape, and the gain on what it reads.  The
encoder trains it (:mod:`.synthesis`); a file's reader needs only these numbers, so decoding
imports nothing of training."""

#: The synthesis MLP's hidden width and its layers.
WIDTH, DEPTH = 16, 2
#: The MLP reads the upsampled latents times this: they are small (a fraction of the picture's
#: range), and the MLP's initialisation expects inputs of about 1.
FEATURE_GAIN = 10.0
