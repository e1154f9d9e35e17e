"""Records every rule that fires during a test run, for tests/test_rule_coverage.py.

Installed by tests/conftest.py (a module of its own: several test folders have a conftest.py, so
``import conftest`` would not name this one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specprobe.rules import Rule

FIRED: set[str] = set()
TESTS = Path(__file__).resolve().parent
COLLECTED_FILES: set[Path] = set()
_original_finding = Rule.finding


def _recording_finding(self: Rule, message: str, **kwargs: Any) -> Any:
    FIRED.add(self.id)
    return _original_finding(self, message, **kwargs)


def install() -> None:
    """Every ``Rule.finding`` call from now on records its rule ID in ``FIRED``."""
    Rule.finding = _recording_finding  # type: ignore[method-assign]


def note_collected(items: list[pytest.Item]) -> None:
    COLLECTED_FILES.update(Path(str(item.path)).resolve() for item in items)


def whole_suite_collected(config: pytest.Config) -> bool:
    """True when every test file of the suite was collected and no -k/-m selection narrowed it."""
    every_file = {path.resolve() for path in TESTS.rglob("test_*.py")}
    narrowed = bool(config.getoption("keyword")) or bool(config.getoption("markexpr"))
    return every_file <= COLLECTED_FILES and not narrowed
