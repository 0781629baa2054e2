"""Benchmark (e): fits and 2x redraws over two sets, never one picture (min, median and max).

    python benchmarks/redraw_sets.py [--sets drawings drawings-original drawings-held-out photos mosaics
                                             mosaics-gray large] [--seconds-drawing 5]
                                     [--seconds-photo 10] [--seconds-mosaic 15 30] [--seconds-large 60]
                                     [--option log2_table_size=14 ...] [--crops DIR]

* **drawings**: five binary line drawings that no preset was tuned on, drawn here from shapes and
  text at 1600x1600 with anti-aliasing, downscaled to 200x200 and thresholded, as the original
  project's CSV was. Each is fitted with ``--mode binary``; its 2x redraw (400x400, thresholded) is
  scored by the share of pixels right against the same shapes drawn at 400x400 and thresholded
  alike, beside bicubic upscaling of the 200x200 picture.
* **drawings-original**: those five and four finer ones (:data:`FINE`), redrawn at the original
  project's sizes (474 and 1024 px) against the shapes drawn there, beside bicubic and Lanczos
  upscaling; the drawings' defaults (the ``spline`` filter and its share of the loss) were
  chosen on these nine. **drawings-held-out**: sixteen more (:func:`held_out`), chosen on none.
* **photos**: the four 768x512 photographs inside the ``sporco`` wheel (``pip download --no-deps
  sporco``; read from the wheel, never imported), fitted at half size (384x256, Lanczos, larger than
  one batch) in colour; the 2x redraw is scored by PSNR against the 768x512 original, beside
  bicubic upscaling.
* **mosaics**: the four 1024x1024 quarters of make_photo.py's 2048x2048 picture (scikit-image's
  photographs tiled at their own scale: every pixel a real one), each fitted at 512x512 (Lanczos)
  for each of ``--seconds-mosaic`` and redrawn at 2x against the quarter (needs scikit-image).
  **mosaics-gray**: the same in gray.
* **large**: make_photo.py's pictures at 4096x4096 and 8192x6144 (50 MP), each fitted at half
  size (2048x2048 and the 12.6-megapixel 4096x3072, Lanczos) for ``--seconds-large`` and redrawn at
  2x against the original, beside bicubic upscaling.

Fits run in this process through ``ironlearn.fit`` with a time budget. ``--crops DIR`` saves 4x
crops of each photo's redraw, to look at.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from common import sporco_photos

import ironlearn
from ironlearn.image import psnr

DRAWN = 1600  # the side the drawings are drawn at, before downscaling
#: The drawings of the "fine" set: thin lines, hatching and text-like strokes, after the original
#: project's own picture, a line drawing it redrew at 474 and 1024 px.
FINE = (5, 6, 7, 8)
#: The sizes the original project redrew its 200x200 drawing at.
ORIGINAL_SIZES = (474, 1024)


def drawing(number: int) -> Image.Image:
    """Line drawing ``number`` (0-4, and the fine ones :data:`FINE`) at DRAWN px a side: black
    strokes on white."""
    if number in FINE:
        return fine_drawing(number)
    image = Image.new("L", (DRAWN, DRAWN), 255)
    pen = ImageDraw.Draw(image)
    rng = np.random.default_rng(number)
    width = int(rng.integers(10, 28))
    if number == 0:  # concentric circles
        for r in range(120, 760, 110):
            pen.ellipse([800 - r, 800 - r, 800 + r, 800 + r], outline=0, width=width)
    elif number == 1:  # a star and a frame
        angles = np.linspace(0, 4 * np.pi, 6)[:-1] - np.pi / 2
        points = [(800 + 650 * np.cos(a), 820 + 650 * np.sin(a)) for a in angles]
        pen.line(points + points[:1], fill=0, width=width, joint="curve")
        pen.rectangle([60, 60, 1540, 1540], outline=0, width=width)
    elif number == 2:  # text
        font = ImageFont.load_default(size=330)
        pen.text((90, 250), "Iron", font=font, fill=0)
        pen.text((90, 850), "Learn", font=font, fill=0)
    elif number == 3:  # random strokes
        for _ in range(14):
            x0, y0, x1, y1 = rng.uniform(80, 1520, 4)
            pen.line([(x0, y0), (x1, y1)], fill=0, width=width)
    else:  # a spiral and a few polygons
        t = np.linspace(0, 6 * np.pi, 400)
        pen.line([(800 + 40 * a * np.cos(a), 800 + 40 * a * np.sin(a)) for a in t], fill=0, width=width)
        for k in range(3):
            cx, cy = rng.uniform(300, 1300, 2)
            pen.regular_polygon((cx, cy, 160), 3 + k, outline=0, width=width)
    return image


def fine_drawing(number: int) -> Image.Image:
    """A drawing of thin strokes (4 to 8 px at DRAWN, so 0.5 to 1 px at 200): a hatched cube,
    scribbled handwriting, a leaf with veins, a cross-hatched disc."""
    image = Image.new("L", (DRAWN, DRAWN), 255)
    pen = ImageDraw.Draw(image)
    rng = np.random.default_rng(number)
    width = int(rng.integers(4, 9))
    if number == 5:  # a cube, its faces hatched
        front = [(300, 600), (1000, 600), (1000, 1300), (300, 1300)]
        back = [(x + 300, y - 300) for x, y in front]
        for a, b in zip(front + front, back + front[1:] + front[:1]):
            pen.line([a, b], fill=0, width=width)
        pen.line(back + back[:1], fill=0, width=width)
        for k in range(1, 14):
            pen.line([(300 + 50 * k, 600), (300 + 50 * k + 300, 300)], fill=0, width=max(2, width // 2))
    elif number == 6:  # handwriting: lines of loops
        for row in range(6):
            t = np.linspace(0, 22 * np.pi, 700)
            x = 120 + t / t[-1] * 1360
            y = 250 + 220 * row + 45 * np.sin(t) + 25 * np.sin(2.7 * t)
            pen.line(list(zip(x + 30 * np.cos(t), y)), fill=0, width=width)
    elif number == 7:  # a leaf and its veins
        t = np.linspace(0, np.pi, 200)
        outline = [(800 + 600 * np.cos(a) * 0.35 * np.sin(a) * 3, 150 + 1300 * a / np.pi) for a in t]
        pen.line(outline + [(800 - (x - 800), y) for x, y in outline[::-1]], fill=0, width=width)
        pen.line([(800, 150), (800, 1450)], fill=0, width=width)
        for k in range(1, 12):
            y = 150 + 110 * k
            reach = 600 * 0.35 * 3 * np.sin(np.pi * k / 12) * np.cos(np.pi * k / 12) * 0.9
            pen.line([(800, y), (800 + abs(reach), y - 80)], fill=0, width=max(2, width // 2))
            pen.line([(800, y), (800 - abs(reach), y - 80)], fill=0, width=max(2, width // 2))
    else:  # a disc, cross-hatched
        mask = Image.new("L", (DRAWN, DRAWN), 0)
        ImageDraw.Draw(mask).ellipse([250, 250, 1350, 1350], fill=255)
        hatch = Image.new("L", (DRAWN, DRAWN), 255)
        lines = ImageDraw.Draw(hatch)
        for k in range(-40, 40):
            lines.line([(40 * k, 0), (40 * k + DRAWN, DRAWN)], fill=0, width=width)
            lines.line([(40 * k + DRAWN, 0), (40 * k, DRAWN)], fill=0, width=width)
        image.paste(hatch, mask=mask)
        pen.ellipse([250, 250, 1350, 1350], outline=0, width=width)
    return image


WORDS = ("Zoom", "pixel", "network", "sketch", "lines")


def held_out(seed: int) -> Image.Image:
    """Drawing ``seed`` of the held-out set (no default was tuned on it): random strokes, ellipses, words or a spiral with
    hatching, thick (10-28 px at DRAWN) on even seeds and thin (4-8 px) on odd ones."""
    image = Image.new("L", (DRAWN, DRAWN), 255)
    pen = ImageDraw.Draw(image)
    rng = np.random.default_rng(1000 + seed)
    width = int(rng.integers(4, 9)) if seed % 2 else int(rng.integers(10, 28))
    kind = seed % 4
    if kind == 0:
        for _ in range(18):
            x0, y0, x1, y1 = rng.uniform(80, 1520, 4)
            pen.line([(x0, y0), (x1, y1)], fill=0, width=width)
    elif kind == 1:
        for _ in range(9):
            cx, cy, r = *rng.uniform(300, 1300, 2), rng.uniform(60, 400)
            pen.ellipse([cx - r, cy - r * rng.uniform(0.5, 1), cx + r, cy + r], outline=0, width=width)
    elif kind == 2:
        font = ImageFont.load_default(size=int(rng.integers(160, 300)))
        for row in range(3):
            pen.text((80, 150 + 480 * row), WORDS[(seed + row) % len(WORDS)], font=font, fill=0)
    else:
        t, a = np.linspace(0, rng.uniform(4, 8) * np.pi, 500), rng.uniform(25, 45)
        pen.line([(800 + a * s * np.cos(s), 800 + a * s * np.sin(s)) for s in t], fill=0, width=width)
        for k in range(int(rng.integers(8, 20))):
            y = 100 + 70 * k
            pen.line([(100, y), (500, y + rng.uniform(-50, 50))], fill=0, width=max(2, width // 2))
    return image


def binary(image: Image.Image, side: int) -> np.ndarray:
    """``image`` downscaled to ``side`` (Lanczos) and thresholded: True where white."""
    return np.asarray(image.resize((side, side), Image.LANCZOS)) >= 128


def as_unit(array) -> np.ndarray:
    array = np.asarray(array, np.float32)
    return array / 255 if array.max() > 1.5 else array


def drawings(seconds: float, options: dict, folder: str) -> list[dict]:
    rows = []
    for number in range(5):
        big = drawing(number)
        small, truth = binary(big, 200), binary(big, 400)
        path = os.path.join(folder, f"drawing{number}.png")
        Image.fromarray(small).save(path)
        run = ironlearn.fit(path, os.path.join(folder, f"run-drawing{number}"), mode="binary", time_budget=seconds,
                            force=True, **options)
        redraw = as_unit(ironlearn.render(run.model, size=(400, 400)))[..., 0] >= 0.5
        bicubic = as_unit(Image.fromarray(small.astype(np.uint8) * 255).resize((400, 400), Image.BICUBIC)) >= 0.5
        rows.append({"picture": f"drawing{number}", "fit_db": run.metrics["psnr_db"], "steps": run.metrics["steps"],
                     "x2_right": (redraw == truth).mean(), "bicubic_right": (bicubic == truth).mean()})
    return rows


def drawings_at_original_sizes(pictures, seconds: float, options: dict, folder: str) -> list[dict]:
    """Each of ``pictures`` (``(name, drawing at DRAWN px)``) fitted at 200x200 and redrawn at
    :data:`ORIGINAL_SIZES`, scored by the share of pixels right against the drawing at that size,
    beside bicubic and Lanczos upscaling of the 200x200 picture."""
    rows = []
    for name, big in pictures:
        small = binary(big, 200)
        path = os.path.join(folder, f"{name}.png")
        Image.fromarray(small).save(path)
        run = ironlearn.fit(path, os.path.join(folder, f"run-{name}"), mode="binary", time_budget=seconds,
                            force=True, **options)
        row = {"picture": name, "steps": run.metrics["steps"]}
        for side in ORIGINAL_SIZES:
            truth = binary(big, side)
            redraw = as_unit(ironlearn.render(run.model, size=(side, side)))[..., 0] >= 0.5
            row[f"{side} right"] = (redraw == truth).mean()
            for name, method in (("bicubic", Image.BICUBIC), ("lanczos", Image.LANCZOS)):
                upscaled = as_unit(Image.fromarray(small.astype(np.uint8) * 255).resize((side, side), method)) >= 0.5
                row[f"{side} {name}"] = (upscaled == truth).mean()
        rows.append(row)
    return rows


def redraw_row(picture: str, big: Image.Image, small: Image.Image, name: str, seconds: float, options: dict,
               folder: str):
    """Fit ``small`` (saved as ``name``.png in ``folder``), redraw it at ``big``'s size and score the redraw
    against ``big``, beside bicubic upscaling of ``small``: ``(row, run)``."""
    path = os.path.join(folder, f"{name}.png")
    small.save(path)
    run = ironlearn.fit(path, os.path.join(folder, f"run-{name}"), time_budget=seconds, force=True, **options)
    truth = as_unit(big)
    redraw = as_unit(ironlearn.render(run.model, size=big.size)).reshape(truth.shape)
    row = {"picture": picture, "fit_db": run.metrics["psnr_db"], "steps": run.metrics["steps"],
           "x2_db": psnr(redraw, truth), "bicubic_db": psnr(as_unit(small.resize(big.size, Image.BICUBIC)), truth)}
    return row, run


def photos(seconds: float, options: dict, folder: str, crops: str | None) -> list[dict]:
    rows = []
    for name, pixels in sporco_photos(folder):
        big = Image.fromarray(pixels)
        small = big.resize((big.width // 2, big.height // 2), Image.LANCZOS)
        row, run = redraw_row(name, big, small, f"{name}-half", seconds, options, folder)
        rows.append(row)
        if crops:
            x4 = as_unit(ironlearn.render(run.model, size=(4 * small.width, 4 * small.height)))
            crop = (np.clip(x4[400:912, 600:1112], 0, 1) * 255).astype(np.uint8)
            Image.fromarray(crop).save(os.path.join(crops, f"{name}-x4-crop.png"))
    return rows


def mosaics(seconds: float, options: dict, folder: str, mode: str = "RGB") -> list[dict]:
    from make_photo import tiled

    whole = tiled(2048, 2048)
    rows = []
    for number, (top, left) in enumerate(((0, 0), (0, 1024), (1024, 0), (1024, 1024))):
        big = Image.fromarray(whole[top:top + 1024, left:left + 1024]).convert(mode)
        rows.append(redraw_row(f"quarter{number}", big, big.resize((512, 512), Image.LANCZOS),
                               f"mosaic{number}-{mode}", seconds, options, folder)[0])
    return rows


def large(seconds: float, options: dict, folder: str) -> list[dict]:
    from make_photo import tiled

    rows = []
    for width, height in ((4096, 4096), (8192, 6144)):
        big = Image.fromarray(tiled(width, height))
        small = big.resize((width // 2, height // 2), Image.LANCZOS)
        rows.append(redraw_row(f"{small.width}x{small.height}", big, small, f"large-{small.width}x{small.height}",
                               seconds, options, folder)[0])
    return rows


def report(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    names = [k for k in rows[0] if k != "picture"]
    print("| picture | " + " | ".join(names) + " |")
    print("| --- " * (len(names) + 1) + "|")
    for row in rows:
        print(f"| {row['picture']} | " + " | ".join(_cell(row[k]) for k in names) + " |")
    for label, pick in (("min", np.min), ("median", np.median), ("max", np.max)):
        print(f"| **{label}** | " + " | ".join(_cell(_like(rows[0][k], pick([r[k] for r in rows]))) for k in names)
              + " |")


def _like(example, value):
    """A summary of counts as a count (a median of two counts rounds), of scores as a score."""
    return round(float(value)) if isinstance(example, int) else float(value)


def _cell(value) -> str:
    if isinstance(value, float) and value < 1.0:
        return f"{value:.2%}"
    return f"{value:.2f}" if isinstance(value, float) else f"{value:,}"


def _option(text: str):
    key, _, value = text.partition("=")
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+",
                        choices=("drawings", "drawings-original", "drawings-held-out", "photos", "mosaics", "mosaics-gray", "large"),
                        default=["drawings", "photos"])
    parser.add_argument("--seconds-drawing", type=float, default=5.0)
    parser.add_argument("--seconds-photo", type=float, default=10.0)
    parser.add_argument("--seconds-mosaic", type=float, nargs="+", default=[15.0, 30.0])
    parser.add_argument("--seconds-large", type=float, default=60.0)
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a fit option for every picture, e.g. log2_table_size=14")
    parser.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "ironlearn-redraw-sets"),
                        help="where the pictures, runs and the sporco wheel go")
    parser.add_argument("--crops", metavar="DIR", help="save a 4x crop of each photo's redraw here")
    args = parser.parse_args()
    options = dict(_option(text) for text in args.option)
    os.makedirs(args.folder, exist_ok=True)
    if args.crops:
        os.makedirs(args.crops, exist_ok=True)
    print(f"options: {options or 'defaults'}")
    if "drawings" in args.sets:
        report(f"drawings, 200x200 binary, {args.seconds_drawing:g} s; 2x against the shapes drawn at 400x400",
               drawings(args.seconds_drawing, options, args.folder))
    for name in ("drawings-original", "drawings-held-out"):
        if name in args.sets:
            pictures = [(f"drawing{n}", drawing(n)) for n in (*range(5), *FINE)] if name == "drawings-original" \
                else [(f"held{n}", held_out(n)) for n in range(16)]
            rows = drawings_at_original_sizes(pictures, args.seconds_drawing, options, args.folder)
            report(f"{name}, 200x200 binary, {args.seconds_drawing:g} s; redrawn at "
                   f"{' and '.join(map(str, ORIGINAL_SIZES))} against the shapes drawn at that size", rows)
            pairs = [(r[f"{side} right"], r[f"{side} bicubic"], r[f"{side} lanczos"]) for r in rows for side in ORIGINAL_SIZES]
            print(f"(drawing, size) pairs above both bicubic and Lanczos: {sum(f > max(b, l) for f, b, l in pairs)} "
                  f"of {len(pairs)}; under bicubic: {sum(f < b for f, b, _ in pairs)}; under Lanczos: "
                  f"{sum(f < l for f, _, l in pairs)}")
    if "photos" in args.sets:
        report(f"photos at 384x256, {args.seconds_photo:g} s; 2x against the 768x512 originals",
               photos(args.seconds_photo, options, args.folder, args.crops))
    for seconds in args.seconds_mosaic if "mosaics" in args.sets else []:
        report(f"mosaics at 512x512, {seconds:g} s; 2x against the 1024x1024 originals",
               mosaics(seconds, options, args.folder))
    for seconds in args.seconds_mosaic if "mosaics-gray" in args.sets else []:
        report(f"mosaics in gray at 512x512, {seconds:g} s; 2x against the 1024x1024 originals",
               mosaics(seconds, options, args.folder, mode="L"))
    if "large" in args.sets:
        report(f"large pictures at half size, {args.seconds_large:g} s; 2x against the originals",
               large(args.seconds_large, options, args.folder))


if __name__ == "__main__":
    main()
