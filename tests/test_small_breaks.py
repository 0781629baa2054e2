"""Smaller breaks found by trying ironlearn as a careless and as a hostile user would (issue 40, part 4).

Each case ends in one line on stderr and the exit code of its kind (2: bad input, 143: SIGTERM), or
in a ValueError or TypeError from Python, with no traceback and every file the user had unchanged
byte for byte.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import ironlearn
from helpers import make_picture, patience, run_cli, wait_for, waves
from ironlearn.signals import Terminated, handling

QUICK = {"device": "cpu", "width": 8, "depth": 1}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A tiny run folder and a compressed file, as inputs."""
    folder = tmp_path_factory.mktemp("made")
    ironlearn.fit(make_picture(folder / "pic.png", size=24, colour=True), out=folder / "run", steps=3, **QUICK)
    ironlearn.compress(waves(16, 16, 3), folder / "pic.ilc", seconds=0.1)
    return folder


def snapshot(*folders):
    return {p: p.read_bytes() for folder in folders for p in folder.rglob("*") if p.is_file()}


def assert_one_line(capsys, args, code, message, *folders):
    """``ironlearn ARGS`` exits ``code`` with one line holding ``message``, and leaves ``folders`` as they were."""
    before = snapshot(*folders)
    got, _, err = run_cli(capsys, *args)
    assert got == code, err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert snapshot(*folders) == before


# -- a scale past what a float holds ------------------------------------------------------------
HUGE = "1" + "0" * 400


@pytest.mark.parametrize("args, message", [
    (["render", "{run}", "--scale", "1e308"], "scale 1e+308 makes a render more than 65536 pixels a side"),
    (["render", "{ilc}", "--scale", "1e308"], "scale 1e+308 makes a render more than 65536 pixels a side"),
    (["decompress", "{ilc}", "--scale", "1e308"], "scale 1e+308 makes a render more than 65536 pixels a side"),
    (["render", "{run}", "--scale", "1e20"], "makes a render more than 65536 pixels a side"),
    (["render", "{run}", "--size", HUGE], "is above the limit of 65536 pixels a side"),
    (["decompress", "{ilc}", "--size", HUGE], "is above the limit of 65536 pixels a side"),
], ids=["render run", "render ilc", "decompress", "1e20", "render size 1e400", "decompress size 1e400"])
def test_a_scale_or_size_past_a_float_is_one_line(made, tmp_path, capsys, args, message):
    """--scale 1e308 ended in OverflowError and exit 1 (round() of inf); --size 10**400 too."""
    args = [a.format(run=made / "run", ilc=made / "pic.ilc") for a in args]
    assert_one_line(capsys, [*args, "-o", tmp_path / "out.png"], 2, message, made, tmp_path)
    assert not (tmp_path / "out.png").exists()


def test_render_and_decompress_in_python_refuse_such_a_scale_with_a_value_error(made):
    for draw in (lambda: ironlearn.render(made / "run", scale=1e308), lambda: ironlearn.render(made / "pic.ilc", scale=1e308),
                 lambda: ironlearn.decompress(made / "pic.ilc", scale=1e308)):
        with pytest.raises(ValueError, match="scale 1e\\+308 makes a render more than 65536 pixels a side"):
            draw()


# -- a page at a path the user named is theirs ------------------------------------------------------
def test_a_page_the_user_named_is_not_replaced_by_another_commands_default_page(made, tmp_path, capsys):
    """`view runs/photo -o vw/photo.html`, then `view vw/photo.ilc`, replaced the user's page without --force."""
    (tmp_path / "vw").mkdir()
    (tmp_path / "vw" / "photo.ilc").write_bytes((made / "pic.ilc").read_bytes())
    assert run_cli(capsys, "view", made / "run", "-o", tmp_path / "vw" / "photo.html")[0] == 0
    assert_one_line(capsys, ["view", tmp_path / "vw" / "photo.ilc"], 2, "already exists", tmp_path)
    code, _, err = run_cli(capsys, "view", tmp_path / "vw" / "photo.ilc", "--force")
    assert code == 0, err
    # Now ironlearn's own page at its own place: rewritten without asking, as before.
    assert run_cli(capsys, "view", tmp_path / "vw" / "photo.ilc")[0] == 0


# -- flags are bools --------------------------------------------------------------------------------
@pytest.mark.parametrize("flag", [{"force": "False"}, {"resume": "False"}, {"progress": "no"}, {"quiet": 1},
                                  {"force": None}])
def test_fit_takes_only_a_bool_as_a_flag(made, tmp_path, flag):
    """fit(..., force='False') replaced a run; resume='False' resumed; progress='no' printed."""
    out = tmp_path / "run"
    ironlearn.fit(made / "pic.png", out=out, steps=2, **QUICK)
    before = snapshot(tmp_path)
    with pytest.raises(TypeError, match=f"{next(iter(flag))} must be True or False"):
        ironlearn.fit(made / "pic.png", out=out, steps=4, **QUICK, **flag)
    assert snapshot(tmp_path) == before


