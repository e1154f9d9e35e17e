"""The offline replay equals the online reference measurement on the project's own trained demo pair.

The dumps are the target's own greedy continuations written in SpecForge's format (tests/smoke/dump_writer.py).
In float32 on the CPU, a dump that covers every round the online run counts (K more tokens than it
generates) gives identical accepted counts per prompt; a dump of exactly the generated tokens loses the
rounds whose drafts or bonus token it does not cover, and stays within 1% of the online figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from tests.smoke import test_server

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

# The stand-in vLLM of the server-backend tests and its fixture, for the engine-beside-data test.
FakeVllm = test_server.FakeVllm
serve = test_server.serve

NEW_TOKENS = 64
MAX_K = 5


@pytest.fixture(scope="module")
def pair(demo_models: dict[str, Path]) -> dict[str, Any]:
    from specprobe.smoke.prompts import encode_prompts, load_prompts
    from specprobe.smoke.reference import load_reference_drafter, load_target
    from tests.smoke.dump_writer import greedy_records

    target = load_target(str(demo_models["target"]), device="cpu", dtype=torch.float32)
    prompts = encode_prompts(target.tokenizer, load_prompts())
    drafter = load_reference_drafter(demo_models["draft"], target, device="cpu", dtype=torch.float32)
    # Once, with room for the largest K; each test keeps the tokens it needs (both drafters read the
    # same aux layers).
    records = greedy_records(target, prompts, NEW_TOKENS + MAX_K, drafter.cfg.aux_layer_ids)
    return {"target": target, "prompts": prompts, "models": demo_models, "records": records}


def _online_and_dump(pair: dict[str, Any], name: str, k: int, extra: int, out: Path, *, compress: bool = False):
    from specprobe.smoke.reference import load_reference_drafter, speculative_generate
    from tests.smoke.dump_writer import write_specforge_dump

    target, prompts = pair["target"], pair["prompts"]
    drafter = load_reference_drafter(pair["models"][name], target, device="cpu", dtype=torch.float32)
    online = speculative_generate(target, drafter, prompts, NEW_TOKENS, k, device="cpu")
    records = []
    for prompt, record in zip(prompts, pair["records"], strict=True):
        keep = len(prompt) + NEW_TOKENS + extra
        records.append({key: value[:, :keep] if value.dim() == 3 else value[:keep] for key, value in record.items()})
    return drafter, online, write_specforge_dump(records, out, compress=compress)


def _replay(drafter: Any, dump: Path, k: int) -> Any:
    from specprobe.smoke.dumps import DumpExpectation, list_dump
    from specprobe.smoke.offline import replay_dump

    folder = list_dump(dump)
    cfg = drafter.cfg
    expect = DumpExpectation(cfg.target_hidden_size, len(cfg.aux_layer_ids), drafter.embed_tokens.num_embeddings)
    counts, _totals = replay_dump(drafter, folder, list(folder.files), expect, k=k, device="cpu", batch_size=16,
                                  problems=[])
    return counts


@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("name", ["draft", "draft-broken"])
def test_replay_counts_equal_the_online_reference_per_prompt(pair: dict[str, Any], tmp_path: Path, name: str,
                                                             k: int) -> None:
    drafter, online, dump = _online_and_dump(pair, name, k, k, tmp_path / "dump", compress=k == 3)
    counts = _replay(drafter, dump, k)
    assert counts.drafts == online.drafts
    assert counts.accepted == online.accepted
    assert counts.per_pos == online.accepted_per_pos
    length = 1 + sum(counts.accepted) / sum(counts.drafts)
    if name == "draft":
        assert length > 1.5
    else:
        assert length <= 1.2  # the shuffled d2t: nothing right but by chance


@pytest.mark.parametrize("k", [1, 3])
def test_the_gpu_attention_path_gives_the_same_counts(pair: dict[str, Any], tmp_path: Path, k: int) -> None:
    """`--device cuda` replays with query heads stacked per key/value head (``grouped_attention``) instead of
    the reference's expanded keys; run on the CPU in float32, it still gives the online run's counts."""
    drafter, online, dump = _online_and_dump(pair, "draft", k, k, tmp_path / "dump")
    assert drafter.cfg.num_attention_heads > drafter.cfg.num_key_value_heads  # the path under test runs
    drafter.grouped_attention = True
    counts = _replay(drafter, dump, k)
    assert counts.drafts == online.drafts
    assert counts.accepted == online.accepted
    assert counts.per_pos == online.accepted_per_pos


def test_dump_of_the_generated_tokens_alone_is_within_one_percent(pair: dict[str, Any], tmp_path: Path) -> None:
    """The CLI on a dump of exactly the online run's tokens (no extra), with the target's embedding read
    from --target (the demo drafter has none of its own)."""
    k = 3
    _drafter, online, dump = _online_and_dump(pair, "draft", k, 0, tmp_path / "dump")
    models = pair["models"]
    result = CliRunner().invoke(app, ["smoke", "--draft", str(models["draft"]), "--target", str(models["target"]),
                                      "--hidden-states", str(dump), "-k", str(k), "--format", "json",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    online_length = 1 + sum(online.accepted) / sum(online.drafts)
    assert abs(report["mean_acceptance_length"] - online_length) <= 0.01 * online_length
    online_pos = [sum(row[i] for row in online.accepted_per_pos) / sum(online.drafts) for i in range(k)]
    assert all(abs(a - b) <= 0.02 for a, b in zip(report["per_position"], online_pos, strict=True))
    assert report["samples"] == len(pair["prompts"]) and report["source"] == "hidden-states"
    assert report["ci95"][0] <= report["per_sample_mean_acceptance_length"] <= report["ci95"][1]
    # Without --target the drafter has no embedding to read: a finding, not a traceback.
    result = CliRunner().invoke(app, ["smoke", "--draft", str(models["draft"]), "--hidden-states", str(dump),
                                      "--format", "json", "--no-progress"])
    assert result.exit_code == 1
    assert {f["rule"] for f in json.loads(result.stdout)["findings"]} == {"SMOKE-DRAFT-UNREADABLE"}


def test_a_dump_of_another_target_is_an_error_finding(pair: dict[str, Any], tmp_path: Path) -> None:
    """The MLA demo target has the same hidden size, depth and tokenizer as the Llama one: only the states
    themselves tell, and through the Llama target's own head they predict nothing of the MLA data."""
    from specprobe.smoke.reference import load_target
    from tests.smoke.dump_writer import greedy_records, write_specforge_dump

    models = pair["models"]
    other = load_target(str(models["target-mla"]), device="cpu", dtype=torch.float32)
    records = greedy_records(other, pair["prompts"][:6], 32, (1, 2, 3))
    dump = write_specforge_dump([{k: v.clone() for k, v in r.items()} for r in records], tmp_path / "dump")
    result = CliRunner().invoke(app, ["smoke", "--draft", str(models["draft"]), "--target", str(models["target"]),
                                      "--hidden-states", str(dump), "--format", "json", "--no-progress"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert [f["rule"] for f in report["findings"]] == ["SMOKE-DUMP-MISMATCH"]
    assert "another target" in report["findings"][0]["message"]
    assert "mean_acceptance_length" not in report


def test_a_running_engine_below_its_data_is_a_finding(pair: dict[str, Any], tmp_path: Path, serve: Any) -> None:
    """`--backend server --hidden-states`: a stand-in vLLM (tests/smoke/test_server.py) that wires the drafter
    with a shuffled d2t accepts nothing, where the drafter's own data predicts ~3.7 at K=3."""
    from tests.smoke.dump_writer import write_specforge_dump

    models = pair["models"]
    records = [{key: value[:, : value.shape[1] - MAX_K] if value.dim() == 3 else value[: value.shape[0] - MAX_K]
                for key, value in record.items()} for record in pair["records"][:8]]
    dump = write_specforge_dump(records, tmp_path / "dump")
    url = serve(FakeVllm(models["target"], models["draft-broken"]))
    result = CliRunner().invoke(app, ["smoke", "--backend", "server", "--url", url, "--max-prompts", "4",
                                      "--max-new-tokens", "24", "--draft", str(models["draft"]), "--target",
                                      str(models["target"]), "--hidden-states", str(dump), "--no-progress",
                                      "--format", "json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["findings"][0]["rule"] == "SMOKE-ENGINE-BELOW-DATA", report["findings"]
    assert "it is not giving the drafter the hidden states it was trained on" in report["findings"][0]["message"]
    assert "--exact" in report["findings"][0]["hint"]
    assert report["offline_expectation"]["mean_acceptance_length"] > 3.0 > report["mean_acceptance_length"]
    assert len(report["offline_expectation"]["per_position"]) == len(report["per_position"]) == 3
