"""What SGLang refuses at start, judged statically (LAYOUT-ARCH-UNRESOLVED): a draft config.json with no
model_type (the speculators format) and a draft class its own release's registry lacks. Each verdict is
the one SGLang's own code gives (sglang/srt/utils/hf_transformers/config.py, model_loader/utils.py, read
in 0.5.17 and 0.5.23) and exact mode observed; valid SpecForge drafters stay clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from specprobe.pipeline.check import run_check


def _arch(report: object) -> list[tuple[str, str]]:
    return [
        (str(f.severity), f.message)
        for f in report.findings  # type: ignore[attr-defined]
        if f.rule == "LAYOUT-ARCH-UNRESOLVED"
    ]


@pytest.mark.parametrize("release", ["0.5.17", "0.5.23"])
def test_speculators_config_is_refused_by_sglang(tmp_path: Path, release: str) -> None:
    build_draft(tmp_path / "d", DraftSpec(draft_format="speculators"))

    report = run_check(tmp_path / "d", engine=f"sglang=={release}")
    found = _arch(report)

    assert [s for s, _ in found] == ["error"]
    assert "no model_type" in found[0][1]
    # The fix is the config layout, not another class name.
    hints = [f.hint for f in report.findings if f.rule == "LAYOUT-ARCH-UNRESOLVED"]
    assert hints and "SpecForge layout" in str(hints[0])


def test_speculators_config_without_engine_is_information_since_vllm_loads_it(tmp_path: Path) -> None:
    build_draft(tmp_path / "d", DraftSpec(draft_format="speculators"))

    report = run_check(tmp_path / "d")

    assert [s for s, _ in _arch(report)] == ["info"]
    assert report.ok


def test_a_config_with_a_remote_autoconfig_is_not_refused_for_its_model_type(tmp_path: Path) -> None:
    overrides = {"auto_map": {"AutoConfig": "eagle3.Eagle3SpeculatorConfig"}}
    build_draft(tmp_path / "d", DraftSpec(draft_format="speculators"), config_overrides=overrides)

    found = _arch(run_check(tmp_path / "d", engine="sglang==0.5.23"))

    assert all("no model_type" not in message for _, message in found)


@pytest.mark.parametrize(
    "architecture", ["Eagle3DeepseekV3ForCausalLM", "EagleLlamaForCausalLM", "Eagle3Qwen3ForCausalLM",
                     "GptOssForCausalLMEagle3"]
)
def test_a_draft_class_sglang_does_not_register_is_refused(tmp_path: Path, architecture: str) -> None:
    fmt = "eagle3-mla" if "Deepseek" in architecture else "specforge"
    build_draft(tmp_path / "d", DraftSpec(draft_format=fmt), config_overrides={"architectures": [architecture]})

    found = _arch(run_check(tmp_path / "d", engine="sglang==0.5.23"))

    assert [s for s, _ in found] == ["error"]
    assert "Cannot find model module" in found[0][1]


def test_sglangs_mla_and_llama_draft_classes_load(tmp_path: Path) -> None:
    mla = {"architectures": ["Eagle3DeepseekV2ForCausalLM"]}
    build_draft(tmp_path / "mla", DraftSpec(draft_format="eagle3-mla"), config_overrides=mla)
    build_draft(tmp_path / "specforge", DraftSpec(draft_format="specforge"))

    assert _arch(run_check(tmp_path / "mla", engine="sglang==0.5.23")) == []
    specforge = run_check(tmp_path / "specforge", engine="sglang==0.5.23")
    assert [f.rule for f in specforge.findings if str(f.severity) in ("warning", "error")] == []


def test_a_release_no_fact_covers_keeps_the_warning(tmp_path: Path) -> None:
    overrides = {"architectures": ["Eagle3Qwen3ForCausalLM"]}
    build_draft(tmp_path / "d", DraftSpec(draft_format="specforge"), config_overrides=overrides)

    assert [s for s, _ in _arch(run_check(tmp_path / "d", engine="sglang==0.5.16"))] == ["warning"]


def test_an_eagle_head_sglang_does_not_register_is_refused_whatever_the_method(tmp_path: Path) -> None:
    # Not an EAGLE-3 drafter (no fc): SGLang still looks its class up in the registry at start.
    overrides = {"architectures": ["EagleLlamaForCausalLM"]}
    build_draft(tmp_path / "d", DraftSpec(), config_overrides=overrides)
    remote = {**overrides, "auto_map": {"AutoModel": "acme.EagleLlama"}}
    build_draft(tmp_path / "remote", DraftSpec(), config_overrides=remote)

    assert [s for s, _ in _arch(run_check(tmp_path / "d", engine="sglang==0.5.23"))] == ["error"]
    # auto_map["AutoModel"] is where SGLang would look for remote code: no verdict then.
    assert _arch(run_check(tmp_path / "remote", engine="sglang==0.5.23")) == []


def _severities(report: object, rule: str) -> list[str]:
    return [str(f.severity) for f in report.findings if f.rule == rule]  # type: ignore[attr-defined]


@pytest.mark.parametrize("ids", [[True, 3, 5], [1.0, 3, 5], "1,3,5", [1, 1, 5], [-1, 3, 5], [[1], 3, 5]])
def test_top_level_ids_sglang_ignores_are_a_warning_on_sglang_and_an_error_on_vllm(
    tmp_path: Path, ids: object
) -> None:
    # SGLang >= 0.5.17 reads the captured layers only from eagle_config: a malformed top-level value never
    # reaches it; the server starts and captures the target's default layers (exact mode: EXACT-DEFAULTS).
    build_draft(tmp_path / "d", DraftSpec(), config_overrides={"eagle_aux_hidden_state_layer_ids": ids})

    assert _severities(run_check(tmp_path / "d", engine="sglang==0.5.23"), "SHAPES-AUX-IDS-INVALID") == ["warning"]
    assert _severities(run_check(tmp_path / "d", engine="vllm==0.33.0"), "SHAPES-AUX-IDS-INVALID") == ["error"]
    # Without --engine vLLM is checked too, and it reads them.
    assert _severities(run_check(tmp_path / "d"), "SHAPES-AUX-IDS-INVALID") == ["error"]
    # A release no fact covers keeps the verdict for every engine.
    assert _severities(run_check(tmp_path / "d", engine="sglang==0.5.11"), "SHAPES-AUX-IDS-INVALID") == ["error"]


def test_malformed_eagle_config_ids_stay_an_error_on_sglang(tmp_path: Path) -> None:
    build_draft(tmp_path / "d", DraftSpec(draft_format="specforge"),
                config_overrides={"eagle_config": {"eagle_aux_hidden_state_layer_ids": [[1], 3, 5]}})

    assert _severities(run_check(tmp_path / "d", engine="sglang==0.5.23"), "SHAPES-AUX-IDS-INVALID") == ["error"]


def test_top_level_ids_that_disagree_with_fc_are_a_warning_on_sglang(tmp_path: Path) -> None:
    # fc fuses 3 (the default SGLang builds for), the ignored top-level value names 2.
    build_draft(tmp_path / "d", DraftSpec(), config_overrides={"eagle_aux_hidden_state_layer_ids": [1, 5]})
    build_draft(tmp_path / "same", DraftSpec())

    assert _severities(run_check(tmp_path / "d", engine="sglang==0.5.23"), "SHAPES-FC") == ["warning"]
    assert _severities(run_check(tmp_path / "d", engine="vllm==0.33.0"), "SHAPES-FC") == ["error"]
    assert _severities(run_check(tmp_path / "same", engine="sglang==0.5.23"), "SHAPES-FC") == []


def test_well_formed_top_level_ids_sglang_ignores_warn_where_its_defaults_differ(tmp_path: Path) -> None:
    # An 8-layer target: SGLang captures its defaults [2, 4, 5], not the top-level [1, 3, 5].
    target = tmp_path / "target"
    build_target(target, num_hidden_layers=8)
    build_draft(tmp_path / "d", DraftSpec(), config_overrides={"eagle_aux_hidden_state_layer_ids": [1, 3, 5]})
    build_draft(tmp_path / "same", DraftSpec(), config_overrides={"eagle_aux_hidden_state_layer_ids": [2, 4, 5]})
    build_draft(tmp_path / "specforge", DraftSpec(draft_format="specforge"))

    ignored = run_check(tmp_path / "d", target=target, engine="sglang==0.5.23")
    assert _severities(ignored, "TARGET-AUX-IDS-MISSING") == ["warning"]
    assert "[2, 4, 5]" in next(f.message for f in ignored.findings if f.rule == "TARGET-AUX-IDS-MISSING")
    rule = "TARGET-AUX-IDS-MISSING"
    assert _severities(run_check(tmp_path / "d", target=target, engine="vllm==0.33.0"), rule) == []
    assert _severities(run_check(tmp_path / "same", target=target, engine="sglang==0.5.23"), rule) == []
    specforge = run_check(tmp_path / "specforge", target=target, engine="sglang==0.5.23")
    assert [f.rule for f in specforge.findings if str(f.severity) in ("warning", "error")] == []


def test_an_ignored_top_level_id_past_the_target_is_not_a_range_error_on_sglang(tmp_path: Path) -> None:
    target = tmp_path / "target"
    build_target(target, num_hidden_layers=8)
    build_draft(tmp_path / "d", DraftSpec(), config_overrides={"eagle_aux_hidden_state_layer_ids": [1, 3, 8]})

    rule = "TARGET-AUX-LAYER-RANGE"
    assert _severities(run_check(tmp_path / "d", target=target, engine="sglang==0.5.23"), rule) == []
    assert _severities(run_check(tmp_path / "d", target=target, engine="vllm==0.33.0"), rule) == ["error"]
