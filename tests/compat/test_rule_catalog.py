"""The rule catalogue: an explicit table of family modules, one documentation home per rule, a
lifecycle (status, engine range) and one explanation object behind every rendering."""

from __future__ import annotations

import ast
import json
import pkgutil
from pathlib import Path

import pytest

import specprobe.rules as rules_package
from specprobe.findings import Finding, Report, Severity
from specprobe.reporters.sarif import SarifReporter
from specprobe.ruledocs import RuleExplanation, rule_docs_data
from specprobe.rules import RULES, AppliesTo, Rule, RuleStatus, rule
from specprobe.rules.catalog import FAMILY_MODULES, all_rules

RULES_DIR = Path(rules_package.__file__).parent


def test_every_module_of_the_package_is_in_the_family_table() -> None:
    listed = {m.__name__.rsplit(".", 1)[1] for m in FAMILY_MODULES if m.__name__.startswith("specprobe.rules.")}
    present = {m.name for m in pkgutil.iter_modules(rules_package.__path__)} - {"catalog"}
    assert listed == present
    assert len(FAMILY_MODULES) == len({m.__name__ for m in FAMILY_MODULES})


def test_every_rule_has_exactly_one_documentation_home() -> None:
    # No definition carries why/fix: the data file is the one home, and it has every rule.
    inline = []
    for path in [Path(str(m.__file__)) for m in FAMILY_MODULES]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "rule":
                inline += [f"{path.name}:{node.lineno}" for kw in node.keywords if kw.arg in ("why", "fix")]
    assert not inline, f"rule docs belong in specprobe/data/rule_docs.toml: {inline}"
    assert all(r.why is None and r.fix is None for r in all_rules())
    data = rule_docs_data()
    assert {r.id for r in all_rules()} == set(data)
    assert all(set(entry) == {"why", "fix"} for entry in data.values())


def test_rule_refuses_inline_documentation() -> None:
    with pytest.raises(TypeError):
        rule("X-NEW", "x", Severity.INFO, "d", "https://example.org/e", why="here")  # type: ignore[call-arg]
    assert "X-NEW" not in RULES


def test_status_and_engine_range() -> None:
    eagle3 = RULES["COMPAT-EAGLE3-TARGET"]
    assert eagle3.status is RuleStatus.STABLE
    assert eagle3.applies_to == AppliesTo("vllm", "eagle3_target_allowlist", "checked")
    assert str(eagle3.applies_to) == "vllm <0.22.0"
    assert eagle3.applies("vllm", "0.21.0") and not eagle3.applies("vllm", "0.22.0")
    assert not eagle3.applies("sglang", "0.5.23")
    assert eagle3.applies("vllm", None) and eagle3.applies("vllm", "nightly")  # unknown: not ruled out
    removed = Rule("X-GONE", "x", Severity.INFO, "d", ("https://example.org/e",), status=RuleStatus.REMOVED)
    assert not removed.applies("vllm", "0.33.0")
    with pytest.raises(ValueError, match="applies_to"):
        AppliesTo("vllm", "no_such_fact", True).versions()


def test_one_explanation_renders_text_json_page_and_sarif() -> None:
    explanation = RuleExplanation.of(RULES["COMPAT-EAGLE3-TARGET"])
    why = explanation.rule.why
    assert why
    data = explanation.to_json_dict()
    assert data["status"] == "stable"
    assert data["applies_to"] == {"engine": "vllm", "versions": ["<0.22.0"], "fact": "eagle3_target_allowlist"}
    assert data["why"] == why and data["docs"] == explanation.docs_url
    assert "Applies to: vllm <0.22.0" in explanation.text()
    assert "- applies to: **vllm <0.22.0**" in explanation.page()
    report = Report(command="check", findings=[Finding(rule=explanation.rule.id, severity=Severity.ERROR, message="m")])
    descriptor = SarifReporter().log(report)["runs"][0]["tool"]["driver"]["rules"][0]
    assert descriptor["help"] == explanation.sarif_help()
    assert "Applies to: vllm <0.22.0" in descriptor["help"]["text"]
    # A stable rule about every release shows no lifecycle lines.
    plain = RuleExplanation.of(RULES["VOCAB-D2T-RANGE"])
    assert "Status" not in plain.text() and "applies to" not in plain.page()
    assert json.loads(json.dumps(plain.to_json_dict()))["applies_to"] is None
