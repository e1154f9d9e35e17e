"""Human-readable reporter: findings grouped by severity (in a section per deployment when the report
is over deployments) and a one-line verdict at the end."""

from __future__ import annotations

import io

from specprobe.findings import Finding, Report, Severity
from specprobe.reporters._shared import section_names, section_of
from specprobe.reporters.base import Reporter
from specprobe.textsafe import terminal

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_HEADING = {Severity.ERROR: "Errors", Severity.WARNING: "Warnings", Severity.INFO: "Info"}


def _subject_line(report: Report) -> str:
    parts = [f"{key}={terminal(value)}" for key, value in report.subject.items() if value]
    return f"specprobe {report.command}" + (": " + ", ".join(parts) if parts else "")


# A line is a list of (text, style) segments; style None is unstyled. Every segment that can carry
# text from the user's files (subject, location, message, hint, evidence) goes through ``terminal``:
# rule messages quote config values and file names verbatim.
Segment = tuple[str, str | None]


def _severity_groups(findings: list[Finding], indent: str) -> list[list[Segment]]:
    lines: list[list[Segment]] = []
    for severity in Severity:
        group = [f for f in findings if f.severity is severity]
        if not group:
            continue
        lines.append([])
        lines.append([(f"{indent}{_HEADING[severity]} ({len(group)})", _STYLE[severity])])
        for finding in group:
            where = f" [{terminal(finding.location)}]" if finding.location else ""
            message = f"{where}: {terminal(finding.message)}"
            lines.append([(f"{indent}  ", None), (terminal(finding.rule), _STYLE[severity]), (message, None)])
            if finding.hint:
                lines.append([(f"{indent}      hint: {terminal(finding.hint)}", "dim")])
            if finding.evidence:
                lines.append([(f"{indent}      see: {terminal(finding.evidence[0])}", "dim")])
    return lines


def _lines(report: Report) -> list[list[Segment]]:
    lines: list[list[Segment]] = [[(_subject_line(report), "bold")]]
    findings = report.sorted_findings()
    if any(f.deployment is not None for f in findings) or report.extra.get("deployments"):
        # A report over deployments: one section each (report order), its findings grouped inside.
        for section in section_names(report):
            members = [f for f in findings if section_of(f, report) == section]
            failing = any(f.severity is Severity.ERROR for f in members)
            lines.append([])
            lines.append([(f"== {terminal(section)}: ", "bold"), ("FAIL", "bold red") if failing else ("ok", "green")])
            lines += _severity_groups(members, "  ") if members else [[("  no findings", "dim")]]
    else:
        lines += _severity_groups(findings, "")
    summary = report.summary
    counts = f" {summary.errors} error(s), {summary.warnings} warning(s), {summary.infos} info"
    lines.append([])
    lines.append([("PASS", "bold green") if report.ok else ("FAIL", "bold red"), (counts, None)])
    return lines


class TextReporter(Reporter):
    name = "text"
    description = "grouped findings for a terminal (colour unless NO_COLOR or not a TTY)"

    def render(self, report: Report) -> str:
        lines = _lines(report)
        if not self.color:
            # Plain text needs no rich: pipes, CI logs and NO_COLOR start faster without importing it.
            return "".join("".join(text for text, _ in line) + "\n" for line in lines)
        from rich.console import Console
        from rich.text import Text

        buffer = io.StringIO()
        console = Console(file=buffer, force_terminal=True, width=110, highlight=False, soft_wrap=True)
        for line in lines:
            # Text, not a markup string: "[bold]" inside a config value is shown as written.
            console.print(Text.assemble(*((text, style or "") for text, style in line)))
        return buffer.getvalue()
