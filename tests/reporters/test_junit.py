"""JUnit XML read back by junitparser, the reader CI plugins and report tools use."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import junitparser
import pytest

from specprobe.findings import Finding, Report, Severity
from specprobe.reporters.junit import JunitReporter
from tests.reporters.conftest import MPE_WARNING_ENGINE, run_cli
from tests.reporters.samples import COMPOSE, K8S, RULES, deployments_report


def parse(xml: str, tmp_path: Path) -> junitparser.JUnitXml:
    path = tmp_path / "report.xml"
    path.write_text(xml, encoding="utf-8")
    parsed = junitparser.JUnitXml.fromfile(str(path))
    assert isinstance(parsed, junitparser.JUnitXml)
    return parsed


def suites(parsed: junitparser.JUnitXml) -> dict[str, junitparser.TestSuite]:
    return {suite.name: suite for suite in parsed}


def failed(suite: junitparser.TestSuite) -> list[str]:
    return [case.name for case in suite if any(isinstance(r, junitparser.Failure) for r in case.result)]


def test_one_suite_per_deployment_and_errors_fail(tmp_path: Path) -> None:
    parsed = parse(JunitReporter(rules=RULES).render(deployments_report()), tmp_path)
    by_name = suites(parsed)
    assert list(by_name) == [K8S, COMPOSE, "k8s/Deployment/quiet/container/vllm"]
    assert failed(by_name[K8S]) == ["VOCAB-D2T-RANGE [model.safetensors:d2t]"]
    assert failed(by_name[COMPOSE]) == []
    assert by_name[K8S].tests == 2 and by_name[K8S].failures == 1
    # A deployment without findings is one passing case, so the report shows it was examined.
    quiet = list(by_name["k8s/Deployment/quiet/container/vllm"])
    assert len(quiet) == 1 and quiet[0].is_passed
    assert parsed.failures == 1


def test_strict_fails_warnings_too(tmp_path: Path) -> None:
    strict = replace(deployments_report(), fail_on=Severity.WARNING)
    by_name = suites(parse(JunitReporter(rules=RULES).render(strict), tmp_path))
    assert len(failed(by_name[K8S])) == 2
    assert failed(by_name[COMPOSE]) == ["TARGET-MAX-POSITION [config.json:max_position_embeddings]"]
    failure = next(r for case in by_name[COMPOSE] for r in case.result if isinstance(r, junitparser.Failure))
    assert failure.type == "warning"


def test_hostile_text_stays_well_formed_xml(tmp_path: Path) -> None:
    report = Report(command="gate")
    hostile = 'x"><testcase name="fake"/><![CDATA[ \x00\x1b[2J & ]]> \ud800 \uffff'
    report.add(Finding(rule="LINT-SPEC-TOKENS", severity=Severity.ERROR, message=hostile, deployment=hostile))
    parsed = parse(JunitReporter(rules=RULES).render(report), tmp_path)
    (suite,) = list(parsed)
    (case,) = list(suite)
    assert suite.name.startswith('x"><testcase')
    message = case.result[0].message
    assert "\\x1b[2J" in message and "\\x00" in message and "\\ud800" in message and "\\uffff" in message


def test_check_cli_junit_is_readable(built_case, tmp_path: Path) -> None:
    draft, target = built_case("mpe-2048")
    out = tmp_path / "junit.xml"
    args = ["check", str(draft), "--target", str(target), "--engine", MPE_WARNING_ENGINE, "-f", "junit", "-o", str(out)]
    code, _, _ = run_cli(*args)
    assert code == 0
    (suite,) = list(junitparser.JUnitXml.fromfile(str(out)))
    assert suite.failures == 0 and suite.tests >= 2
    code, _, _ = run_cli(*args, "--strict")
    assert code == 1
    (suite,) = list(junitparser.JUnitXml.fromfile(str(out)))
    assert failed(suite) == ["TARGET-MAX-POSITION [config.json:max_position_embeddings]"]


@pytest.mark.parametrize("strict", [False, True])
def test_failures_match_the_exit_policy(strict: bool, tmp_path: Path) -> None:
    from specprobe.findings import exit_code

    report = replace(deployments_report(), fail_on=Severity.WARNING if strict else Severity.ERROR)
    parsed = parse(JunitReporter(rules=RULES).render(report), tmp_path)
    assert (parsed.failures > 0) == bool(exit_code(report))


JENKINS_XSD = Path(__file__).parent / "data" / "jenkins-junit-10.xsd"


def test_valid_against_the_jenkins_junit_schema_with_time_and_timestamp(tmp_path: Path) -> None:
    xmlschema = pytest.importorskip("xmlschema")
    schema = xmlschema.XMLSchema(str(JENKINS_XSD))
    for fail_on in (Severity.ERROR, Severity.WARNING):
        xml = JunitReporter(rules=RULES).render(replace(deployments_report(), fail_on=fail_on))
        schema.validate(xml)
        root = ET.fromstring(xml)
        assert root.get("time") is not None
        for suite in root.iter("testsuite"):
            # The XSD types both as strings; Jenkins parses time as seconds and timestamp as ISO 8601.
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp", ""))
            assert float(suite.get("time", "x")) >= 0
            for case in suite.iter("testcase"):
                assert float(case.get("time", "x")) >= 0
