"""Finding fingerprints and the baseline file: accepted findings are suppressed, new ones still fail.

A fingerprint names a finding by what it is, not where it happens to sit today: rule, deployment,
file (relative to the working directory) and the message with positions taken out, so moving a
manifest's lines or re-running on another checkout keeps it. SARIF's ``partialFingerprints`` and
GitLab's ``fingerprint`` carry the same value, so code scanning, merge requests and the baseline
agree on which finding is which.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any

from specprobe.findings import Finding, Report, SpecprobeError

BASELINE_FORMAT = 1
FINGERPRINT_KEY = "specprobe/v1"

# Positions that move when a file is edited: "line 12", "deploy.yaml:12", "deploy.yaml:12:5".
_LINE_WORD = re.compile(r"\blines? \d+(?:\s*-\s*\d+)?\b", re.IGNORECASE)
_COLON_POSITION = re.compile(r"(?<=\S):\d+(?::\d+)?\b")
_SPACE = re.compile(r"\s+")


@functools.lru_cache(maxsize=8)
def _toplevel(cwd: str) -> Path:
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return Path(cwd)
    top = completed.stdout.strip()
    return Path(top).resolve() if completed.returncode == 0 and top else Path(cwd)


def repository_root() -> Path:
    """The root of the git checkout holding the working directory (``git rev-parse
    --show-toplevel``), else the working directory: code scanning and merge-request widgets resolve
    report paths against the repository root, whichever folder the gate ran in."""
    return _toplevel(str(Path.cwd().resolve()))


def relative_path(path: str, root: Path | None = None) -> str:
    """``path`` relative to ``root`` (default: the working directory) with ``/`` separators when it
    lies below it; otherwise as given, so paths outside the checkout stay recognisable."""
    base = (root or Path.cwd()).resolve()
    candidate = Path(path)
    absolute = candidate if candidate.is_absolute() else base / candidate
    try:
        # normpath, not resolve(): a symlinked deployment file keeps the name the user gave it.
        return PurePath(os.path.normpath(absolute)).relative_to(base).as_posix()
    except ValueError:
        return PurePath(path).as_posix()


def normalise_message(message: str, root: Path | None = None) -> str:
    """The message without positions, the working-directory prefix or whitespace differences."""
    base = str((root or Path.cwd()).resolve())
    text = message.replace(base + os.sep, "").replace(base, ".")
    text = _LINE_WORD.sub("line", text)
    text = _COLON_POSITION.sub("", text)
    return _SPACE.sub(" ", text).strip()


def fingerprint(finding: Finding, root: Path | None = None) -> str:
    """A stable 32-hex-digit identity: rule + deployment + file + normalised message."""
    if finding.file is not None:
        where = relative_path(finding.file, root)
    else:
        # No file: the readable location ("model.safetensors:d2t"), without any line position in it.
        where = _COLON_POSITION.sub("", finding.location or "")
    # hashlib loads OpenSSL (~3 ms): every check imports this module, only baselines, SARIF and GitLab
    # output fingerprint.
    import hashlib  # noqa: PLC0415

    parts = (finding.rule, finding.deployment or "", where, normalise_message(finding.message, root))
    # surrogatepass: a file name that is not valid UTF-8 still has a fingerprint.
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True)
class Baseline:
    """Fingerprints of accepted findings, as read from a baseline file."""

    fingerprints: frozenset[str]
    path: Path | None = None


def read_baseline(path: Path) -> Baseline:
    """Read a baseline file written by ``write_baseline``; a malformed one is exit 2, one line."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecprobeError(f"cannot read baseline {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpecprobeError(f"baseline {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("specprobe_baseline") != BASELINE_FORMAT:
        raise SpecprobeError(f"baseline {path} is not a specprobe baseline (format {BASELINE_FORMAT})")
    entries = data.get("findings")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("fingerprint"), str) for e in entries
    ):
        raise SpecprobeError(f"baseline {path}: 'findings' must be a list of objects with a 'fingerprint'")
    return Baseline(frozenset(e["fingerprint"] for e in entries), path)


def render_baseline(findings: Iterable[Finding], root: Path | None = None) -> str:
    """The baseline file for ``findings``: sorted and readable, so a change to it reviews as a diff."""
    entries: dict[str, dict[str, Any]] = {}
    for finding in findings:
        key = fingerprint(finding, root)
        entries[key] = {
            "fingerprint": key,
            "rule": finding.rule,
            "severity": finding.severity.value,
            "deployment": finding.deployment,
            "file": relative_path(finding.file, root) if finding.file is not None else None,
            "message": normalise_message(finding.message, root),
        }
    ordered = sorted(entries.values(), key=lambda e: (e["deployment"] or "", e["file"] or "", e["rule"], e["message"]))
    document = {"specprobe_baseline": BASELINE_FORMAT, "findings": ordered}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_baseline(path: Path, findings: Iterable[Finding], root: Path | None = None) -> None:
    try:
        path.write_text(render_baseline(findings, root), encoding="utf-8")
    except OSError as exc:
        raise SpecprobeError(f"cannot write baseline {path}: {exc.strerror}") from None


def apply_baseline(report: Report, baseline: Baseline, root: Path | None = None) -> Report:
    """``report`` without the findings the baseline accepts; their number goes to ``report.suppressed``."""
    kept = [f for f in report.findings if fingerprint(f, root) not in baseline.fingerprints]
    return with_suppressed(report, kept, "baseline", len(report.findings) - len(kept))


def with_suppressed(report: Report, kept: list[Finding], reason: str, count: int) -> Report:
    """A copy of ``report`` holding ``kept``, with ``count`` added to ``report.suppressed[reason]``."""
    suppressed = dict(report.suppressed)
    if count:
        suppressed[reason] = suppressed.get(reason, 0) + count
    return replace(report, findings=kept, suppressed=suppressed)


def suppressed_count(report: Report) -> int:
    """How many findings configuration and baseline took out of ``report``."""
    return sum(report.suppressed.values())
