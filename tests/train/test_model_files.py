"""Model files are read as untrusted: a damaged or crafted one ends in one CheckpointError (exit 2 in
the command), never another exception, a huge allocation or a black picture."""

import io
import json
import re
import tracemalloc
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import make_picture, rewrite_meta, run_cli
from ironlearn.nn import ReLU, Sequential, fourier, hashgrid, mlp, siren
from ironlearn.optim import Adam, cosine
from ironlearn.train import CheckpointError, checkpoint

HUGE_LINEAR = {"type": "Linear", "in_features": 10**6, "out_features": 10**6, "init": "xavier"}


def small_model(rng=None):
    """A colour thumbnail's layout, small: a pyramid, a detail level and a head."""
    return hashgrid(2, 3, levels=2, features=2, log2_table_size=8, coarsest=4, finest=8, width=8, depth=1, detail=5,
                    rng=rng or np.random.default_rng(0))


def save_small(path, optimizer=True):
    model = small_model()
    opt = None
    if optimizer:
        opt = Adam(model.named_parameters(), lr=cosine(1e-3, 1e-5, 100))
        opt.step(model.named_gradients())
    settings = {"input": "/pictures/cat.png", "fingerprint": "06d88b8dcfcf043d", "mode": "rgb", "size": [8, 8],
                "model": "hashgrid", "model_options": {"width": 8}, "train_seconds": 1.5,
                "metrics": {"psnr_db": 30.0, "model": "hashgrid"}}
    checkpoint.save(path, model, opt, seed=3, settings=settings)
    return path


@pytest.fixture
def model_file(tmp_path):
    return save_small(tmp_path / "model.npz")


