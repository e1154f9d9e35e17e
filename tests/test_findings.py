"""Findings, Report and the exit-code policy (the only place findings become exit codes)."""

from __future__ import annotations

import pytest

from specprobe.findings import ExitCode, Finding, Report, Severity, exit_code


def _report(*severities: Severity) -> Report:
    report = Report(command="check")
    for i, severity in enumerate(severities):
        report.add(Finding(rule=f"R-{i}", severity=severity, message="m"))
    return report


@pytest.mark.parametrize(
    ("severities", "strict", "expected"),
    [
        ((), False, ExitCode.OK),
        ((Severity.INFO,), True, ExitCode.OK),
        ((Severity.WARNING,), False, ExitCode.OK),
        ((Severity.WARNING,), True, ExitCode.FINDINGS),
        ((Severity.ERROR,), False, ExitCode.FINDINGS),
        ((Severity.ERROR, Severity.WARNING), True, ExitCode.FINDINGS),
    ],
)
def test_exit_code_policy(severities: tuple[Severity, ...], strict: bool, expected: ExitCode) -> None:
    assert exit_code(_report(*severities), strict=strict) is expected


def test_every_severity_has_a_rank() -> None:
    assert [s.rank for s in Severity] == [0, 1, 2]


def test_finding_accepts_the_json_spelling_of_a_severity() -> None:
    finding = Finding(rule="R", severity="warning", message="m")  # type: ignore[arg-type]

    assert finding.severity is Severity.WARNING
    assert finding.to_json_dict()["severity"] == "warning"
    with pytest.raises(ValueError):
        Finding(rule="R", severity="fatal", message="m")  # type: ignore[arg-type]


def test_summary_ok_and_fired() -> None:
    report = _report(Severity.INFO, Severity.ERROR, Severity.WARNING, Severity.ERROR)

    assert report.summary.to_json_dict() == {"errors": 2, "warnings": 1, "infos": 1}
    assert report.ok is False
    assert report.fired() == {"R-0", "R-1", "R-2", "R-3"}


def test_sorted_findings_worst_first_then_rule() -> None:
    report = Report(command="check")
    report.extend(
        [
            Finding(rule="B", severity=Severity.INFO, message="1"),
            Finding(rule="Z", severity=Severity.ERROR, message="2"),
            Finding(rule="A", severity=Severity.ERROR, message="3"),
            Finding(rule="A", severity=Severity.ERROR, message="4"),
        ]
    )

    assert [f.message for f in report.sorted_findings()] == ["3", "4", "2", "1"]


def test_json_dict_keeps_the_contract_keys_first_and_extra_after() -> None:
    report = _report(Severity.WARNING)
    report.extra["draft_format"] = "eagle3"
    report.extra["ok"] = "must not override"

    data = report.to_json_dict()

    assert list(data) == ["specprobe_version", "command", "subject", "findings", "summary", "ok", "draft_format"]
    assert data["ok"] is True
