"""`specprobe smoke` on models the project trains: the issue's acceptance thresholds, measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app

pytestmark = pytest.mark.slow

# Small enough for a 2-core CPU, large enough for a stable mean over prompts.
SMOKE_ARGS = ["--max-prompts", "12", "--max-new-tokens", "40", "--no-progress", "--format", "json"]


def smoke(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["smoke", *args, *SMOKE_ARGS])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def test_trained_drafter_reaches_the_issue_threshold_and_is_lossless(demo_models: dict[str, Path], tmp_path: Path):
    plot = tmp_path / "k3.png"
    code, report = smoke(
        "--target",
        str(demo_models["target"]),
        "--draft",
        str(demo_models["draft"]),
        "-k",
        "3",
        "--min-acceptance-length",
        "1.8",
        "--plot",
        str(plot),
    )
    assert report["command"] == "smoke"
    assert report["subject"]["backend"] == "reference"
    assert report["mean_acceptance_length"] >= 1.8, report
    assert report["lossless"] is True, report
    assert code == 0, report["findings"]
    assert len(report["per_position"]) == 3
    # Acceptance at position i+1 requires acceptance at i: the per-position shares never rise.
    assert report["per_position"] == sorted(report["per_position"], reverse=True)
    assert report["per_position"][0] == pytest.approx(
        report["acceptance_rate"] * 3 - sum(report["per_position"][1:]), abs=1e-5
    )
    low, high = report["ci95"]
    assert low <= report["per_prompt_mean_acceptance_length"] <= high
    assert report["tokens"] == 12 * 40
    assert report["tokens_per_s"] > 0 and report["target_only_tokens_per_s"] > 0
    assert report["speedup"] == pytest.approx(report["tokens_per_s"] / report["target_only_tokens_per_s"], rel=1e-3)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {f["rule"] for f in report["findings"]} == {"SMOKE-MEASURED"}


def test_shuffled_d2t_collapses_acceptance_but_stays_lossless(demo_models: dict[str, Path]):
    code, report = smoke(
        "--target",
        str(demo_models["target"]),
        "--draft",
        str(demo_models["draft-broken"]),
        "-k",
        "3",
        "--min-acceptance-length",
        "1.8",
        "--force",
    )
    assert report["mean_acceptance_length"] <= 1.2, report
    # Verification keeps the output the target's own, whatever the drafter proposes.
    assert report["lossless"] is True
    assert code == 1
    # --force measured a drafter that the static check reports errors on (VOCAB-D2T-ORDER), and says so.
    assert {"SMOKE-ACCEPTANCE-LOW", "SMOKE-CHECK-SKIPPED"} <= {f["rule"] for f in report["findings"]}


def test_static_check_errors_refuse_the_drafter_without_force(demo_models: dict[str, Path]):
    from specprobe.smoke.runner import static_check

    check = static_check(demo_models["draft-broken"], str(demo_models["target"]))
    assert "VOCAB-D2T-ORDER" in check.fired()
    code, report = smoke("--target", str(demo_models["target"]), "--draft", str(demo_models["draft-broken"]))
    assert code == 1
    assert "mean_acceptance_length" not in report
    assert report["refused"]


def test_mla_target_with_its_drafter(demo_models: dict[str, Path]):
    _, report = smoke(
        "--target",
        str(demo_models["target-mla"]),
        "--draft",
        str(demo_models["draft-mla"]),
        "-k",
        "2",
        "--force",
    )
    assert report["target_attention"] == "MLA"
    assert report["lossless"] is True, report
    assert report["mean_acceptance_length"] > 1.3, report


@pytest.mark.parametrize("k", [1, 5])
def test_other_chain_lengths_stay_lossless(demo_models: dict[str, Path], k: int):
    _, report = smoke("--target", str(demo_models["target"]), "--draft", str(demo_models["draft"]), "-k", str(k))
    assert report["lossless"] is True
    assert len(report["per_position"]) == k
    assert 1.0 <= report["mean_acceptance_length"] <= k + 1
