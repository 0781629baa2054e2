"""The fit job, composed once with or without its live page: what ``ironlearn.fit`` and
``ironlearn fit`` both run once their options are a :class:`~ironlearn.fitting.FitOptions`."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Note, OptionError
from ..fitting import FitOptions, Interrupted
from ..fitting import fit as fit_job
from ..fitting.run import check_start
from ..viewer.live import LiveServer
from ..viewer.serve import announce, check_port
from .arguments import checked


@checked(port=check_port)
def fit_run(options: FitOptions, *, log: Callable, port: int | None = None, open_browser: bool = True,
            done: Callable | None = None, linger: bool | None = None, name_of: Callable | None = None) -> dict:
    """Fit as ``options`` says and return the metrics written to ``metrics.json``; with
    ``options.live``, beside a page on 127.0.0.1:``port`` that shows the fit learning and then
    the final model.

    Parameters
    ----------
    log : callable
        Gets each line of progress and advice (a :class:`~ironlearn.errors.Note` where it names
        an option).
    port, open_browser
        Where the live page is served (default 8000, or a free port when taken) and whether a
        browser opens it.
    done : callable, optional
        ``done(metrics)`` once the outputs are written (and the live page shows the final model).
    linger : bool, optional
        After a live fit: None waits until an open page has loaded the final model (at most 5 s);
        True serves it until Ctrl-C (someone at a terminal), False for 10 s.
    name_of : callable, optional
        How the caller names an option on the page (the command: by its flag); default, by its
        Python name.
    """
    check_port(port)
    if port is not None and not options.live:
        raise OptionError("{port} is for the live page; add {live}, or drop {port}", "port", live="live=True")
    if not options.live:
        result = fit_job(options, log=log)
        if done is not None:
            done(result)
        return result
    check_start(options)  # a folder that holds a run, say, is refused before the page is served
    with LiveServer(port) as server:  # a port in use is refused here, before the fit starts
        announce(server.url, open_browser, log, "the live page")
        try:
            result = fit_job(options, log=log, live=server)
        except Interrupted as exc:
            how = "Ctrl-C" if exc.signal.name == "SIGINT" else exc.signal.name
            stopped = Note(f"training stopped by {how} at step {exc.step:,}; its checkpoint is saved ({{resume}} "
                           "goes on)", resume="resume=True")
            server.stop(str(stopped) if name_of is None else stopped.worded(name_of))
            raise
        server.finish(options.run_folder)
        if done is not None:
            done(result)
        if linger is None:
            server.hand_over()
        else:
            server.serve_after_fit(log, interactive=linger)
    return result
