"""Odd values in config.json and odd tensors never crash a rule: every run ends in findings only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specprobe.checkpoint.writer import TensorSpec, write_safetensors
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target, draft_config
from specprobe.pipeline.check import run_check

ODD_VALUES: list[Any] = [None, "text", [], {}, -1, 0, 10**30, 1.5, True, [None, "x", -3], {"a": [1]}]


@pytest.mark.parametrize("draft_format", ["eagle3", "speculators", "eagle3-mla"])
def test_every_config_key_with_odd_values(tmp_path: Path, draft_format: str) -> None:
    build_target(tmp_path / "target")
    spec = DraftSpec(draft_format=draft_format)
    draft = build_draft(tmp_path / "draft", spec)
    original = draft_config(spec)
    keys = [*original, "eagle_config", "auto_map", "quantization_config", "text_config"]
    for key in keys:
        for value in ODD_VALUES:
            (draft / "config.json").write_text(json.dumps({**original, key: value}))

            report = run_check(draft, target=str(tmp_path / "target"), deep=True)

            assert "internal_errors" not in report.extra, (key, value, report.extra)


@pytest.mark.parametrize(
    "tensors",
    [
        {"d2t": np.zeros((), np.int64)},
        {"d2t": np.zeros((128, 1), np.int64)},
        {"d2t": np.array([True] * 128)},
        {"d2t": np.full(128, 2**62, np.int64), "t2d": np.ones((2, 2), bool)},
        {"t2d": np.full(512, 7, np.uint8)},
        {"fc.weight": TensorSpec("F8_E4M3", (64,)), "lm_head.weight": np.zeros((0, 64), np.float32)},
        {"layers.0.self_attn.q_proj.weight": np.zeros((3,), np.float32)},
    ],
)
def test_odd_tensors_are_findings(tmp_path: Path, tensors: dict[str, Any]) -> None:
    draft = build_draft(tmp_path / "draft", DraftSpec())
    write_safetensors(draft / "extra.safetensors", tensors)
    # Replace the originals by moving them out of the main file.
    from specprobe.demo.fixtures import draft_tensors

    base = {k: v for k, v in draft_tensors(DraftSpec()).items() if k not in tensors}
    write_safetensors(draft / "model.safetensors", base)

    report = run_check(draft, deep=True)

    assert "internal_errors" not in report.extra, report.extra
    assert not report.ok
