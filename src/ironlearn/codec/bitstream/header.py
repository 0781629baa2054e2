"""The header of a compressed picture: each field declared once, and one walk that writes or reads it.

The fields, in the order a file holds them (each a number of :mod:`.container`'s
:class:`~.container.Writer`: ``uint``, ``sint`` or ``float32``):

    height, width, channels, levels     the picture, and its pyramid's levels
    hidden, depth                       the synthesis MLP's width and hidden layers (0, 0: none)
    grids     levels x channels times   step, a, slope, largest value (level-major)
    weights   2 a layer of the MLP      exponent, log-scale, largest value (a weight, then its bias)
    filters   min(levels, 4) times      exponent, log-scale, largest value (format 4 on)
    context                             the context model's width (0: none; format 7 on)
    context_shifts    an input a time   its shift (:mod:`.context`; none without a context model)
    context_weights   2 a layer         exponent, log-scale, largest value
    context_grids     a grid a time     whether it is coded under the context model (level-major)

A :class:`Field` carries its bounds and the check that needs the fields before it; writing a value
checks it as reading does, so no file is written that :func:`read_header` would refuse.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from . import container, context, entropy
from .container import CodecError
from ..shapes import FILTER_LEVELS, FILTER_OFFSETS, MAX_LEVELS, MAX_SYMBOL, MODES, level_shape

#: Pictures the decoder accepts: sides and pixels (bounds every allocation a header can ask for).
MAX_SIDE, MAX_PIXELS = 1 << 15, 1 << 26
#: Log-scales of the Laplace models, and the exponents of the weights' and filters' steps.
LOG_SCALE_RANGE = entropy.LOG_SCALE_RANGE
STEP_EXPONENTS = range(-14, 1)
#: Where rate control searches the quantisation step (of the coarsest level, in [0, 1] units); a
#: finer level's step may lie up to ``2**MAX_LEVELS`` below it.
STEP_RANGE = (2.0 ** -12, 4.0)
#: The networks' multiply-adds a pixel that a decoder accepts (their weights, counted from the
#: header before anything is built): the synthesis MLP's, and the context model's for each
#: latent, of which a pixel has about ``channels * LATENTS_PER_PIXEL``.  ``compress`` writes
#: 640 and 3 x 4/3 x 328 (1,952 in all for a colour picture), Cool-chic's networks take about
#: 2,000, and a header's 8 layers of 256 would take 464,000.
MAX_MLP_MACS = 2048
#: The latents a pixel has, a channel: a level's grid holds one for each 4**level pixels (a few
#: more where a side is rounded up: a 1x1 picture of 7 levels has 7, at a cost too small to bound).
LATENTS_PER_PIXEL = 4 / 3
#: The MLP's widest and deepest a header may declare (:data:`MAX_MLP_MACS` bounds them together).
MAX_HIDDEN, MAX_DEPTH = 256, 8


def refuse(what: str) -> CodecError:
    return CodecError(f"{what}; {container.FOREIGN_HINT}")


def mlp_layers(inputs: int, outputs: int, hidden: int, depth: int) -> list[tuple[int, int]]:
    """The ``(fan_in, fan_out)`` of each layer of :func:`~..model.network.build`'s MLP: ``depth``
    hidden layers of ``hidden`` (none for depth 0)."""
    if not depth:
        return []
    sizes = [inputs] + [hidden] * depth + [outputs]
    return list(zip(sizes[:-1], sizes[1:]))


def _layers(fields: dict) -> list[tuple[int, int]]:
    return mlp_layers(fields["levels"] * fields["channels"], fields["channels"], fields["hidden"], fields["depth"])


# -- the checks that read more than one field ----------------------------------------------------
def _pixels(fields: dict) -> None:
    if fields["height"] * fields["width"] > MAX_PIXELS:
        raise refuse(f"the header claims {fields['width']}x{fields['height']} pixels, more than {MAX_PIXELS}")


def _mode(fields: dict) -> None:
    if fields["channels"] not in MODES:
        raise refuse(f"the header claims {fields['channels']} channels (1 or 3)")


def _mlp_macs(fields: dict) -> int:
    """The synthesis MLP's multiply-adds a pixel."""
    return sum(fan_in * fan_out for fan_in, fan_out in _layers(fields))


