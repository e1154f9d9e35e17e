"""A speculators dump with its preprocessed dataset replays exactly like the online reference on the demo pair.

The same greedy records as tests/smoke/test_offline_exact.py, written in speculators' layout: hs_<i>.safetensors
(token_ids, hidden_states [L, aux layers + final, H], no loss mask) under <dataset>/hidden_states, and the loss
mask in the dataset's Arrow shards. The counts equal the online run's prompt by prompt; without the dataset
(every token after the first replayed) they do not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.smoke.test_offline_exact import NEW_TOKENS, FakeVllm, pair, serve  # noqa: F401 - fixtures, stand-in

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow


def _speculators_layout(records: list[dict], out: Path, *, dataset: bool) -> Path:
    from tests.smoke.dump_writer import write_speculators_dataset, write_speculators_sample

    for index, record in enumerate(records):
        write_speculators_sample(record, out / "hidden_states" / f"hs_{index}.safetensors")
    if dataset:
        write_speculators_dataset(out, [(r["input_ids"].tolist(), r["loss_mask"].tolist()) for r in records],
                                  shards=2, batch_rows=5)
    return out / "hidden_states"


def _replay(drafter: Any, dump: Path, k: int) -> tuple[Any, Any]:
    from specprobe.smoke.dumps import DumpExpectation, list_dump
    from specprobe.smoke.offline import replay_dump
    from specprobe.smoke.speculators_dataset import attach_masks

    folder, _note = attach_masks(list_dump(dump), None)
    cfg = drafter.cfg
    expect = DumpExpectation(cfg.target_hidden_size, len(cfg.aux_layer_ids), drafter.embed_tokens.num_embeddings)
    counts, _totals = replay_dump(drafter, folder, list(folder.files), expect, k=k, device="cpu", batch_size=16,
                                  problems=[])
    return folder, counts


def test_speculators_dump_with_its_dataset_equals_the_online_reference(pair: dict[str, Any],  # noqa: F811
                                                                         tmp_path: Path) -> None:
    from specprobe.smoke.reference import load_reference_drafter, speculative_generate

    k = 3
    target, prompts = pair["target"], pair["prompts"]
    drafter = load_reference_drafter(pair["models"]["draft"], target, device="cpu", dtype=torch.float32)
    online = speculative_generate(target, drafter, prompts, NEW_TOKENS, k, device="cpu")
    records = []
    for prompt, record in zip(prompts, pair["records"], strict=True):
        keep = len(prompt) + NEW_TOKENS + k
        records.append({key: value[:, :keep] if value.dim() == 3 else value[:keep] for key, value in record.items()})
    folder, counts = _replay(drafter, _speculators_layout(records, tmp_path / "data", dataset=True), k)
    assert folder.masks is not None and folder.masks.rows == len(prompts)
    assert counts.drafts == online.drafts
    assert counts.accepted == online.accepted
    folder, unmasked = _replay(drafter, _speculators_layout(records, tmp_path / "bare", dataset=False), k)
    assert folder.masks is None
    assert sum(unmasked.drafts) > sum(online.drafts)


def test_a_running_engine_beside_a_speculators_dump_elsewhere_from_its_dataset(
    pair: dict[str, Any],  # noqa: F811
    tmp_path: Path,
    serve: Any,  # noqa: F811
) -> None:
    """`--backend server --hidden-states --loss-mask-dataset`: the option reaches the data's replay, whose
    figures sit beside the engine's (a stand-in vLLM with a shuffled d2t, tests/smoke/test_server.py)."""
    import json

    from typer.testing import CliRunner

    from specprobe.cli import app

    models = pair["models"]
    records = [{key: value[:, :-5] if value.dim() == 3 else value[:-5] for key, value in record.items()}
               for record in pair["records"][:8]]
    hidden = _speculators_layout(records, tmp_path / "data", dataset=True)
    moved = tmp_path / "elsewhere" / "hs"
    moved.parent.mkdir()
    hidden.rename(moved)
    url = serve(FakeVllm(models["target"], models["draft-broken"]))
    result = CliRunner().invoke(app, ["smoke", "--backend", "server", "--url", url, "--max-prompts", "4",
                                      "--max-new-tokens", "24", "--draft", str(models["draft"]), "--target",
                                      str(models["target"]), "--hidden-states", str(moved), "--loss-mask-dataset",
                                      str(tmp_path / "data"), "--no-progress", "--format", "json"])
    report = json.loads(result.stdout)
    expectation = report["offline_expectation"]
    assert expectation["loss_mask_source"] == "speculators dataset", expectation
    assert expectation["mean_acceptance_length"] > 3.0 > report["mean_acceptance_length"]
    assert report["findings"][0]["rule"] == "SMOKE-ENGINE-BELOW-DATA", report["findings"]