def test_compress_takes_only_a_bool_as_force(tmp_path):
    (tmp_path / "user.ilc").write_bytes(b"mine")
    with pytest.raises(TypeError, match="force must be True or False"):
        ironlearn.compress(waves(8, 8, 1), tmp_path / "user.ilc", seconds=0.1, force="False")
    assert (tmp_path / "user.ilc").read_bytes() == b"mine"
    ironlearn.compress(waves(8, 8, 1), tmp_path / "user.ilc", seconds=0.1, force=np.bool_(True))  # NumPy's bool is one


# -- a port is a whole number from 0 to 65535 ------------------------------------------------------
@pytest.mark.parametrize("port, error, message", [
    (-1, ValueError, "port must be from 0 (any free port) to 65535 (got -1)"),
    (70000, ValueError, "port must be from 0 (any free port) to 65535 (got 70000)"),
    (True, TypeError, "port must be a whole number from 0 to 65535 (got True)"),
    ("8000", TypeError, "port must be a whole number from 0 to 65535 (got '8000')"),
    (80.0, TypeError, "port must be a whole number from 0 to 65535 (got 80.0)"),
])
def test_a_port_that_is_no_port_is_refused_as_the_command_refuses_it(made, tmp_path, port, error, message):
    """fit(live=True, port=-1 or 70000) raised OverflowError; port=True served on port 1."""
    from ironlearn.viewer import make_server

    with pytest.raises(error) as raised:
        ironlearn.fit(made / "pic.png", out=tmp_path / "run", steps=2, live=True, port=port, open_browser=False,
                      **QUICK)
    assert str(raised.value) == message
    with pytest.raises(error, match=re.escape(message)):
        make_server(made / "pic.png", port)  # what view --serve runs
    assert not (tmp_path / "run").exists()


def test_a_port_without_the_live_page_is_refused_as_the_command_refuses_it(made, tmp_path):
    """fit(port=9000) without live=True was taken and ignored; --port without --live is refused."""
    from ironlearn.fitting import UsageError

    with pytest.raises(UsageError, match="port is for the live page; add live=True"):
        ironlearn.fit(made / "pic.png", out=tmp_path / "run", steps=2, port=9000, **QUICK)
    assert not (tmp_path / "run").exists()


# -- arrays given to compress() ------------------------------------------------------------------
@pytest.mark.parametrize("values, options, message", [
    (np.zeros((0, 0, 3)), {}, "the picture is empty"),
    (np.zeros((8, 0)), {}, "the picture is empty"),
    (np.full((8, 8), np.nan), {}, "NaN or infinite values"),
    (np.full((8, 8, 3), np.inf, np.float32), {}, "NaN or infinite values"),
    (np.zeros((8, 8), np.int64), {}, "pixels of type int64 have no known white"),
    (np.zeros((8, 8, 3), np.uint8), {"seconds": float("inf")}, "seconds must be a finite number"),
    (np.zeros((8, 8, 3), np.uint8), {"mode": "grey"}, "unknown mode 'grey'"),
], ids=["0x0", "8x0", "nan", "inf", "int64", "seconds inf", "mode grey"])
def test_compress_refuses_an_array_it_cannot_compress_in_one_line(tmp_path, values, options, message):
    """These raised ZeroDivisionError, "uint takes 0 <= value < 2**64" and OverflowError from deep inside."""
    with pytest.raises(ValueError, match=message) as refused:
        ironlearn.compress(values, tmp_path / "out.ilc", seconds=options.pop("seconds", 0.1), **options)
    assert "\n" not in str(refused.value)
    assert not os.listdir(tmp_path)


def test_a_16_bit_array_is_scaled_as_a_16_bit_file_is():
    """A uint16 array came out white (clipped to 1): 65535 is its white."""
    mid_gray = np.full((16, 16), 32768, np.uint16)
    drawn = ironlearn.decompress(ironlearn.compress(mid_gray, seconds=0.1).data)
    assert drawn.mean() == pytest.approx(0.5, abs=0.1)  # white was 1.0; a tiny flat picture lands within 0.1


def test_mode_converts_an_array_as_it_converts_a_file():
    """mode= was ignored for arrays."""
    red = np.zeros((16, 16, 3), np.uint8)
    red[..., 0] = 255
    gray = ironlearn.decompress(ironlearn.compress(red, seconds=0.1, mode="gray").data)
    assert gray.shape == (16, 16, 1) and gray.mean() == pytest.approx(0.299, abs=0.1)
    colour = ironlearn.decompress(ironlearn.compress(waves(16, 16, 1), seconds=0.1, mode="rgb").data)
    assert colour.shape == (16, 16, 3)


# -- what a killed write leaves -----------------------------------------------------------------------
def temporaries(folder, name):
    return sorted(entry for entry in os.listdir(folder) if entry.startswith(f".{name}.") and entry.endswith(".tmp"))


