"""Stopping on a signal: SIGTERM unwinds like Ctrl-C, as :class:`Terminated`, and a handler set for a
while is put back safely.

SIGTERM is what Ray, Slurm, Kubernetes and ``timeout`` send to stop a job.  ironlearn treats it as
Ctrl-C (locks are released, half-written files removed, a fit saves its checkpoint), and the
command tells the two apart by the exception: it exits 143 for :class:`Terminated`, 130 for a
plain ``KeyboardInterrupt``.  A handler that stops at once raises :func:`stop_now`'s exception, so
a second SIGTERM is still a SIGTERM.
"""

from __future__ import annotations

import contextlib
import signal
import threading


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: unwinds like Ctrl-C, so locks are released and
    half-written files removed on the way out."""


def stop_now(signum: int) -> KeyboardInterrupt:
    """The exception that stops at once on ``signum``: :class:`Terminated` for SIGTERM, a plain
    ``KeyboardInterrupt`` for Ctrl-C."""
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def handling(signums, handler):
    """While inside, ``handler(signum, frame)`` handles each of ``signums``; the handlers before are
    put back after.  Signals reach the main thread only: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in signums}
    try:
        yield
    finally:
        for signum, before in previous.items():
            # None: a handler set outside Python, which Python cannot set again; the default is nearest.
            signal.signal(signum, signal.SIG_DFL if before is None else before)


def terminate_cleanly():
    """While inside: SIGTERM raises :class:`Terminated` in the main thread instead of ending the process."""
    def on_sigterm(signum, frame):
        raise Terminated

    return handling((signal.SIGTERM,), on_sigterm)
