"""The Python way in (``ironlearn.fit``, ``load``, ``render``, ``compress``) refuses what the command
refuses, in the command's words, and the library's constructors say what they take.

Found by trying the API as a newcomer: these used to run with a string for ``steps``, draw a
1x1 picture for ``size=0``, write a compressed file over the picture it compressed, or fail
deep inside NumPy.
"""

import numpy as np
import pytest

import ironlearn
from helpers import make_picture
from ironlearn.fitting import UsageError
from ironlearn.nn import mse
from ironlearn.train import CheckpointError

QUICK = {"device": "cpu", "width": 8, "depth": 1}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("api")
    return ironlearn.fit(make_picture(folder / "pic.png", size=24), out=folder / "run", steps=3, **QUICK)


@pytest.mark.parametrize("options, message", [
    ({"steps": "10"}, "steps must be a whole number (got '10')"),
    ({"steps": 1.5}, "steps must be a whole number"),
    ({"steps": True}, "steps must be a whole number"),
    ({"lr": "0.1"}, "lr must be a number"),
    ({"size": "64"}, "size must be N"),
    ({"size": 0}, "size must be at least 1"),
    ({"seed": "a"}, "seed must be a whole number"),
    ({"width": "16"}, "width must be a whole number"),
    ({"table_log2": 12}, "(table_log2 is log2_table_size)"),
    ({"bogus": 1}, "fit() takes no option 'bogus'"),
])
def test_fit_refuses_what_the_command_would(tmp_path, options, message):
    picture = make_picture(tmp_path / "pic.png", size=16)
    with pytest.raises(UsageError) as refused:
        ironlearn.fit(picture, out=tmp_path / "run", **{**QUICK, **options})
    assert message in str(refused.value)
    assert not str(refused.value).startswith("--")  # Python names its arguments, the command its flags
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.parametrize("arguments, message", [
    ({"size": 0}, "size must be N"), ({"size": -5}, "size must be N"), ({"size": "64"}, "size must be N"),
    ({"size": (1, 2, 3)}, "size must be N"), ({"scale": 0}, "scale must be a finite number above 0"),
    ({"scale": float("nan")}, "scale must be"), ({"size": 8, "view": (1, 1, 0, 0)}, "needs x0 < x1"),
    ({"size": 8, "view": (0, 0, 1)}, "four numbers"),
])
def test_render_refuses_what_the_command_would(run, arguments, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        ironlearn.render(run, **arguments)


def test_render_draws_a_run_at_its_own_size_unless_told_otherwise(run):
    assert ironlearn.render(run).shape == (24, 24, 1)
    assert ironlearn.render(run, [12, 6]).shape == (6, 12, 1)  # a list is (W, H) too
    with pytest.raises(ValueError, match="size must be N"):
        ironlearn.render(run, (8,))
    assert ironlearn.render(run, view=(0, 0, 1, 1)).shape == (12, 12, 1)  # the region at the training pitch
    with pytest.raises(TypeError, match="not NoneType"):
        ironlearn.render(None, size=8)
    with pytest.raises(ValueError, match="give size or scale"):
        ironlearn.render(run.model)  # a bare network knows no size


def test_load_raises_checkpoint_error_for_what_holds_no_model(tmp_path):
    for path in (tmp_path / "nowhere", tmp_path):
        with pytest.raises(CheckpointError):
            ironlearn.load(path)


def test_compress_never_writes_over_its_picture_nor_an_existing_file(tmp_path):
    picture = make_picture(tmp_path / "pic.png", size=16, colour=True)
    before = picture.read_bytes()
    (tmp_path / "old.ilc").write_bytes(b"mine")
    for out, message in ((picture, "is the input"), (tmp_path / "old.ilc", "already exists"),
                         (tmp_path / "nodir" / "x.ilc", "does not exist")):
        with pytest.raises(UsageError, match=message):
            ironlearn.compress(picture, out, seconds=0.1)
    assert picture.read_bytes() == before and (tmp_path / "old.ilc").read_bytes() == b"mine"
    ironlearn.compress(picture, tmp_path / "old.ilc", seconds=0.1, force=True)
    assert ironlearn.decompress(tmp_path / "old.ilc").shape == (16, 16, 3)


def test_a_layer_of_no_units_is_refused():
    from ironlearn.nn import Linear

    with pytest.raises(ValueError, match="in_features must be a whole number in 1.."):
        Linear(0, 3, rng=0)


def test_networks_take_a_seed_or_a_generator():
    a = ironlearn.mlp(2, 1, width=8, depth=1, rng=0)
    b = ironlearn.mlp(2, 1, width=8, depth=1, rng=np.random.default_rng(0))
    assert all(np.array_equal(a.named_parameters()[n], b.named_parameters()[n]) for n in a.named_parameters())
    with pytest.raises(TypeError, match="whole-number seed"):
        ironlearn.mlp(2, 1, width=8, depth=1, rng="0")


def test_an_optimizer_takes_the_models_parameters_and_a_trainer_checks_they_are_its_own():
    model, other = (ironlearn.mlp(2, 1, width=8, depth=1, rng=seed) for seed in (0, 1))
    with pytest.raises(TypeError, match=r"named_parameters\(\)"):
        ironlearn.Adam(model)
    x, y = np.zeros((4, 2), np.float32), np.zeros((4, 1), np.float32)
    with pytest.raises(ValueError, match="other arrays than this model's"):  # it trained nothing, silently
        ironlearn.Trainer(model, ironlearn.Adam(other.named_parameters()), mse, x, y)


def test_numpy_numbers_are_numbers(tmp_path):
    """np.int64 steps trained, then failed at the first checkpoint (JSON has no NumPy types)."""
    picture = make_picture(tmp_path / "pic.png", size=16)
    run = ironlearn.fit(picture, out=tmp_path / "run", steps=np.int64(4), lr=np.float32(0.01), width=np.int64(8),
                        depth=1, device="cpu")
    assert run.metrics["steps"] == 4 and run.settings["lr"] == pytest.approx(0.01)


def test_fit_many_takes_one_input_as_one(tmp_path):
    from ironlearn.fitting import FitOptions
    from ironlearn.fitting.many import fit_many

    (tmp_path / "pics").mkdir()
    make_picture(tmp_path / "pics" / "a.png", size=16)
    rows = fit_many(str(tmp_path / "pics"), tmp_path / "out", options=FitOptions(input="", steps=3, **{
        "model_options": {"width": 8, "depth": 1}, "device": "cpu"}), log=lambda message: None)
    assert [(row["picture"], row["status"]) for row in rows] == [("a", "done")]  # not p, i, c, s


def test_a_compressed_files_bytes_load_as_decompress_takes_them(tmp_path):
    picture = make_picture(tmp_path / "pic.png", size=16, colour=True)
    data = ironlearn.compress(picture, seconds=0.1).data
    assert ironlearn.load(data).size == (16, 16)


def test_fit_many_takes_fits_options_by_their_python_names(tmp_path):
    from ironlearn import api

    (tmp_path / "pics").mkdir()
    make_picture(tmp_path / "pics" / "a.png", size=16)
    rows = api.fit_many([tmp_path / "pics"], tmp_path / "out", steps=3, **QUICK)
    assert [(row["picture"], row["status"]) for row in rows] == [("a", "done")]
    with pytest.raises(UsageError, match="fit_many\\(\\) takes no option 'bogus'"):
        api.fit_many([tmp_path / "pics"], tmp_path / "out", bogus=1)


def test_the_pixel_csv_converters_round_trip_from_python(tmp_path):
    from ironlearn import api

    picture = make_picture(tmp_path / "pic.png", size=12)
    written = api.picture_to_csv(picture, tmp_path / "pic.csv", mode="gray")
    levels, mode = api.csv_to_picture(tmp_path / "pic.csv", tmp_path / "back.png")
    assert (written.width, written.height, mode, levels.shape) == (12, 12, "gray", (12, 12, 1))
    with pytest.raises(UsageError, match="already exists; use force=True"):
        api.picture_to_csv(picture, tmp_path / "pic.csv")
    with pytest.raises(TypeError, match="force must be True or False"):
        api.csv_to_picture(tmp_path / "pic.csv", tmp_path / "back.png", force="yes")


def test_errors_that_are_no_option_errors_name_options_too():
    """A damaged checkpoint or a port taken names its option as OptionError does: by its Python
    name from Python, by its flag where the command words it; and survives a trip between processes."""
    import pickle

    from ironlearn.viewer import ViewerError

    error = CheckpointError("damaged; start over with {force}", force="force=True")
    assert str(error) == "damaged; start over with force=True"
    assert error.worded(lambda name: "--" + name) == "damaged; start over with --force"
    again = pickle.loads(pickle.dumps(error))
    assert (str(again), again.worded(lambda name: "--" + name)) == (str(error), "damaged; start over with --force")
    taken = ViewerError("cannot serve on 127.0.0.1:8000; choose another {port}", "port")
    assert str(taken).endswith("choose another port")
    assert str(CheckpointError("a plain {message}")) == "a plain {message}"
