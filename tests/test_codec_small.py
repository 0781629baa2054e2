"""The codec on pictures of a few hundred pixels, where a file's header and an MLP's weights
outweigh its latents: no file with an MLP, nor the pyramid with its filters, beats the file
kept on both size and quality, and on these pictures a larger lambda never gives a larger file.

The MLP trains a fixed number of steps on a made-up clock (:func:`quick_train`), so that these
encodes are short and the same each run.
"""

import dataclasses

import numpy as np
import pytest
from PIL import Image

from helpers import WorkClock, waves
from ironlearn import codec
from ironlearn.cli import main
from ironlearn.codec.model import network
from ironlearn.codec.search import encoder
from ironlearn.codec.bitstream import read, write
from ironlearn.codec.shapes import MAX_LEVELS
from ironlearn.codec.search.ratecontrol import FINISH_COST, Clock
from ironlearn.image.metrics import psnr_from_mse

real_train = encoder.train


def quick_train(inputs, residual, seconds, seed, progress, held_back=0, backend=None):
    """The MLP's training on a clock that moves 1/150 s a step: 1 s, about 40 steps after 8 of
    calibration and the 100 held back, whatever ``seconds`` and the machine."""
    clock = WorkClock(1 / 150)
    build = network.build
    network.build = clock.timing(build)
    try:
        return real_train(inputs, residual, 1.0, seed, progress, clock=clock, held_back=held_back, backend=backend)
    finally:
        network.build = build


def measured(job, candidate) -> tuple:
    """``(bytes, PSNR in dB)`` of a candidate's file (its latents under its context model, where
    it pays, as the encoder writes them), written here, not by the encoder's own check."""
    fitted = candidate.fitted
    data = write(candidate.pyramid, candidate.network, None if fitted is None else fitted.for_pyramid(candidate.pyramid))
    return len(data), psnr_from_mse(encoder._decoded_error(read(data), job.target))


def beaten_by(size, psnr, files) -> list:
    """The ``(bytes, dB)`` of ``files`` that are smaller than ``(size, psnr)`` and at least as good
    (an MLP that adds nothing draws the pyramid's picture to the bit: its file costs bits alone)."""
    return [(s, p) for s, p in files if s < size and p >= psnr - 1e-9]


def test_a_huge_lambda_ranks_the_smallest_file_first():
    """``lmbda * rate`` overflows to inf past 1.8e308 / rate: every file tied and the first tried
    (the largest, an MLP's) won."""
    from ironlearn.codec.search.encoder import _cost

    files = [(3.0, 1e-3), (2.0, 2e-3), (2.5, 1e-4)]  # (bits a pixel, mean squared error)
    for lmbda in (1e300, 1e308, np.finfo(float).max):
        assert min(files, key=lambda f: _cost(*f, bpp=None, lmbda=lmbda)) == (2.0, 2e-3)
    same_size = [(2.0, 3e-3), (2.0, 1e-3)]
    assert min(same_size, key=lambda f: _cost(*f, bpp=None, lmbda=1e308)) == (2.0, 1e-3)
    assert min(files, key=lambda f: _cost(*f, bpp=None, lmbda=1e-4)) == (2.5, 1e-4)  # small lambdas as before


def test_a_file_with_an_mlp_that_costs_bits_and_quality_loses_to_the_pyramid_when_time_runs_out(monkeypatch):
    """The files are written after the deadline (the MLP's rounding overran it on a small
    picture): the pyramid with its filters is still written and measured beside the MLP's."""
    monkeypatch.setattr(encoder, "train", quick_train)
    monkeypatch.setattr(encoder, "TUNING_SHARE", 0.0)  # the latents tuned through it can make it pay
    job = encoder._arguments(waves(32, 32, 3), 2.0, None, 30.0, MAX_LEVELS, 0, None)
    candidates = encoder._candidates(job)
    files = [measured(job, candidate) for candidate in candidates]
    with_mlp = [file for file, candidate in zip(files, candidates) if candidate.network is not None]
    assert with_mlp and all(beaten_by(*file, files) for file in with_mlp)  # what this test is about

    kept = encoder._cheapest(dataclasses.replace(job, clock=Clock(1e-9)), candidates)
    assert kept.steps == 0 and kept.mlp_tried
    assert not beaten_by(len(kept.data), kept.psnr, files[1:])  # all but the fallback, unfiltered


