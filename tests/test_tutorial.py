"""Every Python block in docs/tutorial.md runs as written, in order, in an empty folder, and
teaches what its text says it does."""

import warnings

import numpy as np
from PIL import Image

from helpers import DOCS, run_page
from ironlearn.image import psnr
from ironlearn.nn.sparse import RowGrad


def test_every_block_of_the_tutorial_runs_and_teaches_what_it_says(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an overflow or a 0/0 would print on stderr
        ns = run_page("tutorial.md", at_least=8)

    # 1. Backprop agrees with finite differences: closely in float64, loosely in float32.
    assert ns["gap64"] < 1e-8 < ns["gap32"] < 1e-3
    assert ns["layers"][0].params["weight"].dtype == np.float64

    # 2. XOR: all four cases right, by a wide margin.
    predictions = ns["xor_predictions"].ravel()
    np.testing.assert_array_equal(predictions > 0.5, ns["y"].ravel() > 0.5)
    assert np.abs(predictions - ns["y"].ravel()).max() < 0.01

    # 3. Logistic regression: near the best any line can do, on points it never saw too.
    assert ns["best_possible"] - 0.03 < ns["test_accuracy"] <= 1
    assert ns["train_accuracy"] > ns["best_possible"] - 0.03

    # 4-5. The hash grid fits the picture far better than the MLP in the same steps, with fewer
    # parameters.
    assert 10 < ns["mlp_psnr"] < 25  # it learned something (the disc), not the rings
    assert ns["grid_psnr"] > 35 and ns["grid_psnr"] > ns["mlp_psnr"] + 15
    assert ns["hashed"].num_parameters < ns["mlp"].num_parameters
    assert ns["grid"].hashed == [False, False, False, True]  # the finest level shares its rows
    assert ns["multiply_adds"](ns["hashed"]) * 4 < ns["multiply_adds"](ns["mlp"])

    # One pixel's gradient reaches 16 of the table's rows (4 vertices at 4 levels), as rows only.
    table_grad = ns["table_grad"]
    assert isinstance(table_grad, RowGrad) and len(table_grad.rows) == 16
    assert ns["moved"](ns["hashed"]) < ns["moved"](ns["mlp"])

    # The figure the page shows is the one these blocks draw.
    drawn = np.asarray(Image.open(tmp_path / "fits.png"), np.float64) / 255
    shown = np.asarray(Image.open(DOCS / "images" / "tutorial-fits.png"), np.float64) / 255
    assert drawn.shape == shown.shape == (256, 768)
    assert psnr(drawn, shown) > 40, "docs/images/tutorial-fits.png is out of date: copy fits.png over it"

    # 6. ironlearn.fit wrote a run folder and fitted the picture.
    run = ns["run"]
    assert run.metrics["steps"] == 300 and run.metrics["psnr_db"] > 45
    assert 2 ** run.model.layers[0].log2_table_size == 64 * 64  # the finest level whole, no larger
    assert capsys.readouterr().err == ""  # nothing on stderr
