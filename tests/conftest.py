"""Suite-wide: record every rule that fires during the run (tests/rule_recorder.py) and run the
rule-coverage test last, so that it sees what every other test fired."""

from __future__ import annotations

import pytest
import rule_recorder


def pytest_configure(config: pytest.Config) -> None:
    rule_recorder.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rule_recorder.note_collected(items)
    last = [item for item in items if item.path.name == "test_rule_coverage.py"]
    items[:] = [item for item in items if item.path.name != "test_rule_coverage.py"] + last
