"""action.yml, .pre-commit-hooks.yaml and the example CI files parse and name commands and options
that exist; the action's gate step runs under bash with a real specprobe."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import typer
import yaml

from specprobe.cli import app
from specprobe.ruledocs import REPOSITORY_URL

ROOT = Path(__file__).parents[2]
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
# Options of other programs that appear in the same scripts.
FOREIGN_OPTIONS = {"--disable-pip-version-check"}


def load(name: str) -> Any:
    return yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))


def commands() -> dict[str, click.Command]:
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    return dict(group.commands)


def options_of(command: str) -> set[str]:
    found = commands()[command]
    return {opt for param in found.params for opt in getattr(param, "opts", []) if opt.startswith("--")}


def require(command: str) -> None:
    """A command the distribution documents must exist: a lost command fails here, it is never skipped."""
    assert command in commands(), f"`specprobe {command}` is documented but not registered"


def specprobe_calls(script: str) -> list[tuple[str, set[str]]]:
    """(subcommand, --options) of every `specprobe SUBCOMMAND ...` line of a shell script."""
    calls = []
    for line in script.splitlines():
        match = re.search(r"(?:^|\s)specprobe\s+([a-z]+)", line)
        if match:
            calls.append((match.group(1), set(OPTION.findall(line[match.end() :])) - FOREIGN_OPTIONS))
    return calls


def test_action_is_a_composite_action_whose_steps_name_real_options() -> None:
    action = load("action.yml")
    assert action["runs"]["using"] == "composite"
    inputs = set(action["inputs"])
    assert {"paths", "format", "fail-on", "baseline"} <= inputs
    steps = action["runs"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert any(u.startswith("actions/setup-python@v") for u in uses)
    # A third-party action is pinned to a full commit (tests/gate/test_ci_files.py checks the SHA).
    assert any(re.match(r"github/codeql-action/upload-sarif@[0-9a-f]{40}$", u) for u in uses)
    whole = yaml.safe_dump(action)
    for name in re.findall(r"inputs\.([a-z-]+)", whole):
        assert name in inputs, f"action.yml uses undefined input {name}"
    scripts = [s["run"] for s in steps if "run" in s]
    assert all("shell" in s for s in steps if "run" in s), "a composite run step needs a shell"
    # Inputs reach scripts through env, never as ${{ }} pasted into shell code.
    assert not any("${{" in script for script in scripts)
    calls = [call for script in scripts for call in specprobe_calls(script)]
    assert [c for c, _ in calls] == ["gate", "gate"]
    require("gate")
    gate_options = options_of("gate")
    script = next(s for s in scripts if "specprobe gate" in s)
    used = set(OPTION.findall(script)) - FOREIGN_OPTIONS
    assert used <= gate_options, used - gate_options
    formats = {"sarif", "github"}
    help_text = commands()["gate"].get_help(click.Context(commands()["gate"]))
    assert all(f in help_text for f in formats)


def test_pre_commit_hooks_name_real_commands() -> None:
    hooks = load(".pre-commit-hooks.yaml")
    assert [h["id"] for h in hooks] == ["specprobe-check", "specprobe-gate"]
    entries = []
    for hook in hooks:
        assert hook["language"] == "python"
        re.compile(hook["files"])
        program, command = hook["entry"].split()
        assert program == "specprobe"
        entries.append(command)
    assert entries == ["check", "gate"]
    check = hooks[0]
    assert check["pass_filenames"] is False  # check takes one folder, given in the hook's args
    assert re.search(check["files"], "models/drafter/model.safetensors")
    assert re.search(hooks[1]["files"], "deploy/k8s/vllm.yaml")
    assert not re.search(hooks[1]["files"], ".pre-commit-config.yaml")
    assert "check" in commands()
    require("gate")


def test_example_github_workflow_uses_the_action_with_its_inputs() -> None:
    workflow = load("examples/workflows/github-specprobe.yml")
    action_inputs = set(load("action.yml")["inputs"])
    owner_repo = REPOSITORY_URL.removeprefix("https://github.com/")
    steps = workflow["jobs"]["gate"]["steps"]
    step = next(s for s in steps if s.get("uses", "").startswith(owner_repo + "@"))
    assert set(step["with"]) <= action_inputs
    assert "paths" in step["with"]
    assert workflow["permissions"]["security-events"] == "write"


def test_example_gitlab_job_writes_the_reports_it_declares() -> None:
    job = load("examples/workflows/gitlab-ci.yml")["specprobe-gate"]
    calls = [(line, call) for line in job["script"] for call in specprobe_calls(line)]
    assert [call[0] for _, call in calls] == ["gate", "gate"]
    outputs = {}
    for line, _ in calls:
        words = shlex.split(line)
        outputs[words[words.index("--format") + 1]] = words[words.index("--output") + 1]
    assert job["artifacts"]["reports"] == {"codequality": outputs["gitlab"], "junit": outputs["junit"]}
    require("gate")
    for _, (command, options) in calls:
        assert options <= options_of(command)


def test_action_gate_step_refuses_a_missing_baseline(tmp_path: Path) -> None:
    """The baseline guard runs before specprobe: a typo in CI must not write a baseline that accepts all."""
    script = next(s["run"] for s in load("action.yml")["runs"]["steps"] if s.get("id") == "gate")
    shim = tmp_path / "bin" / "specprobe"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m specprobe "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    output = tmp_path / "github_output"
    env = {
        **os.environ,
        "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "GITHUB_OUTPUT": str(output),
        "SPECPROBE_PATHS": "deploy.yaml",
        "SPECPROBE_REPORT_FORMAT": "sarif",
        "SPECPROBE_OUTPUT": "specprobe.sarif",
        "SPECPROBE_FAIL_ON": "error",
        "SPECPROBE_BASELINE": "missing-baseline.json",
        "SPECPROBE_CONFIG": "",
        "SPECPROBE_ANNOTATIONS": "true",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "::error title=specprobe::baseline missing-baseline.json does not exist" in done.stdout
    assert output.read_text(encoding="utf-8") == "exit-code=2\n"
    assert not (tmp_path / "missing-baseline.json").exists()


def test_the_cli_format_choices_are_the_registered_reporters() -> None:
    from specprobe.cli._common import FINDINGS_FORMATS
    from specprobe.reporters import REPORTERS

    assert tuple(REPORTERS) == FINDINGS_FORMATS
