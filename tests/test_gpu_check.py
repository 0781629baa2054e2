"""benchmarks/gpu, the one command a GPU machine runs, runs here on the CPU at tiny sizes, so
that it cannot rot before a GPU comes; it measures the models ``fit`` trains (the pixel spline a
tile a step, the pyramid, SIREN); and its PyTorch peer is the same model as ironlearn's."""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from strict_device import strict_device

from ironlearn import kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCHMARKS)

import common  # noqa: E402
import gpu.device  # noqa: E402
import gpu.harness  # noqa: E402
import gpu.report  # noqa: E402
import gpu.speed  # noqa: E402


def _torch_importable() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _run(out, *arguments, timeout=240):
    return subprocess.run([sys.executable, os.path.join(BENCHMARKS, "gpu"), "--device", "cpu", "--out", str(out),
                           *arguments], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_the_gpu_check_runs_every_part_on_the_cpu(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "report.md").is_file()
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["meta"]["device"] == "cpu" and report["meta"]["size"] == "tiny"
    parts = report["parts"]
    assert list(parts) == list(gpu.harness.PARTS)
    for name, part in parts.items():
        expected = "skipped" if name == "torch" and not _torch_importable() else "ok"
        assert part["status"] == expected, (name, part.get("error"))
        assert part["result"].get("headline"), name
    result = {name: part["result"] for name, part in parts.items()}
    assert {"python", "numpy", "cupy", "torch", "scikit_image"} <= set(result["env"])
    assert result["tests"]["exit_code"] == 0 and result["tests"]["counts"].get("passed", 0) > 0
    assert result["syncs"]["clean"] is True
    assert all(row["copies"] == 0 and row["sync or copy error"] is None for row in result["syncs"]["rows"])
    assert [(row["model"], row["batch"]) for row in result["step"]["rows"]] == [
        (model, batch) for model in gpu.speed.MODELS for batch in gpu.harness.TINY.batches]
    for row in result["step"]["rows"]:
        assert row["cold_ms"] > 0 and row["warm_median_ms"] > 0 and row["steps"] == gpu.harness.TINY.steps
        assert row["tiles"] is (row["model"] == "pixel spline") and row["fit loop ms/step"] > 0
    spline = result["syncs"]["rows"][0]
    assert "pixel spline" in spline["step"] and spline["held"] != "-"  # the head held, as fit holds it
    assert {"gather numpy ms", "scatter numpy ms"} <= set(result["kernels"]["rows"][0])
    assert result["siren"]["rows"][-1]["framework"].startswith("ironlearn")
    assert result["camera"]["final_psnr_db"] > 15 and "target_hit" in result["camera"]
    assert set(result["photo12"]["marks"]) == {str(m) for m in gpu.harness.TINY.photo_marks}
    assert result["photo12"]["tiles"] and result["photo12"]["start"] == "picture" and result["photo12"]["held"]
    assert set(result["photo100"]["marks"]) == {str(m) for m in gpu.harness.TINY.big_marks}
    assert result["parity"]["psnr_difference_db"] == 0  # NumPy against NumPy, same seed
    markdown = (tmp_path / "report.md").read_text()
    assert "These figures measure nothing" in markdown
    assert all(f"## {name}:" in markdown for name in gpu.harness.PARTS)


def test_the_gpu_parts_run_their_device_code_on_a_pretend_gpu(monkeypatch, tmp_path):
    """The parts' code for a GPU (both kernel modes, CUDA events, the pool, the busy check) runs
    here against the pretend GPU of strict_device: what a CPU run cannot reach, short of CUDA."""
    args = argparse.Namespace(device="cuda", size="tiny", out=str(tmp_path), tests="cuda", limit=60)
    with strict_device(monkeypatch):
        for name in ("env", "syncs", "kernels", "step", "fused", "siren", "camera", "photo12", "parity"):
            ctx = gpu.harness.Context(name, args)
            gpu.harness.PARTS[name].run(ctx)
            assert ctx.result.get("headline"), name
            assert (tmp_path / "parts" / f"{name}.json").is_file()
            if name == "syncs":  # no copy, no sync; a pretend GPU is never busy, so that check fails
                assert all(r["copies"] == 0 and r["sync or copy error"] is None for r in ctx.result["rows"])
                assert {r["mode"] for r in ctx.result["rows"]} == set(kernels.MODES)
            if name == "step":
                assert {(r["model"], r["batch"], r["mode"]) for r in ctx.result["rows"]} == {
                    (model, b, m) for model in gpu.speed.MODELS for b in gpu.harness.TINY.batches
                    for m in kernels.MODES}
            if name == "parity":
                assert [r["device"] for r in ctx.result["rows"]] == ["cpu", "cuda"]
                assert abs(ctx.result["psnr_difference_db"]) < 0.5


def test_a_part_past_the_budget_is_skipped_and_said(tmp_path):
    done = _run(tmp_path, "--parts", "env", "parity", "--budget", "5")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    for name in ("env", "parity"):
        assert report["parts"][name]["status"] == "skipped"
        assert f"--parts {name}" in report["parts"][name]["error"]


def test_the_report_keeps_a_failed_part(tmp_path):
    report = {"meta": {"started": "now", "command": "gpu", "device": "cuda", "size": "full", "parts": ["step"],
                       "finished_parts": 1, "seconds": 3.0},
              "parts": {"step": {"status": "error", "seconds": 1.0, "result": {"rows": [{"batch": 1, "x": None}]},
                                 "error": "Traceback: CompileException"}}}
    gpu.report.write_report(str(tmp_path), report)
    markdown = (tmp_path / "report.md").read_text()
    assert "| step | error |" in markdown and "CompileException" in markdown and "| batch | x |" in markdown


def test_the_synthetic_photograph_has_detail_at_every_scale():
    picture = gpu.device.synthetic_photo(np, 300, 200, 3)
    assert picture.shape == (200, 300, 3) and picture.dtype == np.uint8
    np.testing.assert_array_equal(picture, gpu.device.synthetic_photo(np, 300, 200, 3))
    fine = np.abs(np.diff(picture.astype(np.int16), axis=1)).mean()
    coarse = picture.reshape(10, 20, 20, 15, 3).mean(axis=(1, 3)).std()
    assert fine > 2 and coarse > 10


@pytest.mark.skipif(not _torch_importable(), reason="PyTorch is not installed here (the bench extra, not a test "
                                                    "dependency): the peer is checked where it is")
def test_the_torch_peer_is_ironlearns_model():
    import torch
    import torch_peer

    from ironlearn.nn import hashgrid, mse

    rng = np.random.default_rng(0)
    for options in (dict(levels=4, log2_table_size=10, coarsest=4, finest=200),  # hashed levels
                    dict(levels=2, log2_table_size=12, coarsest=2, finest=40, centred=True),
                    # a vertex per pixel of a 30x20 picture, read by a B-spline and a linear head
                    dict(levels=1, log2_table_size=10, coarsest=30, finest=30, finest_y=20, centred=True,
                         interpolation="bspline", depth=0)):
        options = {"depth": 2, **options}
        model = hashgrid(2, 3, width=16, rng=np.random.default_rng(1), **options)
        model.layers[0].sparse_reads = 0  # a dense gradient, to compare whole tables
        x = rng.uniform(-1.1, 1.1, (3000, 2)).astype(np.float32)
        y = rng.uniform(size=(3000, 3)).astype(np.float32)
        peer = torch_peer.peer_of(model)
        value, grad = mse(model.forward(x), y)
        model.backward(grad)
        loss = torch.nn.functional.mse_loss(peer(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        assert loss.item() == pytest.approx(float(value), rel=1e-5)
        np.testing.assert_allclose(peer[0].table.grad.numpy(), model.layers[0].grads["table"], atol=1e-7)
    pixels = torch.randint(0, 256, (64 * 48, 3), dtype=torch.uint8)
    step = torch_peer.hashgrid_stepper(model, pixels, 64, 48, 256, 20, "cpu")
    timing = common.time_steps(step, torch_peer.clock("cpu"), 1, 2)
    assert timing["warm_median_ms"] > 0 and timing["steps"] == 2
