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


def _listed(report: Report) -> list[tuple[str, str | None]]:
    """(name, file) of the deployments the report lists in ``extra['deployments']``."""
    listed = report.extra.get("deployments")
    found: list[tuple[str, str | None]] = []
    if isinstance(listed, list):
        for item in listed:
            name = item.get("name") if isinstance(item, Mapping) else item
            file = item.get("file") if isinstance(item, Mapping) else None
            if isinstance(name, str):
                found.append((name, file if isinstance(file, str) else None))
    return found


def _label(name: str, file: str | None, shared: set[str]) -> str:
    # Two files can hold a deployment of the same name (compose/service/vllm): their file tells them apart.
    return f"{name} ({relative_path(file)})" if name in shared and file is not None else name


def _shared_names(listed: list[tuple[str, str | None]]) -> set[str]:
    files: dict[str, set[str | None]] = {}
    for name, file in listed:
        files.setdefault(name, set()).add(file)
    return {name for name, in_files in files.items() if len(in_files) > 1}


def section_names(report: Report) -> list[str]:
    """One section per deployment, in the order the report lists them, then as findings name them.

    A report of one subject (check, lint) has a single section named after its subject. A gate
    report may list its deployments in ``extra['deployments']`` (names, or objects with ``name`` and
    ``file``) so that a deployment without findings still gets its (passing) section.
    """
    listed = _listed(report)
    shared = _shared_names(listed)
    names: list[str] = []
    for name, file in listed:
        label = _label(name, file, shared)
        if label not in names:
            names.append(label)
    for finding in report.findings:
        if finding.deployment is not None and section_of(finding, report) not in names:
            names.append(section_of(finding, report))
    if not names or any(f.deployment is None for f in report.findings):
        # Findings about the whole run (or a report of one subject) go in a section of their own.
        names.append(subject_label(report))
    return names


def section_of(finding: Finding, report: Report) -> str:
    if finding.deployment is None:
        return subject_label(report)
    listed = _listed(report)
    shared = _shared_names(listed)
    if finding.deployment in shared:
        files = {file for name, file in listed if name == finding.deployment}
        if finding.file in files:
            return _label(finding.deployment, finding.file, shared)
    return finding.deployment


def artifact_path(finding: Finding, report: Report) -> str | None:
    """The file a finding points at, relative to the working directory: its own ``file``, else the
    input the report examined (the drafter folder of ``check``); None for a bare command line."""
    if finding.file is not None:
        return terminal(relative_path(finding.file))
    for key in _SUBJECT_PATH_KEYS:
        value: Any = report.subject.get(key)
        if not (isinstance(value, str) and value and Path(value).exists()):
            continue
        # "model.safetensors:d2t" (check) or "demo/draft/model.safetensors:d2t" (lint) names a file in
        # the examined folder: point at that file rather than the folder.
        head = (finding.location or "").split(":", 1)[0]
        folder = Path(value)
        if head and folder.is_dir():
            for inner in (folder / head, Path(head)):
                if inner.is_file() and folder.resolve() in inner.resolve().parents:
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
