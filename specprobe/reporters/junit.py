"""JUnit XML reporter, for CI test-report views (GitLab's ``artifacts:reports:junit``, Jenkins, ...).

One ``<testsuite>`` per deployment (or the one subject of check/lint), one ``<testcase>`` per finding
plus one passing case for a section without findings; a finding that fails the run (the report's
own policy: errors, and warnings too under ``--strict`` / ``--fail-on warning``) is a ``<failure>``,
matching the exit code. Suites carry ``time`` and ``timestamp`` as the Jenkins JUnit schema has them.
Written with the standard library's ElementTree, which escapes markup; control characters, which
XML 1.0 cannot hold at all, are made visible by ``specprobe.untrusted.text``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from specprobe.findings import Finding, Report
from specprobe.reporters._shared import sections
from specprobe.reporters.base import Reporter
from specprobe.untrusted.text import terminal


def _case_name(finding: Finding) -> str:
    where = finding.location or (f"{finding.file}:{finding.line}" if finding.file and finding.line else finding.file)
    return terminal(f"{finding.rule} [{where}]" if where else finding.rule)


def _details(finding: Finding) -> str:
    """Message, hint, file and evidence, one per line; each piece escaped on its own."""
    lines = [terminal(finding.message)]
    if finding.hint:
        lines.append(f"hint: {terminal(finding.hint)}")
    if finding.file:
        lines.append(f"file: {terminal(finding.file)}" + (f":{finding.line}" if finding.line else ""))
    lines += [f"see: {terminal(url)}" for url in dict.fromkeys(finding.evidence)]
    return "\n".join(lines)


class JunitReporter(Reporter):
    name = "junit"
    description = "JUnit XML: a test suite per deployment, a failing test case per error (and warning under --strict)"

    def render(self, report: Report) -> str:
        # xml.etree (~3 ms): every command imports the reporters, only --format junit writes XML.
        import xml.etree.ElementTree as ET  # noqa: PLC0415

        root = ET.Element("testsuites", name=f"specprobe {report.command}")
        # When the report was made (the XSD's ISO 8601 date-time without a zone, in UTC). A finding is
        # read from files, not run: its case takes no time of its own, so every ``time`` is 0.
        timestamp = datetime.now(UTC).replace(microsecond=0, tzinfo=None).isoformat()
        total = failed = 0
        for section, members in sections(report).items():
            suite = ET.SubElement(root, "testsuite", name=terminal(section))
            suite_failures = 0
            for finding in members:
                case = ET.SubElement(
                    suite, "testcase", name=_case_name(finding), classname=terminal(f"specprobe.{section}"), time="0"
                )
                if report.fails(finding.severity):
                    suite_failures += 1
                    failure = ET.SubElement(
                        case, "failure", message=terminal(finding.message), type=finding.severity.value
                    )
                    failure.text = _details(finding)
                else:
                    ET.SubElement(case, "system-out").text = f"{finding.severity.value}: {_details(finding)}"
            if not members:
                ET.SubElement(
                    suite, "testcase", name=f"specprobe {report.command}", classname=terminal(f"specprobe.{section}"),
                    time="0",
                )
            cases = max(len(members), 1)
            suite.set("tests", str(cases))
            suite.set("failures", str(suite_failures))
            suite.set("errors", "0")
            suite.set("skipped", "0")
            suite.set("time", "0")
            suite.set("timestamp", timestamp)
            total += cases
            failed += suite_failures
        root.set("tests", str(total))
        root.set("failures", str(failed))
        root.set("errors", "0")
        root.set("time", "0")
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
