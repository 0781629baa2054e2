"""A local worker process: ``python -m ironlearn.fitting.many.worker``, started by the local engine.

It reads tasks from stdin and writes outcomes to stdout, each a pickle behind its 8-byte
length, one task at a time.  Its environment was set before Python started, so numpy's
BLAS reads its thread limit as it loads.  stdin is also its lifeline: when it closes
while a fit runs (the driver was killed), the worker sends itself SIGINT, and the fit
saves its checkpoint and stops as it would on Ctrl-C.  A worker whose fit was stopped
(by the driver, or by a SIGTERM sent to the worker itself) reports it and exits.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import struct
import sys
import threading

from .task import INTERRUPTED

_HEADER = struct.Struct("<Q")


def write_message(stream, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_message(stream):
    """The next message on ``stream``, or None at its end (or at a message cut short)."""
    header = _read_exactly(stream, _HEADER.size)
    data = header and _read_exactly(stream, _HEADER.unpack(header)[0])
    return None if data is None else pickle.loads(data)


def _read_tasks(stream, inbox: queue.Queue, busy: threading.Event) -> None:
    while (task := read_message(stream)) is not None:
        inbox.put(task)
    inbox.put(None)
    if busy.is_set():  # the driver is gone: stop the fit the way Ctrl-C does, so it saves
        os.kill(os.getpid(), signal.SIGINT)


def main() -> None:
    results = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot corrupt the results
    inbox, busy = queue.Queue(), threading.Event()
    threading.Thread(target=_read_tasks, args=(sys.stdin.buffer, inbox, busy), daemon=True).start()
    try:
        while (task := inbox.get()) is not None:
            busy.set()
            outcome = task.job.run(task.options)
            busy.clear()
            write_message(results, outcome)
            if outcome.status == INTERRUPTED:  # a signal stopped it: it was meant for this process too
                return
    except (KeyboardInterrupt, BrokenPipeError):  # Ctrl-C while idle; or the driver died meanwhile
        pass


if __name__ == "__main__":
    main()
