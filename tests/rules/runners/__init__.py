"""Runners of the per-rule fixtures: ``RUNNERS[kind](case, case_folder, tmp_path)`` gives the rule ids
that the case's input fires, from specprobe's own code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.rules.runners import deploy, engine

Runner = Callable[[dict[str, Any], Path, Path], set[str]]

RUNNERS: dict[str, Runner] = {**deploy.RUNNERS, **engine.RUNNERS}