@pytest.mark.parametrize("shape, bpp", [((16, 16, 1), 0.5), ((32, 32, 3), 2.0)])
def test_a_tiny_pictures_file_is_beaten_by_no_file_with_an_mlp_or_the_filtered_pyramid(monkeypatch, shape, bpp):
    """An encode in real time, its MLP trained until the time is up (a second)."""
    made = []

    def cheapest(job, candidates):
        made.extend(measured(job, candidate) for candidate in candidates)
        return real_cheapest(job, candidates)

    real_cheapest = encoder._cheapest
    monkeypatch.setattr(encoder, "_cheapest", cheapest)
    kept = codec.compress_array(waves(*shape), bpp=bpp, seconds=1.0)
    assert not beaten_by(len(kept.data), kept.psnr, made[1:])


@pytest.mark.parametrize("shape", [(16, 16, 1), (16, 24, 3)])
def test_a_larger_lambda_never_gives_a_larger_file(monkeypatch, shape):
    """From the useful range to the largest float (where ``lmbda * rate`` overflows to inf: every
    file tied, and the MLP's, its weights rounded to the finest step, was kept at 853 B where
    lambda 12 gave 125)."""
    monkeypatch.setattr(encoder, "train", quick_train)
    picture = waves(*shape)
    sizes = [len(codec.encode(picture, lmbda=lmbda, seconds=30.0))
             for lmbda in (1e-3, 1e-2, 1.0, 12.0, 1e10, 1e308)]
    assert sizes == sorted(sizes, reverse=True)


def test_a_target_missed_on_a_tiny_picture_keeps_the_smallest_file(tmp_path, monkeypatch, capsys):
    """Its note says the file is the smallest tried; the pyramid's file is among those tried,
    and so is the MLP's, whose loss the command reports."""
    monkeypatch.setattr(encoder, "train", quick_train)
    made = []

    def late(job, candidates):  # the files written after the deadline
        made.extend(measured(job, candidate) for candidate in candidates)
        return real_cheapest(dataclasses.replace(job, clock=Clock(1e-9)), candidates)

    real_cheapest = encoder._cheapest
    monkeypatch.setattr(encoder, "_cheapest", late)
    Image.fromarray(waves(32, 32, 3)).save(tmp_path / "tiny.png")
    assert main(["compress", str(tmp_path / "tiny.png"), "-o", str(tmp_path / "t.ilc")]) == 0
    said = capsys.readouterr().err
    assert "this is the smallest of the files tried" in said
    assert "pyramid alone (the MLP did not pay for its bits)" in said
    size = (tmp_path / "t.ilc").stat().st_size
    assert size <= min(s for s, _ in made[1:])  # the MLP's files and the pyramid with its filters


def test_the_pyramids_file_is_checked_once_and_prices_the_files_to_come(monkeypatch):
    """The pyramid with its filters is written and read back before the MLP trains (a file under
    the context model costs more than the analyses it was priced at); the time it took is what
    the later files are priced at, and the choice of the file does not write it again."""
    monkeypatch.setattr(encoder, "train", quick_train)
    job = encoder._arguments(waves(32, 32, 3), 2.0, None, 30.0, MAX_LEVELS, 0, None)
    written = []
    real_write = encoder.write
    monkeypatch.setattr(encoder, "write", lambda *a, **k: written.append(a[0]) or real_write(*a, **k))
    candidates = encoder._candidates(job)
    filtered = candidates[1]
    assert filtered.network is None and filtered.file is not None and job.clock.file > 0
    assert written.count(filtered.pyramid) == 1
    encoder._cheapest(job, candidates)
    assert written.count(filtered.pyramid) == 1
    assert measured(job, filtered) == (len(filtered.file[0]), psnr_from_mse(filtered.file[1]))


def test_files_are_priced_at_what_one_took_where_that_is_more_than_the_analyses():
    clock = Clock(60.0)
    clock.analysis = 0.1
    assert clock.files(2) == pytest.approx(2 * FINISH_COST)  # none timed yet
    clock.file = 0.2
    assert clock.files(2) == pytest.approx(2 * FINISH_COST)  # cheaper than its floor
    clock.file = 1.5
    assert clock.files(2) == pytest.approx(30.0)
