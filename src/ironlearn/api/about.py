"""What a model, checkpoint or compressed file holds (``ironlearn info``), as data or as lines to
read; a compressed file's from its header alone, so the work stays in proportion to its size."""

from __future__ import annotations

import os

from .. import drawable


def info(source) -> dict:
    """The metadata of the run folder, model file or compressed file at ``source``: everything a
    model's file records, or a compressed file's format, size, rate and sections (what ``ironlearn
    info --json`` prints)."""
    picture = drawable.open(source)
    return _compressed_meta(picture) if isinstance(picture, drawable.CompressedFile) else picture.meta


def describe(source) -> str:
    """What ``source`` holds, in the lines ``ironlearn info`` prints: a model's layers,
    parameters, steps, training time, picture and PSNR, or a compressed file's picture, size and
    rate."""
    picture = drawable.open(source)
    name = os.fspath(source)
    if isinstance(picture, drawable.CompressedFile):
        return _describe_compressed(name, picture)
    settings = picture.settings
    # Only numbers are formatted as such: the loader checks the metrics are a mapping, not what they hold.
    found = {k: v for k, v in settings.get("metrics", {}).items() if isinstance(v, (int, float))}
    lines = [name, repr(picture.model), f"parameters: {picture.model.num_parameters:,}", f"steps: {picture.step:,}"]
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
    return "\n".join(lines)


def _compressed_meta(picture: drawable.CompressedFile) -> dict:
    data, header = picture.data, picture.header
    latents_bytes, weights_bytes = (len(section) for section in header.sections)
    return {"format": "ironlearn compressed picture", "version": header.version,
            "size": [header.width, header.height], "mode": header.mode, "bytes": len(data),
            "bpp": 8 * len(data) / (header.width * header.height),
            "latent_levels": [list(shape) for shape in header.grid_shapes],
            "filtered_levels": header.filtered_levels, "mlp": bool(header.depth),
            "parameters": header.num_parameters,
            "section_bytes": {"latents": latents_bytes, "weights": weights_bytes}}


def _describe_compressed(name: str, picture: drawable.CompressedFile) -> str:
    header, meta = picture.header, _compressed_meta(picture)
    shapes, filtered = header.grid_shapes, header.filtered_levels
    sections = meta["section_bytes"]
    return "\n".join([name, f"compressed picture: {header.width}x{header.height} {header.mode}, "
                            f"{meta['bytes']:,} bytes ({meta['bpp']:.4f} bpp)",
                      f"latent levels: {len(shapes)} of {header.channels} grid(s) each, "
                      f"{', '.join(f'{h}x{w}' for h, w in shapes)}",
                      "synthesis: the levels" + (f" (filtered: {', '.join(map(str, filtered))})" if filtered else "")
                      + " summed" + (f" and an MLP's correction ({header.depth} layers of {header.hidden})"
                                     if header.depth else ""),
                      f"parameters: {meta['parameters']:,}, coded in {sections['latents']:,} bytes of latents and "
                      f"{sections['weights']:,} of weights and filters"])
