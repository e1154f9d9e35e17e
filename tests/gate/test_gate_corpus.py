"""Corpus: realistic deployment files (tests/gate/cases/<case>/ with expected.json), gated as a CI job
runs them; the deployments found, the exit code, and each expected rule at its line are asserted.

A new case is a new folder: one deployment file and an ``expected.json`` with ``exit``, ``deployments``,
``must_fire`` ([{rule, line?, deployment?}]) and ``must_not_fire`` ([rule]).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.baseline import repository_root
from specprobe.cli import app

CASES = Path(__file__).parent / "cases"
runner = CliRunner()


def case_file(case: Path) -> Path:
    (found,) = [p for p in case.iterdir() if p.name != "expected.json"]
    return found


@pytest.mark.parametrize("case", sorted(p for p in CASES.iterdir() if p.is_dir()), ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_case(case, fmt):
    expected = json.loads((case / "expected.json").read_text(encoding="utf-8"))
    path = case_file(case)
    # Every finding as a SARIF result (info too), so each points back at the file gated.
    levels = ["--sarif-level", "info"] if fmt == "sarif" else []
    result = runner.invoke(app, ["gate", str(path), "--format", fmt, *levels])
    assert result.exit_code == expected["exit"], result.output
    if fmt == "sarif":
        run = json.loads(result.stdout)["runs"][0]
        uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"] for loc in r["locations"]}
        # Paths relative to the repository root (SRCROOT), where code scanning resolves them.
        root = run["originalUriBaseIds"]["SRCROOT"]["uri"]
        assert root == repository_root().as_uri() + "/"
        assert {(repository_root() / uri).resolve() for uri in uris} == {path.resolve()}
        return
    report = json.loads(result.stdout)
    assert [d["name"] for d in report["deployments"]] == expected["deployments"]
    for want in expected["must_fire"]:
        matching = [
            f
            for f in report["findings"]
            if f["rule"] == want["rule"]
            and ("line" not in want or f.get("line") == want["line"])
            and ("deployment" not in want or f.get("deployment") == want["deployment"])
        ]
        assert matching, (want, [(f["rule"], f.get("line"), f.get("deployment")) for f in report["findings"]])
    fired = {f["rule"] for f in report["findings"]}
    assert not fired & set(expected["must_not_fire"])
    assert all(f.get("file") == str(path) and isinstance(f.get("line"), int) for f in report["findings"])
