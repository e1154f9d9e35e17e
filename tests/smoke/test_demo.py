"""`specprobe demo` with the smoke extra: trained models, both checked and both measured."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app

pytest.importorskip("torch")


@pytest.mark.slow
def test_trained_demo_checks_and_measures_both_drafters(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out)], env={"NO_COLOR": "1"})

    assert result.exit_code == 0, result.output
    for name in ("target/config.json", "target/tokenizer.json", "draft/model.safetensors", "draft-broken/config.json"):
        assert (out / name).is_file()
    assert "VOCAB-D2T-ORDER" in result.stdout
    measured = re.search(r"mean acceptance length ([0-9.]+) for draft, ([0-9.]+) for draft-broken", result.stdout)
    assert measured is not None, result.stdout
    good, broken = float(measured.group(1)), float(measured.group(2))
    # The thresholds of the demo's promise: a trained drafter accepts, a shuffled d2t accepts nothing.
    assert good >= 1.8
    assert broken <= 1.2