def test_a_killed_render_leaves_a_temporary_that_the_next_write_removes(made, tmp_path, capsys):
    """A render killed mid-write left .NAME.*.tmp, and the next write to that name left it too."""
    out = tmp_path / "big.png"
    proc = subprocess.Popen([sys.executable, "-m", "ironlearn", "render", str(made / "run"), "--size", "16000",
                             "-o", str(out), "--device", "cpu"], stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: temporaries(tmp_path, "big.png"), timeout=60, what="the render's temporary")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    assert temporaries(tmp_path, "big.png") and not out.exists()
    code, _, err = run_cli(capsys, "render", made / "run", "--size", "8", "-o", out, "--device", "cpu")
    assert code == 0 and out.exists(), err
    assert temporaries(tmp_path, "big.png") == []


def test_the_temporary_of_a_write_still_in_flight_is_left_alone(tmp_path):
    """A temporary is stale when no process holds its lock: a live writer's is not touched, and
    another name's never."""
    import fcntl

    from ironlearn.files import write_bytes

    live, stale, other = (tmp_path / name for name in (".a.png.live1234.tmp", ".a.png.dead5678.tmp",
                                                        ".a.png.x.abcd1234.tmp"))
    for path in (live, stale, other):
        path.write_bytes(b"partial")
    with open(live, "rb+") as writer:  # another open file: its lock holds against this process's too
        fcntl.flock(writer, fcntl.LOCK_EX)
        write_bytes(tmp_path / "a.png", b"done")
        assert temporaries(tmp_path, "a.png") == [live.name, other.name]
    write_bytes(tmp_path / "a.png", b"again")  # its writer gone: now it is stale
    assert temporaries(tmp_path, "a.png") == [other.name] and (tmp_path / "a.png").read_bytes() == b"again"


# -- SIGTERM ------------------------------------------------------------------------------------------
def test_a_second_sigterm_in_a_fit_is_still_a_sigterm():
    """Two SIGTERMs 0.2 s apart exited 130 with Ctrl-C's message: the second raised KeyboardInterrupt."""
    from ironlearn.fitting.run import stop_on_signals

    class Trainer:
        stops = 0

        def request_stop(self):
            self.stops += 1

    trainer = Trainer()
    with pytest.raises(KeyboardInterrupt) as first:  # not pytest.raises(Terminated): a plain one would stop pytest
        with stop_on_signals(trainer) as came:
            os.kill(os.getpid(), signal.SIGTERM)
            assert came == [signal.SIGTERM] and trainer.stops == 1  # the first: finish the step, then save
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs between bytecodes, before this ends
    assert isinstance(first.value, Terminated)
    with pytest.raises(KeyboardInterrupt) as second:
        with stop_on_signals(Trainer()):
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    assert type(second.value) is KeyboardInterrupt  # Ctrl-C twice is Ctrl-C


def test_a_handler_set_outside_python_is_put_back_as_the_default(monkeypatch):
    """signal.signal() returns None for a handler Python did not set, and signal.signal(n, None) raises."""
    real, calls = signal.signal, []

    def recording(signum, handler):
        calls.append(handler)
        previous = real(signum, handler)
        return None if len(calls) == 1 else previous

    before = signal.getsignal(signal.SIGUSR1)
    try:
        monkeypatch.setattr(signal, "signal", recording)
        with handling((signal.SIGUSR1,), lambda signum, frame: None):
            pass
        assert calls[-1] is signal.SIG_DFL
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGUSR1, before)


def test_sigterm_stops_view_serve_with_143_and_its_own_words(made, tmp_path):
    """SIGTERM to `view --serve` exited 0, as Ctrl-C ends it."""
    proc = subprocess.Popen([sys.executable, "-m", "ironlearn", "view", str(made / "run"), "-o",
                             str(tmp_path / "page.html"), "--serve", "--port", "0", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("http://127.0.0.1:")  # serving
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=patience(30))
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1].startswith("stopped by SIGTERM") and "Traceback" not in err, err


# -- special files --------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["info", "render", "view"])
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_device_or_pipe_is_named_as_such_not_as_missing(tmp_path, capsys, command, kind):
    """`info /dev/zero` and `info` on a named pipe said "no such file"."""
    source = tmp_path / "pipe"
    if kind == "fifo":
        os.mkfifo(source)
    else:
        source = "/dev/zero"
    extra = {"render": ["--size", "8", "-o", tmp_path / "out.png"], "view": ["-o", tmp_path / "out.html"]}
    assert_one_line(capsys, [command, source, *extra.get(command, [])], 2, "is not a regular file", tmp_path)
    assert sorted(os.listdir(tmp_path)) == (["pipe"] if kind == "fifo" else [])


def test_view_serve_on_a_port_in_use_writes_nothing(made, tmp_path, capsys):
    """It wrote the page first, then exited 2."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert_one_line(capsys, ["view", made / "run", "-o", tmp_path / "page.html", "--serve", "--port", port,
                                 "--no-browser"], 2, f"cannot serve on 127.0.0.1:{port}", tmp_path, made)
    assert not (tmp_path / "page.html").exists()
