"""Real deployment files from public repositories (tests/deploy/real/<case>/, see its README): every
engine launch is found with its engine and speculative method, alone and with all files in one run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.deploy.loader import load_deployments

REAL = Path(__file__).parent / "real"
CASES = sorted(p for p in REAL.iterdir() if p.is_dir())
runner = CliRunner()


def deployment_file(case: Path) -> Path:
    (found,) = [p for p in case.iterdir() if p.name != "expected.json"]
    return found


def expected(case: Path) -> dict:
    return json.loads((case / "expected.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_every_launch_is_found_with_its_speculation(case):
    want = expected(case)
    assert want["source"]["commit"] and len(want["source"]["commit"]) == 40  # pinned, never a branch
    deployments, findings = load_deployments(str(deployment_file(case)))
    got = [
        {"name": d.name, "engine": d.engine_name, "method": d.method, "speculative": bool(d.speculative)}
        for d in deployments
    ]
    assert got == want["deployments"]
    if not want["deployments"]:
        assert [f.rule for f in findings] == ["DEPLOY-NO-LAUNCH"]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_gate_reports_the_deployments_and_a_verdict(case):
    result = runner.invoke(app, ["gate", str(deployment_file(case)), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    assert [(d["name"], d["method"]) for d in report["deployments"]] == [
        (d["name"], d["method"]) for d in expected(case)["deployments"]
    ]


def test_all_real_files_in_one_run():
    files = [str(deployment_file(case)) for case in CASES]
    result = runner.invoke(app, ["gate", *files, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    want = [(str(deployment_file(c)), d["name"]) for c in CASES for d in expected(c)["deployments"]]
    assert [(d["file"], d["name"]) for d in report["deployments"]] == want
