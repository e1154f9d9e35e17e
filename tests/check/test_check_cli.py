"""`specprobe check` and `specprobe demo` through the command line (typer's CliRunner and a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target

runner = CliRunner()


@pytest.fixture
def drafts(tmp_path: Path) -> Path:
    build_target(tmp_path / "target")
    build_draft(tmp_path / "good", DraftSpec(draft_format="specforge"))
    # An architecture vLLM does not register, with an auto_map naming remote classes: warnings (remote code
    # could supply it), not an error. Without the auto_map the release refuses it: an error.
    build_draft(
        tmp_path / "warn",
        DraftSpec(),
        config_overrides={
            "architectures": ["AcmeDraftForCausalLM"],
            "auto_map": {"AutoModelForCausalLM": "modeling_acme.AcmeDraftForCausalLM"},
        },
    )
    build_draft(tmp_path / "bad", DraftSpec(draft_format="specforge"), config_overrides={"draft_vocab_size": 100})
    return tmp_path


def test_valid_drafter_exits_0_with_text_report(drafts: Path) -> None:
    result = runner.invoke(
        app, ["check", str(drafts / "good"), "--target", str(drafts / "target")], env={"NO_COLOR": "1"}
    )

    assert result.exit_code == 0, result.output
    assert "LAYOUT-FORMAT" in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].startswith("PASS 0 error(s)")
    assert "\x1b[" not in result.stdout


def test_broken_drafter_exits_1_and_json_follows_the_contract(drafts: Path) -> None:
    result = runner.invoke(app, ["check", str(drafts / "bad"), "--format", "json"])

    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert list(report)[:6] == ["specprobe_version", "command", "subject", "findings", "summary", "ok"]
    assert report["command"] == "check" and report["ok"] is False
    assert set(report["subject"]) == {"draft", "target", "engine"}
    assert {"SHAPES-LM-HEAD", "VOCAB-D2T-LENGTH"} <= {f["rule"] for f in report["findings"]}
    for finding in report["findings"]:
        assert set(finding) == {"rule", "severity", "message", "location", "hint", "evidence"}
        assert finding["evidence"]
    assert result.stderr.startswith("specprobe check: ")


def test_strict_turns_warnings_into_exit_1(drafts: Path) -> None:
    args = ["check", str(drafts / "warn"), "--target", str(drafts / "target"), "--engine", "vllm"]
    assert runner.invoke(app, args).exit_code == 0
    assert runner.invoke(app, [*args, "--strict"]).exit_code == 1


def test_output_file_and_format_env(drafts: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["check", str(drafts / "good"), "--output", str(out)], env={"SPECPROBE_FORMAT": "json"})

    assert result.exit_code == 0
    assert result.stdout == ""
    assert json.loads(out.read_text())["ok"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "/nonexistent/draft"], "does not exist"),
        (["check", ".", "--engine", "tgi"], "unknown engine"),
        (["check", ".", "--format", "yaml"], "unknown format"),
        (["check", ".", "--target", "not a hub id!"], "neither a folder"),
    ],
)
def test_cannot_run_is_exit_2_and_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)

    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_demo_writes_the_fixed_folders_and_exits_0(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--static", "--out", str(tmp_path / "demo")], env={"NO_COLOR": "1"})

    assert result.exit_code == 0, result.output
    for name in (
        "target/config.json",
        "draft/config.json",
        "draft/model.safetensors",
        "draft-broken/model.safetensors",
    ):
        assert (tmp_path / "demo" / name).is_file()
    assert result.stdout.count("PASS") == 1 and result.stdout.count("FAIL") == 1
    assert "VOCAB-D2T-RANGE" in result.stdout


def test_demo_json_report_goes_to_output_in_the_common_envelope(tmp_path: Path) -> None:
    report = tmp_path / "demo.json"
    args = ["demo", "--static", "--out", str(tmp_path / "demo"), "--format", "json", "--output", str(report)]
    result = runner.invoke(app, args, env={"NO_COLOR": "1"})

    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    assert data["command"] == "demo" and data["as_expected"] is True
    valid, broken = data["reports"]
    assert valid["ok"] is True and broken["ok"] is False
    assert "VOCAB-D2T-RANGE" in {f["rule"] for f in broken["findings"]}
    assert data["specprobe_version"] and "summary" in data


HEAVY = ("torch", "transformers", "vllm", "sglang", "safetensors")


def test_check_does_not_import_heavy_libraries(drafts: Path) -> None:
    argv = ["specprobe", "check", str(drafts / "good"), "--target", str(drafts / "target"), "--deep"]
    code = (
        "import sys\n"
        "from specprobe.cli import app\n"
        f"sys.argv = {argv!r}\n"
        "try:\n    app()\nexcept SystemExit as exc:\n    code = exc.code\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
        "print('HEAVY', heavy, 'EXIT', code)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)

    assert result.stdout.strip().splitlines()[-1] == "HEAVY [] EXIT 0", result.stdout + result.stderr
