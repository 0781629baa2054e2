"""Benchmark: rate and distortion on photographs, ironlearn's codec against JPEG, WebP, JPEG XL and AVIF.

Everything (the tables, the JSON of every row and the plot) comes from one command, run from the
repository root:

    python benchmarks/compression.py

    options: [--images kodim23 ...] [--rates 0.125 0.25 0.5 1.0] [--codecs jpeg webp jpegxl avif ironlearn]
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
* **JPEG XL**, through imagecodecs (``pip install imagecodecs``, in the ``bench`` extra), in
  memory: ``jpegxl_encode(pixels, level=quality, effort=7, numthreads=1)`` (effort 7: libjxl's
  default; ``level``: imagecodecs' quality, 0-100), the bare codestream, no container; the same
  bisection on the quality. Without imagecodecs it is skipped with one line.
* **ironlearn** (``from ironlearn import codec``): ``codec.compress_array(pixels, bpp=target,
  seconds=--seconds)`` once, decoded with ``codec.decode``; its rate is its file's, marked "over"
  too where it is over the target. ``mlp_steps`` in the JSON: the MLP's training steps when the
  file kept one, 0 when the pyramid alone was better for its bits. **The page**: each file is
  written to a temporary folder and ``ironlearn.viewer.write_viewer`` (what ``ironlearn view
  FILE.ilc`` runs) writes its page beside it; the page's bytes, and their ratio to the file's,
  are columns of the per-picture rows and of a table per rate.
* **Quality**: PSNR in RGB, 10 log10(255^2 / MSE) over the three channels of each picture, and the
  mean of those per-picture PSNRs over the pictures (the Kodak convention, not the PSNR of a mean
  MSE). Times: the median of three runs of the final encode (one for ironlearn, whose encode is
  its time budget) and of three decodes.

Written under ``--out``: ``results.md`` (a table per rate with the per-picture PSNRs' and rates'
mean, min, median and max per codec; ironlearn's mean against each other codec's, with how many
pictures it is at or above; ironlearn's pages; then one row per picture, codec and rate) and
``results.json`` (every row); the plot of mean PSNR against mean real rate goes to ``--plot``. A progress line is printed as each picture, codec and rate finishes. The whole run
takes about 20 minutes on 2 cores, most of it ironlearn's encodes (8 pictures x 4 rates x 30 s).
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
JPEGXL_OPTIONS = {"effort": 7, "numthreads": 1}
CODECS = ("jpeg", "webp", "jpegxl", "avif", "ironlearn")
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


def decode_pillow(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


class QualityCodec:
    """An encoder at an integer quality (0-100) for one picture, files kept per quality so that
    every rate's bisection on the picture reuses the encodes of the others. A subclass gives
    ``encode(quality) -> bytes`` and ``decode(data) -> uint8 (H, W, 3)``."""

    def __init__(self, name: str, pixels: np.ndarray):
        self.name, self.pixels = name, pixels
        self.files: dict[int, bytes] = {}

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
        return {"quality": quality, **measure(data, self.pixels, target, encode_s, self.decode)}


class PillowCodec(QualityCodec):
    """JPEG, WebP or AVIF through Pillow, with :data:`PILLOW_OPTIONS`."""

    def __init__(self, name: str, pixels: np.ndarray):
        super().__init__(name, pixels)
        self.image = Image.fromarray(pixels)

    def encode(self, quality: int) -> bytes:
        buffer = io.BytesIO()
        self.image.save(buffer, quality=quality, **PILLOW_OPTIONS[self.name])
        return buffer.getvalue()

    decode = staticmethod(decode_pillow)


class JpegXLCodec(QualityCodec):
    """JPEG XL through imagecodecs, with :data:`JPEGXL_OPTIONS`."""

    def __init__(self, name: str, pixels: np.ndarray):
        import imagecodecs

        super().__init__(name, pixels)
        self.imagecodecs = imagecodecs

    def encode(self, quality: int) -> bytes:
        return bytes(self.imagecodecs.jpegxl_encode(self.pixels, level=quality, **JPEGXL_OPTIONS))

    def decode(self, data: bytes) -> np.ndarray:
        return self.imagecodecs.jpegxl_decode(data, numthreads=JPEGXL_OPTIONS["numthreads"])


QUALITY_CODECS = {**dict.fromkeys(PILLOW_OPTIONS, PillowCodec), "jpegxl": JpegXLCodec}


def measure(data: bytes, pixels: np.ndarray, target: float, encode_s: float, decode) -> dict:
    """The row's rate, PSNR and times for the file ``data`` coding ``pixels``."""
    decoded, decode_s = median_seconds(lambda: decode(data))
    if decoded.shape != pixels.shape or decoded.dtype != np.uint8:
        raise ValueError(f"decoded {decoded.dtype} {decoded.shape}, expected uint8 {pixels.shape}")
    rate = bpp(data, pixels)
    return {"bytes": len(data), "bpp": rate, "over": rate > target, "psnr_db": rgb_psnr(decoded, pixels),
            "encode_s": encode_s, "decode_s": decode_s}


