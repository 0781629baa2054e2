"""``compare``'s report: one self-contained HTML page (plots and pictures inlined as PNG data)
with quality against parameters and against seconds, a curve a model, the redraws at 2x side by
side with the picture and bicubic upscaling, and the whole table."""

from __future__ import annotations

import base64
import html
import io
from collections import defaultdict

import numpy as np
from PIL import Image

from ..version import __version__

#: The page's title, which also marks a report as compare's (it replaces only its own).
TITLE = "<title>ironlearn compare</title>"
#: The side of the square cut from the middle of each 2x redraw, and how many times it is shown enlarged.
CROP, ZOOM = 96, 2
#: The columns the report's table shows, and how.
SHOWN = (("picture", "{}"), ("model", "{}"), ("parameters", "{:,}"), ("steps", "{:,}"), ("seconds", "{:.1f}"),
         ("ms_per_step", "{:.2f}"), ("psnr_db", "{:.2f}"), ("ssim", "{:.4f}"), ("redraw_psnr_db", "{:.2f}"),
         ("bicubic_psnr_db", "{:.2f}"), ("status", "{}"))


def report(results: list[dict], redraws: dict, comparison) -> str:
    """The page for ``results`` (``compare``'s rows) and ``redraws`` (``{(picture, model, params):
    (truth, bicubic, redraw) or None}``)."""
    done = [r for r in results if r["status"] == "done"]
    budget = "steps" if comparison.steps else "seconds"
    parts = [f"<h1>ironlearn compare</h1><p>{len({r['picture'] for r in results})} pictures at "
             f"{comparison.size} px, models {', '.join(comparison.models)}, budgets "
             f"{', '.join(f'{n:,}' for n in comparison.params)} parameters, "
             f"{comparison.steps or comparison.time_budget:g} {budget} a fit, seed {comparison.seed}; "
             f"ironlearn {html.escape(__version__)}, NumPy {html.escape(np.__version__)}.</p>"]
    if done:
        parts.append("<h2>Quality against parameters and against time</h2>" + _image(_plots(done), "the curves"))
    parts.append(_side_by_side(redraws, comparison))
    parts.append(_table(results))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>" + TITLE + "<style>"
            "body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}figure{display:inline-block;margin:4px}"
            "figcaption{font-size:small;text-align:center}img{image-rendering:pixelated}</style></head><body>"
            + "".join(parts) + "</body></html>")


def _plots(done: list[dict]) -> bytes:
    """PSNR and SSIM against parameters, and PSNR against seconds: each model's mean over the
    pictures at each budget, as a PNG."""
    from matplotlib.figure import Figure

    curves = defaultdict(lambda: defaultdict(list))
    for row in done:
        curves[row["model"]][row["params_asked"]].append(row)
    figure = Figure(figsize=(13, 3.8), dpi=90)
    figure.subplots_adjust(left=0.05, right=0.99, bottom=0.16, top=0.9, wspace=0.25)
    by_params, by_ssim, by_seconds = figure.subplots(1, 3)
    for model, budgets in curves.items():
        points = sorted(budgets.items())
        mean = {key: [np.mean([r[key] for r in rows if r[key] is not None] or [np.nan]) for _, rows in points]
                for key in ("parameters", "psnr_db", "ssim", "seconds")}
        by_params.semilogx(mean["parameters"], mean["psnr_db"], "o-", label=model)
        by_ssim.semilogx(mean["parameters"], mean["ssim"], "o-", label=model)
        by_seconds.plot(mean["seconds"], mean["psnr_db"], "o-", label=model)
    by_params.set(xlabel="parameters", ylabel="PSNR (dB)", title="PSNR against parameters")
    by_ssim.set(xlabel="parameters", ylabel="SSIM", title="SSIM against parameters")
    by_seconds.set(xlabel="seconds of training", ylabel="PSNR (dB)", title="PSNR against time")
    for ax in (by_params, by_ssim, by_seconds):
        ax.grid(True, alpha=0.3)
    by_params.legend(fontsize="small")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _side_by_side(redraws: dict, comparison) -> str:
    """Each picture's middle at 2x: the picture itself, bicubic upscaling, and each model's
    redraw at the largest budget that has one."""
    largest = max(comparison.params)
    pictures = sorted({picture for picture, _, _ in redraws})
    rows = []
    for picture in pictures:
        found = {model: redraws.get((picture, model, largest)) for model in comparison.models}
        drawn = [(model, r) for model, r in found.items() if r is not None]
        if not drawn:
            continue
        truth, bicubic, _ = drawn[0][1]
        cells = [_figure(truth, "the picture at 2x"), _figure(bicubic, "bicubic")]
        cells += [_figure(redraw, f"{model}") for model, (_, _, redraw) in drawn]
        rows.append(f"<h3>{html.escape(picture)}</h3>" + "".join(cells))
    if not rows:
        return ""
    return (f"<h2>Redrawn at 2x, the middle {CROP} px shown {ZOOM}x ({largest:,} parameters)</h2>"
            + "".join(rows))


def _figure(pixels: np.ndarray, caption: str) -> str:
    height, width = pixels.shape[:2]
    top, left = max(0, (height - CROP) // 2), max(0, (width - CROP) // 2)
    crop = np.round(np.clip(pixels[top:top + CROP, left:left + CROP], 0, 1) * 255).astype(np.uint8)
    picture = Image.fromarray(crop[:, :, 0] if crop.shape[2] == 1 else crop)
    picture = picture.resize((picture.width * ZOOM, picture.height * ZOOM), Image.NEAREST)
    buffer = io.BytesIO()
    picture.save(buffer, format="png")
    return f"<figure>{_image(buffer.getvalue(), caption)}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _image(png: bytes, text: str) -> str:
    return f"<img alt='{html.escape(text)}' src='data:image/png;base64,{base64.b64encode(png).decode('ascii')}'>"


def _table(results: list[dict]) -> str:
    head = "".join(f"<th>{name}</th>" for name, _ in SHOWN)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(form.format(row[name])) if row[name] is not None else ''}</td>"
                                    for name, form in SHOWN) + "</tr>" for row in results)
    return f"<h2>Every fit</h2><table><tr>{head}</tr>{body}</table>"
