"""Benchmark: rate and distortion on photographs, ironlearn's codec against JPEG, WebP and AVIF.

Everything (the tables, the JSON of every row and the plot) comes from one command, run from the
repository root:

    python benchmarks/compression.py

    options: [--images kodim23 ...] [--rates 0.125 0.25 0.5 1.0] [--codecs jpeg webp avif ironlearn]
             [--seconds 30] [--out runs/compression] [--plot docs/images/compression-rd.png]
             [--folder DIR]

* **Photographs**: the four 768x512 photographs that the ``sporco`` wheel ships (kodim23, monarch,
  sail, tulips; ``pip download --no-deps sporco`` into ``--folder``, read from the wheel, never
  imported), and scikit-image's colour photographs at their own sizes, not 768x512: astronaut
  512x512, coffee 600x400, chelsea 451x300, rocket 640x427.
* **Rates**: bits per pixel of the whole file, every byte the encoder writes: 8 * bytes / (W * H).
* **Classic codecs**, through Pillow, in memory: JPEG (Pillow's 4:2:0, with ``optimize=True``:
  Huffman tables fitted to the picture, as any rate comparison of JPEG should), WebP
  (``method=6``, the slowest and smallest) and AVIF (``subsampling="4:4:4"``, ``speed=6``, libavif's
  and Pillow's default; ``max_threads=1``, so that every codec is timed on one core). At each rate,
  bisection on the integer quality (0-100, assuming the size grows with it) finds the highest
  quality whose file fits; where even quality 0 is over, that point is kept with its real rate and
  marked "over".
* **ironlearn** (``from ironlearn import codec``): ``codec.compress_array(pixels, bpp=target,
  seconds=--seconds)`` once, decoded with ``codec.decode``; its rate is its file's, marked "over"
  too where it is over the target. ``mlp_steps`` in the JSON: the MLP's training steps when the
  file kept one, 0 when the pyramid alone was better for its bits.
* **Quality**: PSNR in RGB, 10 log10(255^2 / MSE) over the three channels of each picture, and the
  mean of those per-picture PSNRs over the pictures (the Kodak convention, not the PSNR of a mean
  MSE). Times: the median of three runs of the final encode (one for ironlearn, whose encode is
  its time budget) and of three decodes.

Written under ``--out``: ``results.md`` (a table per rate, then one row per picture, codec and
rate) and ``results.json`` (every row); the plot of mean PSNR against mean real rate goes to
``--plot``. A progress line is printed as each picture, codec and rate finishes. The whole run
takes about 20 minutes, most of it ironlearn's encodes (8 pictures x 4 rates x 30 s).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import io
import json
import os
import statistics
import tempfile
import time

import numpy as np
import PIL
from PIL import AvifImagePlugin, Image, features

from common import SPORCO_PHOTOS, machine, sporco_photos

from ironlearn.files import atomic_write
from ironlearn.image.metrics import psnr_from_mse

SKIMAGE_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")
NAMES = (*SPORCO_PHOTOS, *SKIMAGE_PHOTOS)
RATES = (0.125, 0.25, 0.5, 1.0)
PILLOW_OPTIONS = {
    "jpeg": {"format": "JPEG", "optimize": True},
    "webp": {"format": "WEBP", "method": 6},
    "avif": {"format": "AVIF", "subsampling": "4:4:4", "speed": 6, "max_threads": 1},
}
CODECS = (*PILLOW_OPTIONS, "ironlearn")
REPEATS = 3


def photographs(names=None, folder: str | None = None) -> list[tuple[str, np.ndarray]]:
    """The benchmark's photographs as (name, uint8 RGB array of shape (H, W, 3)), those in ``names``
    (all when None): sporco's four at 768x512, then scikit-image's at their own sizes.

    ``folder`` is where the sporco wheel is, or is downloaded to."""
    import skimage.data

    names = NAMES if names is None else names
    sporco = [name for name in SPORCO_PHOTOS if name in names]
    pictures = sporco_photos(folder, sporco) if sporco else []
    for name, pixels in pictures:
        if pixels.shape != (512, 768, 3):
            raise ValueError(f"sporco's {name} is {pixels.shape[1]}x{pixels.shape[0]}, not 768x512")
    return pictures + [(name, getattr(skimage.data, name)()) for name in SKIMAGE_PHOTOS if name in names]


def rgb_psnr(decoded: np.ndarray, original: np.ndarray) -> float:
    """PSNR in dB over all three channels of one picture, for 8-bit values (peak 255)."""
    error = np.mean((decoded.astype(np.float64) - original.astype(np.float64)) ** 2)
    return psnr_from_mse(float(error) / 255.0**2)


def bpp(data: bytes, pixels: np.ndarray) -> float:
    """Bits per pixel of a whole file ``data`` coding ``pixels`` (H, W, 3)."""
    return 8 * len(data) / (pixels.shape[0] * pixels.shape[1])


def median_seconds(work, repeats: int = REPEATS):
    """(the last result of ``work()``, the median of ``repeats`` timed calls in seconds)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


