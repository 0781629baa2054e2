"""``ironlearn compress-many``: many pictures compressed on fit-many's engines (local workers, a
real local Ray instance), with its promises: a summary row a picture, a failure alone, reruns
that skip what is done, nothing of the user's replaced."""

import os
import signal
import threading
import time

import numpy as np
import pytest
from PIL import Image

import ironlearn
from helpers import find_workers, make_picture, patience, run_cli, wait_for
from ironlearn import api, codec
from ironlearn.cli import ExitCode
from ironlearn.fitting.many import CompressOptions, compress_many, summary
from ironlearn.fitting.many.compress_job import COLUMNS

QUICK = ["--seconds", "1", "--bpp", "1"]
one_ray_at_a_time = pytest.mark.xdist_group("ray")


@pytest.fixture
def pictures(tmp_path):
    folder = tmp_path / "pictures"
    folder.mkdir()
    make_picture(folder / "a.png", size=24, colour=True)
    make_picture(folder / "b.png", size=20)
    (folder / "broken.png").write_bytes(b"not a picture")
    return folder


def _files_match_their_rows(out, rows, pictures):
    """Each done row's file is there, of the size, rate and picture size the row records."""
    for row in rows:
        if row["status"] != "done":
            continue
        data = (out / row["file"]).read_bytes()
        assert len(data) == int(row["bytes"]) and row["file"] == row["picture"] + ".ilc"
        header = codec.read_header(data)
        assert (header.width, header.height) == (int(row["width"]), int(row["height"]))
        assert float(row["bpp"]) == pytest.approx(8 * len(data) / (header.width * header.height))
        drawn = np.round(codec.read(data).render() * 255)  # the PSNR the row records is the file's
        with Image.open(pictures / (row["picture"] + ".png")) as picture:
            original = np.asarray(picture.convert("RGB" if header.channels == 3 else "L"), np.float64)
        mse = np.mean((drawn - original.reshape(drawn.shape)) ** 2)
        assert 10 * np.log10(255 ** 2 / mse) == pytest.approx(float(row["psnr_db"]), abs=0.01)


def test_compress_many_writes_a_file_and_a_row_a_picture_and_a_failure_alone(pictures, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, "compress-many", pictures, "--out", out, *QUICK)
    assert code == ExitCode.FAILED, err  # broken.png failed; the others are done
    rows = summary.read(out / "summary.csv")
    assert list(rows[0]) == list(COLUMNS)
    assert [(r["picture"], r["status"]) for r in rows] == [("a", "done"), ("b", "done"), ("broken", "failed")]
    assert "is not a picture ironlearn reads" in rows[2]["error"] and "broken: failed:" in err
    assert sorted(os.listdir(out)) == ["a.ilc", "b.ilc", "summary.csv"]  # no lock, no temporary file left
    _files_match_their_rows(out, rows, pictures)
    assert "compressing 3 of 3 pictures" in err and "mean PSNR" in err


def test_a_rerun_skips_what_is_done_and_redoes_what_was_asked_otherwise(pictures, tmp_path, capsys):
    out = tmp_path / "out"
    os.remove(pictures / "broken.png")
    assert run_cli(capsys, "compress-many", pictures, "--out", out, *QUICK)[0] == ExitCode.OK
    made = {name: (out / name).stat().st_mtime_ns for name in ("a.ilc", "b.ilc")}
    code, _, err = run_cli(capsys, "compress-many", pictures, "--out", out, *QUICK)
    assert code == ExitCode.OK and "compressing 0 of 2 pictures into" in err and "(2 done before)" in err
    assert {name: (out / name).stat().st_mtime_ns for name in made} == made
    (out / "b.ilc").write_bytes((out / "b.ilc").read_bytes()[:-1])  # not the file the summary records
    code, _, err = run_cli(capsys, "compress-many", pictures, "--out", out, "--seconds", "1", "--bpp", "0.5")
    assert code == ExitCode.OK and "compressing 2 of 2 pictures" in err  # another rate: both again
    rows = summary.read(out / "summary.csv")
    assert [float(r["bpp_asked"]) for r in rows] == [0.5, 0.5]
    _files_match_their_rows(out, rows, pictures)
    code, _, err = run_cli(capsys, "compress-many", pictures, "--out", out, "--seconds", "1", "--bpp", "0.5", "--force")
    assert code == ExitCode.OK and "compressing 2 of 2 pictures" in err


