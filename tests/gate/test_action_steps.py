"""The Action's gate step as a runner runs it, with the real specprobe: a pass is one summary line and
no notice per info finding, a gate that cannot run says why in the job summary, and the engine,
strict and args inputs reach `specprobe gate`."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the step is a bash script")


def _gate_script() -> str:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return next(step["run"] for step in action["runs"]["steps"] if step.get("id") == "gate")


def run_step(tmp_path: Path, paths: str, **inputs: str) -> tuple[subprocess.CompletedProcess[str], str, str]:
    """(the step's process, $GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY) for ``paths`` and action ``inputs``."""
    shim = tmp_path / "bin" / "specprobe"
    shim.parent.mkdir(exist_ok=True)
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m specprobe "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    output, summary = tmp_path / "github_output", tmp_path / "step_summary"
    output.write_text("")
    summary.write_text("")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "SPECPROBE_BIN": str(shim.parent),
        "SPECPROBE_PATHS": paths,
        "SPECPROBE_REPORT_FORMAT": inputs.get("format", "sarif"),
        "SPECPROBE_OUTPUT": str(tmp_path / "report"),
        "SPECPROBE_FAIL_ON": "error",
        "SPECPROBE_BASELINE": "",
        "SPECPROBE_CONFIG": "",
        "SPECPROBE_ANNOTATIONS": "true",
        "SPECPROBE_SARIF_LEVEL": "warning",
        "SPECPROBE_ENGINE": inputs.get("engine", ""),
        "SPECPROBE_STRICT": inputs.get("strict", "false"),
        "SPECPROBE_ARGS": inputs.get("args", ""),
    }
    env.pop("COLUMNS", None)
    done = subprocess.run(
        ["bash", "-e", "-c", _gate_script()], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    return done, output.read_text(encoding="utf-8"), summary.read_text(encoding="utf-8")


def test_a_pass_is_one_summary_line_and_no_notices(tmp_path: Path) -> None:
    done, outputs, summary = run_step(tmp_path, "examples/good")
    assert done.returncode == 0, done.stderr
    assert outputs == "exit-code=0\n"
    assert "::notice" not in done.stdout and "::error" not in done.stdout
    assert len(done.stdout.splitlines()) == 1
    assert done.stdout.startswith("specprobe gate: PASS 0 error(s), 0 warning(s), ")
    assert summary.splitlines() == ["specprobe gate: PASS, 0 error(s), 0 warning(s)"]


def test_a_failure_is_annotated(tmp_path: Path) -> None:
    done, outputs, summary = run_step(tmp_path, "examples/bad")
    assert outputs == "exit-code=1\n"
    assert done.stdout.count("::error ") >= 5 and "::notice" not in done.stdout
    assert "FAIL" in summary


def test_a_gate_that_cannot_run_says_why_in_the_summary(tmp_path: Path) -> None:
    done, outputs, summary = run_step(tmp_path, "examples/good", engine="vllm==not-a-version")
    assert outputs == "exit-code=2\n"
    assert "::error title=specprobe gate could not run::specprobe: error:" in done.stdout
    assert "could not run" in summary and "not-a-version" in summary


def test_engine_strict_and_args_reach_the_gate(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    spec = '{"method": "eagle3", "model": "org/drafter", "num_speculative_tokens": 3}'
    script.write_text(f"vllm serve org/target --speculative-config '{spec}'\n", encoding="utf-8")
    # engine: the release a deployment that names none is judged by.
    _, outputs, _ = run_step(tmp_path, str(script), engine="vllm==0.16.0", format="json")
    report = json.loads((tmp_path / "report").read_text(encoding="utf-8"))
    assert outputs == "exit-code=0\n" and report["deployments"][0]["engine"] == "vllm==0.16.0"
    # strict: what cannot be examined on the runner (a hub target not cached) fails the job.
    _, outputs, _ = run_step(tmp_path, str(script), strict="true")
    assert outputs == "exit-code=1\n"
    # args: passed through as options, split on spaces, never run by a shell.
    _, outputs, _ = run_step(tmp_path, str(script), args="--fix-plan", format="json")
    report = json.loads((tmp_path / "report").read_text(encoding="utf-8"))
    assert any(step.startswith("fix-plan:") for step in report["next_steps"])
    done, outputs, _ = run_step(tmp_path, str(script), args="--no-such-option $(touch pwned)")
    assert outputs == "exit-code=2\n" and "no-such-option" in done.stderr
    assert not (ROOT / "pwned").exists() and not (tmp_path / "pwned").exists()
