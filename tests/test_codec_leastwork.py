"""A large picture's encode that cannot end in its time is refused from the picture's size, before
any work on its pixels: quickly, in little memory, and with a time that the refusal then accepts."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from ironlearn import codec
from ironlearn.api import compressing
from ironlearn.cli import main
from ironlearn.codec.search import job, leastwork

#: Run in a child process: ``compress --seconds 1`` of the PNG in argv[1], its exit code, wall
#: time and peak memory (ru_maxrss, KB on Linux) before and after printed as JSON.
REFUSE = """
import json, resource, sys, time
from ironlearn.cli import main
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
code = main(["compress", sys.argv[1], "-o", sys.argv[2], "--seconds", "1"])
print(json.dumps({"code": code, "seconds": time.perf_counter() - started, "before": before,
                  "after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


@pytest.fixture(scope="module")
def large_png(tmp_path_factory):
    """A 4096x4096 colour picture (16.8 MP), written fast: its header is what the refusal reads."""
    rows = np.linspace(0, 255, 4096, dtype=np.float32)
    picture = np.empty((4096, 4096, 3), np.uint8)
    picture[..., 0] = rows[:, None]
    picture[..., 1] = rows[None, :]
    picture[..., 2] = 128
    path = tmp_path_factory.mktemp("large") / "large.png"
    Image.fromarray(picture).save(path, compress_level=1)
    return path


def test_a_large_picture_given_a_second_is_refused_from_its_size_in_little_memory(large_png, tmp_path):
    """It was refused after 8.6 to 12 s and 0.9 GB (the picture read, converted twice, two
    analyses of its middle megapixel on spinning threads), at 219 to 1,199 s; now from the size
    its file declares and a small probe: one line, exit 2, no file, within 100 MB."""
    out = tmp_path / "large.ilc"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", REFUSE, str(large_png), str(out)], env=env, capture_output=True,
                          text=True, timeout=120)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    errors = done.stderr.strip().splitlines()
    assert report["code"] == 2 and not out.exists()
    assert len(errors) == 1 and errors[0].startswith("ironlearn compress: error: a 4096x4096 picture takes about")
    assert "--seconds" in errors[0] and "Traceback" not in done.stderr
    assert report["after"] - report["before"] < 100_000  # KB: the picture alone is 50 MB in 8 bits
    assert report["seconds"] < 10  # about 0.3 s of probe; generous for a busy machine


def test_the_refusal_comes_before_the_picture_is_decoded(large_png, tmp_path, monkeypatch):
    def decode(*args, **kwargs):
        raise AssertionError("the picture was decoded before the refusal")

    monkeypatch.setattr(job, "load_picture", decode)
    with pytest.raises(codec.TooLong, match=r"more than the 1 s given"):
        compressing.compress(large_png, tmp_path / "large.ilc", seconds=1)


def test_an_array_is_refused_before_its_pixels_are_converted():
    """From Python, an array of 16.8 MP: refused before its float copies (200 MB each)."""
    import tracemalloc

    picture = np.zeros((4096, 4096, 3), np.uint8)
    tracemalloc.start()
    try:
        with pytest.raises(codec.TooLong):
            codec.compress_array(picture, seconds=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6


def _asked(refused) -> int:
    import re

    return int(re.search(r"give seconds (\d+) or more", str(refused.value)).group(1))


@pytest.mark.parametrize("height, width, channels", [(1100, 1000, 3), (4096, 4096, 3), (4096, 3072, 1)])
def test_the_time_a_refusal_asks_for_is_accepted(monkeypatch, height, width, channels):
    """On an idle core (the probe's wall time its own work's): the refusal's "give seconds N" is a
    time the same estimate accepts, a little under the estimate is refused, and up to a megapixel
    nothing is (the least work is done whatever the time)."""
    monkeypatch.setattr(leastwork, "probe", lambda: leastwork.Probe(0.02, 0.02))
    with pytest.raises(codec.TooLong) as refused:
        leastwork.check_time(height, width, channels, 0.5)
    assert _asked(refused) >= refused.value.seconds == pytest.approx(0.02 * leastwork.least_units(height, width,
                                                                                                   channels))
    leastwork.check_time(height, width, channels, _asked(refused))
    with pytest.raises(codec.TooLong):
        leastwork.check_time(height, width, channels, refused.value.seconds / leastwork.OVERRUN * 0.99)
    leastwork.check_time(1024, 1024, 3, 1e-3)


def test_a_busy_machine_asks_for_its_wall_time_and_refuses_only_what_a_core_could_not_do(monkeypatch):
    """A third of a core now: the time asked for is the wall time, three times the work's, but a
    time the work fits in on a whole core is not refused (a neighbour's share swings within a
    minute; a 12.6 MP picture was refused 30 s as needing 43 and then took 26.5 s)."""
    monkeypatch.setattr(leastwork, "probe", lambda: leastwork.Probe(0.01, 0.03))
    work = 0.01 * leastwork.least_units(4096, 4096, 3)
    with pytest.raises(codec.TooLong) as refused:
        leastwork.check_time(4096, 4096, 3, 1)
    assert refused.value.seconds == pytest.approx(3 * work) and _asked(refused) >= 3 * work
    leastwork.check_time(4096, 4096, 3, work)


def test_a_gray_picture_is_estimated_at_its_one_channel():
    assert leastwork.least_units(4096, 4096, 1) < 0.6 * leastwork.least_units(4096, 4096, 3)


def test_the_command_says_what_to_give(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(leastwork, "LARGE_PIXELS", 0)  # as if the picture were large
    monkeypatch.setattr(leastwork, "least_units", lambda *args, **kwargs: 172.4 / 0.02)
    monkeypatch.setattr(leastwork, "probe", lambda: leastwork.Probe(0.02, 0.02))
    picture = np.random.default_rng(0).integers(0, 256, (40, 48, 3), dtype=np.uint8)
    with pytest.raises(codec.TooLong, match=r"about 172 s .* give seconds 230 or more") as refused:
        codec.compress_array(picture, bpp=0.5, seconds=30)
    assert refused.value.seconds == pytest.approx(172.4)
    Image.fromarray(picture).save(tmp_path / "p.png")
    assert main(["compress", str(tmp_path / "p.png"), "-o", str(tmp_path / "p.ilc")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("ironlearn compress: error: a 48x40 picture takes about 172 s")
    assert "more than the 30 s given" in err[-1]
    assert "give --seconds 230 or more" in err[-1] and not (tmp_path / "p.ilc").exists()
