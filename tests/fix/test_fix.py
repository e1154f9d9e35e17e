"""specprobe fix: every real format and every failure class comes out passing `check` for its release,
with checksums; unfixable and under-informed drafters are refused with the reason; nothing is written
outside --out (and nothing at all with --plan)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specprobe.checkpoint.safetensors_header import read_header
from specprobe.demo.fixtures import DraftSpec
from specprobe.findings import Severity, SpecprobeError
from specprobe.fix.run import FixOptions, run_fix
from specprobe.pipeline.check import run_check
from tests.fix.builders import BROKEN, HIDDEN, config_of, make_draft, make_target, tree_digest

FORMATS = ("eagle3", "specforge", "speculators", "vllm-native", "eagle3-mla")
ENGINES = ("vllm==0.33.0", "vllm==0.21.0", "sglang==0.5.23", "sglang==0.5.12")


def _errors(report: object) -> list[str]:
    return [f"{f.rule}: {f.message}" for f in report.findings if f.severity is Severity.ERROR]  # type: ignore[attr-defined]


def _fix(tmp_path: Path, draft: Path, target: Path, engine: str, **kwargs: object) -> tuple[object, Path]:
    out = tmp_path / "fixed"
    report = run_fix(FixOptions(draft=draft, target=str(target), engine=engine, out=out, **kwargs))  # type: ignore[arg-type]
    return report, out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_comes_out_passing_check(tmp_path: Path, fmt: str, engine: str) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(draft_format=fmt))
    before = tree_digest(tmp_path)
    report, out = _fix(tmp_path, draft, target, engine)
    assert report.ok, _errors(report)  # type: ignore[attr-defined]
    assert not _errors(run_check(out, target=str(target), engine=engine, method="eagle3"))
    after = tree_digest(tmp_path)
    # Nothing but the new folder appeared, and nothing else changed.
    assert {k: v for k, v in after.items() if not k.startswith("fixed")} == before
    proof = report.extra["proof"]  # type: ignore[attr-defined]
    assert proof["tensors"] and all(t["identical"] for t in proof["tensors"])
    assert not read_header(out / "model.safetensors").problems


@pytest.mark.parametrize(("case", "overrides", "edit", "target_extra", "engine", "rule"), BROKEN,
                         ids=[b[0] for b in BROKEN])
def test_each_failure_class_is_fixed(
    tmp_path: Path, case: str, overrides: dict, edit: object, target_extra: dict, engine: str, rule: str
) -> None:
    target = make_target(tmp_path / "target", **target_extra)
    draft = make_draft(tmp_path / "draft", DraftSpec(**overrides), edit)  # type: ignore[arg-type]
    original = run_check(draft, target=str(target), engine=engine, method="eagle3")
    before = tree_digest(draft)
    report, out = _fix(tmp_path, draft, target, engine)
    assert report.ok, _errors(report)  # type: ignore[attr-defined]
    assert rule in report.fired()  # type: ignore[attr-defined]
    fixed = run_check(out, target=str(target), engine=engine, method="eagle3")
    assert not _errors(fixed), _errors(fixed)
    assert tree_digest(draft) == before
    # Each copied tensor is byte-identical; only derived/taken ones differ from any source tensor.
    for tensor in report.extra["proof"]["tensors"]:  # type: ignore[attr-defined]
        assert tensor["identical"], tensor
    del original


def test_classes_the_original_check_fails_are_the_ones_fixed(tmp_path: Path) -> None:
    """The fix is not a no-op: an original that check fails passes after it."""
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(), BROKEN[6][2])  # d2t stored as absolute ids
    assert "VOCAB-D2T-RANGE" in run_check(draft, target=str(target), engine="vllm==0.33.0").fired()
    report, out = _fix(tmp_path, draft, target, "vllm==0.33.0")
    assert report.ok  # type: ignore[attr-defined]
    assert not run_check(out, target=str(target), engine="vllm==0.33.0").summary.errors


def test_conversion_both_ways_keeps_every_tensor(tmp_path: Path) -> None:
    target = make_target(tmp_path / "target")
    source = make_draft(tmp_path / "draft", DraftSpec(draft_format="speculators", aux_layer_ids=[1, 3, 5, 6]))
    report = run_fix(FixOptions(draft=source, target=str(target), engine="vllm==0.33.0", out=tmp_path / "a",
                                format_out="eagle3"))
    assert not report.ok  # the EAGLE release format cannot tell vLLM about a 4-layer fc
    there = run_fix(FixOptions(draft=source, target=str(target), engine="sglang==0.5.23", out=tmp_path / "b"))
    assert there.ok, _errors(there)
    assert config_of(tmp_path / "b")["architectures"] == ["LlamaForCausalLMEagle3"]
    # speculators' `target_hidden_size: null` means "hidden_size"; vLLM's raw path would build fc from the null.
    assert "target_hidden_size" not in config_of(tmp_path / "b")
    back = run_fix(FixOptions(draft=tmp_path / "b", target=str(target), engine="vllm==0.33.0", out=tmp_path / "c",
                              format_out="speculators"))
    assert back.ok, _errors(back)
    config = config_of(tmp_path / "c")
    assert config["architectures"] == ["Eagle3Speculator"]
    assert config["norm_before_residual"] is True  # the speculators default made explicit and carried back
    # Same tensors (names aside), same bytes.
    digests = lambda r: sorted(t["copy_sha256"] for t in r.extra["proof"]["tensors"])  # noqa: E731
    assert digests(there) == digests(back)


def test_field_report_pairing_is_refused_with_what_works(tmp_path: Path) -> None:
    target = make_target(
        tmp_path / "kimi", weights=False, model_type="deepseek_v3", architecture="DeepseekV3ForCausalLM",
        extra={"kv_lora_rank": 32, "q_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
               "v_head_dim": 16, "topk_method": "noaux_tc", "scoring_func": "sigmoid"},
    )
    draft = make_draft(tmp_path / "draft", DraftSpec(draft_format="specforge"))
    report, out = _fix(tmp_path, draft, target, "vllm==0.16.0")
    assert not report.ok and not out.exists()  # type: ignore[attr-defined]
    unfixable = [f for f in report.findings if f.rule == "FIX-UNFIXABLE"]  # type: ignore[attr-defined]
    assert unfixable
    hint = unfixable[0].hint or ""
    assert "sglang" in hint and "vllm 0.18.0" in hint and "MLA EAGLE-3 drafter" in hint
    assert "sglang" in report.extra["alternatives"]["releases"]  # type: ignore[attr-defined]
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".fixed")] == []


def test_mla_drafter_is_not_declared_as_deepseek_v3_to_vllm(tmp_path: Path) -> None:
    """vLLM turns a draft config of model_type deepseek_v3 into its MTP model (found with exact mode on
    vLLM 0.32.0: Eagle3DeepSeekMTPModel refused); the copy declares deepseek_v2, SGLang's is untouched."""
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(draft_format="eagle3-mla"))
    report, out = _fix(tmp_path, draft, target, "vllm==0.33.0")
    assert report.ok and config_of(out)["model_type"] == "deepseek_v2"  # type: ignore[attr-defined]
    there = run_fix(FixOptions(draft=draft, target=str(target), engine="sglang==0.5.23", out=tmp_path / "s"))
    assert there.ok and config_of(tmp_path / "s")["model_type"] == "deepseek_v3"


