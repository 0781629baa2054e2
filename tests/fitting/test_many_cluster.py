"""fit-many on a real two-node Ray cluster on this machine, which loses a node while a fit runs there."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import pytest

from helpers import children_of, make_picture, patience, wait_for
from ironlearn.fitting import folder as run_folder
from ironlearn.fitting.many import summary

pytestmark = [pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the second node's raylet through /proc"),
              pytest.mark.xdist_group("ray-cluster")]
pytest.importorskip("ray", reason="Ray is not installed: pip install 'ironlearn[ray]' (CI installs it)")

STARTED = "Ray runtime started"
# Token authentication (on by default once ~/.ray/auth_token exists) is not what is tested here, and
# the pytest process may have turned it on for its own Ray instance; node death is noticed in ~2 s.
ENVIRONMENT = {"RAY_AUTH_MODE": "disabled", "RAY_health_check_period_ms": "500",
               "RAY_health_check_failure_threshold": "3"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def named(pids, name: str) -> list[int]:
    def comm(pid):
        try:
            with open(f"/proc/{pid}/comm") as file:
                return file.read().strip()
        except OSError:
            return ""
    return [pid for pid in pids if comm(pid) == name]


class Node:
    """``ray start --block`` in a session of its own: stopping it stops every process it started."""

    def __init__(self, base: str, name: str, args: list, env: dict):
        self.log = os.path.join(base, f"{name}.log")
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", "--disable-usage-stats",
                 f"--temp-dir={os.path.join(base, name)}", f"--dashboard-agent-listen-port={free_port()}", *args],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def started(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"ray start exited with {self.process.returncode}: {open(self.log).read()[-2000:]}")
        with open(self.log) as log:
            return STARTED in log.read()

    def stop(self) -> None:
        """SIGTERM (Ray shuts its processes down), then SIGKILL to its whole session for what is left:
        this cluster's processes only, never another Ray on the machine (as `ray stop` would)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


@pytest.fixture
def cluster():
    """A head node and a second node, one CPU each, the second with its own temporary folder (where
    its tasks fit, so a test sees what runs there).  Yields ``(address, second, its tmp folder)``."""
    # Short: Ray's socket paths under --temp-dir must fit in 107 bytes, which tmp_path's do not.
    base = tempfile.mkdtemp(prefix="ironlearn-ray-", dir="/tmp")
    env = {**os.environ, **ENVIRONMENT}
    second_tmp = os.path.join(base, "second-tmp")
    os.mkdir(second_tmp)
    nodes = []
    try:
        port = free_port()
        nodes.append(Node(base, "head", ["--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                                         f"--ray-client-server-port={free_port()}"], env))
        wait_for(nodes[0].started, 60, "the head node")
        nodes.append(Node(base, "second", [f"--address=127.0.0.1:{port}", "--num-cpus=1",
                                           '--resources={"second": 1}'], {**env, "TMPDIR": second_tmp}))
        wait_for(nodes[1].started, 60, "the second node")
        yield f"127.0.0.1:{port}", nodes[1], second_tmp
    finally:
        for node in reversed(nodes):
            node.stop()
        shutil.rmtree(base, ignore_errors=True)


def steps_in(history) -> list[int]:
    with open(history) as file:
        return [int(line.split(",")[0]) for line in file.read().splitlines()[1:]]


def test_a_lost_node_has_its_picture_fitted_again_on_the_other(cluster, tmp_path):
    """Four pictures, one fit at a time on each node; once a fit on the second node has saved a checkpoint,
    that node's raylet is killed (a machine lost).  Ray runs the task again on the head node: every
    picture ends done, each once, in a run folder that holds one whole run."""
    address, second, second_tmp = cluster
    names = ["a", "b", "c", "d"]
    for name in names:
        make_picture(tmp_path / f"{name}.png", 64)
    out = tmp_path / "out"
    driver = subprocess.Popen(
        [sys.executable, "-m", "ironlearn", "fit-many", *[tmp_path / f"{n}.png" for n in names], "--out", out,
         "--engine", "ray", "--address", address, "--workers", "2", "--steps", "1500", "--checkpoint-every", "20",
         "--width", "8", "--depth", "1", "--device", "cpu", "--quiet"],
        stderr=subprocess.PIPE, text=True, env={**os.environ, **ENVIRONMENT})
    try:
        def fitting_there():
            for task_folder in os.listdir(second_tmp):
                if os.path.isfile(os.path.join(second_tmp, task_folder, "run", "checkpoint.npz")):
                    return [n for n in names if os.path.isfile(os.path.join(second_tmp, task_folder, f"{n}.png"))]
        lost = wait_for(fitting_there, 60, "a fit with a checkpoint on the second node")[0]
        raylet = named(children_of(second.process.pid), "raylet")
        assert raylet, "the second node's raylet"
        os.kill(raylet[0], signal.SIGKILL)
        _, err = driver.communicate(timeout=patience(120))
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()

    assert driver.returncode == 0, err
    abandoned = [f for f in os.listdir(second_tmp) if os.path.isfile(os.path.join(second_tmp, f, f"{lost}.png"))]
    assert abandoned, "the lost fit never finished on the second node: its temporary folder is still there"
    rows = summary.read(out / "summary.csv")
    assert [(r["picture"], r["status"], r["steps"]) for r in rows] == [(n, "done", "1500") for n in names], err
    for name in names:
        run = out / name
        finished = set(run_folder.FILES) - {run_folder.FRAMES}  # a finished run's frames are in its GIF
        assert sorted(os.listdir(run)) == sorted(finished), name  # no lock, no temporaries, no extra
        steps = steps_in(run / run_folder.HISTORY)
        assert steps == sorted(set(steps)) and steps[-1] == 1500, (name, steps)  # one run, not two mixed
