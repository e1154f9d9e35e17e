"""The markdown report: a verdict, one section per deployment, text from inputs escaped."""

from __future__ import annotations

from specprobe.findings import Report, Section
from specprobe.reporters.markdown import MarkdownReporter, cell
from tests.reporters.samples import COMPOSE, K8S, RULES, deployments_report


def test_a_section_per_deployment_in_report_order() -> None:
    text = MarkdownReporter(rules=RULES).render(deployments_report())
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == [
        f"### {K8S}: FAIL (1 failing)",
        f"### {COMPOSE}: PASS",
        "### k8s/Deployment/quiet/container/vllm: PASS",
    ]
    assert text.startswith("## specprobe gate: FAIL\n")


def test_table_cells_cannot_break_the_table_or_inject_html() -> None:
    assert cell("a | b\n<script>x</script>\x1b[2J") == "a \\| b\\\\n\\<script\\>x\\</script\\>\\\\x1b\\[2J"
    text = MarkdownReporter(rules=RULES).render(deployments_report())
    rows = [line for line in text.splitlines() if line.startswith("| ") and "LINT-SPEC-TOKENS" in line]
    assert len(rows) == 1
    # Four cells: the escaped pipe inside the message does not open a fifth.
    assert rows[0].replace("\\|", "").count("|") == 5


def test_suppressed_findings_are_counted() -> None:
    report = Report(command="check", suppressed={"config": 2, "baseline": 1})
    text = MarkdownReporter(rules=RULES).render(report)
    assert "3 suppressed (baseline 1, config 2)" in text
    assert "No findings." in text


def test_same_deployment_name_in_two_files_gets_two_sections(tmp_path, monkeypatch) -> None:
    from specprobe.findings import Finding, Severity
    from specprobe.reporters.junit import JunitReporter

    monkeypatch.chdir(tmp_path)
    report = Report(
        command="gate",
        sections=[Section("compose/service/vllm", file=f) for f in ("bad/c.yaml", "good/c.yaml")],
    )
    report.add(
        Finding(
            rule="VOCAB-D2T-RANGE",
            severity=Severity.ERROR,
            message="m",
            file="bad/c.yaml",
            line=5,
            deployment="compose/service/vllm",
        )
    )
    text = MarkdownReporter(rules=RULES).render(report)
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == [
        "### compose/service/vllm (bad/c.yaml): FAIL (1 failing)",
        "### compose/service/vllm (good/c.yaml): PASS",
    ]
    junit = JunitReporter(rules=RULES).render(report)
    assert 'name="compose/service/vllm (good/c.yaml)" tests="1" failures="0"' in junit