def test_a_file_compress_many_did_not_write_is_kept(pictures, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.ilc").write_bytes(b"mine")
    os.remove(pictures / "broken.png")
    code, _, err = run_cli(capsys, "compress-many", pictures, "--out", out, *QUICK)
    assert code == ExitCode.FAILED and (out / "a.ilc").read_bytes() == b"mine"
    rows = {r["picture"]: r for r in summary.read(out / "summary.csv")}
    assert rows["a"]["status"] == "failed" and "compress-many did not write it" in rows["a"]["error"]
    assert "--force" in rows["a"]["error"] and rows["b"]["status"] == "done"
    assert run_cli(capsys, "compress-many", pictures, "--out", out, *QUICK, "--force")[0] == ExitCode.OK
    assert (out / "a.ilc").read_bytes() != b"mine"


def test_a_summary_of_another_command_is_not_replaced(pictures, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.csv").write_text("picture,input,width\n")
    code, _, err = run_cli(capsys, "compress-many", pictures, "--out", out, *QUICK)
    assert code == ExitCode.USAGE and "not a summary that compress-many wrote" in err
    assert (out / "summary.csv").read_text() == "picture,input,width\n"


@pytest.mark.parametrize("args, message", [
    (["--bpp", "30"], "--bpp 30 is more than the 24 bits"),
    (["--seconds", "1e9"], "--seconds 1e+09 is more than"),
    (["--bpp", "1", "--lmbda", "0.01"], "not allowed with argument"),
    (["--workers", "0"], "--workers"),
])
def test_a_request_that_cannot_work_is_one_line_before_any_picture(pictures, tmp_path, capsys, args, message):
    code, _, err = run_cli(capsys, "compress-many", pictures, "--out", tmp_path / "out", *args)
    assert code == ExitCode.USAGE and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out" / "summary.csv").exists()


def test_python_compress_many_is_the_commands(pictures, tmp_path):
    os.remove(pictures / "broken.png")
    rows = api.compress_many(str(pictures / "*.png"), tmp_path / "out", bpp=1, seconds=1, workers=1)
    assert [(r["picture"], r["status"]) for r in rows] == [("a", "done"), ("b", "done")]
    again = ironlearn.decompress(tmp_path / "out" / "a.ilc")
    assert again.shape == (24, 24, 3) and np.isfinite(again).all()
    with pytest.raises(ValueError, match="bpp or lmbda, not both"):
        compress_many([pictures], tmp_path / "other", options=CompressOptions(bpp=1, lmbda=0.01))


@one_ray_at_a_time
def test_the_ray_engine_writes_the_same_files_and_summary(pictures, tmp_path, ray_instance):
    out = tmp_path / "out"
    messages = []
    rows = compress_many([pictures], out, options=CompressOptions(bpp=1, seconds=1), engine="ray",
                         log=messages.append)
    assert "compressing 3 of 3 pictures" in messages[0] and "Ray: up to 2 pictures at once" in messages[0], messages
    assert [(r["picture"], r["status"]) for r in rows] == [("a", "done"), ("b", "done"), ("broken", "failed")]
    assert str(pictures / "broken.png") in rows[2]["error"]  # the driver's path, not the worker's copy
    assert sorted(os.listdir(out)) == ["a.ilc", "b.ilc", "summary.csv"]
    _files_match_their_rows(out, summary.read(out / "summary.csv"), pictures)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds worker processes through Linux's /proc")
def test_a_killed_worker_costs_only_its_picture_which_is_compressed_once_more(pictures, tmp_path):
    os.remove(pictures / "broken.png")
    out, result, messages = tmp_path / "out", {}, []

    def target():
        result["rows"] = compress_many([pictures], out, options=CompressOptions(bpp=1, seconds=4), workers=1,
                                       log=messages.append)
    thread = threading.Thread(target=target)
    thread.start()
    first = wait_for(find_workers, what="a worker")[0]
    time.sleep(1.0)  # well into the first encode
    os.kill(first, signal.SIGKILL)
    thread.join(patience(120))
    assert not thread.is_alive() and [r["status"] for r in result["rows"]] == ["done", "done"], result
    retried = [m for m in messages if "its worker process died (killed by SIGKILL); trying it once more" in m]
    assert len(retried) == 1, messages
    _files_match_their_rows(out, summary.read(out / "summary.csv"), pictures)
