"""ironlearn.npz: an archive's array sizes are checked from their headers before any data is read."""

import zipfile

import numpy as np
import pytest

from ironlearn import npz


def write_member(archive, name, shape, data: bytes, dtype="|u1"):
    """A member ``name`` whose .npy header declares ``shape`` of ``dtype``, followed by ``data``."""
    with archive.open(name, "w", force_zip64=True) as member:
        np.lib.format.write_array_header_1_0(member, {"descr": dtype, "fortran_order": False, "shape": shape})
        member.write(data)


def test_arrays_read_back_as_saved(tmp_path):
    arrays = {"frames": np.arange(24, dtype=np.uint8).reshape(2, 3, 4), "steps": np.arange(2)}
    np.savez_compressed(tmp_path / "a.npz", **arrays)
    with npz.open_npz(tmp_path / "a.npz", deflated=True) as archive:
        assert {name: m.shape for name, m in archive.members.items()} == {"frames": (2, 3, 4), "steps": (2,)}
        for name, array in arrays.items():
            np.testing.assert_array_equal(archive.read(name), array)


def test_a_deflated_archive_is_refused_where_arrays_are_stored_plain(tmp_path):
    np.savez_compressed(tmp_path / "a.npz", a=np.zeros(3))
    with pytest.raises(npz.ArchiveError, match="compressed"):
        with npz.open_npz(tmp_path / "a.npz", deflated=False):
            pass


def test_a_member_larger_than_deflate_can_expand_is_refused(tmp_path):
    """The zip directory's sizes bound what is read: a member said to hold more than
    MAX_DEFLATE_RATIO times its stored bytes is refused, even when its header agrees."""
    path = tmp_path / "a.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        write_member(archive, "a.npy", (1 << 21,), bytes(1 << 21))
        info = archive.infolist()[0]
        info.compress_size = info.file_size // npz.MAX_DEFLATE_RATIO - 1  # what the directory will say
    with pytest.raises(npz.ArchiveError, match="truncated or corrupt"):
        with npz.open_npz(path, deflated=True):
            pass


@pytest.mark.parametrize("shape,data,dtype", [
    ((1 << 40,), bytes(100), "|u1"),  # a header that asks for a terabyte
    ((10,), bytes(11), "|u1"),  # data past the array
    ((-1,), b"", "|u1"),
    ((2,), bytes(16), "|O"),  # objects: a pickle
    ((2,), bytes(16), "|V8"),
])
def test_a_header_that_does_not_fit_its_member_is_refused(tmp_path, shape, data, dtype):
    path = tmp_path / "a.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        write_member(archive, "a.npy", shape, data, dtype)
    with pytest.raises(npz.ArchiveError):
        with npz.open_npz(path, deflated=True):
            pass


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 not really", b"\x93NUMPY"])
def test_what_is_not_an_archive_is_one_error(tmp_path, content):
    (tmp_path / "a.npz").write_bytes(content)
    with pytest.raises(npz.ArchiveError):
        with npz.open_npz(tmp_path / "a.npz", deflated=True):
            pass
