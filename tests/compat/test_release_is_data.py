"""Adding an engine release is a change to data only: its schema snapshot and the newest release read.

The test does on a copy of the package what a release commit does (ship the snapshot, raise
``newest_read`` in data/engine_facts/engines.yaml) and runs the real command line on the copy: before,
the release is linted against the older snapshot and judged by the older facts, and both reports say
so; after, the release is its own, with no Python edited. The verdict itself does not flip, since the
copied snapshot is the same engine behaviour under a new number.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import specprobe
from specprobe.engines.facts import newest_read

PACKAGE = Path(specprobe.__file__).resolve().parent


def _next_minor(version: str) -> str:
    major, minor, *_ = version.split(".")
    return f"{major}.{int(minor) + 1}.0"


def _specprobe(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "SPECPROBE_OFFLINE": "1"}
    env.pop("SPECPROBE_FORMAT", None)
    return subprocess.run(
        [sys.executable, "-B", "-m", "specprobe", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
        check=False,
    )


def _findings(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert result.returncode in (0, 1), result.stderr
    return {f["rule"]: f for f in json.loads(result.stdout)["findings"]}


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("release")
    shutil.copytree(PACKAGE, root / "specprobe", ignore=shutil.ignore_patterns("__pycache__"))
    demo = _specprobe(root, "demo", "--out", str(root / "demo"), "--static")
    assert demo.returncode == 0, demo.stderr
    return root


def test_a_release_added_as_data_is_judged_as_itself(copy: Path) -> None:
    engine = "vllm"
    read = newest_read()[engine]
    new = _next_minor(read)
    drafter, target = str(copy / "demo" / "draft"), str(copy / "demo" / "target")
    check = ("check", drafter, "--target", target, "--engine", f"{engine}=={new}", "--format", "json")
    launch = ["vllm", "serve", target, "--speculative-config"]
    launch.append(json.dumps({"method": "eagle3", "model": drafter, "num_speculative_tokens": 3}))
    lint = ("lint", "--engine", f"{engine}=={new}", "--format", "json", "--", *launch)

    before_check, before_lint = _findings(_specprobe(copy, *check)), _findings(_specprobe(copy, *lint))
    assert f"judged by the facts of {engine}=={read}" in before_check["LAYOUT-ENGINES"]["message"]
    assert f"linted against {engine} {read}" in before_lint["LINT-SNAPSHOT"]["message"]
    assert _specprobe(copy, "schema", engine, "--version", new).returncode == 2

    # The release commit: its snapshot and the newest release read, nothing else.
    data = copy / "specprobe" / "data"
    snapshot = json.loads((data / "schemas" / engine / f"{read}.json").read_text(encoding="utf-8"))
    snapshot["version"] = new
    (data / "schemas" / engine / f"{new}.json").write_text(json.dumps(snapshot), encoding="utf-8")
    engines_yaml = data / "engine_facts" / "engines.yaml"
    engines = yaml.safe_load(engines_yaml.read_text(encoding="utf-8"))
    engines["newest_read"][engine] = new
    engines_yaml.write_text(yaml.safe_dump(engines), encoding="utf-8")

    after_check, after_lint = _findings(_specprobe(copy, *check)), _findings(_specprobe(copy, *lint))
    assert "judged by the facts" not in after_check["LAYOUT-ENGINES"]["message"]
    assert "LINT-SNAPSHOT" not in after_lint
    schema = _specprobe(copy, "schema", engine, "--version", new, "--format", "json")
    assert schema.returncode == 0, schema.stderr
    # Same behaviour under a new number: the verdicts and severities do not move.
    assert {r: f["severity"] for r, f in before_check.items()} == {
        r: f["severity"] for r, f in after_check.items()
    }
    assert {r: f["severity"] for r, f in before_lint.items() if r != "LINT-SNAPSHOT"} == {
        r: f["severity"] for r, f in after_lint.items()
    }
