"""`specprobe lint`: serve commands parsed without running them, checked against shipped snapshots and the matrix."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.deploy.argv import parse_command
from specprobe.findings import SpecprobeError
from specprobe.pipeline.gate import lint_command
from specprobe.schema.store import known_versions
from tests.compat.conftest import DRAFTERS, TARGETS

runner = CliRunner()
VLLM = f"vllm=={known_versions('vllm')[-1]}"
SGLANG = f"sglang=={known_versions('sglang')[-1]}"


def rules_of(report):
    return {f.rule for f in report.findings}


def test_parse_vllm_serve():
    spec = '--speculative_config={"method": "eagle3"}'
    command = parse_command(
        ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "-tp", "2", spec, "--enable-lora", "--max-loras", "4"]
    )
    assert command.engine == "vllm" and command.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert command.get("--tensor-parallel-size") == "2"
    assert json.loads(command.get("--speculative-config") or "") == {"method": "eagle3"}
    assert command.has("--enable-lora") and command.get("--enable-lora") is None
    assert command.get("--max-loras") == "4"


def test_parse_sglang_launch_server():
    command = parse_command(
        ["python3", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "8"]
    )
    assert (command.engine, command.model, command.get("--tp")) == ("sglang", "deepseek-ai/DeepSeek-V3", "8")


@pytest.mark.parametrize("argv", [[], ["ls", "-la"], ["python", "-m", "http.server"], ["vllm", "bench"]])
def test_not_a_serve_command(argv):
    with pytest.raises(SpecprobeError):
        parse_command(argv)


def test_vllm_spec_config_checked_against_the_snapshot():
    spec = {
        "method": "eagle3",
        "model": "/d",
        "num_speculative_tokens": 0,
        "num_spec_tokens": 3,
        "draft_tensor_parallel_size": "1",
    }
    report = lint_command(["vllm", "serve", "m", "--speculative-config", json.dumps(spec)], engine=VLLM)
    messages = " | ".join(f.message for f in report.findings)
    assert "no field 'num_spec_tokens'; did you mean 'num_speculative_tokens'" in messages
    assert "num_speculative_tokens=0 breaks the engine's bound gt 0" in messages
    assert "draft_tensor_parallel_size must be integer" in messages
    assert not report.ok


def test_vllm_legacy_flags_and_bad_json():
    report = lint_command(
        ["vllm", "serve", "m", "--speculative-model", "d", "--num-speculative-tokens", "3"], engine=VLLM
    )
    assert rules_of(report) >= {"LINT-UNKNOWN-FLAG"}
    assert sum(f.rule == "LINT-UNKNOWN-FLAG" for f in report.findings) == 2
    bad = lint_command(["vllm", "serve", "m", "--speculative-config", "{method: eagle3}"], engine=VLLM)
    assert "LINT-SPEC-CONFIG-JSON" in rules_of(bad)


def test_vllm_method_unknown_and_removed():
    report = lint_command(
        ["vllm", "serve", "m", "--speculative-config", '{"method": "medusa", "model": "/d"}'], engine=VLLM
    )
    assert {"LINT-METHOD", "COMPAT-METHOD-UNAVAILABLE"} <= rules_of(report)


def test_vllm_clean_command_passes():
    spec = {"method": "eagle3", "model": str(DRAFTERS / "eagle3-llama3.1-8b"), "num_speculative_tokens": 3}
    report = lint_command(
        ["vllm", "serve", str(TARGETS / "llama-3.1-8b-instruct"), "--speculative-config", json.dumps(spec)], engine=VLLM
    )
    # The drafter fixture is config-only: lint now checks the checkpoint it names and says so.
    errors = {f.rule for f in report.findings if f.severity == "error"}
    assert errors == {"FILES-NO-WEIGHTS"}, [f.message for f in report.findings]
    assert "COMPAT-KNOWN-GOOD" in rules_of(report)


def test_vllm_field_report_pairing_fails_through_the_matrix():
    spec = {"method": "eagle", "model": str(DRAFTERS / "specforge-kimi-k2.5-eagle3"), "num_speculative_tokens": 3}
    report = lint_command(
        ["vllm", "serve", str(TARGETS / "kimi-k2.5"), "--speculative-config", json.dumps(spec)], engine=VLLM
    )
    assert "COMPAT-KNOWN-ISSUE" in rules_of(report) and not report.ok


def test_vllm_features_from_flags():
    spec = json.dumps({"method": "eagle3", "model": "/d", "num_speculative_tokens": 3})
    report = lint_command(["vllm", "serve", "m", "--speculative-config", spec, "-pp", "2"], engine="vllm==0.29.0")
    assert "COMPAT-FEATURE" in rules_of(report)


def test_sglang_rules():
    base = ["python", "-m", "sglang.launch_server", "--model-path", str(TARGETS / "deepseek-v3")]
    partial = lint_command([*base, "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3"], engine=SGLANG)
    assert {"LINT-SGLANG-SPEC-STEPS", "LINT-SGLANG-DRAFT-PATH"} <= rules_of(partial)
    eagle3 = [
        *base,
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        str(DRAFTERS / "eagle3-deepseek-mla"),
    ]
    chain = lint_command(
        [
            *eagle3,
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "6",
        ],
        engine=SGLANG,
    )
    assert "LINT-SGLANG-TOPK1-TOKENS" in rules_of(chain)
    assert "COMPAT-KNOWN-GOOD" in rules_of(chain)
    tree = lint_command(
        [
            *eagle3,
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "4",
            "--speculative-num-draft-tokens",
            "8",
        ],
        engine=SGLANG,
    )
    assert "COMPAT-FEATURE" in rules_of(tree)  # MLA target with topk > 1
    unknown = lint_command(
        [*base, "--speculative-algorithm", "MEDUSA", "--speculative-eagle-top-k", "2"], engine=SGLANG
    )
    assert {"LINT-METHOD", "LINT-UNKNOWN-FLAG"} <= rules_of(unknown)
    flagged = next(f for f in unknown.findings if f.rule == "LINT-UNKNOWN-FLAG")
    assert "did you mean '--speculative-eagle-topk'" in flagged.message
    assert "sgl-project" in flagged.evidence[0]


def test_no_speculation_is_information():
    report = lint_command(["vllm", "serve", "m"], engine=VLLM)
    # "m" is neither a folder here nor a cached hub id: lint says it was not examined.
    assert rules_of(report) == {"LINT-NO-SPECULATION", "DEPLOY-NOT-EXAMINED"} and report.ok


def test_cli_exit_codes():
    ok = runner.invoke(app, ["lint", "--engine", VLLM, "--", "vllm", "serve", "m"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["lint", "--format", "json", "--", "vllm", "serve", "m", "--speculative-config", "{"])
    assert bad.exit_code == 1
    assert json.loads(bad.stdout)["command"] == "lint"
    for args in (["lint", "--", "ls"], ["lint", "--engine", "sglang", "--", "vllm", "serve", "m"],
                 ["lint", "--engine", "vllm==banana", "--", "vllm", "serve", "m"], ["lint"]):  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.startswith("specprobe: error:")


def test_a_version_without_snapshot_uses_the_nearest_one():
    report = lint_command(["vllm", "serve", "m"], engine="vllm==0.0.1")
    note = next(f for f in report.findings if f.rule == "LINT-SNAPSHOT")
    assert "no snapshot of vllm 0.0.1" in note.message
    assert report.subject["engine"] == "vllm==0.0.1"
