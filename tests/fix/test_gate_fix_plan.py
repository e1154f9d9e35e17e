"""`gate --fix-plan`: a failing deployment's drafter gets the `specprobe fix` command that repairs it,
and that command really makes the deployment pass."""

from __future__ import annotations

import json
import shlex
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec
from specprobe.deploy.model import deployment_from_argv
from specprobe.engines.spec import parse_engine_spec
from specprobe.fix import fix_command
from tests.fix.builders import make_draft, make_target

runner = CliRunner()


def _script(tmp_path: Path, draft: str) -> Path:
    script = tmp_path / "serve.sh"
    script.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            # image: lmsysorg/sglang:v0.5.23
            python -m sglang.launch_server --model-path ./target \\
              --speculative-algorithm EAGLE3 --speculative-draft-model-path ./{draft}
            """
        )
    )
    return script


def test_gate_lists_the_fix_command_and_it_works(tmp_path: Path) -> None:
    make_target(tmp_path / "target")
    make_draft(tmp_path / "draft", DraftSpec(draft_format="eagle3"))  # LlamaForCausalLM: a plain Llama on SGLang
    script = _script(tmp_path, "draft")
    result = runner.invoke(app, ["gate", str(script), "--engine", "sglang==0.5.23", "--fix-plan", "--format", "json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 1
    commands = [f for f in report["findings"] if f["rule"] == "FIX-COMMAND"]
    assert len(commands) == 1 and commands[0]["line"] is not None
    command = shlex.split(commands[0]["message"].split(": ", 1)[1])
    assert command[:3] == ["specprobe", "fix", str(tmp_path / "draft")]
    fixed = runner.invoke(app, command[1:])
    assert fixed.exit_code == 0, fixed.output
    out = Path(command[command.index("--out") + 1])
    _script(tmp_path, out.name)
    again = runner.invoke(app, ["gate", str(script), "--engine", "sglang==0.5.23", "--fix-plan", "--format", "json"])
    assert again.exit_code == 0, again.stdout
    assert not [f for f in json.loads(again.stdout)["findings"] if f["rule"] == "FIX-COMMAND"]


def test_no_command_without_a_local_drafter_or_a_release(tmp_path: Path) -> None:
    make_target(tmp_path / "target")
    argv = ["vllm", "serve", str(tmp_path / "target"), "--speculative-config",
            json.dumps({"method": "eagle3", "model": "org/hub-drafter", "num_speculative_tokens": 3})]
    deployment = deployment_from_argv(argv)
    deployment.engine = parse_engine_spec("vllm==0.33.0")
    assert fix_command(deployment) is None
    make_draft(tmp_path / "draft", DraftSpec())
    argv[-1] = json.dumps({"method": "eagle3", "model": str(tmp_path / "draft"), "num_speculative_tokens": 3})
    deployment = deployment_from_argv(argv)
    assert fix_command(deployment) is None  # no release known: nothing to fix for
