"""Matching entries against pairings, for every entry kind, including pairings the data never names."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from packaging.version import Version

from specprobe.compat.evaluate import evaluate, evaluate_entry, facet_matches
from specprobe.compat.loader import load_matrix
from specprobe.compat.model import Match, Pairing, Status
from specprobe.compat.snapshots import FolderSnapshots, StoreSnapshots, resolve_facts
from specprobe.compat.subjects import build_pairing, parse_engine, parse_features
from specprobe.findings import Severity, SpecprobeError
from specprobe.schema.store import load_snapshot
from tests.compat.conftest import VLLM_0_16_ALLOWLIST, drafter, target


@pytest.fixture(scope="module")
def entries():
    return {e.id: e for e in load_matrix()}


def pair(engine=None, method=None, target_name=None, draft_name=None, features=None):
    return build_pairing(
        engine=engine,
        method=method,
        target=target(target_name) if target_name else None,
        draft=drafter(draft_name) if draft_name else None,
        features=frozenset(features) if features is not None else None,
    )


def verdict_of(entries, entry_id, pairing, snapshots=None):
    return evaluate_entry(entries[entry_id], pairing, snapshots or StoreSnapshots())


# --- kind: pairing -------------------------------------------------------------------------------


def test_field_report_vllm_fails(entries):
    p = pair("vllm==0.16.0", "eagle3", "kimi-k2.5", "specforge-kimi-k2.5-eagle3")
    v = verdict_of(entries, "vllm-eagle3-llama-draft-mla-target", p)
    assert v.match is Match.APPLIES and v.fails
    assert "15%" in v.message


def test_field_report_sglang_works(entries):
    p = pair("sglang==0.5.23", "EAGLE3", "kimi-k2.5", "specforge-kimi-k2.5-eagle3")
    verdicts = evaluate(entries.values(), p)
    applied = {v.entry.id: v for v in verdicts if v.match is Match.APPLIES}
    assert "sglang-eagle3-mla-target" in applied
    assert not any(v.fails for v in verdicts)


@pytest.mark.parametrize(
    ("engine", "target_name", "draft_name", "expected"),
    [
        # unseen MLA targets and drafter formats: the facets decide, not the names
        ("vllm==0.17.1", "deepseek-v2-lite", "eagle3-llama3.1-8b", Match.APPLIES),
        ("vllm==0.17.0rc1", "kimi-k2-instruct", "speculators-llama3.1-8b-eagle3", Match.APPLIES),
        ("vllm==0.18.0", "kimi-k2-instruct", "speculators-llama3.1-8b-eagle3", Match.NO),
        ("vllm==0.16.0", "llama-3.1-8b-instruct", "eagle3-llama3.1-8b", Match.NO),
        ("vllm==0.16.0", "deepseek-v3", "eagle3-deepseek-mla", Match.NO),
        ("sglang==0.5.23", "deepseek-v3", "eagle3-llama3.1-8b", Match.NO),
        ("vllm", "deepseek-v3", "eagle3-llama3.1-8b", Match.POSSIBLE),
    ],
)
def test_llama_draft_on_mla_target_generalises(entries, engine, target_name, draft_name, expected):
    v = verdict_of(entries, "vllm-eagle3-llama-draft-mla-target", pair(engine, "eagle3", target_name, draft_name))
    assert v.match is expected


def test_possible_match_names_the_missing_facets(entries):
    v = verdict_of(entries, "vllm-eagle3-llama-draft-mla-target", pair("vllm==0.16.0", "eagle3"))
    assert v.match is Match.POSSIBLE
    assert any("target attention MLA" in m for m in v.missing)
    assert any("drafter format" in m for m in v.missing)
    assert not v.fails


def test_mla_drafter_version_boundary(entries):
    old = verdict_of(
        entries, "vllm-eagle3-mla-draft-needs-0.18", pair("vllm==0.17.1", "eagle3", None, "eagle3-deepseek-mla")
    )
    new = verdict_of(
        entries, "vllm-eagle3-mla-draft-needs-0.18", pair("vllm==0.18.0", "eagle3", None, "eagle3-deepseek-mla")
    )
    works = verdict_of(
        entries, "vllm-eagle3-mla-draft-mla-target", pair("vllm==0.33.0", "eagle3", "kimi-k2.5", "eagle3-deepseek-mla")
    )
    assert (old.match, new.match, works.match) == (Match.APPLIES, Match.NO, Match.APPLIES)
    assert works.effective_status is Status.WORKS and not works.fails


def test_method_eagle_with_eagle3_checkpoint(entries):
    for draft_name in ("eagle3-llama3.1-8b", "specforge-kimi-k2.5-eagle3", "eagle3-deepseek-mla"):
        v = verdict_of(entries, "vllm-eagle-method-eagle3-checkpoint", pair("vllm==0.33.0", "eagle", None, draft_name))
        assert v.match is Match.APPLIES and v.fails
    sglang = verdict_of(
        entries, "sglang-eagle-algorithm-eagle3-checkpoint", pair("sglang==0.5.23", "EAGLE", None, "eagle3-llama3.1-8b")
    )
    assert sglang.match is Match.APPLIES and sglang.entry.acceptance.mean_acceptance_length == 1.0


def test_hybrid_linear_targets(entries):
    # The entry ends where the release code captures the aux hidden states (vLLM 0.18).
    vllm = verdict_of(
        entries, "vllm-eagle3-hybrid-linear-target", pair("vllm==0.17.0", "eagle3", "qwen3-next-80b-a3b-instruct")
    )
    captured = verdict_of(
        entries, "vllm-eagle3-hybrid-linear-target", pair("vllm==0.33.0", "eagle3", "qwen3-next-80b-a3b-instruct")
    )
    assert captured.match is Match.NO
    jamba = verdict_of(entries, "sglang-eagle3-hybrid-linear-other", pair("sglang==0.5.23", "eagle3", "jamba-v0.1"))
    qwen_next = verdict_of(
        entries, "sglang-eagle3-hybrid-linear-other", pair("sglang==0.5.23", "eagle3", "qwen3-next-80b-a3b-instruct")
    )
    works = verdict_of(
        entries, "sglang-eagle3-qwen3-next", pair("sglang==0.5.23", "eagle3", "qwen3-next-80b-a3b-instruct")
    )
    assert vllm.match is Match.APPLIES and vllm.effective_severity is Severity.WARNING and not vllm.fails
    assert jamba.match is Match.APPLIES
    assert qwen_next.match is Match.NO
    assert works.match is Match.APPLIES and works.effective_status is Status.WORKS


def test_model_type_patterns_match_the_text_model(entries):
    # Llama-2 (MHA) is a llama model_type: the reference pairing applies on both engines
    assert (
        verdict_of(
            entries, "vllm-eagle3-llama-target", pair("vllm==0.9.0", "eagle3", "llama-2-7b", "eagle3-llama3.1-8b")
        ).match
        is Match.APPLIES
    )
    assert (
        verdict_of(entries, "sglang-eagle3-llama-target", pair("sglang==0.5.23", "eagle3", "qwen3-8b")).match
        is Match.NO
    )


# --- kind: feature -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry_id", "engine", "feature", "applies"),
    [
        ("vllm-lora-spec-decode", "vllm==0.9.2", "lora", True),
        ("vllm-lora-spec-decode", "vllm==0.10.0", "lora", False),
        ("vllm-min-p-spec-decode", "vllm==0.16.0", "min_p", True),
        ("vllm-min-p-spec-decode", "vllm==0.16.0", "logit_bias", False),
        ("vllm-logit-bias-spec-decode", "vllm==0.33.0", "logit_bias", True),
        ("vllm-pipeline-parallel-spec-decode", "vllm==0.29.0", "pipeline_parallel", True),
        ("vllm-pipeline-parallel-spec-decode", "vllm==0.30.0", "pipeline_parallel", False),
        ("sglang-structured-output-eagle", "sglang==0.5.23", "structured_output", True),
        ("sglang-structured-output-eagle", "vllm==0.33.0", "structured_output", False),
    ],
)
def test_feature_entries(entries, entry_id, engine, feature, applies):
    v = verdict_of(entries, entry_id, pair(engine, "eagle3", features=[feature]))
    assert (v.match is Match.APPLIES) is applies
    if applies:
        assert v.fails


def test_feature_unknown_is_only_possible(entries):
    v = verdict_of(entries, "vllm-min-p-spec-decode", pair("vllm==0.16.0", "eagle3"))
    assert v.match is Match.POSSIBLE and not v.fails
    # an empty set says "no such feature in use"; the CLI turns no --feature into "not given"
    declared_none = verdict_of(entries, "vllm-min-p-spec-decode", pair("vllm==0.16.0", "eagle3", features=[]))
    assert declared_none.match is Match.NO
    assert parse_features([]) is None and parse_features(None) is None
    with pytest.raises(SpecprobeError, match="unknown feature"):
        parse_features(["speculative_lora"])


def test_sglang_mla_topk(entries):
    mla = verdict_of(
        entries, "sglang-mla-topk-gt-1", pair("sglang==0.5.23", "EAGLE3", "deepseek-v3", features=["eagle_topk_gt_1"])
    )
    gqa = verdict_of(
        entries, "sglang-mla-topk-gt-1", pair("sglang==0.5.23", "EAGLE3", "qwen3-8b", features=["eagle_topk_gt_1"])
    )
    assert mla.match is Match.APPLIES and gqa.match is Match.NO


def test_sliding_window_multi_layer_draft(entries):
    for name in ("gemma-3-4b-it", "gpt-oss-20b", "mistral-7b-v0.1"):
        v = verdict_of(
            entries,
            "vllm-eagle3-sliding-window-target",
            pair("vllm==0.33.0", "eagle3", name, features=["multi_layer_draft"]),
        )
        assert v.match is Match.APPLIES, name
    disabled = verdict_of(
        entries,
        "vllm-eagle3-sliding-window-target",
        pair("vllm==0.33.0", "eagle3", "qwen2-7b-instruct", features=["multi_layer_draft"]),
    )
    assert disabled.match is Match.NO


def test_long_context_applies_on_any_engine(entries):
    for engine in ("vllm==0.33.0", "sglang==0.5.23"):
        v = verdict_of(entries, "eagle3-long-context-decay", pair(engine, "eagle3", features=["long_context"]))
        assert v.match is Match.APPLIES and v.effective_severity is Severity.WARNING


# --- kind: method-availability -------------------------------------------------------------------


def test_removed_methods_from_shipped_snapshots(entries):
    e = entries["vllm-medusa-mlp-speculator-removed"]
    store = StoreSnapshots()
    assert Version("0.33.0") in store.versions("vllm")
    for method in ("medusa", "mlp_speculator"):
        v = evaluate_entry(e, pair("vllm==0.33.0", method), store)
        assert v.match is Match.APPLIES and "snapshot 0.33.0" in v.message
    assert evaluate_entry(e, pair("vllm==0.33.0", "eagle3"), store).match is Match.NO


def test_removed_methods_without_a_snapshot_use_the_range(entries, snapshot_dir: Path):
    e = entries["vllm-medusa-mlp-speculator-removed"]
    folder = FolderSnapshots(snapshot_dir)
    newest = max(folder.versions("vllm"))
    beyond = f"vllm=={newest.major}.{newest.minor + 5}.0"
    assert evaluate_entry(e, pair(beyond, "medusa"), folder).match is Match.APPLIES
    # 0.16.0's snapshot still lists medusa: derived from the snapshot, not from the range
    assert evaluate_entry(e, pair("vllm==0.16.0", "medusa"), folder).match is Match.NO
    # between 0.16.0 (has medusa) and 0.33.0 (has not) nothing can be derived: the range decides
    assert evaluate_entry(e, pair("vllm==0.20.0", "medusa"), folder).match is Match.NO


def test_eagle3_method_before_it_existed(entries):
    v = verdict_of(entries, "vllm-eagle3-before-0.8.5", pair("vllm==0.8.4", "eagle3"))
    assert v.match is Match.APPLIES and v.fails
    assert verdict_of(entries, "vllm-eagle3-before-0.8.5", pair("vllm==0.8.5", "eagle3")).match is Match.NO


# --- kind: eagle3-target-allowlist ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("target_name", "match"),
    [
        ("kimi-k2.5", Match.APPLIES),  # deepseek_v3 text model
        ("kimi-k2-instruct", Match.APPLIES),
        ("deepseek-v3", Match.APPLIES),
        ("gemma-3-4b-it", Match.APPLIES),  # gemma3_text, vllm#32765
        ("mistral-7b-instruct-v0.3", Match.APPLIES),
        ("llama-3.1-8b-instruct", Match.NO),
        ("qwen3-next-80b-a3b-instruct", Match.NO),  # 'qwen' is a substring of qwen3_next
        ("qwen2-7b-instruct", Match.NO),
        ("gpt-oss-20b", Match.NO),
    ],
)
def test_allowlist_from_a_0_16_snapshot(entries, snapshot_dir: Path, target_name, match):
    folder = FolderSnapshots(snapshot_dir)
    v = evaluate_entry(entries["vllm-eagle3-target-allowlist"], pair("vllm==0.16.0", "eagle3", target_name), folder)
    assert v.match is match
    if match is Match.APPLIES:
        assert v.fails
        assert "Eagle3 is only supported for" in v.message
        assert "snapshot 0.16.0" in v.message


def test_allowlist_is_read_not_retyped(entries, snapshot_dir: Path):
    """Change the list in the snapshot and the verdict follows."""
    import json

    path = snapshot_dir / "vllm" / "0.16.0.json"
    data = json.loads(path.read_text())
    data["eagle3_target_supported"] = [*VLLM_0_16_ALLOWLIST, "deepseek_v3"]
    path.write_text(json.dumps(data))
    v = evaluate_entry(
        entries["vllm-eagle3-target-allowlist"],
        pair("vllm==0.16.0", "eagle3", "kimi-k2.5"),
        FolderSnapshots(snapshot_dir),
    )
    assert v.match is Match.NO


def test_allowlist_none_means_no_gate(entries):
    """The shipped vLLM snapshots have no model_type gate (eagle3_target_supported is null)."""
    store = StoreSnapshots()
    for version in store.versions("vllm"):
        facts = store.facts("vllm", version)
        assert facts is not None
        if facts.eagle3_target_supported is None:
            v = evaluate_entry(
                entries["vllm-eagle3-target-allowlist"], pair(f"vllm=={version}", "eagle3", "kimi-k2.5"), store
            )
            assert v.match is Match.NO


def test_allowlist_between_and_outside_snapshots(entries, snapshot_dir: Path):
    folder = FolderSnapshots(snapshot_dir)
    e = entries["vllm-eagle3-target-allowlist"]
    # no snapshot below the oldest shipped one: nothing is assumed
    assert min(folder.versions("vllm")) > Version("0.1.0")
    assert evaluate_entry(e, pair("vllm==0.1.0", "eagle3", "kimi-k2.5"), folder).match is Match.POSSIBLE
    # 0.16.0 and the next snapshot disagree: nothing is assumed in between
    next_up = min(v for v in folder.versions("vllm") if v > Version("0.16.0"))
    assert folder.facts("vllm", next_up).eagle3_target_supported != VLLM_0_16_ALLOWLIST
    assert next_up > Version("0.16.1")
    assert evaluate_entry(e, pair("vllm==0.16.1", "eagle3", "kimi-k2.5"), folder).match is Match.POSSIBLE
    # two snapshots that agree hold in between
    import json

    upper = snapshot_dir / "vllm" / "0.17.0.json"
    upper.write_text((snapshot_dir / "vllm" / "0.16.0.json").read_text().replace('"0.16.0"', '"0.17.0"'))
    resolved = resolve_facts(folder, "vllm", Version("0.16.5"), "eagle3_target_supported")
    assert resolved is not None and not resolved.exact
    v = evaluate_entry(e, pair("vllm==0.16.5", "eagle3", "kimi-k2.5"), folder)
    assert v.match is Match.APPLIES and "agree" in v.message
    assert json.loads(upper.read_text())["version"] == "0.17.0"


def test_allowlist_needs_a_target_and_a_version(entries, snapshot_dir: Path):
    folder = FolderSnapshots(snapshot_dir)
    e = entries["vllm-eagle3-target-allowlist"]
    assert evaluate_entry(e, pair("vllm==0.16.0", "eagle3"), folder).match is Match.POSSIBLE
    assert evaluate_entry(e, pair("vllm", "eagle3", "kimi-k2.5"), folder).match is Match.POSSIBLE
    assert evaluate_entry(e, pair("sglang==0.5.23", "eagle3", "kimi-k2.5"), folder).match is Match.NO
    assert evaluate_entry(e, pair("vllm==0.16.0", "mtp", "kimi-k2.5"), folder).match is Match.NO


# --- ordering, parsing ---------------------------------------------------------------------------


def test_evaluate_orders_definite_errors_first(entries, snapshot_dir: Path):
    verdicts = evaluate(
        entries.values(),
        pair("vllm==0.16.0", "eagle3", "kimi-k2.5", "specforge-kimi-k2.5-eagle3"),
        FolderSnapshots(snapshot_dir),
    )
    failing = [v.entry.id for v in verdicts if v.fails]
    assert set(failing) == {"vllm-eagle3-llama-draft-mla-target", "vllm-eagle3-target-allowlist"}
    assert [v.entry.id for v in verdicts[: len(failing)]] == failing
    assert all(v.match is not Match.NO for v in verdicts)


def test_an_entry_without_facets_applies_everywhere(entries):
    from dataclasses import replace

    from packaging.specifiers import SpecifierSet

    bare = replace(
        entries["vllm-eagle3-llama-target"],
        engine="any",
        versions=SpecifierSet(""),
        methods=(),
        draft_formats=(),
        target_model_types=(),
    )
    assert facet_matches(bare, Pairing())[0] is Match.APPLIES


@pytest.mark.parametrize("spec", ["trtllm", "vllm==not-a-version", "vllm>=0.16"])
def test_bad_engine_specs(spec):
    with pytest.raises(SpecprobeError):
        parse_engine(spec)


def test_engine_spec_parsing():
    assert parse_engine("SGLang==0.5.23") == ("sglang", Version("0.5.23"))
    assert parse_engine("vllm") == ("vllm", None)


def test_allowlist_under_its_later_name(entries, snapshot_dir: Path):
    """Later vLLM releases call the list aux_hidden_states_supported; a snapshot carrying that name gates too."""
    import json

    path = snapshot_dir / "vllm" / "0.16.0.json"
    data = json.loads(path.read_text())
    data["aux_hidden_states_supported"] = data.pop("eagle3_target_supported")
    path.write_text(json.dumps(data))
    folder = FolderSnapshots(snapshot_dir)
    v = evaluate_entry(entries["vllm-eagle3-target-allowlist"], pair("vllm==0.16.0", "eagle3", "kimi-k2.5"), folder)
    assert v.match is Match.APPLIES


def test_shipped_0_16_snapshot_gates_the_field_report_target(entries):
    """The vLLM 0.16.0 snapshot extracted from the engine carries the allowlist the issue quotes."""
    store = StoreSnapshots()
    facts = store.facts("vllm", Version("0.16.0"))
    assert facts is not None and list(facts.eagle3_target_supported or []) == VLLM_0_16_ALLOWLIST
    e = entries["vllm-eagle3-target-allowlist"]
    kimi = evaluate_entry(e, pair("vllm==0.16.0", "eagle3", "kimi-k2.5"), store)
    assert kimi.match is Match.APPLIES and "'deepseek_v3'" in kimi.message and "snapshot 0.16.0" in kimi.message
    assert evaluate_entry(e, pair("vllm==0.16.0", "eagle3", "qwen3-8b"), store).match is Match.NO
    # 0.16.0 gates and the next shipped snapshot does not (or lists otherwise): nothing is assumed between
    later = [v for v in store.versions("vllm") if v > Version("0.16.0")]
    if (
        later
        and later[0] > Version("0.16.1")
        and store.facts("vllm", later[0]).eagle3_target_supported != facts.eagle3_target_supported
    ):
        assert evaluate_entry(e, pair("vllm==0.16.1", "eagle3", "kimi-k2.5"), store).match is Match.POSSIBLE
    # medusa is still a method in 0.16.0 (read from the snapshot, not from the entry's range)
    medusa = evaluate_entry(entries["vllm-medusa-mlp-speculator-removed"], pair("vllm==0.16.0", "medusa"), store)
    assert medusa.match is Match.NO and "snapshot 0.16.0" in medusa.message


# --- target config.json conditions ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("target_name", "engine", "without", "with_layers"),
    [
        ("kimi-k2-instruct", "vllm==0.33.0", Match.APPLIES, Match.NO),
        ("kimi-k2.5", "sglang==0.5.23", Match.APPLIES, Match.NO),  # nested text_config
        ("deepseek-v2-lite", "vllm==0.33.0", Match.APPLIES, Match.NO),  # key absent
        ("deepseek-v3", "sglang==0.5.23", Match.NO, Match.APPLIES),
        ("llama-3.1-8b-instruct", "vllm==0.33.0", Match.NO, Match.NO),  # not MLA: the key means nothing there
    ],
)
def test_mtp_needs_mtp_layers_in_the_target(entries, target_name, engine, without, with_layers):
    method = "nextn" if engine.startswith("sglang") else "mtp"
    p = pair(engine, method, target_name)
    assert verdict_of(entries, "mtp-mla-target-without-mtp-layers", p).match is without
    assert verdict_of(entries, "mtp-mla-target-with-mtp-layers", p).match is with_layers


def test_config_conditions():
    from specprobe.compat.evaluate import condition_holds, config_matches

    assert condition_holds("absent", False, None) and not condition_holds("absent", True, 1)
    assert condition_holds("present", True, 0)
    assert condition_holds("<1", True, 0) and not condition_holds("<1", True, 1)
    assert condition_holds(">=2", True, 2.0) and not condition_holds(">=2", True, "3")
    assert not condition_holds("==1", True, True)  # booleans are not numbers
    assert config_matches((("a", ("absent", ">3")),), {"a": 4})
    assert not config_matches((("a", ("absent", ">3")),), {"a": 2})
    assert config_matches((("a", ("absent",)),), {"a": None})  # null counts as absent


def test_config_facet_unknown_without_a_target(entries):
    v = verdict_of(entries, "mtp-mla-target-without-mtp-layers", pair("vllm==0.33.0", "mtp"))
    assert v.match is Match.POSSIBLE
    assert any("num_nextn_predict_layers" in m for m in v.missing)


def test_qwen3_moe_passes_the_gate_but_lacked_aux_states(entries, snapshot_dir: Path):
    from specprobe.compat.subjects import target_from_config

    qwen3_moe = target_from_config(
        {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_attention_heads": 64,
         "num_key_value_heads": 4, "num_hidden_layers": 94},
        "Qwen/Qwen3-235B-A22B",
    )  # fmt: skip
    old = build_pairing(engine="vllm==0.10.2", method="eagle3", target=qwen3_moe)
    new = build_pairing(engine="vllm==0.11.1", method="eagle3", target=qwen3_moe)
    assert verdict_of(entries, "vllm-eagle3-qwen3-moe-before-support", old).match is Match.APPLIES
    assert verdict_of(entries, "vllm-eagle3-qwen3-moe-before-support", new).match is Match.NO
    gate = evaluate_entry(
        entries["vllm-eagle3-target-allowlist"],
        build_pairing(engine="vllm==0.16.0", method="eagle3", target=qwen3_moe),
        FolderSnapshots(snapshot_dir),
    )
    assert gate.match is Match.NO  # 'qwen' is a substring of qwen3_moe


def test_shipped_0_18_snapshot_admits_deepseek_style_targets(entries):
    """vLLM 0.18 widened the gate (as aux_hidden_states_supported): DeepSeek/Kimi pass, Gemma-3 still does not."""
    store = StoreSnapshots()
    facts = store.facts("vllm", Version("0.18.0"))
    assert facts is not None and facts.eagle3_target_supported is not None
    e = entries["vllm-eagle3-target-allowlist"]
    assert evaluate_entry(e, pair("vllm==0.18.0", "eagle3", "kimi-k2.5"), store).match is Match.NO
    assert evaluate_entry(e, pair("vllm==0.18.0", "eagle3", "gemma-3-4b-it"), store).match is Match.APPLIES
    verdicts = evaluate(entries.values(), pair("vllm==0.18.0", "eagle3", "kimi-k2.5", "eagle3-deepseek-mla"), store)
    assert not any(v.fails for v in verdicts)
    assert any(v.entry.id == "vllm-eagle3-mla-draft-mla-target" and v.match is Match.APPLIES for v in verdicts)


def test_method_presence_between_snapshots(entries):
    """Between two consecutive snapshots that agree on a method, their answer holds; where they
    disagree, only the entry's own range speaks. Versions are taken from what ships, so the test
    holds however many releases are shipped."""
    e = entries["vllm-medusa-mlp-speculator-removed"]
    store = StoreSnapshots()
    known = sorted(store.versions("vllm"))

    def offers(version: Version, method: str) -> bool:
        schema = load_snapshot("vllm", str(version))
        return schema is not None and method in schema.methods

    def between(older: Version, newer: Version) -> str:
        # A version no release has, strictly between the two (0.18.0 -> 0.18.0.99).
        return str(Version(f"{older.base_version}.99"))

    # Consecutive shipped releases with room for an unreleased version between them.
    pairs = [(a, b) for a, b in itertools.pairwise(known) if a < Version(between(a, b)) < b]
    both = next((a, b) for a, b in pairs if offers(a, "medusa") and offers(b, "medusa"))
    kept = evaluate_entry(e, pair(f"vllm=={between(*both)}", "medusa"), store)
    assert kept.match is Match.NO and f"snapshot {both[0]} and {both[1]}" in kept.message
    neither = next((a, b) for a, b in pairs if not offers(a, "mlp_speculator") and not offers(b, "mlp_speculator"))
    gone = evaluate_entry(e, pair(f"vllm=={between(*neither)}", "mlp_speculator"), store)
    assert gone.match is Match.APPLIES and f"snapshot {neither[0]} and {neither[1]}" in gone.message
    # Where the two disagree (the release that removed it), only the entry's range (>= 0.33) speaks.
    removed = next((a, b) for a, b in pairs if offers(a, "medusa") and not offers(b, "medusa"))
    assert evaluate_entry(e, pair(f"vllm=={between(*removed)}", "medusa"), store).match is Match.NO
