"""Generated rule docs stay in step with the registry; `specprobe rule ID` and `rules --format json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specprobe.findings import Finding, Report, Severity
from specprobe.reporters.sarif import SarifReporter
from specprobe.ruledocs import (
    REGENERATE,
    documented,
    documented_rules,
    expected_pages,
    parse_rule_docs,
    rule_doc_url,
    rule_docs_data,
    stale_pages,
    write_pages,
)
from specprobe.rules import Rule
from specprobe.rules.catalog import all_rules
from tests.reporters.conftest import MPE_WARNING_ENGINE, run_cli
from tests.reporters.samples import RULES

DOCS = Path(__file__).parents[2] / "docs" / "rules"


def test_docs_rules_are_up_to_date() -> None:
    stale = stale_pages(DOCS, documented_rules())
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
    plain = Rule("X-Y", "x", Severity.INFO, "d", ("https://example.org/e",))
    assert plain.why is None and plain.fix is None


def test_rule_command_explains_one_rule() -> None:
    rule = documented_rules()[0]
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


def test_every_rule_has_why_and_fix_once_the_data_file_fills_in() -> None:
    undocumented = [r.id for r in documented_rules() if not (r.why and r.why.strip() and r.fix and r.fix.strip())]
    assert not undocumented, f"add why/fix to specprobe/data/rule_docs.toml for: {', '.join(undocumented)}"


def test_every_data_file_entry_is_a_registered_rule() -> None:
    registered = {r.id for r in all_rules()}
    stale = sorted(set(rule_docs_data()) - registered)
    assert not stale, f"specprobe/data/rule_docs.toml documents rules that do not exist: {', '.join(stale)}"


def test_the_definition_wins_field_by_field_and_the_data_file_fills_the_rest() -> None:
    rule_id = "SHAPES-FC"
    data = rule_docs_data()[rule_id]
    own = Rule(rule_id, "shapes", Severity.ERROR, "d", ("https://example.org/e",), why="written in the rule")
    filled = documented(own)
    assert filled.why == "written in the rule" and filled.fix == data["fix"]
    bare = Rule("NOT-IN-THE-FILE", "x", Severity.INFO, "d", ("https://example.org/e",))
    assert documented(bare) is bare


def test_data_file_text_reaches_rule_rules_json_and_sarif_help() -> None:
    rule_id = "SHAPES-FC"
    why = rule_docs_data()[rule_id]["why"]
    code, out, _ = run_cli("rule", rule_id)
    # The terminal page re-wraps the text; compare words.
    assert code == 0 and " ".join(why.split()[:12]) in " ".join(out.split())
    code, out, _ = run_cli("rules", "--format", "json")
    listed = {r["id"]: r for r in json.loads(out)["rules"]}
    assert listed[rule_id]["why"] == why and listed[rule_id]["fix"] == rule_docs_data()[rule_id]["fix"]
    report = Report(command="check", findings=[Finding(rule=rule_id, severity=Severity.ERROR, message="m")])
    descriptor = SarifReporter().log(report)["runs"][0]["tool"]["driver"]["rules"][0]
    assert descriptor["fullDescription"]["text"] == why
    assert f"Why: {why}" in descriptor["help"]["text"]


def test_check_does_not_read_the_rule_docs(built_case) -> None:
    draft, target = built_case("mpe-2048")
    rule_docs_data.cache_clear()
    args = ["check", str(draft), "--engine", MPE_WARNING_ENGINE] + (["--target", target] if target else [])
    code, _, _ = run_cli(*args)
    assert code in (0, 1)
    assert rule_docs_data.cache_info().currsize == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[X-Y]\nwhy = "a"\nhow = "b"\n', "must be a table of why and/or fix"),
        ('[X-Y]\nwhy = "  "\n', "why must be non-empty text"),
        ("[X-Y]\nfix = 3\n", "fix must be non-empty text"),
        ('X-Y = "text"\n', "must be a table"),
        ('[X-Y]\nwhy = "unterminated\n', "rule_docs.toml"),
    ],
)
def test_a_malformed_data_file_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rule_docs(text)


def test_data_file_text_is_whitespace_collapsed() -> None:
    assert parse_rule_docs('[X-Y]\nwhy = """\n  one\n  two  three\n"""\n') == {"X-Y": {"why": "one two three"}}