def expect_refused(capsys, tmp_path, path, message, readers=(checkpoint.load, checkpoint.read_meta)):
    """The loaders raise CheckpointError, and info, render and view exit 2 with one line, writing nothing."""
    for read in readers:
        with pytest.raises(CheckpointError, match=re.escape(message)):
            read(path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for command in (["info", path], ["render", path, "--size", 8, "-o", tmp_path / "r.png"],
                    ["view", path, "-o", tmp_path / "v.html"]):
        code, out, err = run_cli(capsys, *command)
        assert code == 2 and out == "", (command, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and message in err, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


# -- the shapes a saved architecture asks for ---------------------------------------------------
@pytest.mark.parametrize("build", [
    lambda rng: mlp(2, 1, width=8, depth=2, rng=rng),
    lambda rng: siren(2, 3, width=8, depth=2, w0=20.0, rng=rng),
    lambda rng: fourier(2, 1, rng=rng),
    small_model,
    lambda rng: hashgrid(2, 1, levels=3, features=2, log2_table_size=6, coarsest=4, finest=32, width=8, depth=1,
                         centred=True, interpolation="bspline", rng=rng),
])
def test_shapes_from_the_config_are_the_built_arrays(build):
    model = build(np.random.default_rng(0))
    assert Sequential.shapes(model.config()) == {name: v.shape for name, v in model.named_arrays().items()}
    assert Sequential.out_features(model.config(), 2) == model(np.zeros((1, 2), np.float32)).shape[1]


@pytest.mark.parametrize("layers,message", [
    ([{"type": "Conv2d"}], "unknown type 'Conv2d'"),
    ([{"type": "Linear", "in_features": "2", "out_features": 1}], "in_features must be a whole number"),
    ([{"type": "Linear", "in_features": 2, "out_features": True}], "out_features must be a whole number"),
    ([{"type": "Linear", "in_features": 2}], "missing a required argument"),
    ([{"type": "Linear", "in_features": 2, "out_features": 1, "bias": False}], "unexpected keyword"),
    ([{"type": "Linear", "in_features": 2, "out_features": 1, "init": "siren", "w0": 0}], "w0 must be"),
    ([{"type": "Sine", "w0": float("nan")}], "w0 must be"),
    ([{"type": "HashGrid", "levels": 10**9}], "levels must be"),
    ([{"type": "HashGrid", "finest": 10**400}], "finest must be"),
    ([{"type": "HashGrid", "centred": "yes"}], "centred must be"),
    ([{"type": "Linear", "in_features": 2, "out_features": 4}, {"type": "Linear", "in_features": 3, "out_features": 1}],
     "layer 1 takes 3 inputs but gets 4"),
])
def test_a_bad_architecture_is_refused_before_anything_is_built(layers, message):
    with pytest.raises(ValueError, match=message):
        Sequential.from_config({"type": "Sequential", "layers": layers})


# -- crafted metadata: every command that reads it -------------------------------------------------
@pytest.mark.parametrize("change,message", [
    (lambda meta: meta.update(step="abc"), "step is 'abc'"),
    (lambda meta: meta.update(step=-1), "step is -1"),
    (lambda meta: meta.update(seed=1.5), "seed is 1.5"),
    (lambda meta: meta.update(version="1"), "version is '1'"),
    (lambda meta: meta.update(settings=[1, 2]), "settings is [1, 2]"),
    (lambda meta: meta["settings"].update(size=[0, 0]), "settings.size is [0, 0]"),
    (lambda meta: meta["settings"].update(size=[8]), "settings.size is [8]"),
    (lambda meta: meta["settings"].update(train_seconds="long"), "settings.train_seconds"),
    (lambda meta: meta["settings"].update(metrics=5), "settings.metrics"),
    (lambda meta: meta.update(optimizer="Adam"), "optimizer is 'Adam'"),
    (lambda meta: meta.update(architecture=[]), "architecture cannot be built"),
    (lambda meta: meta["architecture"]["layers"].append({"type": "Sine", "w0": "fast"}), "w0 must be"),
])
def test_crafted_metadata_is_refused_by_every_command(capsys, tmp_path, model_file, change, message):
    rewrite_meta(model_file, lambda meta, arrays: change(meta))
    expect_refused(capsys, tmp_path, model_file, message)


def test_an_architecture_larger_than_its_arrays_is_refused_without_allocating(capsys, tmp_path, model_file):
    rewrite_meta(model_file, lambda meta, arrays: meta["architecture"]["layers"].insert(0, HUGE_LINEAR))
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match="do not fit.*layers.0.weight"):
            checkpoint.load(model_file)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20
    expect_refused(capsys, tmp_path, model_file, "do not fit")


def test_an_array_header_that_overstates_its_data_is_refused_without_allocating(tmp_path, model_file):
    with np.load(model_file) as archive:
        arrays = {k: archive[k] for k in archive.files}
    with zipfile.ZipFile(tmp_path / "crafted.npz", "w") as crafted:
        for name, value in arrays.items():
            header = io.BytesIO()
            # A terabyte-sized shape over the bytes of a small array.
            shape = (10**6, 10**6) if name == "model/layers.0.table" else value.shape
            np.lib.format.write_array_header_1_0(header, {"descr": np.lib.format.dtype_to_descr(value.dtype),
                                                          "fortran_order": False, "shape": shape})
            crafted.writestr(name + ".npy", header.getvalue() + value.tobytes())
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match="truncated or corrupt"):
            checkpoint.load(tmp_path / "crafted.npz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20


def test_a_model_of_activations_alone_is_refused(capsys, tmp_path):
    path = tmp_path / "relu.npz"
    checkpoint.save(path, Sequential(ReLU()), settings={"size": [8, 8]})
    expect_refused(capsys, tmp_path, path, "maps 2 inputs to 2 outputs")


def test_nan_weights_are_refused_instead_of_drawing_black(capsys, tmp_path, model_file):
    def poison(meta, arrays):
        arrays["model/layers.1.weight"] = arrays["model/layers.1.weight"].copy()
        arrays["model/layers.1.weight"][0, 0] = np.inf

    rewrite_meta(model_file, poison)
    # read_meta reads no weights, so only load can tell.
    expect_refused(capsys, tmp_path, model_file, "layers.1.weight holds NaN or inf", readers=(checkpoint.load,))


def test_finite_weights_that_overflow_are_refused_instead_of_drawing_black(capsys, tmp_path, model_file):
    def inflate(meta, arrays):
        for name in arrays:
            if name.endswith("weight"):
                arrays[name] = arrays[name] * np.float32(1e30)  # finite, but their products are not

    rewrite_meta(model_file, inflate)
    checkpoint.load(model_file)  # every weight is finite: the file loads
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, out, err = run_cli(capsys, "render", model_file, "--size", 8, "-o", tmp_path / "r.png")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "draws NaN or inf" in err and "RuntimeWarning" not in err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_text_file_is_not_advised_to_be_loaded_unsafely(capsys, tmp_path):
    path = tmp_path / "notes.npz"
    path.write_text("my notes, not a model\n" * 20)
    expect_refused(capsys, tmp_path, path, "not a zip archive")
    code, _, err = run_cli(capsys, "info", path)
    assert "pickle" not in err and "unsafe" not in err and "the model.npz or checkpoint.npz of a run of 'ironlearn fit'" in err


def test_a_compressed_archive_is_refused_clearly(tmp_path, model_file):
    with np.load(model_file) as archive:
        np.savez_compressed(tmp_path / "small.npz", **{k: archive[k] for k in archive.files})
    with pytest.raises(CheckpointError, match="compressed"):
        checkpoint.load(tmp_path / "small.npz")


def test_an_archive_from_a_newer_zip_version_is_refused_clearly(tmp_path, model_file):
    """zipfile raises NotImplementedError when the central directory asks for a zip version it
    lacks (the fuzz test below once found it): that is damage like any other."""
    data = bytearray(model_file.read_bytes())
    directory = data.find(b"PK\x01\x02")
    data[directory + 6] = 99  # "version needed to extract": 9.9
    (tmp_path / "newer.npz").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="not a zip archive"):
        checkpoint.load(tmp_path / "newer.npz")


