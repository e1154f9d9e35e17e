"""Rule-level behaviour that the corpus cannot show: engine gating from a schema, severities without
--engine, argument errors, rule metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.check import latest_version, parse_engine, run_check
from specprobe.checkpoint.builder import DraftSpec, build_draft, build_target
from specprobe.findings import SpecprobeError
from specprobe.rules import target as target_rules
from specprobe.rules.catalog import all_rules
from specprobe.schema.model import EngineSchema


def test_eagle3_target_gating_from_an_engine_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_draft(tmp_path / "draft", DraftSpec())
    build_target(tmp_path / "target", model_type="kimi_k2")
    gated = EngineSchema(engine="vllm", version="0.16.0", eagle3_target_supported=["llama", "qwen", "gpt_oss"])
    monkeypatch.setattr(target_rules, "_schema", lambda engine, version: gated)

    report = run_check(tmp_path / "draft", target=str(tmp_path / "target"), engine="vllm==0.16.0")

    findings = [f for f in report.findings if f.rule == "TARGET-EAGLE3-UNSUPPORTED"]
    assert len(findings) == 1 and findings[0].severity == "error"
    assert "kimi_k2" in findings[0].message


def test_unresolved_architecture_is_an_error_only_when_no_engine_loads_it(tmp_path: Path) -> None:
    build_draft(tmp_path / "d", DraftSpec(), config_overrides={"architectures": ["GemmaForCausalLM"]})

    default = run_check(tmp_path / "d")
    explicit_sglang = run_check(tmp_path / "d", engine="sglang")

    assert [f.severity for f in default.findings if f.rule == "LAYOUT-ARCH-UNRESOLVED"] == ["error", "warning"]
    assert [f.severity for f in explicit_sglang.findings if f.rule == "LAYOUT-ARCH-UNRESOLVED"] == ["warning"]


def test_speculators_drafter_resolves_on_vllm_without_warnings_there(tmp_path: Path) -> None:
    build_draft(tmp_path / "d", DraftSpec(draft_format="speculators"))

    report = run_check(tmp_path / "d", engine="vllm")

    assert report.ok
    assert "LAYOUT-ARCH-UNRESOLVED" not in report.fired()
    assert report.subject["engine"] == f"vllm=={latest_version('vllm')}"


@pytest.mark.parametrize("spec", ["tensorrt", "vllm==not.a.version", "=="])
def test_bad_engine_argument_cannot_run(spec: str) -> None:
    with pytest.raises(SpecprobeError):
        parse_engine(spec)


def test_engine_argument_forms() -> None:
    assert parse_engine("vllm==0.16.0") == ([("vllm", "0.16.0")], True)
    assert parse_engine("SGLang") == ([("sglang", latest_version("sglang"))], True)
    engines, explicit = parse_engine(None)
    assert [e for e, _ in engines] == ["vllm", "sglang"] and not explicit


def test_missing_draft_folder_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(SpecprobeError, match="does not exist"):
        run_check(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(SpecprobeError, match="not a folder"):
        run_check(tmp_path / "file")


def test_a_crashing_family_is_one_line_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_draft(tmp_path / "d", DraftSpec())

    def broken_family(ctx: object) -> list[object]:
        raise RuntimeError("rule bug")

    report = run_check(tmp_path / "d", families=[broken_family])

    assert report.findings == []
    assert report.extra["internal_errors"] == [f"internal error in {__name__}: RuntimeError: rule bug"]
    assert capsys.readouterr().err.count("\n") == 1


def test_check_rules_carry_description_severity_and_evidence() -> None:
    families = {"files", "safety", "layout", "shapes", "vocab", "target", "deep"}
    rules = [r for r in all_rules() if r.family in families]
    assert len(rules) >= 40
    for r in rules:
        assert r.id.startswith(r.family.upper() + "-"), r.id
        assert r.description and "\n" not in r.description
        assert all(url.startswith("https://") for url in r.evidence) and r.evidence
