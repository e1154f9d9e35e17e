"""Every registered rule has two fixtures under tests/rules/<RULE-ID>/: ``fires`` and ``passes``.

``fires/case.json`` is an input on which the rule must be among the findings; ``passes/case.json`` is a
near miss of that input (the valid variant, or the other side of the rule's boundary) on which it must
not be. A case is ``{"kind": ..., "description": ..., "tier": "fast" | "engine" | "slow", ...}``; its
kind names the runner (tests/rules/runners/) that runs specprobe on it for real, and its tier the test
tier (``engine``: a provisioned engine interpreter, ``slow``: torch and trained models). A rule folder
holds ``fires/`` and ``passes/`` only; each may hold further input files its case names. A case that
fires INTERNAL-ERROR fails (a crashed family proves nothing either way), except that rule's own.

Coverage is static: every registered rule has both folders with a case of a kind that has a runner,
and every folder names a registered rule, so the answer is the same under ``-k``, ``-m`` and xdist, and
a new rule without fixtures fails at once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specprobe.rules.catalog import all_rules
from tests.rules.runners import RUNNERS
from tests.rules.runners.engine import use_trained_models

RULES_DIR = Path(__file__).resolve().parent
SIDES = ("fires", "passes")
TIERS = {"fast": (), "engine": (pytest.mark.engine,), "slow": (pytest.mark.slow,)}
ENGINE_VARIABLES = ("SPECPROBE_VLLM_PYTHON", "SPECPROBE_SGLANG_PYTHON", "SPECPROBE_VLLM_CPU_PYTHON")


def _fixture_folders() -> list[Path]:
    """The rule folders: every folder here except the Python packages and caches beside them."""
    return sorted(
        p for p in RULES_DIR.iterdir() if p.is_dir() and not (p / "__init__.py").exists() and p.name != "__pycache__"
    )


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _cases() -> list[Any]:
    params = []
    for folder in _fixture_folders():
        for side in SIDES:
            path = folder / side / "case.json"
            if not path.is_file():
                continue  # reported by the coverage test
            tier = str(_load(path).get("tier"))  # an unknown tier runs unmarked and fails the coverage test
            params.append(pytest.param(folder.name, side, id=f"{folder.name}/{side}", marks=TIERS.get(tier, ())))
    return params


@pytest.mark.parametrize(("rule_id", "side"), _cases())
def test_rule_fixture(
    rule_id: str, side: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    folder = RULES_DIR / rule_id / side
    case = _load(folder / "case.json")
    if case.get("tier") == "slow":
        # The slow cases run the session's trained demo models (trained once for every slow test).
        use_trained_models(request.getfixturevalue("demo_models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if case.get("tier") == "fast":
        # A fast case must not depend on (or be slowed by) an engine interpreter the machine happens to have.
        for variable in ENGINE_VARIABLES:
            monkeypatch.delenv(variable, raising=False)
    scratch = tmp_path / "run"
    scratch.mkdir()

    fired = RUNNERS[case["kind"]](case, folder, scratch)

    if rule_id != "INTERNAL-ERROR":
        # A case that crashed a rule family proves nothing either way.
        assert "INTERNAL-ERROR" not in fired, f"{rule_id}/{side}: a rule family raised; fired {sorted(fired)}"
    if side == "fires":
        assert rule_id in fired, f"{rule_id} did not fire on {case['description']!r}; fired {sorted(fired)}"
    else:
        assert rule_id not in fired, f"{rule_id} fired on its near miss {case['description']!r}"


# --- static coverage ------------------------------------------------------------------------------


def test_every_registered_rule_has_both_fixtures() -> None:
    problems = []
    for rule in sorted(all_rules(), key=lambda r: r.id):
        for side in SIDES:
            path = RULES_DIR / rule.id / side / "case.json"
            if not path.is_file():
                problems.append(f"{rule.id}: no {side}/case.json")
                continue
            case = _load(path)
            if case.get("kind") not in RUNNERS:
                problems.append(f"{rule.id}/{side}: kind {case.get('kind')!r} has no runner")
            if not isinstance(case.get("description"), str) or not case["description"].strip():
                problems.append(f"{rule.id}/{side}: no description")
            if case.get("tier") not in TIERS:
                problems.append(f"{rule.id}/{side}: tier {case.get('tier')!r} is not one of {sorted(TIERS)}")
    assert problems == []


def test_every_fixture_folder_names_a_registered_rule() -> None:
    registered = {rule.id for rule in all_rules()}
    strays = [folder.name for folder in _fixture_folders() if folder.name not in registered]
    assert strays == []
    # Only the two sides: a misspelt side (fire/, pass/) would never run.
    odd = [
        f"{folder.name}/{p.name}"
        for folder in _fixture_folders()
        for p in folder.iterdir()
        if p.name not in SIDES and p.name != "__pycache__"
    ]
    assert odd == []


def _input(case: dict[str, Any]) -> str:
    """The case without its description, as canonical JSON (so 1.0 and 1 stay different inputs)."""
    return json.dumps({k: v for k, v in case.items() if k != "description"}, sort_keys=True)


def test_passes_is_a_different_input() -> None:
    """A near miss that repeats its fires input would pass or fail with it, proving nothing."""
    same = []
    for folder in _fixture_folders():
        paths = [folder / side / "case.json" for side in SIDES]
        if not all(p.is_file() for p in paths):
            continue
        only_cases = all(sorted(p.name for p in path.parent.iterdir()) == ["case.json"] for path in paths)
        if only_cases and _input(_load(paths[0])) == _input(_load(paths[1])):
            same.append(folder.name)
    assert same == []
