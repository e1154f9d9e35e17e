"""GitLab Code Quality reporter: the JSON array of ``artifacts:reports:codequality``.

Fields and severities as GitLab documents them
(https://github.com/gitlabhq/gitlabhq/blob/1dfe61a9c1fe11a451cb24439a212b9c6df9f209/doc/ci/testing/code_quality.md#code-quality-report-format):
``description``, ``check_name``, ``fingerprint``, ``severity`` (info, minor, major, critical,
blocker), ``location.path`` relative to the repository and ``location.lines.begin``. The fingerprint
is the baseline's, so the merge-request widget and ``--baseline`` agree on which finding is new.

Only warnings and errors are issues: each entry is a code-quality degradation in the merge-request
widget, and a "works" or "checked against" note is not one.
"""

from __future__ import annotations

import json
from typing import Any

from specprobe.baseline import fingerprint
from specprobe.findings import Finding, Report, Severity
from specprobe.reporters._shared import artifact_path
from specprobe.reporters.base import Reporter
from specprobe.untrusted.text import terminal

# An error stops the deployment from working (critical); a warning predicts a concrete misbehaviour
# of the engine version checked (major). Info is context, not an issue, and is left out.
SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def issue(finding: Finding, report: Report) -> dict[str, Any]:
    description = finding.message
    if finding.deployment is not None:
        description = f"{finding.deployment}: {description}"
    if finding.hint:
        description += f" (hint: {finding.hint})"
    return {
        "description": terminal(description),
        "check_name": finding.rule,
        "fingerprint": fingerprint(finding),
        "severity": SEVERITY[finding.severity],
        "location": {
            # GitLab needs a path and a line; a finding about a bare command line has neither.
            "path": artifact_path(finding, report) or ".",
            "lines": {"begin": finding.line if finding.line is not None and finding.line >= 1 else 1},
        },
    }


class GitlabReporter(Reporter):
    name = "gitlab"
    description = "GitLab Code Quality JSON (artifacts:reports:codequality)"

    def render(self, report: Report) -> str:
        issues = [issue(f, report) for f in report.sorted_findings() if f.severity is not Severity.INFO]
        return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
