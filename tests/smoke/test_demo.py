"""`specprobe demo` with the smoke extra: trained models, both checked and both measured; `--models` bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app

pytest.importorskip("torch")


@pytest.mark.slow
def test_trained_demo_checks_and_measures_both_drafters(tmp_path: Path, demo_models: dict[str, Path]) -> None:
    # The session's models (tests/smoke/conftest.py: the demo's own trainer, plan and seed) are reused
    # through --models, so the suite trains them once; the folder they come from is left as it was.
    source = demo_models["target"].parent
    before = sorted(str(p.relative_to(source)) for p in source.rglob("*"))
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--models", str(source)], env={"NO_COLOR": "1"})
    assert sorted(str(p.relative_to(source)) for p in source.rglob("*")) == before

    assert result.exit_code == 0, result.output
    for name in ("target/config.json", "target/tokenizer.json", "draft/model.safetensors", "draft-broken/config.json"):
        assert (out / name).is_file()
    assert "VOCAB-D2T-ORDER" in result.stdout
    # The demo's text is wrapped at the terminal's width (80 in a pipe): read it as one line.
    flowing = " ".join(result.stdout.split())
    measured = re.search(r"mean acceptance length ([0-9.]+) for draft, ([0-9.]+) for draft-broken", flowing)
    assert measured is not None, result.stdout
    good, broken = float(measured.group(1)), float(measured.group(2))
    # The thresholds of the demo's promise: a trained drafter accepts, a shuffled d2t accepts nothing.
    assert good >= 1.8
    assert broken <= 1.2


def test_models_folder_without_trained_models_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "target").mkdir()
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "out"), "--models", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "no trained" in result.output and not (tmp_path / "out").exists()


def test_models_and_static_together_are_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--static", "--models", str(tmp_path)])
    assert result.exit_code == 2, result.output
