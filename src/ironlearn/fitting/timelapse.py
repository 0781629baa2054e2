"""The time-lapse: small renders taken while the network learns, written as a looping GIF."""

from __future__ import annotations

import math
import os
import time

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .. import npz
from ..files import atomic_write
from ..image.io import scaled_size, to_uint8
from ..image.render import render
from ..train.callbacks import Callback

MAX_FRAMES = 100
#: The longest side of a time-lapse frame, in pixels (a smaller picture keeps its own size; the
#: aspect is kept): at 192 a 2560 px photograph came out too small to see what it learns.
FRAME_SIDE = 512
#: The shortest a frame's longest side is made to keep the frames within their time.
MIN_FRAME_SIDE = 64


def frame_steps(total: int, frames: int = MAX_FRAMES, every: int | None = None) -> list[int]:
    """The steps a time-lapse of a ``total``-step run captures: step 0 (the untrained network),
    then ``frames - 1`` steps spaced geometrically up to ``total``, so that the first steps,
    where most of the learning shows, get most of the frames; or every ``every`` steps."""
    if every:
        return list(range(0, total + 1, every)) + ([total] if total % every else [])
    spaced = np.unique(np.round(np.geomspace(1, max(total, 1), frames - 1)).astype(int))
    return [0, *(int(s) for s in spaced)]


class Snapshots(Callback):
    """Renders the model (small: at most :data:`FRAME_SIDE` pixels a side) at the steps
    ``at_steps`` and at the end of a run.

    When more than ``max_frames`` frames gather (a run resumed and extended, say), every
    other one after the first is dropped, so a run of any length keeps at most
    ``max_frames``, from the untrained network's static to the final picture.

    Given ``seconds``, the frames planned take about that long at most, as the first one's render
    shows: past it, every frame is made smaller (all alike, down to :data:`MIN_FRAME_SIDE`).  A
    frame renders every pixel of its size, and a timed fit's frames count against its budget: a
    5 s SIREN fit of a 256 px picture spent more than half of it on frames of 256 px (measured:
    docs/benchmark-log.md, 'benchmarks.md: what it held before it became documentation').
    """

    def __init__(self, at_steps, width: int, height: int, backend, max_frames: int = MAX_FRAMES,
                 seconds: float | None = None):
        super().__init__(1)  # checks the step against a set: no device work unless it captures
        self.at = set(at_steps)
        self.size = scaled_size(width, height, FRAME_SIDE, enlarge=False)
        self.backend, self.max_frames, self.seconds = backend, max_frames, seconds
        self.frames: list[np.ndarray] = []
        self.steps: list[int] = []

    def capture(self, model, step: int) -> None:
        if self.steps and self.steps[-1] == step:
            return
        started = time.perf_counter()
        frame = to_uint8(render(model, *self.size, self.backend))  # on the host: the render is done
        if not self.frames and self.seconds is not None and self._shrunk(time.perf_counter() - started):
            frame = to_uint8(render(model, *self.size, self.backend))
        self.frames.append(frame)
        self.steps.append(step)
        if len(self.frames) > self.max_frames:
            self.frames, self.steps = self.frames[::2], self.steps[::2]

    def _shrunk(self, seconds_a_frame: float) -> bool:
        """Size the frames so that the planned ones take :attr:`seconds` at most, from the first
        frame's time; whether they became smaller.  Decided once: a GIF's frames share a size."""
        budget, self.seconds = self.seconds, None
        planned = max(1, len(self.at)) * seconds_a_frame
        if planned <= budget:
            return False
        side = max(MIN_FRAME_SIDE, round(max(self.size) * math.sqrt(budget / planned)))
        size = scaled_size(*self.size, side, enlarge=False)
        shrunk, self.size = size != self.size, size
        return shrunk

    def forget_after(self, step: int) -> None:
        """Drop frames taken after ``step`` (a run rolled back to it)."""
        keep = [i for i, s in enumerate(self.steps) if s <= step]
        self.frames, self.steps = [self.frames[i] for i in keep], [self.steps[i] for i in keep]

    def step(self, trainer) -> None:
        if trainer.step in self.at:
            self.capture(trainer.model, trainer.step)

    def end(self, trainer, error) -> None:
        if error is None:
            self.capture(trainer.model, trainer.step)

    # -- persistence across resumes ---------------------------------------------------
    def save(self, path) -> None:
        """The frames so far, to resume from; nothing when there are none (a run that keeps no
        time-lapse)."""
        if not self.frames:
            return
        arrays = {"frames": np.stack(self.frames), "steps": np.array(self.steps)}
        atomic_write(path, lambda file: np.savez_compressed(file, **arrays))

    def restore(self, path, upto_step: int) -> bool:
        """Load frames saved by :meth:`save`, keeping those at or before ``upto_step``; False when
        the file is there but unreadable or of another size (a lost time-lapse is not worth
        stopping a resume for, but worth a note).

        The file is checked before its frames are read: at most ``max_frames`` frames of this
        run's frame size, so a crafted file cannot make a resume fill gigabytes."""
        if not os.path.isfile(path):
            return True
        try:
            with npz.open_npz(path, deflated=True) as archive:
                if not self._fits(archive.members):
                    return False
                frames, steps = archive.read("frames"), archive.read("steps")
        except (npz.ArchiveError, OSError):
            return False
        keep = steps <= upto_step
        self.frames, self.steps = list(frames[keep]), [int(s) for s in steps[keep]]
        if self.frames:  # the run's frames were made smaller for their time: the rest match them
            self.size, self.seconds = self.frames[0].shape[1::-1], None
        return True

    def _fits(self, members: dict) -> bool:
        """Whether ``members`` (:class:`ironlearn.npz.Member` by name) are frames :meth:`save` wrote
        for this run: uint8 ``(n, h, w)`` or ``(n, h, w, 3)`` within this run's frame size (made
        smaller for their time, they may be), n <= ``max_frames``, and n steps."""
        frames, steps = members.get("frames"), members.get("steps")
        if frames is None or steps is None or len(frames.shape) not in (3, 4):
            return False
        (height, width), channels = frames.shape[1:3], frames.shape[3:]
        return (frames.dtype == np.uint8 and channels in ((), (3,)) and 0 < width <= self.size[0]
                and 0 < height <= self.size[1] and frames.shape[0] <= self.max_frames
                and steps.dtype.kind in "iu" and steps.shape == frames.shape[:1])

    def write_gif(self, path, frame_ms: int = 80, hold_ms: int = 1500) -> None:
        """The time-lapse as a GIF (:func:`write_gif`); nothing when there are no frames."""
        if self.frames:
            write_gif(path, self.frames, self.steps, frame_ms, hold_ms)


