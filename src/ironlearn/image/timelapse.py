"""The time-lapse: small renders taken while the network learns, written as a looping GIF."""

from __future__ import annotations

import os

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..train.callbacks import Callback
from ..files import atomic_write
from .io import scaled_size, to_uint8
from .render import render

MAX_FRAMES = 100
FRAME_SIDE = 192  # longest side of a time-lapse frame, in pixels


class Snapshots(Callback):
    """Renders the model every ``every`` steps (and at step 0 and the end).

    When more than ``max_frames`` frames gather, every other one is dropped and
    the interval doubles, so a run of any length keeps at most ``max_frames``,
    spread evenly from the untrained network's static to the final picture.
    """

    def __init__(self, every: int, width: int, height: int, backend, max_frames: int = MAX_FRAMES):
        super().__init__(max(1, every))
        self.size = scaled_size(width, height, FRAME_SIDE, enlarge=False)
        self.backend, self.max_frames = backend, max_frames
        self.frames: list[np.ndarray] = []
        self.steps: list[int] = []

    def capture(self, model, step: int) -> None:
        if self.steps and self.steps[-1] == step:
            return
        self.frames.append(to_uint8(render(model, *self.size, self.backend)))
        self.steps.append(step)
        if len(self.frames) > self.max_frames:
            # Keep the first frame (the static) and every other one after it.
            self.frames, self.steps = self.frames[::2], self.steps[::2]
            self.every *= 2

    def forget_after(self, step: int) -> None:
        """Drop frames taken after ``step`` (a run rolled back to it)."""
        keep = [i for i, s in enumerate(self.steps) if s <= step]
        self.frames, self.steps = [self.frames[i] for i in keep], [self.steps[i] for i in keep]

    def step(self, trainer) -> None:
        self.capture(trainer.model, trainer.step)

    def end(self, trainer, error) -> None:
        if error is None:
            self.capture(trainer.model, trainer.step)

    # -- persistence across resumes ---------------------------------------------------
    def save(self, path) -> None:
        arrays = {"frames": np.stack(self.frames), "steps": np.array(self.steps), "every": np.array(self.every)}
        atomic_write(path, lambda file: np.savez_compressed(file, **arrays))

    def restore(self, path, upto_step: int) -> None:
        """Load frames saved by :meth:`save`, keeping those at or before ``upto_step``."""
        if not os.path.isfile(path):
            return
        try:
            with np.load(path) as archive:
                frames, steps, every = archive["frames"], archive["steps"], int(archive["every"])
        except Exception:  # a lost time-lapse is not worth stopping a resume for
            return
        keep = steps <= upto_step
        if frames.shape[1:3] != self.size[::-1]:
            return
        self.frames, self.steps, self.every = list(frames[keep]), [int(s) for s in steps[keep]], every

    def write_gif(self, path, frame_ms: int = 80, hold_ms: int = 1500) -> None:
        write_gif(path, self.frames, self.steps, frame_ms, hold_ms)


def write_gif(path, frames, steps, frame_ms: int = 80, hold_ms: int = 1500) -> None:
    """A looping GIF of ``frames`` (uint8 arrays), each labelled ``step N`` under the picture."""
    font = ImageFont.load_default()
    labelled = []
    for frame, step in zip(frames, steps):
        picture = Image.fromarray(frame).convert("RGB")
        canvas = Image.new("RGB", (picture.width, picture.height + 16), "white")
        canvas.paste(picture, (0, 0))
        ImageDraw.Draw(canvas).text((3, picture.height + 2), f"step {step:,}", fill="black", font=font)
        labelled.append(canvas)
    durations = [frame_ms] * (len(labelled) - 1) + [hold_ms]
    atomic_write(path, lambda file: labelled[0].save(file, format="GIF", save_all=True,
                                                       append_images=labelled[1:], duration=durations,
                                                       loop=0))
