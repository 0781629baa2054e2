"""The model a file holds: the latents' pyramid and its upsampling (:mod:`.latents`), the finest
levels' filters (:mod:`.filters`), the synthesis MLP (:mod:`.network`), and the picture they
draw at any size once a file is read (:mod:`.decoded`).  Nothing here trains or searches."""
