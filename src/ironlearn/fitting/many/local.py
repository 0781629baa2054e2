"""The local engine: a pool of worker processes on this machine, each fitting one picture at a time.

Each worker is a fresh Python (``python -m ironlearn.fitting.many.worker``) started with
its share of the cores as its BLAS thread limit in its environment: the limit has to be
there before numpy loads its BLAS, which a forked process, or a pool initializer that runs
after the pool's modules (and numpy) are imported, would be too late for.  Workers run in
their own session, so a Ctrl-C on the terminal reaches only the driver, which forwards
exactly one SIGINT to each busy worker (a second one would stop a fit without saving).
"""

from __future__ import annotations

import collections
import os
import signal
import site
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import wait

from .task import FAILED, INTERRUPTED, Outcome
from .worker import read_message, write_message

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS")
POLL_SECONDS = 0.2  # how often the driver looks for a Ctrl-C while it waits
EXIT_SECONDS = 10.0  # a worker told to exit gets this long before it is killed


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_workers() -> int:
    """One worker per core, each on one BLAS thread: two workers on two cores fitted 1.8 times the
    pictures a minute of one worker on two threads, whose threads spin against any other work
    (docs/benchmarks.md, fit-many)."""
    return max(1, cores())


def thread_environment(threads: int) -> dict:
    """The variables that cap numpy's BLAS (OpenBLAS, MKL, Accelerate) and OpenMP at ``threads``."""
    return {name: str(threads) for name in THREAD_VARIABLES}


def worker_environment(threads: int) -> dict:
    """This process's environment with the thread caps, and ironlearn importable as it is here
    (a source tree on this process's path goes on the worker's; site-packages is there already,
    and on PYTHONPATH it would come before the standard library)."""
    env = {**os.environ, **thread_environment(threads)}
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    installed = {os.path.abspath(p) for p in (*site.getsitepackages(), site.getusersitepackages())}
    if package_root not in installed:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    return env


class Worker:
    """One worker process: tasks go down its stdin, outcomes come up its stdout; its stderr
    (the fits' plain progress lines, a crash's traceback) goes to a temporary file."""

    def __init__(self, env: dict):
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen([sys.executable, "-m", "ironlearn.fitting.many.worker"], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                        bufsize=0, start_new_session=os.name == "posix")

    def send(self, task) -> None:
        write_message(self.process.stdin, task)

    def receive(self) -> Outcome | None:
        """The outcome of its task, or None when the process died without one."""
        return read_message(self.process.stdout)

    def interrupt(self) -> None:
        try:
            self.process.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass

    def close(self) -> str:
        """Tell it to exit (end of input), kill it if it does not, and say how it ended."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            code = self.process.wait(EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.process.stdout.close()
        why = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        last = self._last_error_line()
        self.stderr.close()
        return f"{why}: {last}" if last and code > 0 else why

    def _last_error_line(self) -> str:
        self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(0, self.stderr.tell() - 4096))
        lines = [line.strip() for line in self.stderr.read().decode(errors="replace").splitlines() if line.strip()]
        return lines[-1] if lines else ""


class LocalEngine:
    """Fits pictures in ``workers`` processes on this machine, each with ``threads`` BLAS threads."""

    def __init__(self, workers: int, threads: int, log):
        self.workers, self.threads, self.log = workers, threads, log
        self.env = worker_environment(threads)

    def describe(self) -> str:
        return (f"the local engine: {self.workers} worker process{'es' if self.workers > 1 else ''} "
                f"x {self.threads} thread{'s' if self.threads > 1 else ''}")

    def start(self) -> None:
        pass  # workers start as tasks come

    def close(self) -> None:
        pass

    def run(self, tasks, report, stop) -> None:
        """Fit ``tasks``, calling ``report(task, outcome)`` as each ends.

        A task whose worker dies (killed, out of memory) is retried once in a new worker; one
        whose worker was stopped by a signal of its own (SIGTERM) is reported as interrupted,
        with its checkpoint saved.  Once ``stop.count`` is above zero (Ctrl-C or SIGTERM to
        the driver), no task starts and each busy worker gets one SIGINT; a second stop sends
        another (stop at once), a third kills them.
        """
        queue, idle, busy, forwarded = collections.deque(tasks), [], {}, 0
        try:
            while busy or (queue and not stop.count):
                while queue and not stop.count and len(busy) < self.workers:
                    task = queue.popleft()
                    busy[self._start(task, idle)] = (task, time.time())
                if stop.count > forwarded:
                    forwarded = stop.count
                    for worker in busy:
                        if forwarded < 3:
                            worker.interrupt()
                        else:
                            worker.process.kill()
                ready = wait([worker.process.stdout for worker in busy], POLL_SECONDS)
                for worker in [w for w in busy if w.process.stdout in ready]:
                    task, started = busy.pop(worker)
                    outcome = worker.receive()
                    if outcome is not None:
                        if outcome.status == INTERRUPTED:
                            worker.close()  # it exits: the signal that stopped its fit was meant for it
                        else:
                            idle.append(worker)
                        report(task, outcome)
                        continue
                    why = worker.close()
                    if stop.count:
                        report(task, Outcome(INTERRUPTED, error=f"its worker stopped ({why})"))
                    elif task.attempt == 1:
                        self.log(f"{task.name}: its worker process died ({why}); trying it once more")
                        queue.appendleft(task.retry(started))
                    else:
                        report(task, Outcome(FAILED, error=f"its worker process died twice (last: {why})"))
        finally:
            for worker in idle + list(busy):
                worker.close()

    def _start(self, task, idle: list) -> Worker:
        """A worker given ``task``: an idle one, or a new one (also when the idle one has died)."""
        while idle:
            worker = idle.pop()
            try:
                worker.send(task)
                return worker
            except OSError:  # it died while idle (the OOM killer picks the largest process)
                worker.close()
        worker = Worker(self.env)
        worker.send(task)
        return worker