def test_mla_drafter_on_a_release_without_mla_drafters_names_the_releases(tmp_path: Path) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(draft_format="eagle3-mla"))
    report, _ = _fix(tmp_path, draft, target, "sglang==0.5.11")
    finding = next(f for f in report.findings if f.rule == "FIX-UNFIXABLE")  # type: ignore[attr-defined]
    assert "sglang 0.5.12-" in (finding.hint or "")


@pytest.mark.parametrize(
    ("edit_name", "needle"),
    [("d2t_shuffled", "t2d is absent"), ("d2t_zeros", "t2d is absent"), ("ids_beyond_target", "do not exist")],
)
def test_missing_information_is_named(tmp_path: Path, edit_name: str, needle: str) -> None:
    from tests.fix import builders

    def edit(spec: DraftSpec, config: dict, tensors: dict) -> None:
        if edit_name == "ids_beyond_target":
            config["eagle_aux_hidden_state_layer_ids"] = [1, 3, 40]
            return
        getattr(builders, edit_name)(spec, config, tensors)
        del tensors["t2d"]

    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(), edit)
    report, out = _fix(tmp_path, draft, target, "vllm==0.33.0")
    missing = [f for f in report.findings if f.rule == "FIX-MISSING-INFO"]  # type: ignore[attr-defined]
    assert missing and needle in missing[0].message and not out.exists()


def test_fc_wider_than_its_ids_is_missing_information(tmp_path: Path) -> None:
    def edit(spec: DraftSpec, config: dict, tensors: dict) -> None:
        config["eagle_aux_hidden_state_layer_ids"] = [1, 3]

    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(), edit)
    report, _ = _fix(tmp_path, draft, target, "vllm==0.33.0")
    assert "fc fuses 3 hidden states" in next(
        f.message for f in report.findings if f.rule == "FIX-MISSING-INFO"  # type: ignore[attr-defined]
    )


def test_plan_writes_nothing(tmp_path: Path) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(draft_format="eagle3"))
    before = tree_digest(tmp_path)
    report = run_fix(FixOptions(draft=draft, target=str(target), engine="sglang==0.5.23",
                                out=tmp_path / "fixed", plan_only=True))
    assert report.ok and "FIX-ARCHITECTURE" in report.fired()
    assert tree_digest(tmp_path) == before
    assert report.extra["written"] is False


def test_interrupted_write_leaves_nothing(tmp_path: Path) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(draft_format="eagle3"))
    before = tree_digest(tmp_path)
    written: list[str] = []

    def interrupt(name: str) -> None:
        written.append(name)
        if len(written) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_fix(FixOptions(draft=draft, target=str(target), engine="sglang==0.5.23", out=tmp_path / "fixed",
                           after_tensor=interrupt))
    assert len(written) == 3
    assert tree_digest(tmp_path) == before


