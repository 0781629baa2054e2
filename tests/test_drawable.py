"""The picture seam: ``ironlearn.drawable.load`` tells a fitted run from a compressed file, by its
bytes, and refuses anything else in one line; a compressed file decodes only when asked."""

import os

import numpy as np
import pytest
from helpers import make_picture, waves

from ironlearn import codec, drawable
from ironlearn.cli import main
from ironlearn.train import CheckpointError


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("seam")
    picture = make_picture(folder / "disc.png", size=16)
    assert main(["fit", str(picture), "--out", str(folder / "run"), "--steps", "3", "--quiet"]) == 0
    return folder / "run"


def test_a_run_folder_and_its_model_file_open_as_the_same_run(run_folder):
    from_folder, from_file = drawable.load(run_folder), drawable.load(run_folder / "model.npz")
    assert isinstance(from_folder, drawable.Run)
    assert from_folder.folder == from_file.folder == os.path.abspath(run_folder)
    assert from_folder.path == str(run_folder / "model.npz") and from_folder.step == 3
    assert from_folder.size == (16, 16) and from_folder.channels == 1
    assert from_folder.meta["settings"] == from_folder.settings


def test_a_bare_model_file_has_no_run_folder(run_folder, tmp_path):
    bare = tmp_path / "mine.npz"
    bare.write_bytes((run_folder / "model.npz").read_bytes())
    assert drawable.load(bare).folder is None


def test_a_compressed_file_is_told_by_its_bytes_and_decodes_only_when_asked(tmp_path, monkeypatch):
    data = codec.compress_array((waves(24, 32, 3) * 255).astype(np.uint8), lmbda=1e-3, seconds=0.3).data
    path = tmp_path / "looks-like-a-model.npz"  # the name says nothing
    path.write_bytes(data)
    decodes = []
    monkeypatch.setattr(codec, "read", lambda data, real=codec.read: decodes.append(1) or real(data))
    picture = drawable.load(path)
    assert isinstance(picture, drawable.CompressedFile)
    assert picture.size == (32, 24) and picture.channels == 3 and picture.data == data
    assert decodes == []  # the header alone, as info reads it
    assert picture.decoded is picture.decoded and decodes == [1]
    assert picture.decoded.size == picture.size  # (width, height), as a run's


@pytest.mark.parametrize("kind", ["run", "compressed"])
def test_both_kinds_answer_the_same_questions(run_folder, tmp_path, kind):
    """Who draws or describes a picture asks it, not which kind it is: the size a render has, the
    bands it is drawn in (the same pixels as the kind's own render), its metadata and lines."""
    import ironlearn

    if kind == "run":
        source = run_folder
    else:
        source = tmp_path / "small.ilc"
        source.write_bytes(codec.compress_array((waves(24, 32, 3) * 255).astype(np.uint8), lmbda=1e-3,
                                                seconds=0.3).data)
    picture = drawable.load(source)
    width, height = picture.draw_size(scale=2.0)
    assert (width, height) == (2 * picture.size[0], 2 * picture.size[1])
    assert picture.draw_size(size=(10, 20), view=(-1, -1, 0, 0)) == (10, 20)
    drawn = np.empty((height, width, picture.channels), np.float32)
    for top, pixels in picture.bands(height, width):
        drawn[top:top + len(pixels)] = pixels
    assert np.allclose(drawn, ironlearn.render(source, scale=2.0), atol=1e-6)
    assert isinstance(picture.meta, dict) and picture.meta
    lines = picture.describe("NAME").splitlines()
    assert lines[0] == "NAME" and len(lines) >= 3


@pytest.mark.parametrize("make, message", [
    (lambda tmp: tmp / "missing", "no such file or folder"),
    (lambda tmp: tmp, "holds no model.npz or checkpoint.npz"),
])
def test_anything_else_is_refused_in_one_line(tmp_path, make, message):
    with pytest.raises(CheckpointError, match=message) as caught:
        drawable.load(make(tmp_path))
    assert "\n" not in str(caught.value)


def test_a_damaged_compressed_file_names_itself_once(tmp_path):
    path = tmp_path / "cut.ilc"
    path.write_bytes(codec.bitstream.container.MAGIC + b"\x00\x01")
    with pytest.raises(codec.CodecError) as caught:
        drawable.load(path)
    assert str(caught.value).count(str(path)) == 1


def test_decoding_a_file_imports_nothing_of_training(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "small.ilc"
    path.write_bytes(codec.compress_array((waves(24, 32, 3) * 255).astype(np.uint8), lmbda=1e-3, seconds=0.3).data)
    script = ("import sys; from ironlearn import codec; data, decoded = codec.read_path(sys.argv[1]); "
              "decoded.render(48, 64); "
              "print(sorted(m for m in sys.modules if m.startswith(('ironlearn.train', 'ironlearn.optim', "
              "'ironlearn.codec.search'))))")
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
