"""Human-readable reporter: findings grouped by severity and a one-line verdict at the end."""

from __future__ import annotations

import io

from specprobe.findings import Report, Severity
from specprobe.reporters.base import Reporter

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_HEADING = {Severity.ERROR: "Errors", Severity.WARNING: "Warnings", Severity.INFO: "Info"}


def _subject_line(report: Report) -> str:
    parts = [f"{key}={value}" for key, value in report.subject.items() if value]
    return f"specprobe {report.command}" + (": " + ", ".join(parts) if parts else "")


class TextReporter(Reporter):
    name = "text"
    description = "grouped findings for a terminal (colour unless NO_COLOR or not a TTY)"

    def render(self, report: Report) -> str:
        # rich is imported here, not at module level: --help and the json format never need it.
        from rich.console import Console
        from rich.markup import escape

        buffer = io.StringIO()
        console = Console(
            file=buffer,
            force_terminal=self.color,
            no_color=not self.color,
            width=110,
            highlight=False,
            soft_wrap=True,
        )
        console.print(escape(_subject_line(report)), style="bold")
        findings = report.sorted_findings()
        for severity in Severity:
            group = [f for f in findings if f.severity is severity]
            if not group:
                continue
            console.print()
            console.print(f"{_HEADING[severity]} ({len(group)})", style=_STYLE[severity])
            for finding in group:
                where = f" \\[{escape(finding.location)}]" if finding.location else ""
                console.print(
                    f"  [{_STYLE[severity]}]{finding.rule}[/]{where}: {escape(finding.message)}"
                )
                if finding.hint:
                    console.print(f"      hint: {escape(finding.hint)}", style="dim")
                if finding.evidence:
                    console.print(f"      see: {escape(finding.evidence[0])}", style="dim")
        summary = report.summary
        console.print()
        counts = f"{summary.errors} error(s), {summary.warnings} warning(s), {summary.infos} info"
        if report.ok:
            console.print(f"[bold green]PASS[/] {counts}")
        else:
            console.print(f"[bold red]FAIL[/] {counts}")
        return buffer.getvalue()
