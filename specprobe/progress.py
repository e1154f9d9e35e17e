"""Progress on stderr for the steps that take seconds to minutes (provisioning an engine, a dry run or
exact mode in the engine's interpreter, serving a drafter, fetching from the hub): a spinner with the
step and the seconds spent, redrawn on one line and erased when the step ends.

Nothing is drawn when stderr is not a terminal (CI logs, pipes, tests) or under ``--quiet``: a log
gets no control characters, and stdout (the report) is never touched. Usage, from any layer::

    with progress("dry run: vllm 0.33.0") as step:
        ...
        step("reading config.json")     # a new sub-step; the hub reader names each file it fetches
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_FRAMES = "|/-\\"
_INTERVAL_S = 0.1
# Whether progress may be drawn at all in this run (False under --quiet); set once by the command.
_ENABLED: ContextVar[bool] = ContextVar("specprobe_progress", default=True)


def set_quiet(quiet: bool) -> None:
    """``--quiet``: draw no progress for the rest of this run."""
    _ENABLED.set(not quiet)


def drawn() -> bool:
    """Whether progress is drawn: stderr is a terminal and the run is not quiet."""
    return _ENABLED.get() and sys.stderr.isatty()


@contextmanager
def progress(label: str) -> Iterator[Callable[[str], None]]:
    """Draw ``label`` with a spinner and elapsed seconds until the block ends; yields a function that
    names the current sub-step. A no-op (the function too) when progress is not drawn."""
    if not drawn():
        yield lambda _detail: None
        return
    state = {"detail": ""}
    stop = threading.Event()
    start = time.monotonic()
    stream = sys.stderr

    def draw() -> None:
        frame = 0
        while not stop.wait(_INTERVAL_S):
            detail = f": {state['detail']}" if state["detail"] else ""
            text = f"{_FRAMES[frame % len(_FRAMES)]} {label}{detail} ({time.monotonic() - start:.0f} s)"
            # One line, cut to the terminal: a wrapped line cannot be redrawn in place.
            stream.write("\r\x1b[K" + text[: _columns() - 1])
            stream.flush()
            frame += 1

    thread = threading.Thread(target=draw, name="specprobe-progress", daemon=True)
    thread.start()
    try:
        yield lambda detail: state.__setitem__("detail", detail)
    finally:
        stop.set()
        thread.join()
        stream.write("\r\x1b[K")
        stream.flush()


def _columns() -> int:
    return max(20, shutil.get_terminal_size().columns)
