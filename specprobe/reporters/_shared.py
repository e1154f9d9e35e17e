"""What the CI formats share: report sections (one per deployment), paths relative to the repository
root, counts and annotation limits. Whether a finding fails the run is the report's own policy
(``Report.fails``, from findings.py). Untrusted text is made safe by ``specprobe.untrusted.text``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from specprobe.baseline import relative_path, repository_root
from specprobe.findings import Finding, Report
from specprobe.untrusted.files import UntrustedInputError, exists, is_dir, is_file, read_bounded
from specprobe.untrusted.text import terminal

# Subject keys that name an input file or folder, in the order a fallback location prefers them.
_SUBJECT_PATH_KEYS = ("file", "path", "manifest", "draft", "target")
# A drafter's config.json is a few KB; one larger is not searched for a key's line.
MAX_CONFIG_BYTES = 4 * 1024 * 1024


def subject_label(report: Report) -> str:
    """The report's subject in one line: ``check drafts/kimi-eagle3`` or just the command."""
    values = [str(v) for v in report.subject.values() if v]
    return f"{report.command} " + ", ".join(values) if values else report.command


def _listed(report: Report) -> list[tuple[str, str | None]]:
    """(name, file) of the deployments the report covers (its ``sections``)."""
    return [(section.name, section.file) for section in report.sections or ()]


def _label(name: str, file: str | None, shared: set[str]) -> str:
    # Two files can hold a deployment of the same name (compose/service/vllm): their file tells them apart.
    return f"{name} ({relative_path(file)})" if name in shared and file is not None else name


def _shared_names(listed: list[tuple[str, str | None]]) -> set[str]:
    files: dict[str, set[str | None]] = {}
    for name, file in listed:
        files.setdefault(name, set()).add(file)
    return {name for name, in_files in files.items() if len(in_files) > 1}


def sections(report: Report) -> dict[str, list[Finding]]:
    """The report's findings by section, worst first inside each, sections in report order.

    One section per deployment, in the order the report lists them, then as findings name them. A
    report of one subject (check, lint) has a single section named after its subject. A gate report
    lists its deployments in ``report.sections`` so that a deployment without findings still gets its
    (passing) section. Findings about
    the whole run go in a section named after the subject.

    One pass over deployments and findings: a fleet of a thousand deployments renders in linear time.
    """
    listed = _listed(report)
    shared = _shared_names(listed)
    grouped: dict[str, list[Finding]] = {}
    for name, file in listed:
        grouped.setdefault(_label(name, file, shared), [])
    # A deployment name shared by two files is told apart by the finding's file.
    files_of: dict[str, set[str | None]] = {}
    for name, file in listed:
        if name in shared:
            files_of.setdefault(name, set()).add(file)
    whole_run: list[Finding] = []
    for finding in report.sorted_findings():
        if finding.deployment is None:
            whole_run.append(finding)
            continue
        name = finding.deployment
        label = _label(name, finding.file, shared) if finding.file in files_of.get(name, ()) else name
        grouped.setdefault(label, []).append(finding)
    if not grouped or whole_run:
        subject = subject_label(report)
        grouped.setdefault(subject, []).extend(whole_run)
    return grouped


def _from_root(path: str, root: Path) -> str:
    """``path`` (relative to the working directory, or absolute) relative to ``root`` with ``/``
    separators; a path outside ``root`` stays absolute, since a relative one would resolve against
    the root to another file."""
    absolute = Path(os.path.normpath(Path.cwd().resolve() / path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return absolute.as_posix()


def artifact_path(finding: Finding, report: Report, root: Path | None = None) -> str | None:
    """The file a finding points at, relative to ``root`` (default: the repository root, see
    ``baseline.repository_root``): its own ``file``, else the input the report examined (the drafter
    folder of ``check``); None for a bare command line."""
    root = (root if root is not None else repository_root()).resolve()
    if finding.file is not None:
        return terminal(_from_root(finding.file, root))
    examined = examined_file(finding, report)
    return terminal(_from_root(str(examined), root)) if examined is not None else None


def examined_file(finding: Finding, report: Report) -> Path | None:
    """For a finding without a file of its own: the file of the examined folder its location names
    (``model.safetensors:d2t`` in check, ``demo/draft/model.safetensors:d2t`` in lint), else the folder
    or file the report examined; None for a bare command line. The subject is what the user typed, so
    a name the OS refuses (too long, a NUL byte) is no place rather than an error."""
    for key in _SUBJECT_PATH_KEYS:
        value: Any = report.subject.get(key)
        if not (isinstance(value, str) and value and exists(Path(value))):
            continue
        head = (finding.location or "").split(":", 1)[0]
        folder = Path(value)
        if head and is_dir(folder):
            for inner in (folder / head, Path(head)):
                if is_file(inner) and folder.resolve() in inner.resolve().parents:
                    return inner
        return folder
    return None


def _from_cwd(path: Path) -> str:
    """``path`` as a person at the working directory types it: relative when inside it, else absolute."""
    absolute = Path(os.path.normpath(Path.cwd() / path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


# "KEY": at the start of a JSON member (config.json keys are plain identifiers).
_MEMBER = '"{key}"\\s*:'


def _key_line(file: Path, key: str) -> int | None:
    """The line of ``"key":`` in a drafter's config.json, for a finding that names the key. Read
    through the bounded reader; a file that cannot be read simply has no line."""
    try:
        text = read_bounded(file, max_bytes=MAX_CONFIG_BYTES, what="config.json").decode("utf-8", "replace")
    except (UntrustedInputError, OSError):
        return None
    found = re.search(_MEMBER.format(key=re.escape(key)), text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def place(finding: Finding, report: Report) -> str | None:
    """Where a person opens the file a finding is about: ``path:line`` relative to the working
    directory (the finding's own file and line; else the file of the examined drafter or target
    folder that its location names, with the line of a config.json key), or the examined folder;
    None for a bare command line."""
    if finding.file is not None:
        where = _from_cwd(Path(finding.file))
        return terminal(f"{where}:{finding.line}" if finding.line else where)
    examined = examined_file(finding, report)
    if examined is None:
        return None
    head, _, key = (finding.location or "").partition(":")
    line = _key_line(examined, key) if examined.name == "config.json" == head and key.isidentifier() else None
    return terminal(_from_cwd(examined) + (f":{line}" if line else ""))


def counts_line(report: Report) -> str:
    summary = report.summary
    return f"{summary.errors} error(s), {summary.warnings} warning(s), {summary.infos} info"


def suppressed_line(report: Report) -> str | None:
    """``3 suppressed (config 1, baseline 2)`` when configuration or a baseline removed findings."""
    counts = {reason: count for reason, count in report.suppressed.items() if count}
    if not counts:
        return None
    detail = ", ".join(f"{reason} {count}" for reason, count in sorted(counts.items()))
    return f"{sum(counts.values())} suppressed ({detail})"
