"""The large test photographs: scikit-image's photographs tiled at their native scale.

    python benchmarks/make_photo.py OUT.png [--size 4096x3072]

4096x3072 is the 12-megapixel picture of the any-size benchmark; 1024x1024, 2048x2048 and
8192x6144 give the 1, 4 and 50 megapixel ones.  Tiles are placed left to right, top to
bottom, each at its own size, cycling through the photographs, so every pixel is a real
photograph pixel (no resampling) and the picture holds sky, fur, text, gravel and grass.
"""

from __future__ import annotations

import argparse

import numpy as np
from PIL import Image

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "grass", "gravel", "brick", "moon",
          "immunohistochemistry", "hubble_deep_field", "colorwheel")


def photographs():
    import skimage.data

    for name in PHOTOS:
        array = getattr(skimage.data, name)()
        if array.ndim == 2:
            array = np.repeat(array[..., None], 3, axis=2)
        yield name, np.asarray(array[..., :3], np.uint8)


def tiled(width: int, height: int) -> np.ndarray:
    """A ``(height, width, 3)`` uint8 mosaic: rows of photographs at native scale, cropped at the edges."""
    canvas = np.zeros((height, width, 3), np.uint8)
    tiles = list(photographs())
    y, k = 0, 0
    while y < height:
        x, row_height = 0, 0
        while x < width:
            _, tile = tiles[k % len(tiles)]
            k += 1
            h, w = min(tile.shape[0], height - y), min(tile.shape[1], width - x)
            canvas[y:y + h, x:x + w] = tile[:h, :w]
            x += w
            row_height = max(row_height, h)
        y += row_height
    return canvas


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--size", default="4096x3072", help="WxH (default 4096x3072, 12.6 MP)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    Image.MAX_IMAGE_PIXELS = None
    Image.fromarray(tiled(width, height)).save(args.out)
    print(f"wrote {args.out} ({width}x{height}, {width * height / 1e6:.1f} MP)")


if __name__ == "__main__":
    main()
