"""What the CI formats share: report sections (one per deployment), paths relative to the checkout,
counts and the exit policy per finding. Untrusted text is made safe by ``specprobe.textsafe``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specprobe.baseline import relative_path
from specprobe.findings import Finding, Report, Severity
from specprobe.textsafe import terminal

# Subject keys that name an input file or folder, in the order a fallback location prefers them.
_SUBJECT_PATH_KEYS = ("file", "path", "manifest", "draft", "target")


def subject_label(report: Report) -> str:
    """The report's subject in one line: ``check drafts/kimi-eagle3`` or just the command."""
    values = [str(v) for v in report.subject.values() if v]
    return f"{report.command} " + ", ".join(values) if values else report.command


def section_names(report: Report) -> list[str]:
    """One section per deployment, in the order the report lists them, then as findings name them.

    A report of one subject (check, lint) has a single section named after its subject. A gate
    report may list its deployments in ``extra['deployments']`` (names, or objects with ``name``) so
    that a deployment without findings still gets its (passing) section.
    """
    names: list[str] = []
    listed = report.extra.get("deployments")
    if isinstance(listed, list):
        for item in listed:
            name = item.get("name") if isinstance(item, Mapping) else item
            if isinstance(name, str) and name not in names:
                names.append(name)
    for finding in report.findings:
        if finding.deployment is not None and finding.deployment not in names:
            names.append(finding.deployment)
    if not names or any(f.deployment is None for f in report.findings):
        # Findings about the whole run (or a report of one subject) go in a section of their own.
        names.append(subject_label(report))
    return names


def section_of(finding: Finding, report: Report) -> str:
    return finding.deployment if finding.deployment is not None else subject_label(report)


def artifact_path(finding: Finding, report: Report) -> str | None:
    """The file a finding points at, relative to the working directory: its own ``file``, else the
    input the report examined (the drafter folder of ``check``); None for a bare command line."""
    if finding.file is not None:
        return terminal(relative_path(finding.file))
    for key in _SUBJECT_PATH_KEYS:
        value: Any = report.subject.get(key)
        if not (isinstance(value, str) and value and Path(value).exists()):
            continue
        # "model.safetensors:d2t" names a file inside the examined folder: point at that file.
        head = (finding.location or "").split(":", 1)[0]
        inner = Path(value) / head
        if head and Path(value).is_dir() and inner.is_file():
            return terminal(relative_path(str(inner)))
        return terminal(relative_path(value))
    return None


def counts_line(report: Report) -> str:
    summary = report.summary
    return f"{summary.errors} error(s), {summary.warnings} warning(s), {summary.infos} info"


def suppressed_line(report: Report) -> str | None:
    """``3 suppressed (config 1, baseline 2)`` when configuration or a baseline removed findings."""
    counts = {k: v for k, v in report.extra.get("suppressed", {}).items() if isinstance(v, int) and v}
    if not counts:
        return None
    detail = ", ".join(f"{reason} {count}" for reason, count in sorted(counts.items()))
    return f"{sum(counts.values())} suppressed ({detail})"


def fails(severity: Severity, strict: bool) -> bool:
    """Whether a finding of ``severity`` fails the run under the exit policy of findings.py."""
    return severity is Severity.ERROR or (strict and severity is Severity.WARNING)