def _mlp(fields: dict) -> None:
    hidden, depth = fields["hidden"], fields["depth"]
    if (hidden == 0) != (depth == 0):
        raise refuse("the header's MLP has a width but no layers, or layers but no width")
    macs = _mlp_macs(fields)
    if macs > MAX_MLP_MACS:
        raise refuse(f"the header's MLP ({depth} layers of {hidden}) takes {macs:,} multiply-adds a pixel, "
                     f"over the {MAX_MLP_MACS:,} a decoder accepts")


def _context(fields: dict) -> None:
    mlp = _mlp_macs(fields)
    learned = context.macs(fields["context"]) * fields["channels"] * LATENTS_PER_PIXEL if fields["context"] else 0
    if mlp + learned > MAX_MLP_MACS:
        raise refuse(f"the header's networks (an MLP of {fields['depth']} layers of {fields['hidden']}, a context model "
                     f"of width {fields['context']}) take {round(mlp + learned):,} multiply-adds a pixel, over the "
                     f"{MAX_MLP_MACS:,} a decoder accepts")


@dataclass(frozen=True)
class Field:
    """One number of the header: how it is stored (``uint``, ``sint`` or ``float32``), its bounds
    (inclusive), the name messages give it, a check of the fields read so far, run once it is
    read (or written), and the first format that holds it (an older file's value is the lowest
    its bounds allow)."""

    name: str
    kind: str
    bounds: tuple
    what: str
    check: Callable[[dict], None] | None = None
    since: int = 0

    def write(self, writer: container.Writer, value) -> None:
        stored = struct.unpack("<f", struct.pack("<f", value))[0] if self.kind == "float32" else value
        if not self.bounds[0] <= stored <= self.bounds[1]:
            raise ValueError(f"{self.what} is {value}, outside {self.bounds[0]}..{self.bounds[1]}: the file would "
                             "be refused")
        getattr(writer, self.kind)(value)

    def read(self, reader: container.Reader):
        if self.kind == "float32":
            value = reader.float32(self.what)
            if not self.bounds[0] <= value <= self.bounds[1]:
                raise refuse(f"{self.what} in the header is out of range")
            return value
        return getattr(reader, self.kind)(*self.bounds, self.what)


@dataclass(frozen=True)
class Repeated:
    """A record of fields that the header holds ``count(fields read so far)`` times, from format
    ``since`` on (none in an older file)."""

    name: str
    fields: tuple[Field, ...]
    count: Callable[[dict], int]
    since: int


def _coded(kind: str, largest: int = MAX_SYMBOL) -> tuple[Field, ...]:
    """A weight tensor's or a filter's record: its step's exponent, its Laplace's log-scale, and
    its largest magnitude (0: all zeros, nothing coded)."""
    return (Field("exponent", "sint", (STEP_EXPONENTS[0], STEP_EXPONENTS[-1]), f"a {kind} step"),
            Field("log_scale", "float32", LOG_SCALE_RANGE, f"a {kind} scale"),
            Field("magnitude", "uint", (0, largest), f"a {kind}'s largest value"))


#: The header, in the order a file holds it.
LAYOUT = (
    Field("height", "uint", (1, MAX_SIDE), "the height"),
    Field("width", "uint", (1, MAX_SIDE), "the width", _pixels),
    Field("channels", "uint", (1, 3), "the channels", _mode),
    Field("levels", "uint", (1, MAX_LEVELS), "the levels"),
    Field("hidden", "uint", (0, MAX_HIDDEN), "the MLP's width"),
    Field("depth", "uint", (0, MAX_DEPTH), "the MLP's depth", _mlp),
    Repeated("grids", (Field("step", "float32", (STEP_RANGE[0] / 2 ** MAX_LEVELS, STEP_RANGE[1]), "a grid's step"),
                       Field("a", "float32", LOG_SCALE_RANGE, "a grid's scale"),
                       Field("slope", "uint", (0, entropy.SLOPES - 1), "a grid's slope"),
                       Field("magnitude", "uint", (0, MAX_SYMBOL), "a grid's largest value")),
             lambda fields: fields["levels"] * fields["channels"], since=3),
    Repeated("weights", _coded("weight"), lambda fields: 2 * len(_layers(fields)), since=3),
    Repeated("filters", _coded("filter"), lambda fields: min(fields["levels"], FILTER_LEVELS), since=4),
    Field("context", "uint", (0, context.MAX_HIDDEN), "the context model's width", _context, since=7),
    Repeated("context_shifts", (Field("shift", "uint", (0, context.MAX_SHIFT), "a context input's shift"),),
             lambda fields: context.INPUTS if fields["context"] else 0, since=7),
    Repeated("context_weights", _coded("context weight", context.MAX_WEIGHT),
             lambda fields: len(context.tensor_sizes(fields["context"])) if fields["context"] else 0, since=7),
    Repeated("context_grids", (Field("learned", "uint", (0, 1), "a grid's choice of model"),),
             lambda fields: fields["levels"] * fields["channels"] if fields["context"] else 0, since=7),
)