def page_bytes(data: bytes) -> int:
    """Bytes of the page that ``ironlearn view FILE.ilc`` writes for the file ``data``."""
    from ironlearn.viewer import write_viewer

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "picture.ilc")
        with open(path, "wb") as file:
            file.write(data)
        return os.path.getsize(write_viewer(path, os.path.join(folder, "picture.html")))


def ironlearn_row(codec, pixels: np.ndarray, target: float, seconds: float) -> dict:
    start = time.perf_counter()
    result = codec.compress_array(pixels, bpp=target, seconds=seconds)
    encode_s = time.perf_counter() - start
    row = {"quality": None, "mlp_steps": result.steps, **measure(result.data, pixels, target, encode_s, codec.decode)}
    page = page_bytes(result.data)
    return {**row, "page_bytes": page, "page_ratio": page / len(result.data)}


def ironlearn_codec():
    """(ironlearn's codec module, "") when it has ``compress_array`` and ``decode``, else (None, why not);
    an error raised inside the module still raises."""
    if importlib.util.find_spec("ironlearn.codec") is None:
        return None, "`from ironlearn import codec` finds no codec module"
    from ironlearn import codec

    missing = [name for name in ("compress_array", "decode") if not callable(getattr(codec, name, None))]
    return (None, f"ironlearn.codec has no {' or '.join(missing)} yet") if missing else (codec, "")


def jpegxl_missing() -> str:
    """Why JPEG XL cannot run here, or "" when it can."""
    if importlib.util.find_spec("imagecodecs") is None:
        return "imagecodecs is not installed (pip install imagecodecs, or the bench extra)"
    import imagecodecs

    return "" if imagecodecs.JPEGXL.available else f"imagecodecs {imagecodecs.__version__} was built without JPEG XL"


def runnable(codecs) -> tuple[list[str], object]:
    """(the codecs of ``codecs`` that can run here, ironlearn's codec module or None), after one
    line for each that cannot."""
    codec, why_not = ironlearn_codec() if "ironlearn" in codecs else (None, "")
    missing = {"ironlearn": why_not, "jpegxl": jpegxl_missing() if "jpegxl" in codecs else ""}
    for name, why in missing.items():
        if why:
            print(f"{name}: skipped, {why}", flush=True)
    return [name for name in codecs if not missing.get(name)], codec


def run(pictures, codecs, rates, seconds: float, codec=None) -> list[dict]:
    """Every row: each picture, codec (all runnable; ``codec`` is ironlearn's module) and rate."""
    rows = []
    for name, pixels in pictures:
        for codec_name in codecs:
            quality = QUALITY_CODECS[codec_name](codec_name, pixels) if codec_name in QUALITY_CODECS else None
            for target in rates:
                row = quality.row(target) if quality else ironlearn_row(codec, pixels, target, seconds)
                row = {"image": name, "width": pixels.shape[1], "height": pixels.shape[0], "codec": codec_name,
                       "target_bpp": target, **row}
                rows.append(row)
                print(f"{name} {codec_name} {target:g} bpp: {_quality(row)}, {row['bpp']:.4f} bpp"
                      f"{' (over)' if row['over'] else ''}, {row['psnr_db']:.2f} dB, encode {row['encode_s']:.3f} s,"
                      f" decode {row['decode_s']:.4f} s{_page(row)}", flush=True)
    return rows


