"""`lint --dry-run` when it cannot run: exit 2 with one line; a hub id outside the cache is a finding."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.engines._probe import shorten


def slow_interpreter(folder: Path) -> Path:
    """An executable that never answers: stands in for an engine whose start hangs."""
    script = folder / "python"
    script.write_text("#!/bin/sh\nsleep 30\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def invoke(*args: str):
    return CliRunner().invoke(app, ["lint", "--dry-run", *args])


def test_timeout_is_exit_2_with_one_line(tmp_path, models):
    python = slow_interpreter(tmp_path)
    result = invoke("--python", str(python), "--dry-run-timeout", "1", "--", "vllm", "serve", str(models["target"]))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("specprobe: error: ") and "timed out after 1 s" in lines[0]


def test_missing_interpreter_is_exit_2_with_one_line(tmp_path, models):
    result = invoke("--python", str(tmp_path / "nope" / "python"), "--", "vllm", "serve", str(models["target"]))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"specprobe: error: interpreter not found: {tmp_path}/nope/python"]


def test_no_interpreter_at_all_is_exit_2(monkeypatch, models):
    monkeypatch.delenv("SPECPROBE_SGLANG_PYTHON", raising=False)
    result = invoke("--", "python", "-m", "sglang.launch_server", "--model-path", str(models["target"]))
    assert result.exit_code == 2
    assert "--dry-run needs an interpreter with sglang installed" in result.stderr


def test_hub_id_outside_the_cache_is_reported_and_nothing_runs(tmp_path, models):
    # The interpreter would hang: the dry run must decide before starting it.
    python = slow_interpreter(tmp_path)
    result = invoke(
        "--python", str(python), "--dry-run-timeout", "5", "--format", "json", "--",
        "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
        "--speculative-config", json.dumps({"method": "eagle3", "model": str(models["draft"])}),
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (finding,) = [f for f in report["findings"] if f["rule"] == "LINT-DRY-RUN-NOT-LOCAL"]
    assert "meta-llama/Llama-3.1-8B-Instruct" in finding["message"]
    assert report["dry_run"]["stage"] == "skipped"


def test_registry_lists_are_folded():
    names = ", ".join(f"'Model{i}ForCausalLM'" for i in range(400))
    message = f"Model architectures ['X'] are not supported for now. Supported architectures: dict_keys([{names}])"
    assert shorten(message) == (
        "Model architectures ['X'] are not supported for now. Supported architectures: [400 names]"
    )


@given(st.text(max_size=3000))
def test_shortened_messages_are_one_bounded_line(message):
    short = shorten(message)
    assert len(short) <= 800
    assert "\n" not in short and "\r" not in short
