"""The GPU check's part for the codec: ``compress`` (kodim23 at 0.25 and 0.5 bpp, each encode in
``compress_seconds``, its synthesis MLP trained on the device, against Cool-chic's published
figures).

kodim23 comes from the ``sporco`` wheel, read, never imported, in ``runs/wheels`` (the GPU
machine has no internet: carry the folder there); without it, scikit-image's astronaut stands in,
or a synthetic photograph, and the report says so.
"""

from __future__ import annotations

import glob
import os

import numpy as np
from common import sporco_photos

from ironlearn import codec

from .device import skimage_available, synthetic_photo

#: Where the sporco wheel is looked for.
WHEELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "runs", "wheels")
#: Cool-chic 4.2's published PSNR on kodim23 at 0.25 and 0.5 bpp (docs/compression.md).
COOL_CHIC = {0.25: 37.30, 0.5: 40.52}


def _picture(ctx) -> tuple[str, np.ndarray]:
    if glob.glob(os.path.join(WHEELS, "sporco-*.whl")):
        return sporco_photos(WHEELS, ("kodim23",))[0]
    if skimage_available():
        import skimage.data

        ctx.note(f"no sporco wheel in {WHEELS}: scikit-image's astronaut stands in for kodim23 (no Cool-chic row)")
        return "astronaut", skimage.data.astronaut()
    ctx.note(f"no sporco wheel in {WHEELS} and no scikit-image: a synthetic photograph (no Cool-chic row)")
    return "synthetic", synthetic_photo(np, 768, 512, 3).astype(np.uint8)


def compress_part(ctx):
    name, pixels = _picture(ctx)
    if ctx.device != "cuda":
        pixels = pixels[::8, ::8].copy()  # the CPU's check of the script: a thumbnail
    seconds = ctx.sizes.compress_seconds
    ctx.save(picture=f"{name} {pixels.shape[1]}x{pixels.shape[0]}", seconds=seconds)
    for bpp in (0.25, 0.5):
        result = codec.compress_array(pixels, bpp=bpp, seconds=seconds, backend=ctx.backend)
        ctx.add_row({"picture": name, "target bpp": bpp, "bpp": round(result.bpp, 4), "psnr": round(result.psnr, 3),
                     "seconds": round(result.seconds, 2), "MLP steps": result.steps, "MLP tried": result.mlp_tried,
                     "Cool-chic 4.2": COOL_CHIC[bpp] if name == "kodim23" else None})
    ctx.save(headline="; ".join(f"{r['picture']} {r['target bpp']} bpp: {r['psnr']:.2f} dB at {r['bpp']:.3f}"
                                + (f" (Cool-chic {r['Cool-chic 4.2']})" if r["Cool-chic 4.2"] else "")
                                for r in ctx.result["rows"]))
