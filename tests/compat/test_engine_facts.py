"""Engine facts: the snapshot's field when it has one, else the PEP 440-ranged fact read from the
engine's source at a pinned tag; nothing for a release no fact covers."""

from __future__ import annotations

from typing import Any

import pytest

from specprobe.compat import engine_facts
from specprobe.compat.engine_facts import (
    auto_resolved_flags,
    default_aux_layers,
    draft_positions,
    fc_inputs,
    layer_prefixes,
    self_drafting_architectures,
    tied_head,
)


@pytest.fixture
def no_snapshot_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_facts, "snapshot_field", lambda engine, version, name: None)


@pytest.mark.usefixtures("no_snapshot_fields")
@pytest.mark.parametrize(
    ("engine", "version", "expected"),
    [
        ("vllm", "0.16.0", "3"),
        ("vllm", "0.21.0", "3"),
        ("vllm", "0.22.0", "aux_layer_ids"),
        ("vllm", "0.34.0", "aux_layer_ids"),
        ("vllm", "0.35.0", None),  # past the newest release read: not guessed
        ("sglang", "0.5.11", "3"),
        ("sglang", "0.5.12", "aux_layer_ids"),
        ("sglang", "0.5.24", None),
    ],
)
def test_fc_inputs_by_release(engine: str, version: str, expected: str | None) -> None:
    answer = fc_inputs(engine, version)
    assert (answer.value if answer else None) == expected
    if answer is not None:
        assert "/blob/v" in answer.evidence


@pytest.mark.usefixtures("no_snapshot_fields")
def test_ranged_facts_read_from_the_engines() -> None:
    assert layer_prefixes("sglang", "0.5.11").value == ("midlayer",)  # type: ignore[union-attr]
    assert "layers.0" in layer_prefixes("sglang", "0.5.12").value  # type: ignore[union-attr]
    assert tied_head("sglang", "0.5.23").value == "embed_tokens"  # type: ignore[union-attr]
    assert tied_head("vllm", "0.33.0").value == "lm_head"  # type: ignore[union-attr]
    assert draft_positions("vllm", "0.26.0").value == "overflow"  # type: ignore[union-attr]
    assert draft_positions("vllm", "0.27.0").value == "raised"  # type: ignore[union-attr]
    assert draft_positions("sglang", "0.4.10").value == "overflow"  # type: ignore[union-attr]
    assert draft_positions("sglang", "0.5.23").value == "refused"  # type: ignore[union-attr]
    assert auto_resolved_flags("sglang", "0.5.23", "ngram") == (
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
        "--speculative-num-steps",
    )
    assert auto_resolved_flags("sglang", "0.5.1", "NGRAM") == ()
    assert "MiMoForCausalLM" not in self_drafting_architectures("sglang", "0.4.6").value  # type: ignore[union-attr]
    assert "MiMoForCausalLM" in self_drafting_architectures("sglang", "0.4.7").value  # type: ignore[union-attr]
    assert default_aux_layers(32) == [2, 16, 29]


def test_a_snapshot_field_wins_and_is_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    fields: dict[str, Any] = {
        "eagle3_layer_prefixes": ["layers.0.", "midlayer."],
        "eagle3_fc_inputs": "3",
        "self_drafting_architectures": ["AcmeForCausalLM"],
    }
    monkeypatch.setattr(engine_facts, "snapshot_field", lambda engine, version, name: fields.get(name))

    assert layer_prefixes("sglang", "0.5.23").value == ("layers.0", "midlayer")  # type: ignore[union-attr]
    answer = fc_inputs("sglang", "0.5.23")
    assert answer is not None and answer.value == "3" and answer.evidence.endswith("sglang/0.5.23.json")
    joined = self_drafting_architectures("sglang", "0.5.23")
    assert joined is not None and {"AcmeForCausalLM", "DeepseekV3ForCausalLM"} <= set(joined.value)
