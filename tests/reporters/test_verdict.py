"""One verdict: every format's pass/fail, the JSON/SARIF ``ok`` and the exit code agree, for clean,
warnings-only and failing reports, under the default policy, ``--strict``, and ``fail-on =
"warning"`` in the configuration (which a gate's ``--fail-on warning`` passes on as strict)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import typer

from specprobe.cli._common import emit
from specprobe.findings import Finding, Report, Section, Severity
from specprobe.reporters import REPORTERS

SEVERITIES = {
    "clean": [Severity.INFO],
    "warnings": [Severity.INFO, Severity.WARNING],
    "errors": [Severity.WARNING, Severity.ERROR],
}
# policy -> (emit's strict, configuration text)
POLICIES = {
    "default": (False, ""),
    "strict": (True, ""),
    "fail-on-warning": (False, 'fail-on = "warning"\n'),
}
RULE = {Severity.INFO: "LAYOUT-FORMAT", Severity.WARNING: "TARGET-MAX-POSITION", Severity.ERROR: "VOCAB-D2T-RANGE"}


def _report(case: str) -> Report:
    report = Report(command="gate", sections=[Section("k8s/Deployment/a", file="a.yaml")])
    for severity in SEVERITIES[case]:
        report.add(Finding(RULE[severity], severity, f"{severity.value} finding", file="a.yaml", line=3,
                           deployment="k8s/Deployment/a"))
    return report


def _stated_verdict(fmt: str, text: str) -> bool | None:
    """Whether the rendered document says the run passed; None for a format that states no verdict."""
    if fmt == "json":
        return bool(json.loads(text)["ok"])
    if fmt == "sarif":
        return bool(json.loads(text)["runs"][0]["properties"]["ok"])
    if fmt in ("text", "github"):
        last = text.strip().splitlines()[-1]
        return last.split()[0 if fmt == "text" else 2] == "PASS"
    if fmt == "markdown":
        return text.splitlines()[0].endswith(": PASS")
    if fmt == "junit":
        return ET.fromstring(text).get("failures") == "0"
    return None  # gitlab: a list of issues, no verdict


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("case", sorted(SEVERITIES))
@pytest.mark.parametrize("fmt", sorted(REPORTERS))
def test_every_format_states_the_exit_codes_verdict(fmt: str, case: str, policy: str, tmp_path: Path,
                                                    monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    strict, config_text = POLICIES[policy]
    config = tmp_path / "specprobe.toml"
    config.write_text(config_text, encoding="utf-8")
    out = tmp_path / "report.out"
    with pytest.raises(typer.Exit) as exit_info:
        emit(_report(case), fmt, out, strict=strict, config=config)
    code = exit_info.value.exit_code
    warnings_fail = policy != "default"
    expected_pass = case == "clean" or (case == "warnings" and not warnings_fail)
    assert code == (0 if expected_pass else 1)
    stated = _stated_verdict(fmt, out.read_text(encoding="utf-8"))
    if stated is not None:
        assert stated is expected_pass, (fmt, case, policy)