def _page(row: dict) -> str:
    return f", page {row['page_bytes']:,} bytes ({row['page_ratio']:.1f}x the file)" if "page_bytes" in row else ""


def _quality(row: dict) -> str:
    """What made the file: the Pillow quality, or whether ironlearn's file kept its MLP."""
    if row["quality"] is not None:
        return f"quality {row['quality']}"
    return f"pyramid + MLP ({row['mlp_steps']} steps)" if row.get("mlp_steps") else "pyramid"


def _spread(values, spec: str) -> list[str]:
    """The mean, min, median and max of ``values``, each formatted by ``spec`` (".2f")."""
    return [format(float(value), spec) for value in
            (np.mean(values), min(values), statistics.median(values), max(values))]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "| --- " * len(head) + "|"] + ["| " + " | ".join(row) + " |" for row in rows]


def _picked(rows: list[dict], codec_name: str, target: float) -> list[dict]:
    return [row for row in rows if row["codec"] == codec_name and row["target_bpp"] == target]


def summary(rows: list[dict], codecs, rates) -> list[str]:
    """A Markdown table per target rate: the per-picture PSNRs' and rates' mean, min, median and
    max per codec, the files over the target and the median times."""
    lines = []
    for target in rates:
        table = []
        for codec_name in codecs:
            picked = _picked(rows, codec_name, target)
            if picked:
                table.append([codec_name, str(len(picked)), *_spread([r["psnr_db"] for r in picked], ".2f"),
                              *_spread([r["bpp"] for r in picked], ".4f"), str(sum(r["over"] for r in picked)),
                              f"{statistics.median(r['encode_s'] for r in picked):.3f}",
                              f"{statistics.median(r['decode_s'] for r in picked):.4f}"])
        lines += [f"### {target:g} bpp", ""] + _table(
            ["codec", "pictures", "mean PSNR (dB)", "min", "median", "max", "mean bpp", "min", "median", "max",
             "over", "encode (s, median)", "decode (s, median)"], table) + [""]
    return lines


def against(rows: list[dict], codecs, rates) -> list[str]:
    """ironlearn's mean PSNR against each other codec's, per rate: the difference of the means,
    and on how many pictures ironlearn's PSNR is at or above the other's."""
    others = [name for name in codecs if name != "ironlearn"]
    table = []
    for target in rates:
        ours = {row["image"]: row["psnr_db"] for row in _picked(rows, "ironlearn", target)}
        if not ours:
            continue
        cells = [f"{target:g} bpp", f"{np.mean(list(ours.values())):.2f} dB"]
        for name in others:
            theirs = {row["image"]: row["psnr_db"] for row in _picked(rows, name, target) if row["image"] in ours}
            if len(theirs) != len(ours):
                cells.append("-")
                continue
            mean = np.mean(list(theirs.values()))
            at_or_above = sum(ours[image] >= db for image, db in theirs.items())
            cells.append(f"{mean:.2f} ({np.mean(list(ours.values())) - mean:+.2f}; {at_or_above} of {len(ours)})")
        table.append(cells)
    if not table or not others:
        return []
    return _table(["rate", "ironlearn", *others], table) + [""]


def pages(rows: list[dict], rates) -> list[str]:
    """Per target rate, the sizes of ironlearn's files and of their pages (``ironlearn view``):
    mean, min, median and max of the page's bytes and of its ratio to the file."""
    table = []
    for target in rates:
        picked = [row for row in _picked(rows, "ironlearn", target) if "page_bytes" in row]
        if picked:
            table.append([f"{target:g} bpp", str(len(picked)), f"{np.mean([r['bytes'] for r in picked]):,.0f}",
                          *_spread([r["page_bytes"] for r in picked], ",.0f"),
                          *_spread([r["page_ratio"] for r in picked], ".1f")])
    if not table:
        return []
    return _table(["rate", "files", "mean file bytes", "mean page bytes", "min", "median", "max",
                   "mean page / file", "min", "median", "max"], table) + [""]


