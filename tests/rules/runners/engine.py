"""Runners of the fixtures that need a measurement, a fix plan or an engine interpreter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

RUNNERS: dict[str, Callable[[dict[str, Any], Path, Path], set[str]]] = {}
