"""Human-readable reporters: ``text``, findings grouped by severity (in a section per deployment when
the report is over deployments), each naming its ``path:line`` from the working directory, a one-line
verdict and what to run next, wrapped at the terminal's width; and ``concise``, one finding per line
(``path:line: severity RULE message``) and the verdict, for logs and grep.

Under ``quiet`` both show only what fails or warns and the verdict: a pass is one line."""

from __future__ import annotations

import io

from specprobe.columns import wrap_spans
from specprobe.findings import Finding, Report, Severity
from specprobe.reporters._shared import place, sections
from specprobe.reporters.base import Reporter
from specprobe.untrusted.text import terminal

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_HEADING = {Severity.ERROR: "Errors", Severity.WARNING: "Warnings", Severity.INFO: "Info"}


def _subject_line(report: Report) -> str:
    parts = [f"{key}={terminal(value)}" for key, value in report.subject.items() if value]
    return f"specprobe {report.command}" + (": " + ", ".join(parts) if parts else "")


# A line is a list of (text, style) segments; style None is unstyled. Every segment that can carry
# text from the user's files (subject, location, message, hint, evidence) goes through ``terminal``:
# rule messages quote config values and file names verbatim.
Segment = tuple[str, str | None]


def _shown(report: Report, quiet: bool) -> list[Finding]:
    """The findings a person reads: all of them, or under ``quiet`` the errors and warnings only."""
    findings = report.sorted_findings()
    return [f for f in findings if f.severity is not Severity.INFO] if quiet else findings


def _severity_groups(report: Report, findings: list[Finding], indent: str, quiet: bool) -> list[list[Segment]]:
    lines: list[list[Segment]] = []
    for severity in Severity:
        group = [f for f in findings if f.severity is severity]
        if not group:
            continue
        if not quiet:
            lines.append([])
            lines.append([(f"{indent}{_HEADING[severity]} ({len(group)})", _STYLE[severity])])
        for finding in group:
            at = place(finding, report)
            where = _bracket(finding, at)
            message = f"{where}: {terminal(finding.message)}"
            head = f"{indent}  {at}: " if at else f"{indent}  "
            lines.append([(head, None), (terminal(finding.rule), _STYLE[severity]), (message, None)])
            if finding.hint:
                lines.append([(f"{indent}      hint: {terminal(finding.hint)}", "dim")])
            if finding.evidence and not quiet:
                lines.append([(f"{indent}      see: {terminal(finding.evidence[0])}", "dim")])
    return lines


def _bracket(finding: Finding, at: str | None) -> str:
    """`` [location]`` after the rule, unless the place already says it."""
    if not finding.location or terminal(finding.location) == at:
        return ""
    return f" [{terminal(finding.location)}]"


def verdict_line(report: Report) -> str:
    """``PASS 0 error(s), 0 warning(s), 5 info`` (with ``(warnings fail)`` under a strict policy)."""
    summary = report.summary
    counts = f"{summary.errors} error(s), {summary.warnings} warning(s), {summary.infos} info"
    if report.fail_on is Severity.WARNING:
        counts += " (warnings fail)"
    return f"{'PASS' if report.ok else 'FAIL'} {counts}"


def _verdict(report: Report) -> list[list[Segment]]:
    verdict, counts = verdict_line(report).split(" ", 1)
    lines: list[list[Segment]] = [[(verdict, "bold green" if report.ok else "bold red"), (f" {counts}", None)]]
    lines += [[(terminal(step), "bold")] for step in report.next_steps]
    return lines


def _lines(report: Report, quiet: bool = False) -> list[list[Segment]]:
    findings = _shown(report, quiet)
    if quiet and not findings:
        return _verdict(report)  # a quiet pass (or a failure by policy alone) is its verdict
    lines: list[list[Segment]] = [] if quiet else [[(_subject_line(report), "bold")]]
    kept = {id(f) for f in findings}
    if any(f.deployment is not None for f in report.findings) or report.sections:
        # A report over deployments: one section each (report order), its findings grouped inside.
        for section, members in sections(report).items():
            shown = [f for f in members if id(f) in kept]
            if quiet and not shown:
                continue
            failing = any(report.fails(f.severity) for f in members)
            if lines:
                lines.append([])
            lines.append([(f"== {terminal(section)}: ", "bold"), ("FAIL", "bold red") if failing else ("ok", "green")])
            lines += _severity_groups(report, shown, "  ", quiet) if shown else [[("  no findings", "dim")]]
    else:
        lines += _severity_groups(report, findings, "", quiet)
    lines.append([])
    return lines + _verdict(report)


class TextReporter(Reporter):
    name = "text"
    description = "grouped findings for a terminal (colour unless NO_COLOR or not a TTY)"

    def render(self, report: Report) -> str:
        lines = _lines(report, self.quiet)
        if not self.color:
            # Plain text needs no rich: pipes, CI logs and NO_COLOR start faster without importing it.
            out: list[str] = []
            for line in lines:
                text = "".join(part for part, _ in line)
                out += [prefix + text[start:end] for start, end, prefix in wrap_spans(text, self.width)]
            return "".join(f"{line}\n" for line in out)
        # rich (~30 ms) only for a terminal: piped output never imports it.
        from rich.console import Console  # noqa: PLC0415
        from rich.text import Text  # noqa: PLC0415

        buffer = io.StringIO()
        console = Console(file=buffer, force_terminal=True, width=10_000, highlight=False, soft_wrap=True)
        for line in lines:
            # Text, not a markup string: "[bold]" inside a config value is shown as written.
            assembled = Text.assemble(*((text, style or "") for text, style in line))
            for start, end, prefix in wrap_spans(assembled.plain, self.width):
                console.print(Text(prefix) + assembled[start:end])
        return buffer.getvalue()


class ConciseReporter(Reporter):
    name = "concise"
    description = "one finding per line (path:line: severity RULE message), then the verdict, for logs"

    def render(self, report: Report) -> str:
        out = []
        for finding in _shown(report, self.quiet):
            at = place(finding, report) or terminal(finding.deployment or report.command)
            where = _bracket(finding, at)
            out.append(f"{at}: {finding.severity.value} {terminal(finding.rule)}{where} {terminal(finding.message)}")
        out.append(verdict_line(report))
        out += [terminal(step) for step in report.next_steps]
        return "".join(f"{line}\n" for line in out)