def write_gif(path, frames, steps, frame_ms: int = 80, hold_ms: int = 1500) -> None:
    """A looping GIF of ``frames`` (uint8 arrays), each labelled ``step N`` under the picture.

    Gray frames stay gray (a GIF's palette holds every level).  Colour frames share one palette,
    the last frame's median cut, without dithering: a median cut of each frame (Pillow's default)
    made the GIF the slowest of a short fit's outputs by far, and a fast octree palette banded
    smooth colours (measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').
    """
    font = ImageFont.load_default()
    labelled = []
    for frame, step in zip(frames, steps):
        picture = Image.fromarray(frame)
        mode = "L" if picture.mode == "L" else "RGB"
        canvas = Image.new(mode, (picture.width, picture.height + 16), "white")
        canvas.paste(picture.convert(mode), (0, 0))
        ImageDraw.Draw(canvas).text((3, picture.height + 2), f"step {step:,}", fill="black", font=font)
        labelled.append(canvas)
    if labelled and labelled[-1].mode == "RGB":
        palette = labelled[-1].quantize(254, method=Image.Quantize.MEDIANCUT)
        palette.putpalette(palette.getpalette()[:254 * 3] + [0, 0, 0, 255, 255, 255])  # the label's, exactly
        labelled = [canvas.quantize(palette=palette, dither=Image.Dither.NONE) for canvas in labelled]
    durations = [frame_ms] * (len(labelled) - 1) + [hold_ms]
    atomic_write(path, lambda file: labelled[0].save(file, format="GIF", save_all=True,
                                                       append_images=labelled[1:], duration=durations,
                                                       loop=0))
