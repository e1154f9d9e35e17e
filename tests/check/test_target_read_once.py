"""The target's config.json is read once per run: check's context carries the target folder it read
(config and headers), and gate's matrix classifies that instead of opening the file again."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec
from tests.fix.builders import make_draft, make_target


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """How often each config.json is opened, by path as given."""
    counts: collections.Counter[str] = collections.Counter()
    real_open = os.open

    def counting(path: object, *args: object, **kwargs: object) -> int:
        if str(path).endswith("config.json"):
            counts[str(Path(str(path)).resolve())] += 1
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counting)
    return counts


def test_check_reads_the_target_config_once(tmp_path: Path, opened: collections.Counter[str]) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec())
    opened.clear()
    result = CliRunner().invoke(app, ["check", str(draft), "--target", str(target), "--engine", "vllm==0.33.0"])
    assert result.exit_code == 0, result.output
    assert opened[str((target / "config.json").resolve())] == 1


def test_gate_reads_the_target_config_once_per_run(tmp_path: Path, opened: collections.Counter[str]) -> None:
    target = make_target(tmp_path / "target")
    make_draft(tmp_path / "draft", DraftSpec())
    spec = json.dumps({"method": "eagle3", "model": "./draft", "num_speculative_tokens": 3})
    script = tmp_path / "serve.sh"
    # Two deployments of one target: a fleet names one target many times.
    launch = f"vllm serve ./target --speculative-config '{spec}'"
    script.write_text(f"{launch}\n{launch} --port 9\n")
    opened.clear()
    result = CliRunner().invoke(app, ["gate", str(script), "--engine", "vllm==0.33.0"])
    assert result.exit_code == 0, result.output
    assert opened[str((target / "config.json").resolve())] == 1
