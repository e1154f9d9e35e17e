"""What the dry-run probes share (stdlib only): the engine's exception as JSON, argparse refusals kept.

Loaded by path from the probe scripts, which run inside the engine's own interpreter.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import platform
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn


class ArgumentError(Exception):
    """The engine's parser refused the command line (argparse would print usage and exit 2)."""


def keep_parser_errors() -> None:
    """Make every argparse parser raise instead of printing usage and exiting, so the message is kept."""

    def refuse(self: argparse.ArgumentParser, message: str) -> NoReturn:
        raise ArgumentError(message)

    argparse.ArgumentParser.error = refuse  # type: ignore[method-assign, assignment]


def engine_frame(tb: Any, package: str) -> dict[str, Any] | None:
    """The innermost traceback frame inside ``package``, as a path from the package folder on."""
    found = None
    for frame in traceback.extract_tb(tb):
        parts = Path(frame.filename).parts
        if package in parts:
            index = len(parts) - 1 - parts[::-1].index(package)
            found = {"file": "/".join(parts[index:]), "line": frame.lineno, "function": frame.name}
    return found


def describe_error(exc: BaseException, package: str) -> dict[str, Any]:
    """The exception as the engine states it; pydantic's ValidationError keeps each error's own text."""
    if isinstance(exc, ArgumentError):
        return {"type": "ArgumentError", "module": "argparse", "message": str(exc), "frame": None}
    message = str(exc)
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ == "ValidationError" and callable(errors):
        try:
            parts = []
            for error in errors():
                where = ".".join(str(item) for item in error.get("loc") or ())
                text = str(error.get("msg") or "")
                parts.append(f"{where}: {text}" if where else text)
            title = getattr(exc, "title", None)
            message = (f"{title}: " if title else "") + "; ".join(parts)
        except Exception:
            message = str(exc)
    frame = engine_frame(exc.__traceback__, package)
    # A validator's own exception is the cause or context of pydantic's wrapper: its frame is closer.
    inner = exc.__cause__ or exc.__context__
    if inner is not None and inner.__traceback__ is not None:
        frame = engine_frame(inner.__traceback__, package) or frame
    return {"type": type(exc).__name__, "module": type(exc).__module__, "message": message, "frame": frame}


def run_main(engine: str, distributions: tuple[str, ...], dry_run: Any) -> None:
    """The probe's whole run: refuse an interpreter without ``engine`` (exit 3), read the request
    (``{"argv": [...], "device": ...}`` as argv[1]), run ``dry_run(argv, device)`` with the engine's
    prints kept off stdout, and reply with the result, the engine's version and the distributions."""
    import _common

    if importlib.util.find_spec(engine) is None:
        _common.reply({"error": "not_installed", "engine": engine, "interpreter": sys.executable})
        sys.exit(3)
    request = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    argv = [str(item) for item in request.get("argv") or []]
    device = request.get("device")
    with _common.stdout_to_stderr():
        module = importlib.import_module(engine)
        result = dry_run(argv, device if isinstance(device, str) else None)
    versions = _common.distribution_versions(*distributions)
    declared = getattr(module, "__version__", None)
    result.update(
        {
            "engine": engine,
            "version": declared
            or next((versions[name] for name in distributions if name.startswith(engine) and versions[name]), None),
            "distributions": versions,
            "python": platform.python_version(),
            "interpreter": sys.executable,
        }
    )
    _common.reply(result)
