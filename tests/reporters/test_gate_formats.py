"""`specprobe gate FILE --format sarif|junit|github|gitlab` on the shipped examples: each output is
valid for its consumer, points at the file and line, and the exit code is the gate's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import junitparser
import pytest

from tests.reporters.conftest import run_cli
from tests.reporters.test_github import parse as parse_annotation
from tests.reporters.test_gitlab import CODE_QUALITY
from tests.reporters.test_sarif import github_ingestion_problems, validate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = sorted(p.name for p in (EXAMPLES / "bad").iterdir())


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from specprobe.demo.example import write_demo

    root = tmp_path_factory.mktemp("gate-formats")
    for kind in ("good", "bad"):
        shutil.copytree(EXAMPLES / kind, root / kind)
    write_demo(root / "demo")
    return root


@pytest.fixture
def in_examples(examples: Path, monkeypatch) -> Path:
    monkeypatch.chdir(examples)
    return examples


@pytest.mark.parametrize("name", NAMES)
def test_sarif_of_a_bad_deployment(in_examples: Path, name: str) -> None:
    code, out, _ = run_cli("gate", f"bad/{name}", "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    validate(log)
    assert github_ingestion_problems(log) == []
    errors = [r for r in log["runs"][0]["results"] if r["level"] == "error"]
    assert errors
    # Every error is anchored to a file of the checkout; the deployment file's findings to a line.
    for result in errors:
        physical = result["locations"][0]["physicalLocation"]
        uri = physical["artifactLocation"]["uri"]
        assert not uri.startswith(("/", "file:")), uri
        if uri == f"bad/{name}":
            assert physical["region"]["startLine"] >= 1
    assert any(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == f"bad/{name}" for r in errors
    )


@pytest.mark.parametrize("name", NAMES)
def test_good_deployment_passes_in_every_ci_format(in_examples: Path, name: str) -> None:
    code, out, _ = run_cli("gate", f"good/{name}", "--format", "sarif")
    assert code == 0
    log = json.loads(out)
    validate(log)
    assert not [r for r in log["runs"][0]["results"] if r["level"] == "error"]
    code, out, _ = run_cli("gate", f"good/{name}", "--format", "junit")
    assert code == 0
    assert 'failures="0"' in out.splitlines()[1]


@pytest.mark.parametrize("name", NAMES)
def test_junit_github_and_gitlab_of_a_bad_deployment(in_examples: Path, name: str, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    code, _, _ = run_cli("gate", f"bad/{name}", "--format", "junit", "--output", str(report))
    assert code == 1
    parsed = junitparser.JUnitXml.fromfile(str(report))
    assert parsed.failures >= 1
    assert all(suite.name for suite in parsed)

    code, out, _ = run_cli("gate", f"bad/{name}", "--format", "github")
    assert code == 1
    annotations = [parse_annotation(line) for line in out.splitlines() if line.startswith("::")]
    errors = [props for kind, props, _ in annotations if kind == "error"]
    assert errors and all(re.fullmatch(r"[A-Z0-9-]+", props["title"]) for props in errors)
    assert any(props.get("file") == f"bad/{name}" and int(props["line"]) >= 1 for props in errors)

    code, out, _ = run_cli("gate", f"bad/{name}", "--format", "gitlab")
    assert code == 1
    issues = json.loads(out)
    jsonschema.validate(issues, CODE_QUALITY)
    assert any(i["severity"] == "critical" and i["location"]["path"] == f"bad/{name}" for i in issues)