def _walk(mode: str, fields: dict, version: int, coder) -> dict:
    """Write ``fields`` to ``coder`` (a :class:`~.container.Writer`; ``mode="encode"``) or read
    them from it (a :class:`~.container.Reader`; ``"decode"``), in :data:`LAYOUT`'s order, each
    checked as it goes; the fields, records as tuples."""
    for item in LAYOUT:
        if isinstance(item, Field):
            if version < item.since:
                fields[item.name] = item.bounds[0]
            elif mode == "encode":
                item.write(coder, fields[item.name])
            else:
                fields[item.name] = item.read(coder)
            if item.check is not None:
                item.check(fields)
            continue
        count = item.count(fields) if version >= item.since else 0
        if mode == "encode":
            for record in fields[item.name]:
                for field, value in zip(item.fields, record):
                    field.write(coder, value)
        else:
            fields[item.name] = tuple(tuple(field.read(coder) for field in item.fields) for _ in range(count))
        if len(fields[item.name]) != count:
            raise ValueError(f"{len(fields[item.name])} {item.name} for a header that holds {count}")
    return fields


def write_header(fields: dict) -> bytes:
    """The header's bytes for ``fields`` (every name of :data:`LAYOUT`; records as sequences of
    tuples), each value checked against its bounds (``ValueError``)."""
    writer = container.Writer()
    _walk("encode", dict(fields), container.VERSION, writer)
    return writer.getvalue()


@dataclass(frozen=True)
class Header:
    """What a compressed file declares, read and checked, its sections not yet decoded: what
    :func:`read_header` returns and ``ironlearn info`` prints, at a cost in proportion to the
    file's own size.

    ``grids`` holds ``(step, a, slope, magnitude)`` a grid, level-major; ``weights`` and
    ``filters`` hold ``(exponent, log_scale, magnitude)`` an MLP tensor (each layer's weight,
    then its bias) and a filterable level; ``sections`` the latents' and the weights' bytes."""

    version: int
    height: int
    width: int
    channels: int
    levels: int
    hidden: int
    depth: int
    grids: tuple
    weights: tuple
    filters: tuple
    sections: tuple
    context: int = 0
    context_shifts: tuple = ()
    context_weights: tuple = ()
    context_grids: tuple = ()

    @property
    def mode(self) -> str:
        return MODES[self.channels]

    @property
    def grid_shapes(self) -> list[tuple[int, int]]:
        """Each level's grid ``(rows, columns)``, finest first."""
        return [level_shape(self.height, self.width, k) for k in range(self.levels)]

    @property
    def filtered_levels(self) -> list[int]:
        return [k for k, (_, _, magnitude) in enumerate(self.filters) if magnitude]

    @property
    def tensor_sizes(self) -> list[int]:
        """The MLP's tensors' sizes, in the order of :attr:`weights`."""
        layers = mlp_layers(self.levels * self.channels, self.channels, self.hidden, self.depth)
        return [size for fan_in, fan_out in layers for size in (fan_in * fan_out, fan_out)]

    @property
    def context_sizes(self) -> list[int]:
        """The context model's tensors' sizes, in the order of :attr:`context_weights` (none without one)."""
        return context.tensor_sizes(self.context) if self.context else []

    @property
    def num_parameters(self) -> int:
        """The numbers the file holds: latents, filter taps and MLP weights (as
        :attr:`~.decoded.Decoded.num_parameters` counts them)."""
        latents = self.channels * sum(h * w for h, w in self.grid_shapes)
        taps = len(self.filtered_levels) * self.channels * len(FILTER_OFFSETS)
        return latents + taps + sum(self.tensor_sizes)


def read_fields(data: bytes) -> Header:
    """The :class:`Header` of a file, its fields read and checked against :data:`LAYOUT` (its
    sections' lengths not yet: :func:`~.bitstream.read_header` does that)."""
    version, header_bytes, sections = container.unpack_with_version(data)
    reader = container.Reader(header_bytes)
    fields = _walk("decode", {}, version, reader)
    reader.done()
    if len(sections) != 2:
        raise refuse(f"the file has {len(sections)} sections, not 2")
    return Header(version=version, sections=tuple(sections), **fields)