class PillowCodec:
    """One of Pillow's encoders at an integer quality (0-100), files kept per quality so that
    every rate's bisection on one picture reuses the encodes of the others."""

    def __init__(self, name: str, pixels: np.ndarray):
        self.name, self.pixels = name, pixels
        self.image = Image.fromarray(pixels)
        self.files: dict[int, bytes] = {}

    def encode(self, quality: int) -> bytes:
        buffer = io.BytesIO()
        self.image.save(buffer, quality=quality, **PILLOW_OPTIONS[self.name])
        return buffer.getvalue()

    def file(self, quality: int) -> bytes:
        if quality not in self.files:
            self.files[quality] = self.encode(quality)
        return self.files[quality]

    def fits(self, quality: int, target: float) -> bool:
        return bpp(self.file(quality), self.pixels) <= target

    def highest_quality(self, target: float) -> int:
        """The highest quality whose file is at most ``target`` bpp, or 0 when none is."""
        if not self.fits(0, target):
            return 0
        fits, over = 0, 101  # invariant: quality `fits` fits, quality `over` does not (or is past 100)
        while over - fits > 1:
            middle = (fits + over) // 2
            fits, over = (middle, over) if self.fits(middle, target) else (fits, middle)
        return fits

    def row(self, target: float) -> dict:
        quality = self.highest_quality(target)
        data, encode_s = median_seconds(lambda: self.encode(quality))
        return {"quality": quality, **measure(data, self.pixels, target, encode_s, decode_pillow)}


