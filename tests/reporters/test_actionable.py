"""What a person reads can be acted on: every text finding names its place from the working
directory, `--quiet` shows only what fails or warns, `concise` is one finding per line, and a FAIL ends
with what to run next (the fix planner's command where it can repair the drafter, `specprobe rule`)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec
from tests.fix.builders import d2t_absolute, make_draft, make_target

runner = CliRunner()
ROOT = Path(__file__).parents[2]
# A finding line: indent, then PLACE: RULE-ID (the line the rule ID is on).
_FINDING = re.compile(r"^\s+(?P<place>\S+): (?P<rule>[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+)\b")


@pytest.fixture
def at_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "400")  # one finding per line, to read each one's place


def test_every_gate_finding_names_its_file_and_line_from_the_working_directory(at_root: None) -> None:
    result = runner.invoke(app, ["gate", "examples/bad"])
    assert result.exit_code == 1
    rule_lines = [line for line in result.stdout.splitlines() if re.search(r"\b[A-Z]+-[A-Z0-9-]+\b", line)
                  and line.startswith("    ") and not line.lstrip().startswith(("hint:", "see:"))]
    assert len(rule_lines) > 20
    for line in rule_lines:
        found = _FINDING.match(line)
        assert found, line
        path, _, number = found["place"].rpartition(":")
        assert path.startswith("examples/bad/") and (ROOT / path).is_file(), line
        assert number.isdigit(), line


def test_a_quiet_pass_is_one_line(at_root: None) -> None:
    result = runner.invoke(app, ["gate", "examples/good", "--quiet"])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [line for line in result.stdout.splitlines() if line]
    assert len(result.stdout.splitlines()) == 1 and result.stdout.startswith("PASS")


def test_quiet_keeps_errors_and_warnings_and_drops_info(at_root: None) -> None:
    loud = runner.invoke(app, ["gate", "examples/bad"]).stdout
    quiet = runner.invoke(app, ["gate", "examples/bad", "-q"])
    assert quiet.exit_code == 1
    assert "Info (" not in quiet.stdout and "DEPLOY-ENGINE-VERSION" not in quiet.stdout
    for rule in ("DEPLOY-ENTRYPOINT-DOUBLED", "LINT-UNKNOWN-FLAG", "LINT-METHOD"):
        assert rule in loud and rule in quiet.stdout
    assert quiet.stdout.splitlines()[-2].startswith("FAIL")


def test_concise_is_one_line_per_finding_with_its_place(at_root: None) -> None:
    json_report = runner.invoke(app, ["gate", "examples/bad", "--format", "json"]).stdout
    result = runner.invoke(app, ["gate", "examples/bad", "--output-format", "concise"])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("FAIL"))
    findings = lines[:verdict]
    assert len(findings) == json_report.count('"rule":')
    for line in findings:
        place, severity = line.split(": ", 1)[0], line.split(": ", 1)[1].split(" ", 1)[0]
        assert place.startswith("examples/bad/") and severity in {"error", "warning", "info"}, line


def test_a_fixable_fail_names_the_fix_plan_and_the_rule(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    make_target(tmp_path / "target")
    make_draft(tmp_path / "draft", DraftSpec(), d2t_absolute)
    result = runner.invoke(app, ["check", "draft", "--target", "target", "--engine", "vllm==0.33.0"])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    step = next(line for line in lines if line.startswith("next: "))
    command = shlex.split(step.removeprefix("next: "))
    assert command == ["specprobe", "fix", "draft", "--target", "target", "--engine", "vllm==0.33.0", "--plan"]
    assert lines[-1].startswith("why: specprobe rule VOCAB-D2T-RANGE")
    plan = runner.invoke(app, command[1:])
    assert plan.exit_code == 0, plan.stdout  # the step it names runs


def test_an_unfixable_fail_names_only_the_rule(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    make_target(tmp_path / "target")
    make_draft(tmp_path / "draft", DraftSpec(), d2t_absolute)
    # Without a target fix has nothing to plan with: no fix command is offered, the rule still is.
    result = runner.invoke(app, ["check", "draft", "--engine", "vllm==0.33.0"])
    assert result.exit_code == 1
    assert not [line for line in result.stdout.splitlines() if line.startswith("next:")]
    assert result.stdout.splitlines()[-1].startswith("why: specprobe rule ")


def test_fix_plan_says_so_when_nothing_can_be_fixed(at_root: None) -> None:
    result = runner.invoke(app, ["gate", "examples/good", "--fix-plan"])
    assert result.exit_code == 0
    assert "fix-plan: no deployment has a local drafter" in result.stdout


def test_check_findings_point_into_the_drafter_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "400")
    make_target(tmp_path / "target")
    make_draft(tmp_path / "draft", DraftSpec(), d2t_absolute)
    result = runner.invoke(app, ["check", "draft", "--target", "target", "--engine", "vllm==0.33.0", "-q"])
    line = next(line for line in result.stdout.splitlines() if "VOCAB-D2T-RANGE" in line)
    assert line.strip().startswith("draft/model.safetensors: VOCAB-D2T-RANGE")


def test_a_failing_gate_names_the_fix_plan_of_the_deployment_it_can_repair(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    make_target(tmp_path / "target")
    make_draft(tmp_path / "draft", DraftSpec(draft_format="eagle3"))  # LlamaForCausalLM: SGLang loads no draft
    script = tmp_path / "serve.sh"
    script.write_text(
        "# image: lmsysorg/sglang:v0.5.23\n"
        "python -m sglang.launch_server --model-path ./target --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path ./draft\n"
    )
    result = runner.invoke(app, ["gate", "serve.sh", "--engine", "sglang==0.5.23"])
    assert result.exit_code == 1
    steps = [line for line in result.stdout.splitlines() if line.startswith("next: ")]
    assert len(steps) == 1
    command = shlex.split(steps[0].removeprefix("next: "))
    assert command[:2] == ["specprobe", "fix"] and command[-1] == "--plan"
    assert command[command.index("--engine") + 1] == "sglang==0.5.23"
    assert runner.invoke(app, command[1:]).exit_code == 0
