"""``ironlearn info``: what a model or checkpoint holds."""

from __future__ import annotations

import json

from .. import drawable
from .common import add_model_argument
from .status import ExitCode


def add_parser(commands) -> None:
    info_p = commands.add_parser("info", help="describe a model, checkpoint or compressed file",
                                 description="Print a model's layers, parameters, steps, training time, the picture "
                                             "it was fitted on and its PSNR (or, with --json, all of its metadata); "
                                             "for a file of 'ironlearn compress', its picture, size and rate.")
    add_model_argument(info_p)
    info_p.add_argument("--json", action="store_true", help="print the metadata as JSON")
    info_p.set_defaults(func=cmd_info)


def _compressed_info(args, picture) -> int:
    """What a file of ``ironlearn compress`` holds, from its header alone: nothing is decoded,
    so the work stays in proportion to the file's size, whatever picture it declares."""
    data, header = picture.data, picture.header
    pixels = header.width * header.height
    shapes = header.grid_shapes
    latents_bytes, weights_bytes = (len(section) for section in header.sections)
    meta = {"format": "ironlearn compressed picture", "version": header.version,
            "size": [header.width, header.height], "mode": header.mode, "bytes": len(data),
            "bpp": 8 * len(data) / pixels, "latent_levels": [list(shape) for shape in shapes],
            "filtered_levels": header.filtered_levels, "mlp": bool(header.depth),
            "parameters": header.num_parameters,
            "section_bytes": {"latents": latents_bytes, "weights": weights_bytes}}
    if args.json:
        print(json.dumps(meta, indent=2))
        return ExitCode.OK
    filtered = header.filtered_levels
    print("\n".join([f"{args.model}", f"compressed picture: {header.width}x{header.height} {header.mode}, "
                     f"{len(data):,} bytes ({meta['bpp']:.4f} bpp)",
                     f"latent levels: {len(shapes)} of {header.channels} grid(s) each, "
                     f"{', '.join(f'{h}x{w}' for h, w in shapes)}",
                     "synthesis: the levels" + (f" (filtered: {', '.join(map(str, filtered))})" if filtered else "")
                     + " summed" + (f" and an MLP's correction ({header.depth} layers of {header.hidden})"
                                    if header.depth else ""),
                     f"parameters: {meta['parameters']:,}, coded in {latents_bytes:,} bytes of latents and "
                     f"{weights_bytes:,} of weights and filters"]))
    return ExitCode.OK


def cmd_info(args) -> int:
    picture = drawable.open(args.model)
    if isinstance(picture, drawable.CompressedFile):
        return _compressed_info(args, picture)
    if args.json:
        print(json.dumps(picture.meta, indent=2))
        return ExitCode.OK
    settings = picture.settings
    # Only numbers are formatted as such: the loader checks the metrics are a mapping, not what they hold.
    found = {k: v for k, v in settings.get("metrics", {}).items() if isinstance(v, (int, float))}
    lines = [f"{args.model}", repr(picture.model), f"parameters: {picture.model.num_parameters:,}",
             f"steps: {picture.step:,}"]
    if "train_seconds" in settings:
        lines.append(f"training time: {settings['train_seconds']:.1f} s")
    if settings.get("model"):
        lines.append(f"preset: {settings['model']} {settings.get('model_options', {})}")
    if settings.get("size"):
        lines.append(f"trained on: {settings.get('input')} ({settings['size'][0]}x{settings['size'][1]} "
                     f"{settings.get('mode')}) on {settings.get('device')}")
    if "psnr_db" in found:
        lines.append(f"PSNR: {found['psnr_db']:.2f} dB" +
                     (f", accuracy {found['accuracy']:.2%}" if "accuracy" in found else ""))
    memory = {k: v for k, v in found.items() if k.startswith("pool_")}
    if memory:
        lines.append("GPU memory pool: " + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in memory.items()))
    print("\n".join(lines))
    return ExitCode.OK
