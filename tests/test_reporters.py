"""Golden-output tests for every registered reporter: a fixed report rendered byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specprobe.findings import Finding, Report, Severity
from specprobe.reporters import REPORTERS
from tests.reporters.samples import RULES
from tests.reporters.test_golden import stable

GOLDEN = Path(__file__).parent / "golden"


def sample_report() -> Report:
    report = Report(
        command="check",
        subject={"draft": "drafts/kimi-eagle3", "target": "moonshotai/Kimi-K2.5", "engine": "vllm==0.33.0"},
        specprobe_version="0.1.0",
    )
    report.extend(
        [
            Finding(
                rule="TARGET-ATTENTION",
                severity=Severity.INFO,
                message="target attention: MLA (model_type kimi_k2)",
            ),
            Finding(
                rule="VOCAB-D2T-RANGE",
                severity=Severity.ERROR,
                message="207 of 1024 entries map outside [0, 4096)",
                location="model.safetensors:d2t",
                hint="d2t[i] = target_id(i) - i",
                evidence=["https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/models/llama_eagle3.py"],
            ),
            Finding(
                rule="TARGET-MAX-POSITION",
                severity=Severity.WARNING,
                message="draft max_position_embeddings 2048 < target's 262144",
                location="config.json:max_position_embeddings",
                evidence=["https://github.com/vllm-project/vllm/issues/48894"],
            ),
        ]
    )
    return report


def passing_report() -> Report:
    report = Report(command="check", subject={"draft": "d", "target": None}, specprobe_version="0.1.0")
    report.add(Finding(rule="LAYOUT-FORMAT", severity=Severity.INFO, message="format [eagle3]"))
    return report


@pytest.mark.parametrize("name", sorted(REPORTERS))
@pytest.mark.parametrize("case", ["failing", "passing"])
def test_reporter_matches_golden(name: str, case: str) -> None:
    report = sample_report() if case == "failing" else passing_report()
    rendered = stable(REPORTERS[name](color=False, rules=RULES).render(report))
    golden = GOLDEN / f"{case}.{name}"
    if os.environ.get("SPECPROBE_UPDATE_GOLDEN") == "1":
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden.name}; run with SPECPROBE_UPDATE_GOLDEN=1 and review it"
    assert rendered == golden.read_text(encoding="utf-8")


def test_text_reporter_colours_only_when_asked() -> None:
    plain = REPORTERS["text"](color=False).render(sample_report())
    coloured = REPORTERS["text"](color=True).render(sample_report())

    assert "\x1b[" not in plain
    assert "\x1b[" in coloured


def test_every_reporter_ends_with_a_newline() -> None:
    for reporter in REPORTERS.values():
        assert reporter(color=False).render(sample_report()).endswith("\n")
