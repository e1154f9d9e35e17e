"""Markdown reporter, for people: a verdict, then a section per deployment with a findings table.

Used for ``$GITHUB_STEP_SUMMARY``, merge-request comments and files kept beside a deployment. Text
from the user's files goes through ``untrusted.text.markdown`` (table pipes, HTML, markup, control
characters) so it renders as written.
"""

from __future__ import annotations

from specprobe.findings import Finding, Report, Severity
from specprobe.reporters._shared import counts_line, sections, suppressed_line
from specprobe.reporters.base import Reporter
from specprobe.ruledocs import rule_doc_url
from specprobe.untrusted.text import markdown, terminal

_MARK = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "info"}


def cell(text: str) -> str:
    """One table cell or heading: markup, HTML, pipes and control characters escaped (untrusted.text)."""
    return markdown(text)


def _url(url: str) -> str:
    """A link destination: evidence URLs come from the rules and matrix, but a space or ``)`` would
    still end the link early."""
    return terminal(url).replace(" ", "%20").replace(")", "%29")


def _where(finding: Finding) -> str:
    if finding.file is not None:
        return finding.file + (f":{finding.line}" if finding.line is not None else "")
    return finding.location or ""


def _row(finding: Finding) -> str:
    message = cell(finding.message)
    if finding.hint:
        message += "<br>hint: " + cell(finding.hint)
    if finding.evidence:
        # A rule's evidence and the finding's own may name the same page: link it once.
        urls = dict.fromkeys(finding.evidence)
        message += " " + " ".join(f"[\\[{i + 1}\\]]({_url(url)})" for i, url in enumerate(urls))
    rule = f"[`{finding.rule}`]({rule_doc_url(finding.rule)})"
    return f"| {_MARK[finding.severity]} | {rule} | {cell(_where(finding))} | {message} |"


class MarkdownReporter(Reporter):
    name = "markdown"
    description = "a markdown report with a section per deployment (job summaries, merge-request notes)"

    def render(self, report: Report) -> str:
        verdict = "PASS" if report.ok else "FAIL"
        lines = [f"## specprobe {report.command}: {verdict}", "", counts_line(report)]
        suppressed = suppressed_line(report)
        if suppressed:
            lines[-1] += f"; {suppressed}"
        subject = [f"- {key}: {cell(str(value))}" for key, value in report.subject.items() if value]
        if subject:
            lines += ["", *subject]
        for section, members in sections(report).items():
            failing = sum(report.fails(f.severity) for f in members)
            status = f"FAIL ({failing} failing)" if failing else "PASS"
            lines += ["", f"### {cell(section)}: {status}", ""]
            if not members:
                lines.append("No findings.")
                continue
            lines += ["| severity | rule | where | message |", "| --- | --- | --- | --- |"]
            lines += [_row(f) for f in members]
        return "\n".join(lines) + "\n"
