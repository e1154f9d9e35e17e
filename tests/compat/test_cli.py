"""`specprobe matrix` and `specprobe matrix record` through the CLI: formats, exit codes, contracts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.compat.loader import load_file, load_matrix
from tests.compat.conftest import DRAFTERS, TARGETS

SMOKE = Path(__file__).parent / "smoke"
runner = CliRunner()

FIELD_REPORT = [
    "--engine", "vllm==0.16.0", "--method", "eagle3",
    "--target", str(TARGETS / "kimi-k2.5"), "--draft", str(DRAFTERS / "specforge-kimi-k2.5-eagle3"),
]  # fmt: skip


def invoke(*args: str):
    return runner.invoke(app, ["matrix", *args], env={"NO_COLOR": "1", "SPECPROBE_FORMAT": ""})


def test_whole_matrix_text_table():
    result = invoke()
    assert result.exit_code == 0, result.output
    assert f"specprobe compatibility matrix ({len(load_matrix())} entries)" in result.stdout
    assert "vllm-eagle3-llama-draft-mla-target" in result.stdout


def test_whole_matrix_json_contract():
    result = invoke("--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    for key in ("specprobe_version", "command", "subject", "findings", "summary", "ok", "entries"):
        assert key in data
    assert data["command"] == "matrix" and data["ok"] is True
    assert len(data["entries"]) == len(load_matrix())
    assert all(entry["evidence"] for entry in data["entries"])
    allowlist = next(e for e in data["entries"] if e["kind"] == "eagle3-target-allowlist")
    assert isinstance(allowlist["allowlists"], dict)


def test_whole_matrix_markdown_is_compatibility_md():
    result = invoke("--format", "markdown")
    assert result.exit_code == 0
    assert result.stdout == (Path(__file__).parents[2] / "COMPATIBILITY.md").read_text()


def test_field_report_pairing_fails_with_exit_1():
    result = invoke(*FIELD_REPORT)
    assert result.exit_code == 1, result.output
    assert "COMPAT-KNOWN-ISSUE" in result.stdout
    assert "vllm-eagle3-llama-draft-mla-target" in result.stdout
    assert "target_attention=MLA" in result.stdout


def test_field_report_pairing_json():
    result = invoke(*FIELD_REPORT, "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert data["subject"]["draft_format"] == "specforge"
    applied = [e for e in data["entries"] if e["match"] == "applies"]
    failing = {e["id"] for e in applied if e["severity"] == "error"}
    # the model_type gate fires too when a vLLM 0.16.0 snapshot ships (it does; see test_evaluate)
    assert failing == {"vllm-eagle3-llama-draft-mla-target", "vllm-eagle3-target-allowlist"}
    assert all(e["evidence"] for e in data["entries"])


def test_sglang_way_out_passes():
    args = [a if a != "vllm==0.16.0" else "sglang==0.5.23" for a in FIELD_REPORT]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "COMPAT-KNOWN-GOOD" in result.stdout


def test_feature_flag_turns_a_possible_entry_into_a_failure():
    base = ["--engine", "vllm==0.16.0", "--method", "eagle3"]
    assert invoke(*base).exit_code == 0
    assert invoke(*base, "--feature", "min_p").exit_code == 1
    assert invoke(*base, "--feature", "long_context").exit_code == 0  # a warning
    assert invoke(*base, "--feature", "long_context", "--strict").exit_code == 1


def test_markdown_for_a_pairing(tmp_path: Path):
    out = tmp_path / "pairing.md"
    result = invoke(*FIELD_REPORT, "--format", "markdown", "--output", str(out))
    assert result.exit_code == 1
    assert "| applies | `vllm-eagle3-llama-draft-mla-target` |" in out.read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["--engine", "trtllm"],
        ["--engine", "vllm==banana"],
        ["--format", "sarif"],
        ["--feature", "turbo"],
        ["--target", "/definitely/not/here/config"],
        ["--draft", "/definitely/not/here"],
        ["--matrix", "/definitely/not/here.yaml"],
    ],
)
def test_usage_errors_exit_2_with_one_line(args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stderr.startswith("specprobe: error:")
    assert len(result.stderr.strip().splitlines()) == 1


def test_invalid_extra_matrix_is_exit_2():
    result = invoke("--matrix", str(Path(__file__).parent / "invalid" / "works-at-error.yaml"))
    assert result.exit_code == 2
    assert "does not match the matrix schema" in result.stderr


def test_record_round_trip(tmp_path: Path):
    out = tmp_path / "measured.yaml"
    result = runner.invoke(
        app,
        [
            "matrix",
            "record",
            str(SMOKE / "field-report-vllm.json"),
            "--target",
            str(TARGETS / "kimi-k2.5"),
            "--draft",
            str(DRAFTERS / "specforge-kimi-k2.5-eagle3"),
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "degraded (error)" in result.stderr
    (entry,) = load_file(out)
    assert entry.acceptance is not None and entry.acceptance.acceptance_rate == pytest.approx(0.152)
    # the recorded entry now takes part in matrix queries
    query = invoke(*FIELD_REPORT, "--matrix", str(out), "--format", "json")
    ids = {e["id"] for e in json.loads(query.stdout)["entries"] if e["match"] == "applies"}
    assert entry.id in ids


def test_record_to_stdout_is_a_matrix_document():
    result = runner.invoke(
        app,
        [
            "matrix",
            "record",
            str(SMOKE / "reference-llama.json"),
            "--target",
            str(TARGETS / "llama-3.1-8b-instruct"),
            "--draft",
            str(DRAFTERS / "eagle3-llama3.1-8b"),
        ],
    )
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(result.stdout)
    assert document["entries"][0]["status"] == "works"


def test_record_bad_input_is_exit_2(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    result = runner.invoke(app, ["matrix", "record", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.startswith("specprobe: error:")


def test_matrix_does_not_import_heavy_libraries():
    code = (
        "import sys\n"
        "from specprobe.cli import main\n"
        "sys.argv = ['specprobe', 'matrix', '--engine', 'vllm==0.16.0', '--method', 'eagle3', '--target', "
        f"{str(TARGETS / 'kimi-k2.5')!r}, '--draft', {str(DRAFTERS / 'eagle3-llama3.1-8b')!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'transformers', 'vllm', 'sglang') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr


def test_record_server_run_without_a_draft_needs_draft(tmp_path: Path):
    data = json.loads((SMOKE / "field-report-vllm.json").read_text())
    data["subject"] = {
        "target": str(TARGETS / "kimi-k2.5"),
        "draft": None,
        "backend": "server",
        "engine": "vllm==0.16.0",
    }
    path = tmp_path / "server.json"
    path.write_text(json.dumps(data))
    missing = runner.invoke(app, ["matrix", "record", str(path)])
    assert missing.exit_code == 2 and "pass --draft" in missing.stderr
    given = runner.invoke(app, ["matrix", "record", str(path), "--draft", str(DRAFTERS / "specforge-kimi-k2.5-eagle3")])
    assert given.exit_code == 0, given.output
    entry = yaml.safe_load(given.stdout)["entries"][0]
    assert entry["versions"] == "==0.16.0" and entry["status"] == "degraded"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--engine", "vllm==0.16.0", "--method", "dflash"], 1),  # dflash arrived after 0.16.0
        (["--engine", "vllm==0.33.0", "--method", "dflash"], 0),
        (["--engine", "vllm==0.16.0", "--method", "medusa"], 0),
        (["--engine", "vllm==0.33.0", "--method", "bogus"], 1),
        (["--engine", "sglang==0.5.23", "--method", "EAGLE3"], 0),
        (["--engine", "sglang==0.5.23", "--method", "medusa"], 1),
        (["--engine", "vllm", "--method", "bogus"], 1),
        (["--method", "bogus"], 1),
        (["--method", "eagle3"], 0),
    ],
)
def test_every_method_is_checked_against_the_snapshots(args: list[str], code: int) -> None:
    result = runner.invoke(app, ["matrix", *args, "--format", "json"])

    assert result.exit_code == code, result.output
    report = json.loads(result.stdout)
    unavailable = [f for f in report["findings"] if f["rule"] == "COMPAT-METHOD-UNAVAILABLE"]
    assert bool(unavailable) is (code == 1)
    for finding in unavailable:
        assert finding["evidence"][0].startswith("https://github.com/")
        assert "/blob/v" in finding["evidence"][0]


def test_a_method_with_a_curated_entry_gets_one_finding_not_two() -> None:
    result = runner.invoke(app, ["matrix", "--engine", "vllm==0.33.0", "--method", "medusa", "--format", "json"])

    rules = [f["rule"] for f in json.loads(result.stdout)["findings"] if f["severity"] == "error"]
    assert rules == ["COMPAT-METHOD-UNAVAILABLE"]


def test_a_matrix_evaluation_that_raises_is_an_internal_error_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    # The package re-exports the function under the module's name: take the module itself.
    evaluate_module = importlib.import_module("specprobe.compat.evaluate")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("matrix bug")

    monkeypatch.setattr(evaluate_module, "evaluate", broken)
    result = runner.invoke(app, ["matrix", "--engine", "vllm==0.33.0", "--method", "eagle3", "--format", "json"])

    assert result.exit_code == 2, result.output
    assert [f["rule"] for f in json.loads(result.stdout)["findings"]] == ["INTERNAL-ERROR"]
