"""Every rule's fixtures: ``tests/rules/<RULE-ID>/fires/case.json`` must fire the rule and
``tests/rules/<RULE-ID>/passes/case.json`` (the near-miss of the same input) must not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specprobe.rules.catalog import all_rules
from tests.rules.runners import RUNNERS

HERE = Path(__file__).resolve().parent
TIERS = {"fast": (), "engine": (pytest.mark.engine,), "slow": (pytest.mark.slow,)}


def _cases() -> list[Any]:
    params = []
    for case_file in sorted(HERE.glob("*/*/case.json")):
        case = json.loads(case_file.read_text(encoding="utf-8"))
        rule, side = case_file.parent.parent.name, case_file.parent.name
        params.append(pytest.param(case_file, marks=TIERS[case["tier"]], id=f"{rule}/{side}"))
    return params


@pytest.mark.parametrize("case_file", _cases())
def test_rule_fixture(case_file: Path, tmp_path: Path) -> None:
    case = json.loads(case_file.read_text(encoding="utf-8"))
    rule, side = case_file.parent.parent.name, case_file.parent.name
    fired = RUNNERS[case["kind"]](case, case_file.parent, tmp_path)
    if side == "fires":
        assert rule in fired, f"{case['description']}: {sorted(fired)}"
    else:
        assert side == "passes", case_file
        assert rule not in fired, f"{case['description']}: {sorted(fired)}"


def test_fixture_folders_name_registered_rules() -> None:
    registered = {r.id for r in all_rules()}
    folders = {p.name for p in HERE.iterdir() if p.is_dir() and p.name.isupper()}
    assert sorted(folders - registered) == []
    for folder in folders:
        assert {p.name for p in (HERE / folder).iterdir() if p.is_dir()} == {"fires", "passes"}, folder
