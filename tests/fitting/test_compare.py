"""``ironlearn compare``: pictures x models x parameter budgets, fitted on fit-many's engines, scored,
tabled in results.csv and shown in report.html (opened in a real Chromium)."""

import csv
import os

import numpy as np
import pytest
from PIL import Image

from helpers import run_cli, waves
from ironlearn import api
from ironlearn.cli import ExitCode
from ironlearn.fitting.compare import COLUMNS
from ironlearn.image.metrics import ssim

one_ray_at_a_time = pytest.mark.xdist_group("ray")
#: Two models, two budgets, steps (not seconds: a rerun gives the same table), fitted at 32 px from 64 px files.
SETTINGS = ["--models", "siren,grid", "--params", "1500,4000", "--steps", "20", "--size", "32"]
_VARYING = ("seconds", "ms_per_step")  # the machine's, not the fit's


@pytest.fixture(scope="module")
def pictures(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare") / "pictures"
    folder.mkdir()
    for name, seed in (("a", 0), ("b", 1)):
        Image.fromarray(waves(64, 64, 3, seed=seed)).save(folder / f"{name}.png")
    return folder


def _results(out) -> list[dict]:
    with open(out / "results.csv", newline="") as file:
        return list(csv.DictReader(file))


def _same_fits(rows) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in _VARYING} for row in rows]


@pytest.fixture(scope="module")
def compared(pictures, tmp_path_factory):
    out = tmp_path_factory.mktemp("compared") / "out"
    messages = []
    rows = api.compare([pictures], out, models=("siren", "grid"), params=(1500, 4000), steps=20, size=32,
                       progress=messages.append)
    return out, rows, messages


def test_every_picture_model_and_budget_is_a_scored_row(compared):
    out, rows, messages = compared
    table = _results(out)
    assert list(table[0]) == list(COLUMNS) and len(table) == 8
    assert [(r["picture"], r["model"], r["params_asked"]) for r in table[:4]] == [
        ("a", "siren", "1500"), ("b", "siren", "1500"), ("a", "siren", "4000"), ("b", "siren", "4000")]
    for row in table:
        assert row["status"] == "done" and row["steps"] == "20" and row["seed"] == "0" and row["ironlearn"]
        assert abs(int(row["parameters"]) / int(row["params_asked"]) - 1) < 0.05
        assert 0 < float(row["ssim"]) <= 1 and float(row["ms_per_step"]) > 0
        assert float(row["redraw_psnr_db"]) > 0 and float(row["bicubic_psnr_db"]) > 15  # 64 px files hold 2x
    assert messages[0].startswith("siren at 1,500 parameters: 2 of 2 pictures, mean PSNR")
    assert sorted(os.listdir(out)) == ["report.html", "results.csv", "runs"]
    assert sorted(os.listdir(out / "runs")) == ["grid-1500", "grid-4000", "siren-1500", "siren-4000"]


def test_a_rerun_skips_what_is_done_and_gives_the_same_table(compared, pictures, capsys):
    out, _, _ = compared
    before, model = _results(out), out / "runs" / "siren-1500" / "a" / "model.npz"
    made = model.stat().st_mtime_ns
    code, _, err = run_cli(capsys, "compare", pictures, "--out", out, *SETTINGS)
    assert code == ExitCode.OK and model.stat().st_mtime_ns == made, err
    assert _results(out) == before
    code, _, err = run_cli(capsys, "compare", pictures, "--out", out, *SETTINGS, "--force")
    assert code == ExitCode.OK and model.stat().st_mtime_ns != made
    assert _same_fits(_results(out)) == _same_fits(before)  # the seed and steps make the same fits


def test_the_report_opens_in_chromium_with_its_plots_and_pictures(compared, browser):
    out, _, _ = compared
    page = browser.new_page()
    try:
        page.goto((out / "report.html").as_uri())
        images = page.evaluate("Array.from(document.images).map(i => [i.alt, i.complete && i.naturalWidth > 0])")
        text = page.inner_text("body")
    finally:
        page.close()
    assert ("the curves", True) in [tuple(i) for i in images]
    drawn = [alt for alt, loaded in images if loaded]
    assert drawn.count("the picture at 2x") == 2 and drawn.count("bicubic") == 2
    assert drawn.count("siren") == 2 and drawn.count("grid") == 2 and len(drawn) == len(images)
    assert "PSNR against parameters" not in text  # a plot's title is in the picture, not the page's text
    assert "Every fit" in text and "4,000" in text


def test_a_budget_a_model_cannot_take_fails_its_rows_alone(pictures, tmp_path, capsys):
    code, _, err = run_cli(capsys, "compare", pictures / "a.png", "--out", tmp_path / "out", "--models",
                           "siren,mlp", "--params", "5", "--steps", "3", "--size", "32")
    assert code == ExitCode.FAILED
    rows = _results(tmp_path / "out")
    assert [r["status"] for r in rows] == ["failed", "failed"] and "under the smallest" in rows[0]["error"]
    assert "a (siren, 5): --params 5 is under the smallest --model siren" in err


@pytest.mark.parametrize("args, message", [
    (["--models", "siren,resnet"], "--models takes hashgrid, siren, fourier, mlp, grid (got resnet)"),
    (["--params", "1e4,0"], "each must be a whole number from 1"),
    (["--params", "ten"], "is not numbers separated by commas"),
])
def test_a_comparison_that_cannot_run_is_one_line(pictures, tmp_path, capsys, args, message):
    code, _, err = run_cli(capsys, "compare", pictures, "--out", tmp_path / "out", *args)
    assert code == ExitCode.USAGE and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


@one_ray_at_a_time
def test_the_ray_engine_gives_the_same_table(compared, pictures, tmp_path, ray_instance):
    out, _, _ = compared
    rows = api.compare([pictures], tmp_path / "ray", models=("siren", "grid"), params=(1500, 4000), steps=20,
                       size=32, engine="ray")
    assert _same_fits(_results(tmp_path / "ray")) == _same_fits(_results(out))
    assert len(rows) == 8


def test_ssim_is_scikit_images():
    metrics = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(0)
    clean = waves(40, 48, 3) / 255
    noisy = np.clip(clean + rng.normal(0, 0.05, clean.shape), 0, 1)
    theirs = metrics.structural_similarity(noisy, clean, channel_axis=2, data_range=1.0, gaussian_weights=True,
                                           sigma=1.5, use_sample_covariance=False)
    assert ssim(noisy, clean) == pytest.approx(theirs, abs=1e-6)
    assert ssim(clean, clean) == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["results.csv", "report.html"])
def test_a_file_compare_did_not_write_is_kept(pictures, tmp_path, capsys, name):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / name).write_text("mine\n")
    code, _, err = run_cli(capsys, "compare", pictures, "--out", tmp_path / "out", *SETTINGS)
    assert code == ExitCode.USAGE and "is not a file compare wrote" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "out" / name).read_text() == "mine\n" and not (tmp_path / "out" / "runs").exists()
