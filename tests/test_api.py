"""The Python way in (``ironlearn.fit``, ``load``, ``render``, ``compress``) refuses what the command
refuses, in the command's words, and the library's constructors say what they take.

Found by trying the API as a newcomer: these used to run with a string for ``steps``, draw a
1x1 picture for ``size=0``, write a compressed file over the picture it compressed, or fail
deep inside NumPy.
"""

import inspect
import re

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
    with pytest.raises(ValueError, match="does not record its training size; give size"):
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


# -- every public function checks its arguments at its entry ---------------------------------------
def public_functions():
    from ironlearn import api

    return {name: getattr(api, name) for name in api.__all__ if inspect.isfunction(getattr(api, name))}


def parameters(kind):
    """``(function name, parameter)`` of every public function's parameters that ``kind`` picks."""
    return [(name, parameter.name) for name, function in public_functions().items()
            for parameter in inspect.signature(function).parameters.values() if kind(parameter)]


#: Every on/off option: a bool default, or an annotation that names bool.
FLAGS = parameters(lambda p: isinstance(p.default, bool) or "bool" in str(p.annotation))
#: Every number: an annotation that names float or int.
NUMBERS = parameters(lambda p: re.search(r"\b(float|int)\b", str(p.annotation)) is not None)


def call(name, tmp_path, **arguments):
    """``name``'s function with its required arguments and ``out`` given (each an existing file of the
    user's, or a FitOptions: never a default name in the current folder) and ``arguments``."""
    from ironlearn.fitting import FitOptions

    mine = tmp_path / "mine.html"
    required = {"picture": mine, "out": mine, "source": mine, "csv": mine, "path": mine, "model": mine,
                "pictures": [mine], "options": FitOptions(input=str(mine)), "log": lambda line: None}
    function = public_functions()[name]
    given = {p.name: required[p.name] for p in inspect.signature(function).parameters.values()
             if (p.default is p.empty or p.name == "out") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    return function(**given, **arguments)


def test_every_public_function_checks_its_arguments():
    assert all(getattr(function, "checks_arguments", False) for function in public_functions().values())
    assert {("view", "force"), ("view", "with_picture"), ("render_file", "force"), ("demo", "quiet"),
            ("compress", "progress"), ("fit", "open_browser")} <= set(FLAGS)
    assert {("picture_to_csv", "max_pixels"), ("compress", "seconds"), ("render", "scale"),
            ("fit_many", "gpus_per_fit"), ("view", "port")} <= set(NUMBERS)


@pytest.mark.parametrize("value", ["no", 0, None])
@pytest.mark.parametrize("name, flag", FLAGS, ids=[f"{name}-{flag}" for name, flag in FLAGS])
def test_every_flag_takes_only_a_bool_and_touches_no_file_otherwise(tmp_path, name, flag, value):
    """view(out='mine.html', force='no') replaced the user's page, with_picture='no' embedded the
    picture, render_file(force='no') replaced a PNG: a string is true.  Each on/off option of each
    public function refuses anything but True or False (None where it means "the default")."""
    (tmp_path / "mine.html").write_bytes(b"the user's own")
    default = inspect.signature(public_functions()[name]).parameters[flag].default
    if value is None and default is None:
        return  # with_picture=None, quiet=None: the default's own value
    with pytest.raises(TypeError, match=f"^{flag} must be True(,| or) False"):
        call(name, tmp_path, **{flag: value})
    assert [p.name for p in tmp_path.iterdir()] == ["mine.html"]
    assert (tmp_path / "mine.html").read_bytes() == b"the user's own"


@pytest.mark.parametrize("value, error", [(float("nan"), (ValueError, TypeError)), (float("inf"), (ValueError, TypeError)),
                                          ("1", TypeError), (True, TypeError)], ids=["nan", "inf", "text", "bool"])
@pytest.mark.parametrize("name, number", NUMBERS, ids=[f"{name}-{number}" for name, number in NUMBERS])
def test_every_number_is_a_finite_one_of_its_type(tmp_path, name, number, value, error):
    """max_pixels=float('nan') turned the size limit off, lmbda=inf compressed; a NaN or an
    infinity is a ValueError for a number, a TypeError for a whole number, and text a TypeError."""
    (tmp_path / "mine.html").write_bytes(b"the user's own")
    with pytest.raises(error, match=f"^{number} must be"):
        call(name, tmp_path, **{number: value})
    assert (tmp_path / "mine.html").read_bytes() == b"the user's own"


def test_a_run_and_the_users_page_are_safe_from_a_string_for_a_flag(run, tmp_path):
    """The issue's own calls, on a real run: nothing written, the page as it was."""
    from ironlearn import api

    (tmp_path / "mine.html").write_bytes(b"the user's own")
    for flags in ({"force": "no"}, {"with_picture": "no"}, {"serve": "no"}):
        with pytest.raises(TypeError, match=f"{next(iter(flags))} must be True(,| or) False"):
            api.view(run.folder, out=tmp_path / "mine.html", **flags)
    assert (tmp_path / "mine.html").read_bytes() == b"the user's own"
    with pytest.raises(TypeError, match=r"options must be a FitOptions or None \(got 5, of type int\)"):
        api.fit_many([tmp_path], tmp_path / "out", options=5)  # an AttributeError from deep inside
    with pytest.raises(ValueError, match="max_pixels must be at least 1"):
        api.picture_to_csv(tmp_path / "mine.html", tmp_path / "pic.csv", max_pixels=0)  # 0 was no limit given


def test_a_fit_options_flag_is_a_bool_too(tmp_path):
    """fit_many(options=FitOptions(force='no')) redid every picture: validate() let a string through."""
    from ironlearn import api
    from ironlearn.fitting import FitOptions

    make_picture(tmp_path / "a.png", size=16)
    for flag in ("force", "quiet", "live"):
        with pytest.raises(TypeError, match=f"{flag} must be True or False \\(got 'no', of type str\\)"):
            api.fit_many([tmp_path / "a.png"], tmp_path / "out", options=FitOptions(input="", **{flag: "no"}))
    assert not (tmp_path / "out").exists()


def test_a_run_folder_given_as_the_picture_says_how_to_resume_in_pythons_words(run):
    """The command pastes a command line (tests/test_cli.py); Python gets the call to make."""
    from ironlearn.errors import OptionError

    with pytest.raises(OptionError) as caught:
        ironlearn.fit(run.folder, out=run.folder)
    message = str(caught.value)
    assert "is a run folder, not a picture; resume it with: ironlearn.fit(" in message
    assert f"out={run.folder!r}, resume=True)" in message and "--" not in message
    assert caught.value.worded(lambda name: "--" + name).endswith(f"--out {run.folder} --resume")