def per_picture(rows: list[dict]) -> list[str]:
    table = []
    for row in rows:
        quality = row["quality"] if row["quality"] is not None else _quality(row)
        rate = f"{row['bpp']:.4f}" + (" **over**" if row["over"] else "")
        page = [f"{row['page_bytes']:,}", f"{row['page_ratio']:.1f}"] if "page_bytes" in row else ["-", "-"]
        table.append([row["image"], f"{row['width']}x{row['height']}", f"{row['target_bpp']:g}", row["codec"],
                      str(quality), f"{row['bytes']:,}", rate, f"{row['psnr_db']:.2f}", f"{row['encode_s']:.3f}",
                      f"{row['decode_s']:.4f}", *page])
    return _table(["picture", "size", "target bpp", "codec", "quality", "bytes", "bpp", "PSNR (dB)", "encode (s)",
                   "decode (s)", "page (bytes)", "page / file"], table)


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


def jpegxl_library() -> str:
    """imagecodecs' and libjxl's versions, or "" without imagecodecs."""
    if jpegxl_missing():
        return ""
    import imagecodecs

    return f"imagecodecs {imagecodecs.__version__} ({imagecodecs.jpegxl_version()})"


def header(args, pictures, codecs) -> list[str]:
    jpegxl = f"; {jpegxl_library()}" if "jpegxl" in codecs else ""
    options = [f"{name} {options}" for name, options in PILLOW_OPTIONS.items() if name in codecs]
    options += [f"jpegxl {JPEGXL_OPTIONS}"] if "jpegxl" in codecs else []
    return [f"# Rate and distortion ({datetime.date.today()})", "",
            f"{machine()}; Pillow {PIL.__version__} ({libraries()}){jpegxl}.",
            f"Pictures: {', '.join(f'{name} {p.shape[1]}x{p.shape[0]}' for name, p in pictures)}.",
            "PSNR in RGB per picture, then the mean of those PSNRs (the Kodak convention); rates in bits per "
            "pixel of the whole file. Options: " + "; ".join(options) + "; "
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
    codecs, codec = runnable(args.codecs)
    rows = run(pictures, codecs, rates, args.seconds, codec)
    lines = header(args, pictures, codecs) + ["## Per target rate", ""] + summary(rows, codecs, rates)
    comparison, page_table = against(rows, codecs, rates), pages(rows, rates)
    if comparison:
        lines += ["## ironlearn against the others", "",
                  "Mean PSNR (dB) at each target rate; in brackets, ironlearn's mean minus the codec's, and on how "
                  "many pictures ironlearn's PSNR is at or above it.", ""] + comparison
    if page_table:
        lines += ["## The page of each ironlearn file (ironlearn view)", ""] + page_table
    lines += ["## Per picture", ""] + per_picture(rows)
    text = "\n".join(lines) + "\n"
    print("\n" + text)

    os.makedirs(args.out, exist_ok=True)
    atomic_write(os.path.join(args.out, "results.md"), lambda file: file.write(text.encode()))
    record = {"machine": machine(), "pillow": f"{PIL.__version__} ({libraries()})", "pillow_options": PILLOW_OPTIONS,
              "jpegxl": jpegxl_library(), "jpegxl_options": JPEGXL_OPTIONS, "ironlearn_seconds": args.seconds,
              "rows": rows}
    atomic_write(os.path.join(args.out, "results.json"),
                 lambda file: file.write(json.dumps(record, indent=1).encode()))
    plot(rows, codecs, rates, args.plot, len(pictures))
    print(f"wrote {os.path.join(args.out, 'results.md')}, results.json and {args.plot}")


if __name__ == "__main__":
    main()