def test_a_damaged_optimizer_is_a_checkpoint_error(model_file):
    rewrite_meta(model_file, lambda meta, arrays: meta["optimizer"].update(type=7))
    saved = checkpoint.load(model_file)
    with pytest.raises(CheckpointError, match="optimizer or schedule cannot be rebuilt"):
        saved.optimizer(saved.model.named_parameters())


@pytest.mark.parametrize("change,message", [
    (lambda meta: meta.update(step="abc"), "step is 'abc'"),
    (lambda meta: meta["settings"].update(size=[0, 0]), "settings.size is [0, 0]"),
])
def test_resume_refuses_crafted_metadata_and_keeps_the_run(capsys, tmp_path, change, message):
    picture = make_picture(tmp_path / "disc.png", size=16)
    run = tmp_path / "run"
    fast = ["--device", "cpu", "--quiet", "--width", "8", "--depth", "1"]
    assert run_cli(capsys, "fit", picture, "--out", run, "--steps", 3, *fast)[0] == 0
    rewrite_meta(run / "checkpoint.npz", lambda meta, arrays: change(meta))
    before = {p: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != ".lock"}
    code, _, err = run_cli(capsys, "fit", picture, "--out", run, "--resume", "--steps", 6, *fast)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert {p: p.read_bytes() for p in before} == before


# -- properties: whatever the bytes, the loaders load or raise CheckpointError -------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)
FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def must_load_or_refuse(path):
    """Load ``path`` as fit --resume, render and info would; anything but CheckpointError fails."""
    try:
        checkpoint.read_meta(path)
        saved = checkpoint.load(path)
        assert saved.step >= 0 and saved.channels in (1, 3) and isinstance(saved.settings, dict)
        if "optimizer" in saved.meta:
            saved.optimizer(saved.model.named_parameters())
    except CheckpointError:
        pass


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """A real checkpoint's bytes, its metadata and its arrays."""
    path = save_small(tmp_path_factory.mktemp("real") / "real.npz")
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    return path.read_bytes(), json.loads(arrays.pop("meta").tobytes()), arrays


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "model.npz"


def write_with_meta(path, meta, arrays):
    meta_bytes = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as file:
        np.savez(file, meta=meta_bytes, **arrays)


def paths_into(value, prefix=()):
    """Every key path into nested dicts and lists."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield prefix + (key,)
        yield from paths_into(child, prefix + (key,))


@FUZZ
@given(data=st.binary(max_size=3000))
def test_random_bytes_are_refused(scratch, data):
    scratch.write_bytes(data)
    with pytest.raises(CheckpointError):
        checkpoint.load(scratch)
    with pytest.raises(CheckpointError):
        checkpoint.read_meta(scratch)


@FUZZ
@given(edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=8)), max_size=4),
       keep=st.floats(0.05, 1.0))
def test_damaged_real_files_load_or_are_refused(real, scratch, edits, keep):
    data = bytearray(real[0])
    for where, patch in edits:
        at = int(where * len(data))
        data[at:at + len(patch)] = patch
    scratch.write_bytes(bytes(data[:int(keep * len(data))]))
    must_load_or_refuse(scratch)


@FUZZ
@given(meta=json_values)
def test_random_json_metadata_is_refused(real, scratch, meta):
    write_with_meta(scratch, meta, real[2])
    must_load_or_refuse(scratch)


@FUZZ
@given(data=st.data(), value=json_values)
def test_real_metadata_with_a_field_replaced_loads_or_is_refused(real, scratch, data, value):
    meta = json.loads(json.dumps(real[1]))
    *parents, last = data.draw(st.sampled_from(sorted(paths_into(meta), key=str)))
    target = meta
    for key in parents:
        target = target[key]
    target[last] = value
    write_with_meta(scratch, meta, real[2])
    must_load_or_refuse(scratch)


def test_info_formats_only_the_metrics_that_are_numbers(capsys, model_file):
    rewrite_meta(model_file, lambda meta, arrays: meta["settings"]["metrics"].update(psnr_db="high"))
    code, out, err = run_cli(capsys, "info", model_file)
    assert code == 0 and "PSNR" not in out and "steps: 1" in out, err
