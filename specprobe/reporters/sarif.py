"""SARIF 2.1.0 reporter, for GitHub code scanning and other SARIF viewers.

Shape follows the OASIS SARIF 2.1.0 (errata 01) schema, and GitHub's ingestion rules: every result
that has a file carries a physical location (GitHub rejects a log whose result has only a logical
one), ``partialFingerprints`` lets code scanning track an alert across runs and line moves, and the
rule descriptors carry help text so an alert explains itself. Paths are relative to the repository
root (``SRCROOT`` in ``originalUriBaseIds``), which is where code scanning resolves them.

Only findings at or above the reporter's level (default: warning) become results: every result is
an open code-scanning alert, and "works" or "checked against" notes are not alerts. The others are
counted in the run's properties, beside the verdict (``ok``) the exit code takes.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from specprobe import __version__
from specprobe.baseline import FINGERPRINT_KEY, fingerprint, repository_root
from specprobe.findings import Finding, Report, Severity
from specprobe.reporters._shared import artifact_path, suppressed_line
from specprobe.reporters.base import Reporter
from specprobe.ruledocs import REPOSITORY_URL, RuleExplanation, rule_doc_url
from specprobe.rules import Rule
from specprobe.untrusted.text import terminal

SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "SRCROOT"

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _artifact_uri(path: str) -> dict[str, str]:
    """A relative path is resolved against the checkout root (``%SRCROOT%``); an absolute one stays
    an absolute ``file`` URI."""
    if path.startswith("/"):
        return {"uri": "file://" + quote(path, safe="/")}
    return {"uri": quote(path, safe="/"), "uriBaseId": SRCROOT}


def _rule_name(rule_id: str) -> str:
    """SARIF's ``name`` is an identifier: VOCAB-D2T-RANGE -> VocabD2tRange."""
    return "".join(part.capitalize() for part in rule_id.split("-"))


def _descriptor(rule_id: str, rule: Rule | None, fallback: Finding) -> dict[str, Any]:
    if rule is None:
        # A finding from a rule outside the registry (should not happen): still a valid descriptor.
        return {
            "id": rule_id,
            "name": _rule_name(rule_id),
            "shortDescription": {"text": rule_id},
            "defaultConfiguration": {"level": _LEVEL[fallback.severity]},
        }
    return {
        "id": rule.id,
        "name": _rule_name(rule.id),
        "shortDescription": {"text": rule.description},
        "fullDescription": {"text": rule.why or rule.description},
        "help": RuleExplanation(rule).sarif_help(),
        "helpUri": rule_doc_url(rule.id),
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"tags": ["specprobe", rule.family], "family": rule.family},
    }


class SarifReporter(Reporter):
    name = "sarif"
    description = "SARIF 2.1.0 for GitHub code scanning (upload with github/codeql-action/upload-sarif)"

    def render(self, report: Report) -> str:
        return json.dumps(self.log(report), indent=2, ensure_ascii=False) + "\n"

    def log(self, report: Report) -> dict[str, Any]:
        """The SARIF log as a JSON-ready dict (one run)."""
        level = self.sarif_level
        kept = report.sorted_findings()
        findings = [f for f in kept if f.severity.rank <= level.rank]
        below = len(kept) - len(findings)
        rule_ids = list(dict.fromkeys(f.rule for f in findings))
        index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
        first = {f.rule: f for f in reversed(findings)}
        rules = [_descriptor(rule_id, self.rules.get(rule_id), first[rule_id]) for rule_id in rule_ids]
        run: dict[str, Any] = {
            "tool": {
                "driver": {
                    "name": "specprobe",
                    "version": __version__,
                    "semanticVersion": __version__,
                    "informationUri": REPOSITORY_URL,
                    "rules": rules,
                }
            },
            "automationDetails": {"id": f"specprobe/{report.command}/"},
            "originalUriBaseIds": {SRCROOT: {"uri": repository_root().as_uri().rstrip("/") + "/"}},
            "results": [self._result(f, report, index[f.rule]) for f in findings],
        }
        summary = report.summary
        properties: dict[str, Any] = {
            "command": report.command,
            "ok": report.ok,
            "failOn": report.fail_on.value,
            "summary": summary.to_json_dict(),
            "level": level.value,
            "belowLevel": below,
        }
        subject = {k: v for k, v in report.subject.items() if v}
        if subject:
            properties["subject"] = subject
        if suppressed_line(report):
            properties["suppressed"] = dict(report.suppressed)
        run["properties"] = properties
        return {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}

    def _result(self, finding: Finding, report: Report, rule_index: int) -> dict[str, Any]:
        text = terminal(finding.message)
        if finding.hint:
            text += "\nhint: " + terminal(finding.hint)
        result: dict[str, Any] = {
            "ruleId": finding.rule,
            "ruleIndex": rule_index,
            "level": _LEVEL[finding.severity],
            "message": {"text": text},
        }
        properties: dict[str, Any] = {}
        path = artifact_path(finding, report)
        if path is not None:
            physical: dict[str, Any] = {"artifactLocation": _artifact_uri(path)}
            if finding.line is not None and finding.line >= 1:
                physical["region"] = {"startLine": finding.line}
            location: dict[str, Any] = {"physicalLocation": physical}
            if finding.deployment is not None:
                name = terminal(finding.deployment)
                location["logicalLocations"] = [{"name": name, "fullyQualifiedName": name, "kind": "resource"}]
            result["locations"] = [location]
        elif finding.deployment is not None:
            # GitHub rejects a whole log when one result's location is logical only: keep it a property.
            properties["deployment"] = terminal(finding.deployment)
        result["partialFingerprints"] = {FINGERPRINT_KEY: fingerprint(finding)}
        if finding.location:
            properties["location"] = terminal(finding.location)
        if finding.evidence:
            properties["evidence"] = list(dict.fromkeys(finding.evidence))
        if properties:
            result["properties"] = properties
        return result
