"""The CPU-platform rule and the matrix's `cpu` entries through check, lint and matrix, on real folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.rules import platform


def run(command: str, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, [command, "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def rules_of(report: dict) -> list[str]:
    return [f["rule"] for f in report["findings"]]


def check(models: dict[str, Path], draft: str, target: str, version: str, *extra: str) -> tuple[int, dict]:
    return run("check", str(models[draft]), "--target", str(models[target]), "--engine", f"vllm=={version}", *extra)


def test_head_size_16_on_cpu_is_an_error_for_target_and_draft(models):
    code, report = check(models, "draft16", "target16", "0.32.0", "--device", "cpu")
    assert code == 1
    found = [f for f in report["findings"] if f["rule"] == "PLATFORM-CPU-HEAD-SIZE"]
    assert sorted(f["location"] for f in found) == ["draft config.json:head_dim", "target config.json:head_dim"]
    for finding in found:
        assert finding["severity"] == "error"
        assert "Unsupported CPU attention configuration: head_dim=16" in finding["message"]
        # The source pinned at the version checked comes first.
        assert finding["evidence"][0] == (
            "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/attention/backends/cpu_attn.py"
        )
    assert report["subject"]["device"] == "cpu"


def test_head_size_rule_needs_a_cpu_deployment(models):
    _, report = check(models, "draft16", "target16", "0.32.0")
    assert not [r for r in rules_of(report) if r.startswith("PLATFORM-")]


def test_supported_head_size_passes(models):
    _, report = check(models, "draft32", "target32", "0.32.0", "--device", "cpu")
    assert not [r for r in rules_of(report) if r.startswith("PLATFORM-")]


@pytest.mark.parametrize(("version", "fires"), [("0.13.0", True), ("0.14.0", False), ("0.33.0", False)])
def test_head_size_80_arrives_in_0_14(models, version, fires):
    _, report = check(models, "draft80", "target80", version, "--device", "cpu")
    assert ("PLATFORM-CPU-HEAD-SIZE" in rules_of(report)) is fires


def test_a_snapshot_listing_head_sizes_takes_precedence(models, monkeypatch):
    class Snapshot:
        cpu_attention_head_sizes = (16, 32)

    monkeypatch.setattr("specprobe.rules.platform.load_snapshot", lambda engine, version: Snapshot())
    assert platform.snapshot_head_sizes("0.32.0") == (16, 32)
    _, report = check(models, "draft16", "target16", "0.32.0", "--device", "cpu")
    assert "PLATFORM-CPU-HEAD-SIZE" not in rules_of(report)


def test_version_outside_the_facts_is_said_not_guessed(models):
    _, report = check(models, "draft16", "target16", "0.1.0", "--device", "cpu")
    assert "PLATFORM-CPU-HEAD-SIZE" not in rules_of(report)
    assert "PLATFORM-CPU-UNVERIFIED" in rules_of(report)


def test_mla_target_with_llama_drafter_on_cpu_is_refused(models):
    code, report = check(models, "llama_draft_for_mla", "mla_target", "0.32.0", "--device", "cpu")
    assert code == 1
    entry = "#vllm-cpu-eagle3-llama-draft-mla-target"
    (finding,) = [f for f in report["findings"] if (f["location"] or "").endswith(entry)]
    assert finding["severity"] == "error"
    assert "No common block size for 16 (CPU_MLA: [16]; CPU_ATTN: [MultipleOf(32)])" in finding["message"]
    assert any("/v0.32.0/vllm/platforms/cpu.py" in url for url in finding["evidence"])
    # DeepSeek's own sizes (576) have a CPU MLA kernel: no head-size finding for the target.
    assert "PLATFORM-CPU-MLA-HEAD-SIZE" not in rules_of(report)


@pytest.mark.parametrize("version", ["0.28.0", "0.32.0"])
def test_block_size_refusal_starts_in_0_29(models, version):
    # 0.28 forces block size 16 for MLA but its CPU attention still takes multiples of 16.
    _, report = check(models, "llama_draft_for_mla", "mla_target", version, "--device", "cpu")
    refused = any((f["location"] or "").endswith("#vllm-cpu-eagle3-llama-draft-mla-target") for f in report["findings"])
    assert refused is (version == "0.32.0")


def test_mla_target_without_device_is_not_refused(models):
    _, report = check(models, "llama_draft_for_mla", "mla_target", "0.32.0")
    assert not any("vllm-cpu-" in (f["location"] or "") for f in report["findings"])


def test_mla_before_0_28_has_no_cpu_backend(models):
    _, report = check(models, "mla_draft", "mla_target", "0.24.0", "--device", "cpu")
    assert "PLATFORM-CPU-MLA" in rules_of(report)


def test_mla_latent_size_other_than_576(models):
    _, report = check(models, "mla_draft", "mla_small", "0.32.0", "--device", "cpu")
    found = report["findings"]
    (finding,) = [f for f in found if f["rule"] == "PLATFORM-CPU-MLA-HEAD-SIZE" and "target" in f["message"]]
    assert "= 40" in finding["message"]


def eagle3_command(models: dict[str, Path], target: str, draft: str) -> list[str]:
    config = json.dumps({"method": "eagle3", "model": str(models[draft]), "num_speculative_tokens": 3})
    return ["vllm", "serve", str(models[target]), "--speculative-config", config]


def test_lint_device_cpu_predicts_the_block_size_refusal(models):
    code, report = run(
        "lint", "--engine", "vllm==0.33.0", "--device", "cpu", "--",
        *eagle3_command(models, "mla_target", "llama_draft_for_mla"),
    )
    assert code == 1
    assert any((f["location"] or "").endswith("#vllm-cpu-eagle3-llama-draft-mla-target") for f in report["findings"])


def test_lint_reads_device_cpu_from_the_command(models):
    code, report = run(
        "lint", "--engine", "vllm==0.33.0", "--", *eagle3_command(models, "target16", "draft16"), "--device", "cpu"
    )
    assert code == 1
    assert rules_of(report).count("PLATFORM-CPU-HEAD-SIZE") == 2


def test_lint_without_cpu_has_no_platform_findings(models):
    _, report = run("lint", "--engine", "vllm==0.33.0", "--", *eagle3_command(models, "target16", "draft16"))
    assert not [r for r in rules_of(report) if r.startswith("PLATFORM-")]


def test_matrix_feature_cpu(models):
    code, report = run(
        "matrix", "--engine", "vllm==0.32.0", "--feature", "cpu",
        "--target", str(models["mla_target"]), "--draft", str(models["llama_draft_for_mla"]), "--method", "eagle3",
    )
    assert code == 1
    ids = [entry["id"] for entry in report["entries"]]
    assert "vllm-cpu-eagle3-llama-draft-mla-target" in ids


def test_mla_disabled_by_the_command_is_not_refused(models):
    _, report = run(
        "lint", "--engine", "vllm==0.33.0", "--device", "cpu", "--",
        "VLLM_MLA_DISABLE=1", *eagle3_command(models, "mla_target", "llama_draft_for_mla"),
    )
    assert not any("vllm-cpu-eagle3" in (f["location"] or "") for f in report["findings"])
