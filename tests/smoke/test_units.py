"""Statistics, prompt sets and argument errors of `specprobe smoke` (no model needed)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.rules.catalog import all_rules
from specprobe.smoke.prompts import load_prompts, parse_prompts
from specprobe.smoke.stats import from_counts, mean_ci95


def test_acceptance_in_vllm_terms():
    # Two prompts, K=3: rounds accepting (3, 0) and (1, 2, 3).
    stats = from_counts(3, drafts=[2, 3], accepted=[3, 6], accepted_per_pos=[[1, 1, 1], [3, 2, 1]])
    assert stats.draft_tokens == 15
    assert stats.acceptance_rate == pytest.approx(9 / 15)
    assert stats.mean_acceptance_length == pytest.approx(1 + 9 / 5)
    assert stats.per_position == pytest.approx([4 / 5, 3 / 5, 2 / 5])
    low, high = stats.ci95
    assert low < (2.5 + 3.0) / 2 < high


def test_confidence_interval_matches_student_t():
    mean, low, high = mean_ci95([1.0, 2.0, 3.0, 4.0])
    half = 3.182 * math.sqrt((5 / 3) / 4)
    assert mean == 2.5
    assert (low, high) == pytest.approx((2.5 - half, 2.5 + half))
    assert mean_ci95([2.0]) == (2.0, 2.0, 2.0)


def test_builtin_prompts_are_unique_and_nonempty():
    prompts = load_prompts()
    assert len(prompts) >= 20
    assert len({p.id for p in prompts}) == len(prompts)
    assert all(p.text.strip() for p in prompts)


def test_prompt_files_accept_prompt_and_messages():
    prompts = parse_prompts(
        '{"prompt": "hi"}\n\n{"id": "c", "messages": [{"role": "system", "content": "s"}, {"content": "u"}]}\n', "f"
    )
    assert [p.id for p in prompts] == ["prompt-1", "c"]
    assert prompts[1].chat() == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


@pytest.mark.parametrize(
    ("content", "message"),
    [("{bad", "not valid JSON"), ("[1]", "expected an object"), ('{"prompt": ""}', "non-empty"), ("", "no prompts")],
)
def test_bad_prompt_files_are_exit_2(tmp_path: Path, content: str, message: str):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(content)
    draft = tmp_path / "draft"
    draft.mkdir()
    result = CliRunner().invoke(
        app, ["smoke", "--backend", "server", "--url", "http://127.0.0.1:9", "--prompts", str(prompts)]
    )
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "t"], "--target and --draft are required"),
        (["--target", "t", "--draft", "/nonexistent/draft"], "is not a folder"),
        (["--backend", "server"], "needs --url"),
        (["--backend", "server", "--url", "file:///etc/passwd"], "not an http(s) URL"),
    ],
)
def test_argument_errors_are_one_line_exit_2(args: list[str], message: str):
    result = CliRunner().invoke(app, ["smoke", *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_numbers_are_exit_2(tmp_path: Path):
    for args in (["-k", "0"], ["--max-new-tokens", "1"], ["--device", "tpu"], ["--plot", str(tmp_path / "x.txt")]):
        result = CliRunner().invoke(app, ["smoke", "--target", "t", "--draft", str(tmp_path), *args])
        assert result.exit_code == 2, (args, result.output)


def test_help_and_rules_import_no_torch():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from specprobe.cli import app\n"
        "assert CliRunner().invoke(app, ['smoke', '--help']).exit_code == 0\n"
        "assert CliRunner().invoke(app, ['rules', '--format', 'json']).exit_code == 0\n"
        "heavy = [m for m in ('torch', 'transformers', 'matplotlib') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_smoke_rules_are_registered_with_evidence():
    smoke_rules = {r.id: r for r in all_rules() if r.family == "smoke"}
    assert {"SMOKE-ACCEPTANCE-LOW", "SMOKE-NOT-LOSSLESS", "SMOKE-ENGINE-GAP"} <= set(smoke_rules)
    assert all(r.evidence and r.evidence[0].startswith("https://") for r in smoke_rules.values())
    # `specprobe rules` lists every one of them, with the family and severity the registry gives.
    result = CliRunner().invoke(app, ["rules", "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = {r["id"]: r for r in json.loads(result.stdout)["rules"]}
    assert set(smoke_rules) <= set(listed)
    for rule_id, rule in smoke_rules.items():
        assert (listed[rule_id]["family"], listed[rule_id]["severity"]) == ("smoke", rule.severity.value)
