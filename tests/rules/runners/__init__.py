"""The runners of the per-rule fixtures, by case kind.

A runner takes ``(case, case_folder, tmp_path)`` -- the parsed ``case.json``, the folder that holds it
(and any other input file the case names) and an empty scratch folder -- runs specprobe on that input
for real, and returns the ids of the rules that fired.

Each module of this package contributes a ``RUNNERS`` dict for the kinds its families need; a module
not present in this checkout contributes nothing, and the coverage test then names the kinds that have
no runner.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

Runner = Callable[[dict[str, Any], Path, Path], set[str]]

_MODULES = ("check", "deploy", "engine", "hub", "offline")


def _collect() -> dict[str, Runner]:
    runners: dict[str, Runner] = {}
    for name in _MODULES:
        qualified = f"{__name__}.{name}"
        if importlib.util.find_spec(qualified) is None:
            continue
        module_runners: dict[str, Runner] = importlib.import_module(qualified).RUNNERS
        clash = set(runners) & set(module_runners)
        if clash:
            raise RuntimeError(f"case kinds {sorted(clash)} have two runners ({name} and another module)")
        runners.update(module_runners)
    return runners


RUNNERS: dict[str, Runner] = _collect()
