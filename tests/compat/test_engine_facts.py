"""Engine facts: the data in specprobe/data/engine_facts/ (schema-valid, ranges that parse, never overlap and
stay open at the top), one answer per release, the newest facts past the newest release read (flagged,
never dropped), and agreement with what the shipped snapshots record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

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
from specprobe.engines import facts
from specprobe.schema.store import known_versions, load_snapshot


def test_the_shipped_facts_match_their_json_schema() -> None:
    newest, loaded = facts.load(validate=True)
    assert set(newest) == {"vllm", "sglang"}
    assert loaded


def test_newest_read_is_the_newest_shipped_snapshot() -> None:
    # engines.yaml says how far the facts were read; a snapshot newer than that means a release was added
    # without re-reading the facts (or the bound was raised without its snapshot).
    for engine, newest in facts.newest_read().items():
        assert known_versions(engine)[-1] == newest, engine


@pytest.mark.parametrize(
    ("engine", "version", "expected", "beyond"),
    [
        ("vllm", "0.16.0", [], False),
        ("vllm", "0.21.0", [], False),
        ("vllm", "0.22.0", ["num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids"], False),
        ("vllm", "0.34.0", ["num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids"], False),
        # Past the newest release read: the newest facts, flagged, never nothing.
        ("vllm", "0.35.0", ["num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids"], True),
        ("sglang", "0.5.11", [], False),
        ("sglang", "0.5.12", ["num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids"], False),
        ("sglang", "0.5.24", ["num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids"], True),
    ],
)
def test_fc_inputs_by_release(engine: str, version: str, expected: list[str], beyond: bool) -> None:
    answer = fc_inputs(engine, version)
    assert answer is not None
    assert answer.value["raw"]["read"] == expected and answer.value["raw"]["default"] == 3
    assert answer.beyond_newest is beyond
    assert ("judged by the newest facts" in answer.judged_note) is beyond
    assert "/blob/v" in answer.evidence


def test_fc_inputs_say_where_a_speculators_config_is_read() -> None:
    reading = fc_inputs("vllm", "0.33.0").value["speculators"]  # type: ignore[union-attr]
    # vLLM builds the draft's config from transformer_layer_config; the top-level ids are not read for fc.
    assert all(path.startswith("transformer_layer_config.") for path in reading["read"])
    assert "eagle_aux_hidden_state_layer_ids" not in reading["read"]
    assert "speculators" not in fc_inputs("sglang", "0.5.23").value  # type: ignore[union-attr]


def test_fc_inputs_agree_with_the_snapshots() -> None:
    # The probes record "3" (fc built for exactly 3) or "aux_layer_ids" (sized from the config).
    for engine in ("vllm", "sglang"):
        for version in known_versions(engine):
            recorded = load_snapshot(engine, version).eagle3_fc_inputs  # type: ignore[union-attr]
            answer = fc_inputs(engine, version)
            assert answer is not None, (engine, version)
            reads = bool(answer.value["raw"]["read"])
            assert recorded in (None, "aux_layer_ids" if reads else "3"), (engine, version, recorded)


def test_ranged_facts_read_from_the_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_facts, "snapshot_field", lambda engine, version, name: None)
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


def test_a_member_list_grows_by_release_and_cites_the_release_that_changed_it() -> None:
    before, at, after = (facts.answer("sglang", v, "self_drafting_architectures") for v in ("0.5.8", "0.5.9", "0.5.10"))
    assert before is not None and at is not None and after is not None
    assert set(before.value) < set(at.value) == set(after.value)
    assert at.evidence == after.evidence and "/blob/v0.5.9/" in at.evidence
    newest = facts.answer("sglang", "0.5.23", "self_drafting_architectures")
    beyond = facts.answer("sglang", "0.6.0", "self_drafting_architectures")
    assert newest is not None and beyond is not None
    assert beyond.value == newest.value and beyond.beyond_newest and not newest.beyond_newest


def test_a_snapshot_field_wins_and_is_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    fields: dict[str, Any] = {
        "eagle3_layer_prefixes": ["layers.0.", "midlayer."],
        "self_drafting_architectures": ["AcmeForCausalLM"],
    }
    monkeypatch.setattr(engine_facts, "snapshot_field", lambda engine, version, name: fields.get(name))

    prefixes = layer_prefixes("sglang", "0.5.11")
    assert prefixes is not None and prefixes.value == ("layers.0", "midlayer")
    assert prefixes.evidence.endswith("sglang/0.5.11.json")
    joined = self_drafting_architectures("sglang", "0.5.23")
    assert joined is not None and {"AcmeForCausalLM", "DeepseekV3ForCausalLM"} <= set(joined.value)


def test_past_the_newest_release_the_newest_snapshot_answers_flagged() -> None:
    newest = facts.newest_read()["sglang"]
    at = engine_facts.auto_resolved_flags("sglang", newest, "EAGLE")
    assert at and engine_facts.auto_resolved_flags("sglang", "9.0.0", "EAGLE") == at
    registry = engine_facts.draft_registry("vllm", "9.0.0")
    assert registry is not None and registry.beyond_newest and registry.read_through == facts.newest_read()["vllm"]
    # Between snapshots the release's own draft registry is not known (a neighbour's proves nothing).
    assert engine_facts.draft_registry("vllm", "0.7.3") is None


def test_versions_no_range_covers_get_no_answer() -> None:
    assert facts.answer("vllm", "0.11.0", "cpu_attention_head_sizes") is None
    assert facts.answer("vllm", "not-a-version", "eagle3_tied_head") is None
    assert facts.answer("vllm", "0.33.0", "no_such_fact") is None
    read_less = facts.answer("vllm", "0.34.0", "deepseek_v3_config")
    assert read_less is not None and read_less.beyond_newest and read_less.read_through == "0.33.0"


def _write(folder: Path, name: str, data: dict[str, Any]) -> None:
    (folder / name).write_text(yaml.safe_dump(data), encoding="utf-8")


@pytest.mark.parametrize(
    ("ranges", "problem"),
    [
        ([{"versions": "<=0.34.0", "value": 1, "evidence": "x" * 8}], "closes the range"),
        ([{"versions": "==0.34.0", "value": 1, "evidence": "x" * 8}], "closes the range"),
        ([{"versions": ">=0.1,<0.40", "value": 1, "evidence": "x" * 8}], "closes the range"),
        (
            [
                {"versions": "<0.20", "value": 1, "evidence": "x" * 8},
                {"versions": ">=0.19", "value": 2, "evidence": "x" * 8},
            ],
            "overlap",
        ),
        ([{"versions": "nonsense", "value": 1, "evidence": "x" * 8}], "PEP 440"),
        ([{"versions": ">=0.1", "evidence": "x" * 8}], "schema"),
    ],
)
def test_the_loader_refuses_facts_that_restate_the_newest_release_or_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ranges: list[dict[str, Any]], problem: str
) -> None:
    _write(tmp_path, "engines.yaml", {"newest_read": {"vllm": "0.34.0"}})
    _write(tmp_path, "vllm.yaml", {"engine": "vllm", "facts": [{"name": "f", "summary": "s", "ranges": ranges}]})
    (tmp_path / facts.SCHEMA_FILE).write_text((facts.data_dir() / facts.SCHEMA_FILE).read_text(), encoding="utf-8")
    monkeypatch.setattr(facts, "data_dir", lambda: tmp_path)

    with pytest.raises(facts.FactsError) as raised:
        facts.load(validate=True)
    assert problem in str(raised.value) or (problem == "schema" and "is not valid" in str(raised.value))
