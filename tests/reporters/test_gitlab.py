"""GitLab Code Quality JSON against the report format GitLab documents (doc/ci/testing/code_quality.md
at gitlabhq/gitlabhq@1dfe61a9): required fields, severity values, relative path and line."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from specprobe.baseline import fingerprint
from specprobe.findings import Severity
from specprobe.reporters.gitlab import GitlabReporter
from tests.reporters.conftest import MPE_WARNING_ENGINE, run_cli
from tests.reporters.samples import RULES, deployments_report

# The documented table, as a schema: "Each object in that array must have at least the following
# properties" (description, check_name, fingerprint, severity, location.path, location.lines.begin).
CODE_QUALITY = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1, "not": {"pattern": "^/"}},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}


def test_matches_the_documented_format(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = deployments_report()
    issues = json.loads(GitlabReporter(rules=RULES).render(report))
    jsonschema.validate(issues, CODE_QUALITY)
    by_rule = {i["check_name"]: i for i in issues}
    assert by_rule["VOCAB-D2T-RANGE"]["severity"] == "critical"
    assert by_rule["LINT-SPEC-TOKENS"]["severity"] == "major"
    # Info is context, not a code-quality issue: it is left out.
    assert "COMPAT-KNOWN-GOOD" not in by_rule
    assert by_rule["LINT-SPEC-TOKENS"]["location"] == {"path": "deploy/k8s.yaml", "lines": {"begin": 27}}
    failing = [f for f in report.sorted_findings() if f.severity is not Severity.INFO]
    assert [i["fingerprint"] for i in issues] == [fingerprint(f) for f in failing]
    assert "\x1b" not in json.dumps(issues, ensure_ascii=False)


def test_no_byte_order_mark_and_an_empty_report_is_an_empty_array() -> None:
    from specprobe.findings import Report

    rendered = GitlabReporter(rules=RULES).render(Report(command="gate"))
    assert rendered == "[]\n"
    assert not GitlabReporter(rules=RULES).render(deployments_report()).startswith("\ufeff")


def test_check_cli_codequality(built_case) -> None:
    draft, target = built_case("mpe-2048")
    code, out, _ = run_cli("check", str(draft), "--target", str(target), "--engine", MPE_WARNING_ENGINE, "-f", "gitlab")
    assert code == 0
    issues = json.loads(out)
    jsonschema.validate(issues, CODE_QUALITY)
    mpe = next(i for i in issues if i["check_name"] == "TARGET-MAX-POSITION")
    assert mpe["location"]["path"] == "mpe-2048/draft/config.json"
