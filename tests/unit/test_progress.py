"""Progress on stderr: drawn on a terminal (and erased when the step ends), never in a pipe or a log,
never under --quiet, and never on stdout."""

from __future__ import annotations

import io
import time

import pytest

from specprobe import progress as progress_module
from specprobe.progress import progress, set_quiet


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(monkeypatch: pytest.MonkeyPatch, stream: io.StringIO, quiet: bool = False) -> str:
    monkeypatch.setattr(progress_module.sys, "stderr", stream)
    monkeypatch.setattr(progress_module, "_INTERVAL_S", 0.01)
    set_quiet(quiet)
    try:
        with progress("dry run") as step:
            time.sleep(0.05)
            step("reading config.json")
            time.sleep(0.05)
    finally:
        set_quiet(False)
    return stream.getvalue()


def test_a_terminal_gets_a_spinner_that_is_erased(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = _run(monkeypatch, _Terminal())
    assert "dry run" in drawn and "reading config.json" in drawn and "s)" in drawn
    assert drawn.endswith("\r\x1b[K")  # the line is cleared: the report starts on a clean line


def test_a_pipe_and_quiet_get_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(monkeypatch, io.StringIO()) == ""
    assert _run(monkeypatch, _Terminal(), quiet=True) == ""
