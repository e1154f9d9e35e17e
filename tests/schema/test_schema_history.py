"""`schema history`: in which shipped releases a method, parameter, draft architecture or EAGLE-3
target was accepted, checked against facts stated independently in the engines' changelogs and code."""

from __future__ import annotations

import json

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.findings import SpecprobeError
from specprobe.schema.history import History, Presence, Subject, history
from specprobe.schema.store import known_versions, load_snapshot

runner = CliRunner()


def versions_where(result: History, present: bool) -> list[Version]:
    return [Version(entry.version) for entry in result.releases if entry.present is present]


def test_eagle3_is_in_every_vllm_release_from_its_first():
    # vLLM's EAGLE-3 proposer shipped in 0.8.5; the snapshots start there and it never went away.
    result = history("vllm", Subject.METHOD, "eagle3")
    shipped = known_versions("vllm")
    assert Version(shipped[0]) <= Version("0.8.5") or result.first == shipped[0]
    assert result.first == shipped[0]
    assert result.last == shipped[-1]
    assert result.gaps == []
    assert versions_where(result, False) == []


def test_eagle3_in_0_8_5_is_accepted_beyond_its_method_literal():
    schema = load_snapshot("vllm", "0.8.5")
    if schema is None:
        pytest.skip("no 0.8.5 snapshot shipped")
    # 0.8.5's Literal lists ngram/eagle/medusa/mlp_speculator/draft_model; its code branches on eagle3.
    assert "eagle3" in schema.methods
    assert "eagle3" in schema.provenance.get("methods_from_source", [])


@pytest.mark.parametrize("method", ["medusa", "mlp_speculator"])
def test_removed_methods_end_before_0_33(method):
    # FIELD_NOTES: vLLM 0.16 listed medusa and mlp_speculator; 0.33 has neither.
    result = history("vllm", Subject.METHOD, method)
    assert result.first == known_versions("vllm")[0]
    assert result.last is not None and Version("0.16.0") <= Version(result.last) < Version("0.33.0")
    assert result.gaps == []
    assert all(version > Version(result.last) for version in versions_where(result, False))
    assert {"0.33.0", "0.34.0"} <= {str(v) for v in versions_where(result, False)}


def test_target_gate_history_for_an_mla_target():
    # Older vLLM refused EAGLE-3 for model_type kimi_k2 at the model_type gate (FIELD_NOTES); 0.18 listed
    # it (MLA EAGLE-3 drafters need vLLM >= 0.18); later releases gate by the target's class instead.
    result = history("vllm", Subject.TARGET_GATE, "kimi_k2")
    refused = versions_where(result, False)
    accepted = versions_where(result, True)
    assert Version("0.16.0") in refused and Version("0.18.0") in accepted
    assert refused and accepted and max(refused) < min(accepted)
    newest = result.releases[-1]
    assert newest.present and "no model_type gate" in newest.detail


def test_target_gate_first_form_accepts_only_llama():
    llama = history("vllm", Subject.TARGET_GATE, "llama")
    assert versions_where(llama, False) == []
    qwen = history("vllm", Subject.TARGET_GATE, "qwen3_moe")
    gate_0_8_5 = next((entry for entry in qwen.releases if entry.version == "0.8.5"), None)
    if gate_0_8_5 is not None:
        assert not gate_0_8_5.present and "llama" in gate_0_8_5.detail
    assert Version("0.16.0") in versions_where(qwen, True)


def test_field_and_draft_arch_history():
    steps = history("sglang", Subject.FIELD, "--speculative-num-steps")
    assert steps.first == known_versions("sglang")[0] and steps.last == known_versions("sglang")[-1]
    arch = history("vllm", Subject.DRAFT_ARCH, "Eagle3LlamaForCausalLM")
    assert arch.first == known_versions("vllm")[0] and arch.gaps == []
    unknown = history("vllm", Subject.DRAFT_ARCH, "NoSuchDrafter")
    assert unknown.first is None and unknown.present_in == []


def test_gaps_are_runs_between_first_and_last():
    result = History("vllm", Subject.METHOD, "x", [
        Presence("0.1", False), Presence("0.2", True), Presence("0.3", False), Presence("0.4", False),
        Presence("0.5", True), Presence("0.6", False), Presence("0.7", True), Presence("0.8", False),
    ])
    assert (result.first, result.last) == ("0.2", "0.7")
    assert result.gaps == [["0.3", "0.4"], ["0.6", "0.6"]]


def test_cli_history_text_and_json_envelope():
    text = runner.invoke(app, ["schema", "history", "vllm", "--method", "medusa"])
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("vllm method medusa: in ")
    assert "first: " in text.stdout
    result = runner.invoke(app, ["schema", "history", "vllm==0.33.0", "--target-gate", "kimi_k2", "-f", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["command"] == "schema history" and payload["ok"] is True
    assert payload["subject"] == {"engine": "vllm", "target_gate": "kimi_k2"}
    assert payload["summary"] == {"errors": 0, "warnings": 0, "infos": 0}
    assert [entry["version"] for entry in payload["releases"]] == known_versions("vllm")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["history", "vllm"], "exactly one of"),
        (["history", "vllm", "--method", "eagle3", "--field", "model"], "exactly one of"),
        (["history", "tgi", "--method", "eagle3"], "unknown engine"),
        (["history", "vllm", "--method", "eagle3", "-f", "markdown"], "unknown format"),
        (["vllm", "--method", "eagle3"], "belong to `schema history`"),
    ],
)
def test_cli_history_bad_arguments_exit_2(args, message):
    result = runner.invoke(app, ["schema", *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_target_gate_refuses_a_class_name_instead_of_a_model_type():
    """`DeepseekV3ForCausalLM` never matches an allowlist of model_types: one clear line, not a false "no"."""
    with pytest.raises(SpecprobeError, match="model_type"):
        history("vllm", Subject.TARGET_GATE, "DeepseekV3ForCausalLM")
