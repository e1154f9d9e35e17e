"""Engine tier: each provisioned release's own parser still gives the stored labels, and the static check
gives the same verdict as that parser on every labelled command (tests/cli/labels.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specprobe.rules import cli_args
from tests.cli.cases import SGLANG, VLLM
from tests.cli.label import run_oracle
from tests.cli.releases import interpreter, provisioned

LABELS: dict[str, list[dict[str, Any]]] = json.loads((Path(__file__).parent / "labels.json").read_text())
REFUSING = {cli_args.REFUSED.id, cli_args.CONFIG_KEY.id}


@pytest.mark.engine
@pytest.mark.parametrize(("engine", "version"), provisioned() or [pytest.param("-", "-", marks=pytest.mark.skip)])
def test_the_release_parser_agrees_with_the_labels_and_the_static_check(engine: str, version: str) -> None:
    python = interpreter(engine, version)
    assert python is not None
    commands = VLLM if engine == "vllm" else SGLANG
    live = run_oracle(engine, python, commands)
    stored = LABELS.get(f"{engine}=={version}")
    if stored is not None:
        assert [(c["args"], c["ok"]) for c in live] == [(c["args"], c["ok"]) for c in stored]
    disagreements = []
    for case in live:
        findings = cli_args.check_args(engine, version, list(case["args"]), program=engine)
        refused = any(f.rule in REFUSING for f in findings)
        if refused == case["ok"]:
            disagreements.append((case["args"], case["error"], [f.message for f in findings]))
    assert disagreements == []
