"""Generated rule docs stay in step with the registry; `specprobe rule ID` and `rules --format json`."""

from __future__ import annotations

import json
from pathlib import Path

from specprobe.ruledocs import REGENERATE, expected_pages, rule_doc_url, stale_pages, write_pages
from specprobe.rules import Rule
from specprobe.rules.catalog import all_rules

from .conftest import run_cli
from .samples import RULES

DOCS = Path(__file__).parents[2] / "docs" / "rules"


def test_docs_rules_are_up_to_date() -> None:
    stale = stale_pages(DOCS, all_rules())
    assert not stale, f"docs/rules is stale ({', '.join(stale[:8])}); regenerate with: {REGENERATE}"


def test_staleness_is_detected(tmp_path: Path) -> None:
    rules = list(RULES.values())
    write_pages(tmp_path, rules)
    assert stale_pages(tmp_path, rules) == []
    page = tmp_path / "VOCAB-D2T-RANGE.md"
    page.write_text(page.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    (tmp_path / "GONE-RULE.md").write_text("old\n", encoding="utf-8")
    assert stale_pages(tmp_path, rules) == ["VOCAB-D2T-RANGE.md", "GONE-RULE.md"]
    write_pages(tmp_path, rules)
    assert stale_pages(tmp_path, rules) == []
    assert not (tmp_path / "GONE-RULE.md").exists()


def test_a_page_per_rule_with_why_fix_and_evidence() -> None:
    pages = expected_pages(list(RULES.values()))
    page = pages["VOCAB-D2T-RANGE.md"]
    assert page.startswith("# VOCAB-D2T-RANGE\n")
    assert "## Why\n\nvLLM adds d2t" in page and "## How to fix\n\nStore offsets" in page
    assert "- <https://github.com/vllm-project/vllm/blob/v0.33.0/" in page
    assert "[`VOCAB-D2T-RANGE`](VOCAB-D2T-RANGE.md)" in pages["README.md"]
    assert rule_doc_url("VOCAB-D2T-RANGE").endswith("/docs/rules/VOCAB-D2T-RANGE.md")


def test_rule_fields_why_and_fix_are_optional_and_keyword_only_in_rule() -> None:
    from specprobe.findings import Severity

    plain = Rule("X-Y", "x", Severity.INFO, "d", ("https://example.org/e",))
    assert plain.why is None and plain.fix is None


def test_rule_command_explains_one_rule() -> None:
    rule = all_rules()[0]
    code, out, _ = run_cli("rule", rule.id.lower())
    assert code == 0
    assert out.startswith(f"{rule.id}  ({rule.family}, default severity {rule.severity.value})")
    assert rule.evidence[0] in out and rule_doc_url(rule.id) in out
    code, out, _ = run_cli("rule", rule.id, "--format", "json")
    data = json.loads(out)
    assert data["command"] == "rule" and data["ok"] is True and data["rule"]["id"] == rule.id
    assert {"specprobe_version", "subject", "findings", "summary"} <= set(data)
    code, out, _ = run_cli("rule", rule.id, "--format", "markdown")
    assert out == expected_pages([rule])[f"{rule.id}.md"]


def test_unknown_rule_is_exit_2_with_suggestions() -> None:
    code, out, err = run_cli("rule", "VOCAB-D2T")
    assert code == 2 and out == ""
    assert err.startswith("specprobe: error: no rule 'VOCAB-D2T'; did you mean VOCAB-D2T-")
    code, _, err = run_cli("rule", "VOCAB-D2T-RANGE", "--format", "sarif")
    assert code == 2 and "unknown format 'sarif'" in err


def test_rules_json_uses_the_report_envelope() -> None:
    code, out, _ = run_cli("rules", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["command"] == "rules" and data["findings"] == [] and data["ok"] is True
    assert data["summary"] == {"errors": 0, "warnings": 0, "infos": 0}
    assert {r["id"] for r in data["rules"]} == {r.id for r in all_rules()}
    assert all(r["docs"] == rule_doc_url(r["id"]) for r in data["rules"])
