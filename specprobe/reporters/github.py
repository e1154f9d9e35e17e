"""GitHub Actions workflow commands: ``::error file=F,line=L,title=RULE::message`` annotations on the
pull request, and a markdown summary appended to ``$GITHUB_STEP_SUMMARY`` when the runner sets it.

Escaping follows @actions/core's ``escapeData`` / ``escapeProperty`` exactly
(https://github.com/actions/toolkit/blob/4b9afa4c890de9d1a84c75bb617ee4d96207823a/packages/core/src/command.ts#L103-L116):
``%``, CR and LF in the message; additionally ``:`` and ``,`` in properties (``specprobe.untrusted.text``'s
``annotation_data`` / ``annotation_property``, which first make control characters visible, so a
hostile manifest cannot drive the log viewer's ANSI parser).

GitHub shows at most 10 annotations of each type (error, warning, notice) per step and drops the
rest without a word
(https://github.com/actions/toolkit/blob/457303960f03375db6f033e214b9f90d79c3fe5c/docs/problem-matchers.md#limitations):
past that, the tenth annotation of a type says how many more there are in the job summary.

Under ``quiet`` (the Action's annotations) info findings are not annotated and a passing run's job
summary is its verdict line: a passing pull request gets one line, not a notice per info finding.
"""

from __future__ import annotations

import os
from pathlib import Path

from specprobe.findings import Finding, Report, Severity, SpecprobeError
from specprobe.reporters._shared import artifact_path
from specprobe.reporters.base import Reporter
from specprobe.reporters.markdown import MarkdownReporter
from specprobe.untrusted.text import annotation_data, annotation_property

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def annotation(finding: Finding, report: Report) -> str:
    properties: list[tuple[str, str]] = []
    path = artifact_path(finding, report)
    if path is not None:
        properties.append(("file", path))
        if finding.line is not None and finding.line >= 1:
            properties.append(("line", str(finding.line)))
    properties.append(("title", finding.rule))
    # Each piece is escaped on its own (untrusted.text.annotation_data: non-printables made visible, then
    # @actions/core's escapeData); the pieces are joined by an encoded newline, which the runner
    # turns back into a line break inside the one annotation.
    pieces = [finding.message]
    if finding.deployment is not None:
        pieces[0] = f"{finding.deployment}: {finding.message}"
    if finding.hint:
        pieces.append(f"hint: {finding.hint}")
    if finding.evidence:
        pieces.append(f"see: {finding.evidence[0]}")
    props = ",".join(f"{key}={annotation_property(value)}" for key, value in properties)
    return f"::{_COMMAND[finding.severity]} {props}::" + "%0A".join(annotation_data(p) for p in pieces)


ANNOTATION_LIMIT = 10
"""Annotations of one type GitHub shows per step."""


def _more(command: str, count: int, report: Report) -> str:
    noun = {"error": "error(s)", "warning": "warning(s)", "notice": "note(s)"}[command]
    return f"::{command} title=specprobe {report.command}::" + annotation_data(
        f"{count} more {noun} in the job summary (GitHub shows {ANNOTATION_LIMIT} {command} annotations per step)"
    )


class GithubReporter(Reporter):
    name = "github"
    description = "GitHub Actions annotations (::error/::warning/::notice); job summary when GITHUB_STEP_SUMMARY is set"

    def render(self, report: Report) -> str:
        lines: list[str] = []
        findings = report.sorted_findings()
        if self.quiet:
            findings = [f for f in findings if f.severity is not Severity.INFO]
        for severity, command in _COMMAND.items():
            group = [f for f in findings if f.severity is severity]
            if len(group) <= ANNOTATION_LIMIT:
                lines += [annotation(f, report) for f in group]
            else:
                shown = ANNOTATION_LIMIT - 1
                lines += [annotation(f, report) for f in group[:shown]]
                lines.append(_more(command, len(group) - shown, report))
        summary = report.summary
        verdict = "PASS" if report.ok else "FAIL"
        lines.append(
            f"specprobe {report.command}: {verdict} {summary.errors} error(s), {summary.warnings} warning(s), "
            f"{summary.infos} info"
        )
        return "\n".join(lines) + "\n"


def append_step_summary(report: Report, *, quiet: bool = False) -> Path | None:
    """Append the markdown report to ``$GITHUB_STEP_SUMMARY`` when running in GitHub Actions (under
    ``quiet``, a passing run appends its verdict line only)."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    path = Path(target)
    if quiet and report.ok:
        summary = report.summary
        text = f"specprobe {report.command}: PASS, {summary.errors} error(s), {summary.warnings} warning(s)\n"
    else:
        text = MarkdownReporter(quiet=quiet).render(report)
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise SpecprobeError(f"cannot append to GITHUB_STEP_SUMMARY {path}: {exc.strerror}") from None
    return path