def decode_pillow(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


def measure(data: bytes, pixels: np.ndarray, target: float, encode_s: float, decode) -> dict:
    """The row's rate, PSNR and times for the file ``data`` coding ``pixels``."""
    decoded, decode_s = median_seconds(lambda: decode(data))
    if decoded.shape != pixels.shape or decoded.dtype != np.uint8:
        raise ValueError(f"decoded {decoded.dtype} {decoded.shape}, expected uint8 {pixels.shape}")
    rate = bpp(data, pixels)
    return {"bytes": len(data), "bpp": rate, "over": rate > target, "psnr_db": rgb_psnr(decoded, pixels),
            "encode_s": encode_s, "decode_s": decode_s}


def ironlearn_row(codec, pixels: np.ndarray, target: float, seconds: float) -> dict:
    start = time.perf_counter()
    result = codec.compress_array(pixels, bpp=target, seconds=seconds)
    encode_s = time.perf_counter() - start
    return {"quality": None, "mlp_steps": result.steps, **measure(result.data, pixels, target, encode_s, codec.decode)}


def ironlearn_codec():
    """(ironlearn's codec module, "") when it has ``compress_array`` and ``decode``, else (None, why not);
    an error raised inside the module still raises."""
    if importlib.util.find_spec("ironlearn.codec") is None:
        return None, "`from ironlearn import codec` finds no codec module"
    from ironlearn import codec

    missing = [name for name in ("compress_array", "decode") if not callable(getattr(codec, name, None))]
    return (None, f"ironlearn.codec has no {' or '.join(missing)} yet") if missing else (codec, "")


def run(pictures, codecs, rates, seconds: float) -> list[dict]:
    codec, why_not = ironlearn_codec() if "ironlearn" in codecs else (None, "")
    if why_not:
        print(f"ironlearn: skipped, {why_not}", flush=True)
    rows = []
    for name, pixels in pictures:
        for codec_name in codecs:
            if codec_name == "ironlearn" and codec is None:
                continue
            pillow = PillowCodec(codec_name, pixels) if codec_name in PILLOW_OPTIONS else None
            for target in rates:
                row = pillow.row(target) if pillow else ironlearn_row(codec, pixels, target, seconds)
                row = {"image": name, "width": pixels.shape[1], "height": pixels.shape[0], "codec": codec_name,
                       "target_bpp": target, **row}
                rows.append(row)
                print(f"{name} {codec_name} {target:g} bpp: {_quality(row)}, {row['bpp']:.4f} bpp"
                      f"{' (over)' if row['over'] else ''}, {row['psnr_db']:.2f} dB, encode {row['encode_s']:.3f} s,"
                      f" decode {row['decode_s']:.4f} s", flush=True)
    return rows


def _quality(row: dict) -> str:
    """What made the file: the Pillow quality, or whether ironlearn's file kept its MLP."""
    if row["quality"] is not None:
        return f"quality {row['quality']}"
    return f"pyramid + MLP ({row['mlp_steps']} steps)" if row.get("mlp_steps") else "pyramid"


def summary(rows: list[dict], codecs, rates) -> list[str]:
    """A Markdown table per target rate: the per-picture PSNRs' mean, min, median and max per codec."""
    lines = []
    for target in rates:
        lines += [f"### {target:g} bpp", "",
                  "| codec | pictures | mean PSNR (dB) | min | median | max | mean bpp | over | encode (s, median) "
                  "| decode (s, median) |", "| --- " * 10 + "|"]
        for codec_name in codecs:
            picked = [row for row in rows if row["codec"] == codec_name and row["target_bpp"] == target]
            if not picked:
                continue
            db = [row["psnr_db"] for row in picked]
            lines.append(f"| {codec_name} | {len(picked)} | {np.mean(db):.2f} | {min(db):.2f} | "
                         f"{statistics.median(db):.2f} | {max(db):.2f} | {np.mean([r['bpp'] for r in picked]):.4f} | "
                         f"{sum(r['over'] for r in picked)} | {statistics.median(r['encode_s'] for r in picked):.3f} | "
                         f"{statistics.median(r['decode_s'] for r in picked):.4f} |")
        lines.append("")
    return lines


def per_picture(rows: list[dict]) -> list[str]:
    lines = ["| picture | size | target bpp | codec | quality | bytes | bpp | PSNR (dB) | encode (s) | decode (s) |",
             "| --- " * 10 + "|"]
    for row in rows:
        quality = row["quality"] if row["quality"] is not None else _quality(row)
        rate = f"{row['bpp']:.4f}" + (" **over**" if row["over"] else "")
        lines.append(f"| {row['image']} | {row['width']}x{row['height']} | {row['target_bpp']:g} | {row['codec']} | "
                     f"{quality} | {row['bytes']:,} | {rate} | {row['psnr_db']:.2f} | {row['encode_s']:.3f} | "
                     f"{row['decode_s']:.4f} |")
    return lines


def plot(rows: list[dict], codecs, rates, path: str, pictures: int) -> None:
    """Mean PSNR against mean real bpp, one line per codec, a point per target rate; a hollow
    marker where some picture's file is over the target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=120)
    for codec_name in codecs:
        points = []
        for target in rates:
            picked = [row for row in rows if row["codec"] == codec_name and row["target_bpp"] == target]
            if picked:
                points.append((np.mean([r["bpp"] for r in picked]), np.mean([r["psnr_db"] for r in picked]),
                               any(r["over"] for r in picked)))
        if not points:
            continue
        (line,) = axes.plot([x for x, _, _ in points], [y for _, y, _ in points], "o-", label=codec_name)
        over = [(x, y) for x, y, is_over in points if is_over]
        if over:
            axes.plot(*zip(*over), "o", color=line.get_color(), markerfacecolor="white")
    axes.set_xscale("log")
    axes.set_xlim(0.1, 1.2)
    axes.set_xticks(RATES, [f"{rate:g}" for rate in RATES])
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("bits per pixel (whole file)")
    axes.set_ylabel("PSNR in RGB (dB), mean over pictures")
    axes.set_title(f"Rate and distortion, {pictures} photograph{'s' if pictures != 1 else ''} "
                   "(hollow: some file over the target)", fontsize=10)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    atomic_write(path, lambda file: file.write(buffer.getvalue()))


def libraries() -> str:
    return ", ".join(f"{label} {features.version(name)}" for label, name in
                     (("libjpeg", "jpg"), ("libwebp", "webp"), ("libavif", "avif")))


def header(args, pictures) -> list[str]:
    return [f"# Rate and distortion ({datetime.date.today()})", "",
            f"{machine()}; Pillow {PIL.__version__} ({libraries()}).",
            f"Pictures: {', '.join(f'{name} {p.shape[1]}x{p.shape[0]}' for name, p in pictures)}.",
            "PSNR in RGB per picture, then the mean of those PSNRs (the Kodak convention); rates in bits per "
            "pixel of the whole file. Pillow: " + "; ".join(f"{name} {options}" for name, options in
                                                             PILLOW_OPTIONS.items()) + "; "
            f"ironlearn: {args.seconds:g} s to encode.", ""]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", nargs="+", choices=NAMES, metavar="NAME",
                        help=f"pictures to code (default all: {', '.join(NAMES)})")
    parser.add_argument("--rates", nargs="+", type=float, default=list(RATES), metavar="BPP")
    parser.add_argument("--codecs", nargs="+", choices=CODECS, default=list(CODECS))
    parser.add_argument("--seconds", type=float, default=30.0, help="ironlearn's encode budget per picture and rate")
    parser.add_argument("--out", default=os.path.join("runs", "compression"), help="folder for results.md and .json")
    parser.add_argument("--plot", default=os.path.join("docs", "images", "compression-rd.png"))
    parser.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "ironlearn-sporco"),
                        help="where the sporco wheel is, or is downloaded to")
    args = parser.parse_args()
    AvifImagePlugin.DEFAULT_MAX_THREADS = 1  # decode on one core too, as every other codec does

    os.makedirs(args.folder, exist_ok=True)
    pictures = photographs(args.images, args.folder)
    rates = sorted(args.rates)
    rows = run(pictures, args.codecs, rates, args.seconds)
    lines = header(args, pictures) + ["## Per target rate", ""] + summary(rows, args.codecs, rates)
    lines += ["## Per picture", ""] + per_picture(rows)
    text = "\n".join(lines) + "\n"
    print("\n" + text)

    os.makedirs(args.out, exist_ok=True)
    atomic_write(os.path.join(args.out, "results.md"), lambda file: file.write(text.encode()))
    record = {"machine": machine(), "pillow": f"{PIL.__version__} ({libraries()})", "pillow_options": PILLOW_OPTIONS,
              "ironlearn_seconds": args.seconds, "rows": rows}
    atomic_write(os.path.join(args.out, "results.json"),
                 lambda file: file.write(json.dumps(record, indent=1).encode()))
    plot(rows, args.codecs, rates, args.plot, len(pictures))
    print(f"wrote {os.path.join(args.out, 'results.md')}, results.json and {args.plot}")


if __name__ == "__main__":
    main()