@pytest.mark.parametrize("where", ["nonempty", "inside-draft", "inside-target", "contains-draft", "is-file"])
def test_refused_out(tmp_path: Path, where: str) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec())
    out = {
        "nonempty": tmp_path / "full",
        "inside-draft": draft / "fixed",
        "inside-target": target / "fixed",
        "contains-draft": tmp_path,
        "is-file": tmp_path / "file",
    }[where]
    if where == "nonempty":
        out.mkdir()
        (out / "keep").write_text("x")
    if where == "is-file":
        out.write_text("x")
    before = tree_digest(tmp_path)
    with pytest.raises(SpecprobeError):
        run_fix(FixOptions(draft=draft, target=str(target), engine="vllm==0.33.0", out=out))
    assert tree_digest(tmp_path) == before


def test_empty_out_folder_is_used(tmp_path: Path) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec())
    (tmp_path / "fixed").mkdir()
    report, out = _fix(tmp_path, draft, target, "vllm==0.33.0")
    assert report.ok and (out / "model.safetensors").is_file()  # type: ignore[attr-defined]


@pytest.mark.parametrize("engine", ["vllm", "vllm>=0.20", "tgi==1.0", ""])
def test_engine_must_be_one_release(tmp_path: Path, engine: str) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec())
    with pytest.raises(SpecprobeError):
        run_fix(FixOptions(draft=draft, target=str(target), engine=engine, out=tmp_path / "o"))


def test_code_and_pickles_are_not_copied(tmp_path: Path) -> None:
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec())
    (draft / "modeling_evil.py").write_text("raise SystemExit")
    (draft / "training_args.bin").write_bytes(b"\x80\x04N.")
    (draft / "README.md").write_text("# drafter\n")
    report, out = _fix(tmp_path, draft, target, "vllm==0.33.0")
    assert report.ok  # type: ignore[attr-defined]
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.safetensors"]
    assert "FIX-FILES" in report.fired()  # type: ignore[attr-defined]


def test_sharded_drafter_keeps_its_shards_and_index(tmp_path: Path) -> None:
    from specprobe.checkpoint.writer import write_sharded
    from specprobe.demo.fixtures import draft_config, draft_tensors, write_json

    target = make_target(tmp_path / "target")
    draft = tmp_path / "draft"
    draft.mkdir()
    spec = DraftSpec(draft_format="eagle3")
    write_json(draft / "config.json", draft_config(spec))
    tensors = draft_tensors(spec)
    names = list(tensors)
    write_sharded(draft, {f"model-0000{i + 1}-of-00002.safetensors": {n: tensors[n] for n in names[i::2]}
                          for i in range(2)})
    report, out = _fix(tmp_path, draft, target, "sglang==0.5.23")
    assert report.ok, _errors(report)  # type: ignore[attr-defined]
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert set(index["weight_map"].values()) == {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
    assert not _errors(run_check(out, target=str(target), engine="sglang==0.5.23"))


def test_target_hidden_from_another_target_is_unfixable(tmp_path: Path) -> None:
    target = make_target(tmp_path / "target", hidden=HIDDEN * 3 // 2 + 1)
    draft = make_draft(tmp_path / "draft", DraftSpec())
    report, _ = _fix(tmp_path, draft, target, "vllm==0.33.0")
    assert "FIX-UNFIXABLE" in report.fired()  # type: ignore[attr-defined]


def test_exact_hook_says_when_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No interpreter of the release anywhere (tests/conftest.py gives the fast tier no engine; said again
    # here because the test is about that): an empty engine cache and no SPECPROBE_VLLM*_PYTHON.
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(tmp_path / "engines"))
    for variable in ("SPECPROBE_VLLM_PYTHON", "SPECPROBE_VLLM_CPU_PYTHON"):
        monkeypatch.delenv(variable, raising=False)
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec())
    report, _ = _fix(tmp_path, draft, target, "vllm==0.32.0", exact=True)
    assert report.ok, _errors(report)  # type: ignore[attr-defined]
    exact = report.extra["proof"]["exact"]  # type: ignore[attr-defined]
    assert exact["available"] is False
    assert exact["reason"].startswith("exact not available for vllm==0.32.0: "), exact["reason"]
    assert "not installed" in exact["reason"], exact["reason"]
    assert "FIX-EXACT" in report.fired()  # type: ignore[attr-defined]


@pytest.mark.engine
def test_exact_hook_loads_the_copy_in_the_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vllm_cpu_python: Path
) -> None:
    """With vLLM 0.32.0 (CPU build) provisioned, --exact has the release's own code load the fixed copy."""
    monkeypatch.setenv("SPECPROBE_VLLM_CPU_PYTHON", str(vllm_cpu_python))
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec())
    report, _ = _fix(tmp_path, draft, target, "vllm==0.32.0", exact=True)
    exact = report.extra["proof"]["exact"]  # type: ignore[attr-defined]
    assert exact["available"] is True, exact
    assert exact["ok"] is True and exact["errors"] == [], exact
    assert "FIX-EXACT" not in report.fired()  # type: ignore[attr-defined]
