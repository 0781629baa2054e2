"""``fit --params N``: the chosen model sized to about N parameters, its count the network's own."""

import pytest

import ironlearn
from helpers import make_picture, run_cli
from ironlearn.cli import ExitCode
from ironlearn.fitting.budget import KNOBS, count, sized
from ironlearn.fitting.presets import PRESETS


@pytest.mark.parametrize("model", sorted(KNOBS))
@pytest.mark.parametrize("params", [10_000, 100_000, 1_000_000])
def test_each_model_is_sized_within_a_few_percent_of_the_budget(model, params):
    preset = PRESETS[model]
    options = sized(preset, {}, params, 256, 192, "rgb", 3)
    (knob, _), = [KNOBS[model]]
    assert set(options) == {knob}
    assert count(preset, options, 256, 192, "rgb", 3) == pytest.approx(params, rel=0.03)


def test_the_other_options_keep_what_was_given():
    options = sized(PRESETS["siren"], {"depth": 2, "w0": 10.0}, 20_000, 64, 64, "gray", 1)
    assert options["depth"] == 2 and options["w0"] == 10.0
    assert count(PRESETS["siren"], options, 64, 64, "gray", 1) == pytest.approx(20_000, rel=0.03)


def test_a_fit_given_params_has_that_many(tmp_path):
    picture = make_picture(tmp_path / "p.png", size=24, colour=True)
    run = ironlearn.fit(picture, out=tmp_path / "run", model="fourier", params=3000, steps=3, device="cpu")
    assert run.model.num_parameters == pytest.approx(3000, rel=0.05)
    assert run.settings["model_options"]["width"] == sized(PRESETS["fourier"], {}, 3000, 24, 24, "rgb", 3)["width"]


@pytest.mark.parametrize("args, message", [
    (["--model", "classic"], "--model classic has a fixed size; drop --params"),
    (["--model", "siren", "--width", "8"], "--params sizes --width of --model siren; give one of the two"),
    (["--model", "siren", "--params", "5"], "--params 5 is under the smallest --model siren"),
    (["--model", "siren", "--depth", "1", "--params", "20000"], "--params 20,000 is over the largest --model siren "
                                                                 "with these options (16,385 parameters at --width 4096)"),
])
def test_a_budget_that_cannot_work_is_one_line(tmp_path, capsys, args, message):
    picture = make_picture(tmp_path / "p.png", size=16)
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--params", "5000", *args,
                           "--steps", "3")
    assert code == ExitCode.USAGE and message in err and len(err.strip().splitlines()) == 1, err


def test_a_resume_keeps_its_network(tmp_path, capsys):
    picture = make_picture(tmp_path / "p.png", size=16)
    assert run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--model", "mlp", "--params", "2000",
                   "--steps", "3", "--quiet")[0] == ExitCode.OK
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--params", "4000", "--steps", "6",
                           "--resume")
    assert code == ExitCode.USAGE and "cannot resume with different settings: --params 4000 (the run used 2000)" in err
    assert run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--steps", "6", "--resume", "--quiet")[0] == 0
    assert run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--params", "2000", "--steps", "9", "--resume",
                   "--quiet")[0] == 0  # its own budget: the same network
