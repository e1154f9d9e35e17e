"""A rule's lifecycle decides whether its findings reach a report: removed rules never, rules with an
engine range only for the releases in it (read from the engine facts, not restated here)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from specprobe.engines.facts import fact
from specprobe.rules import RULES, RuleStatus, within_lifecycle
from specprobe.rules.compat import EAGLE3_TARGET, KNOWN_GOOD
from specprobe.schema.store import known_versions


def _a_release_where(value: str) -> str:
    """A shipped snapshot's release where the fact behind COMPAT-EAGLE3-TARGET's range has ``value``."""
    found = fact("vllm", "eagle3_target_allowlist")
    assert found is not None
    ranges = [r.versions for r in found.ranges if r.value == value]
    return next(v for v in known_versions("vllm") if any(Version(v) in spec for spec in ranges))


def test_a_ranged_rule_speaks_only_for_releases_in_its_range() -> None:
    inside, outside = _a_release_where("checked"), _a_release_where("none")
    finding = EAGLE3_TARGET.finding("refused")
    assert within_lifecycle([finding], [("vllm", inside)]) == [finding]
    assert within_lifecycle([finding], [("vllm", outside)]) == []
    assert within_lifecycle([finding], [("sglang", "0.5.23")]) == []
    # One judged release in range is enough; an unknown version is given the benefit of the doubt.
    assert within_lifecycle([finding], [("vllm", outside), ("vllm", inside)]) == [finding]
    assert within_lifecycle([finding], [("vllm", None)]) == [finding]


def test_rules_without_a_range_and_unregistered_ids_are_kept() -> None:
    plain = KNOWN_GOOD.finding("works")
    foreign = replace(plain, rule="NOT-A-REGISTERED-RULE")
    assert within_lifecycle([plain, foreign], [("vllm", "0.33.0")]) == [plain, foreign]
    assert within_lifecycle([plain], []) == [plain]


@pytest.mark.parametrize("status", list(RuleStatus))
def test_only_a_removed_rule_is_silenced(status: RuleStatus, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RULES, KNOWN_GOOD.id, replace(KNOWN_GOOD, status=status))
    finding = KNOWN_GOOD.finding("works")
    expected = [] if status is RuleStatus.REMOVED else [finding]
    assert within_lifecycle([finding], [("vllm", "0.33.0")]) == expected
    assert within_lifecycle([finding], []) == expected
